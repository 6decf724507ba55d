/**
 * Sliding 2025-era sessions (`src/mcp/legacy/renewal.ts`, `SessionCodec`): a session is live while its
 * store record is, and use keeps the record alive. The codec opens an authentic id past its sealed
 * expiry and nothing else; a message finds its session only while the record is unexpired (purged or
 * not); a POST or a GET stream's opening slides a record with half a lifetime or less left (one
 * write per half-lifetime); a POST's answer then carries a re-sealed `Mcp-Session-Id`, as it does for
 * an id sealed with a key that is not the ring's first (never GET or DELETE); a session DELETEd
 * meanwhile stays ended. Then real clients with their default settings against the notes app served
 * in-process: the v2 client, which takes the id only from `initialize`, keeps one session across many
 * SESSION_TTL_SECONDS of use and loses it after a lifetime idle; the v1 SDK client, which adopts
 * every re-sealed id, outlives SESSION_TTL_SECONDS and a key rotation; what retiring a key does to a
 * v2 host. Time is the sealers' injected clock, moved by the tests; nothing sleeps.
 */
import { serve, type ServerType } from '@hono/node-server'
import { Client as V2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing, type RawKey } from '../../src/mcp/key-ring.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { SessionCodec } from '../../src/mcp/legacy/session.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { noteUri } from '../../src/notes/format.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { OpenHosts, acceptingWith, createNote, noteExists } from '../support/legacy-host.ts'
import { LegacySession, SseReader, postLegacy, startSession } from '../support/legacy-request.ts'
import { expectError, expectResult } from '../support/mcp-request.ts'
import { RecordingLogger } from '../support/recording-logger.ts'

/** The shortest SESSION_TTL_SECONDS a deployment may set; a session id is due after half of it. */
const TTL_SECONDS = 60
const TTL = TTL_SECONDS * 1000
const HALF_LIFE = TTL / 2
const SESSION_NOT_FOUND = -32001
const FORM_CLIENT = { elicitation: {} }
const CLIENT = {
  protocolVersion: '2025-11-25',
  capabilities: FORM_CLIENT,
  clientInfo: { name: 'renewal-test', version: '1.0.0' },
} as const

/** The clock of every sealer here (sessions and requestState): tests move it. */
const clock = { now: Date.now() }
const keyA = generateKey()
const keyB = generateKey()

const sealerFor = async (keys: RawKey[]) =>
  StateSealer.create({ keyRing: await importKeyRing(keys), now: () => clock.now })
/** A session codec on ring `keys`, sealing for `ttlSeconds`. */
const codecFor = async (keys: RawKey[], ttlSeconds = TTL_SECONDS) =>
  new SessionCodec((await sealerFor(keys)).withTtl(ttlSeconds))

const bus = new InProcessEventBus()
/** The notes every app of this file keeps (each test's sessions live in a store of its own). */
const notes = new SqliteNotesStore({ path: ':memory:' })
await notes.migrate()

/** The notes app keeping its sessions in `store`, with the shortest session lifetime and ring `keys`. */
async function notesApp(
  store: SqliteEngineStore,
  keys: RawKey[] = [keyA],
  logger?: RecordingLogger
): Promise<Hono> {
  const config = parseConfig({ SESSION_TTL_SECONDS: String(TTL_SECONDS) })
  return createApp(config, {
    store: notes,
    engineStore: store,
    sealer: await sealerFor(keys),
    bus,
    logger,
  })
}

async function memoryStore<T extends SqliteEngineStore>(
  make: () => T = () => new SqliteEngineStore({ path: ':memory:' }) as T
): Promise<T> {
  const store = make()
  await store.migrate()
  return store
}

/** The `sid` a session id names, opened as the local principal on ring [A]. */
async function sidOf(token: string): Promise<string | undefined> {
  return (await (await codecFor([keyA])).open(token, LOCAL_PRINCIPAL))?.sid
}

/** The renewed id an answer carries (it must carry one), not the one `session` sent. */
function renewedId(response: Response, session: LegacySession): string {
  const renewed = response.headers.get(HEADER_SESSION_ID)
  expect(renewed).toMatch(/^[\x21-\x7e]+$/)
  expect(renewed).not.toBe(session.id)
  return renewed as string
}

/** `session`'s ping is refused: 404 -32001, as an unknown session is. */
async function expectGone(session: LegacySession) {
  const response = await session.request('ping', undefined, { id: 1 })
  await expectError(response, { status: 404, code: SESSION_NOT_FOUND, id: 1 })
}

/** `session`'s ping is answered: the session is live. */
async function expectLive(session: LegacySession) {
  const response = await session.request('ping', undefined, { id: 2 })
  expect(await expectResult(response, 2)).toStrictEqual({})
}

/** Purges every expired row of `store` at the clock's now. */
async function purge(store: SqliteEngineStore) {
  while ((await store.purgeExpired(clock.now, 1000)) > 0);
}

/** `token` with one character of its ciphertext changed. */
function tampered(token: string): string {
  const parts = token.split('.')
  const ciphertext = parts[3] as string
  parts[3] = (ciphertext.startsWith('A') ? 'B' : 'A') + ciphertext.slice(1)
  return parts.join('.')
}

describe('SessionCodec', () => {
  it('opens an authentic id past its sealed expiry (the record decides), and still refuses every other one', async () => {
    const codec = await codecFor([keyA])
    const session = await codec.issue(LOCAL_PRINCIPAL, CLIENT)
    const foreign = await codec.issue('someone-else', CLIENT)
    clock.now = session.expiresAt + 3 * TTL
    expect(await codec.open(session.token, LOCAL_PRINCIPAL)).toStrictEqual(session)
    // Tampered, another principal's, sealed under a retired key, malformed: still closed.
    expect(await codec.open(tampered(session.token), LOCAL_PRINCIPAL)).toBeUndefined()
    expect(await codec.open(foreign.token, LOCAL_PRINCIPAL)).toBeUndefined()
    expect(await codec.open(session.token, 'someone-else')).toBeUndefined()
    expect(await (await codecFor([keyB])).open(session.token, LOCAL_PRINCIPAL)).toBeUndefined()
    expect(await codec.open(session.token.slice(0, -2), LOCAL_PRINCIPAL)).toBeUndefined()
  })

  it('reseals a session as itself: same sid and claims, a fresh expiry, the ring’s first key', async () => {
    const session = await (await codecFor([keyA])).issue(LOCAL_PRINCIPAL, CLIENT)
    clock.now += 2 * TTL
    const promoted = await codecFor([keyB, keyA])
    const opened = (await promoted.open(session.token, LOCAL_PRINCIPAL))!
    expect(promoted.sealedWithSealingKey(opened)).toBe(false)
    const resealed = await promoted.reseal(opened, LOCAL_PRINCIPAL)
    expect(resealed).toMatchObject({
      sid: session.sid,
      protocolVersion: session.protocolVersion,
      clientCapabilities: session.clientCapabilities,
      clientInfo: session.clientInfo,
    })
    expect(resealed.expiresAt).toBe(session.expiresAt + 2 * TTL)
    expect(promoted.sealedWithSealingKey(resealed)).toBe(true)
    expect(await promoted.open(resealed.token, LOCAL_PRINCIPAL)).toStrictEqual(resealed)
    // Bound to its principal; once A is retired only the resealed id opens.
    expect(await promoted.open(resealed.token, 'someone-else')).toBeUndefined()
    const retired = await codecFor([keyB])
    expect(await retired.open(session.token, LOCAL_PRINCIPAL)).toBeUndefined()
    expect((await retired.open(resealed.token, LOCAL_PRINCIPAL))?.sid).toBe(session.sid)
  })
})

describe('sliding sessions', () => {
  let store: SqliteEngineStore
  let app: Hono

  beforeAll(async () => {
    store = await memoryStore()
    app = await notesApp(store)
  })
  afterAll(() => store.close())

  /** The store record of the session `session` names. */
  const recordOf = async (session: LegacySession) =>
    store.getSession((await sidOf(session.id)) as string)

  it('a POST slides a record with half a lifetime or less left, once, and its answer carries a re-sealed id; none before', async () => {
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const created = (await recordOf(session))!.expiresAt
    clock.now = created - HALF_LIFE - 1
    const early = await session.request('logging/setLevel', { level: 'error' }, { id: 1 })
    expect(early.headers.get(HEADER_SESSION_ID)).toBeNull()
    await expectResult(early)
    expect(await recordOf(session)).toStrictEqual({ expiresAt: created, logLevel: 'error' })
    clock.now = created - HALF_LIFE
    const due = await session.request('ping', undefined, { id: 2 })
    const resealed = new LegacySession(app, renewedId(due, session), session.protocolVersion)
    expect(await expectResult(due, 2)).toStrictEqual({})
    expect(await sidOf(resealed.id)).toBe(await sidOf(session.id))
    expect(await recordOf(session)).toStrictEqual({ expiresAt: clock.now + TTL, logLevel: 'error' })
    // Slid: the next answers, through either id, carry none and write nothing.
    const renewSession = vi.spyOn(store, 'renewSession')
    for (const id of [resealed, session]) {
      const next = await id.request('ping', undefined, { id: 3 })
      expect(next.headers.get(HEADER_SESSION_ID)).toBeNull()
      await expectResult(next, 3)
    }
    expect(renewSession).not.toHaveBeenCalled()
    renewSession.mockRestore()
    // One session: ending it through the re-sealed id ends the old id too, and for good.
    expect((await resealed.delete()).status).toBe(204)
    await expectGone(session)
    await expectGone(resealed)
    clock.now += TTL / 4
    await expectGone(session)
  })

  it('an id past its sealed expiry works while its record lives, with its subscriptions; a record expired is no session, purged or not', async () => {
    const noteId = (await notes.create(LOCAL_PRINCIPAL, { title: 'Kept', body: 'x', tags: [] }, 1))
      .id
    const { session } = await startSession(app)
    const sid = (await sidOf(session.id)) as string
    await expectResult(
      await session.request('resources/subscribe', { uri: noteUri(noteId) }, { id: 1 })
    )
    clock.now += HALF_LIFE
    await expectLive(session)
    // Past the expiry sealed in the id, purged: the slid record keeps the session.
    clock.now += HALF_LIFE + 1_000
    await purge(store)
    await expectLive(session)
    expect(await store.isSubscribed(sid, noteUri(noteId))).toBe(true)
    const { expiresAt } = (await recordOf(session))!
    // Idle for a lifetime after the last slide: gone, before the purge as after it.
    clock.now = expiresAt
    expect(await recordOf(session)).toStrictEqual({ expiresAt })
    await expectGone(session)
    expect((await session.get()).status).toBe(404)
    expect((await session.delete()).status).toBe(404)
    await purge(store)
    expect(await recordOf(session)).toBeUndefined()
    await expectGone(session)
  })

  it('a tampered id or another principal’s, past its sealed expiry, is 404 while the session lives', async () => {
    const { session } = await startSession(app)
    const opened = (await (await codecFor([keyA])).open(session.id, LOCAL_PRINCIPAL))!
    const foreign = await (await codecFor([keyA])).reseal(opened, 'someone-else')
    clock.now += HALF_LIFE
    await expectLive(session)
    clock.now += HALF_LIFE + 1_000
    for (const id of [tampered(session.id), foreign.token]) {
      await expectGone(new LegacySession(app, id, session.protocolVersion))
    }
    await expectLive(session)
  })

  it('a GET stream’s opening slides the record too, and carries no id; a DELETE carries none', async () => {
    const { session } = await startSession(app)
    clock.now += HALF_LIFE
    const listening = await session.get()
    expect(listening.status).toBe(200)
    expect(listening.headers.get(HEADER_SESSION_ID)).toBeNull()
    await listening.body?.cancel()
    expect(await recordOf(session)).toStrictEqual({ expiresAt: clock.now + TTL })
    clock.now += HALF_LIFE + 1_000
    await purge(store)
    await expectLive(session)
    const ended = await session.delete()
    expect(ended.status).toBe(204)
    expect(ended.headers.get(HEADER_SESSION_ID)).toBeNull()
  })

  it('every POST answer carries the re-sealed id when the record slides: the 202 of a notification, an SSE stream, the 202 of an answer', async () => {
    const noteId = (await notes.create(LOCAL_PRINCIPAL, { title: 'Due', body: 'x', tags: [] }, 1))
      .id
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const sid = (await sidOf(session.id)) as string
    /** Moves the clock to where the record is due again. */
    const due = async () => {
      clock.now = (await store.getSession(sid))!.expiresAt - HALF_LIFE
    }
    await due()
    const notified = await session.notify('notifications/initialized')
    expect(notified.status).toBe(202)
    renewedId(notified, session)

    await due()
    const call = await session.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: noteId } },
      { id: 'del' }
    )
    expect(call.headers.get('content-type')).toMatch(/^text\/event-stream/)
    renewedId(call, session)
    const stream = new SseReader(call)
    const ask = (await stream.next()) as { id: string }
    await due()
    const answered = await session.answer(ask.id, { action: 'accept', content: { confirm: true } })
    expect(answered.status).toBe(202)
    renewedId(answered, session)
    expect((await stream.rest()).at(-1)).toMatchObject({
      id: 'del',
      result: { content: [{ type: 'text', text: 'Deleted the note "Due".' }] },
    })
    expect((await session.delete()).status).toBe(204)
  })

  it('an id sealed with a key that is no longer the first gets a re-sealed id on every POST, without a store write', async () => {
    const { session } = await startSession(app)
    const promoted = await notesApp(store, [keyB, keyA])
    const onPromoted = new LegacySession(promoted, session.id, session.protocolVersion)
    const before = await recordOf(session)
    const renewSession = vi.spyOn(store, 'renewSession')
    for (const id of [1, 2]) {
      const ping = await onPromoted.request('ping', undefined, { id })
      const resealed = renewedId(ping, session)
      expect(await (await codecFor([keyB])).open(resealed, LOCAL_PRINCIPAL)).toBeDefined()
      await expectResult(ping, id)
    }
    expect(renewSession).not.toHaveBeenCalled()
    renewSession.mockRestore()
    expect(await recordOf(session)).toStrictEqual(before)
    expect((await onPromoted.delete()).status).toBe(204)
  })

  it('sends no id for a session DELETEd while its sliding is decided: it stays ended', async () => {
    class EndedMeanwhile extends SqliteEngineStore {
      override async renewSession(sid: string, expiresAt: number, now: number) {
        await this.endSession(sid)
        return super.renewSession(sid, expiresAt, now)
      }
    }
    const ending = await memoryStore(() => new EndedMeanwhile({ path: ':memory:' }))
    const onEnding = await notesApp(ending)
    const { session } = await startSession(onEnding)
    clock.now += HALF_LIFE
    const ping = await session.request('ping', undefined, { id: 1 })
    expect(ping.headers.get(HEADER_SESSION_ID)).toBeNull()
    await expectGone(session)
    expect(await ending.getSession((await sidOf(session.id)) as string)).toBeUndefined()
    await ending.close()
  })

  it('answers all the same, without a new id, when the store fails the sliding (logged); the next message slides it', async () => {
    let failing = true
    class FailingRenewal extends SqliteEngineStore {
      override async renewSession(sid: string, expiresAt: number, now: number) {
        if (failing) throw new Error('store unavailable')
        return super.renewSession(sid, expiresAt, now)
      }
    }
    const flaky = await memoryStore(() => new FailingRenewal({ path: ':memory:' }))
    const logger = new RecordingLogger()
    const onFlaky = await notesApp(flaky, [keyA], logger)
    const { session } = await startSession(onFlaky)
    clock.now += HALF_LIFE
    const ping = await session.request('ping', undefined, { id: 1 })
    expect(ping.headers.get(HEADER_SESSION_ID)).toBeNull()
    expect(await expectResult(ping)).toStrictEqual({})
    const listening = await session.get()
    expect(listening.status).toBe(200)
    await listening.body?.cancel()
    expect(
      logger.count('keeping a 2025-era session live failed; it lives until its record expires')
    ).toBe(2)
    failing = false
    renewedId(await session.request('ping', undefined, { id: 2 }), session)
    await flaky.close()
  })
})

describe('real clients with their default settings', () => {
  let store: SqliteEngineStore
  /** The app the in-process server serves now: a test swaps it (a restart with new settings). */
  let current: Hono
  let server: ServerType
  let url: string
  const hosts = new OpenHosts()

  beforeAll(async () => {
    store = await memoryStore()
    current = await notesApp(store)
    server = serve({ fetch: (request) => current.fetch(request), hostname: '127.0.0.1', port: 0 })
    await new Promise<void>((resolve) => server.once('listening', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  })
  afterEach(() => hosts.closeAll())
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      if ('closeAllConnections' in server) server.closeAllConnections()
      server.close(() => resolve())
    })
    await store.close()
  })

  /** What the client's next POST sends as its session id. */
  const idOf = (host: { transport: { sessionId?: string } }) => host.transport.sessionId as string
  /** A raw ping with session id `id` (no SDK client would send an id it replaced). */
  const rawPing = (id: string) =>
    postLegacy(current, { jsonrpc: '2.0', id: 1, method: 'ping' }, { [HEADER_SESSION_ID]: id })

  /** A v2 client connected to the in-process server, closed by `use`'s end. */
  async function withV2Client(
    use: (client: V2Client, transport: StreamableHTTPClientTransport) => Promise<void>
  ) {
    const client = new V2Client({ name: 'sliding-v2', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(url))
    await client.connect(transport)
    try {
      await use(client, transport)
    } finally {
      await client.close()
    }
  }
  const listTags = (client: V2Client) => client.callTool({ name: 'list_tags', arguments: {} })

  it('the v2 client, which takes the id only from initialize, keeps one session across three SESSION_TTL_SECONDS of use, then loses it after a lifetime idle', async () => {
    current = await notesApp(store)
    await withV2Client(async (client, transport) => {
      const first = transport.sessionId as string
      expect(first).toMatch(/^[\x21-\x7e]+$/)
      const sid = (await sidOf(first)) as string
      await notes.create(LOCAL_PRINCIPAL, { title: 'Slid', body: 'x', tags: ['v2'] }, 1)
      // Eight steps of 25 s: 200 s of use, over three lifetimes of 60 s; expired rows purged.
      const started = clock.now
      while (clock.now - started <= 3 * TTL) {
        clock.now += 25_000
        await purge(store)
        const tags = await listTags(client)
        expect(tags.isError).toBeFalsy()
        expect(JSON.stringify(tags.content)).toContain('v2')
        // Its answers carried re-sealed ids, which it never took: its token is still the first.
        expect(transport.sessionId).toBe(first)
      }
      const { expiresAt } = (await store.getSession(sid))!
      expect(expiresAt).toBeGreaterThan(started + 3 * TTL)
      // Idle longer than a lifetime: its record expired (not yet purged), the session is gone.
      clock.now = expiresAt + 1_000
      await expect(listTags(client)).rejects.toThrow(/Session not found/)
      await purge(store)
      await expect(listTags(client)).rejects.toThrow(/Session not found/)
    })
  })

  it('the v2 client keeps its session while a key is added and promoted; retiring the key its id was sealed with ends it', async () => {
    current = await notesApp(store, [keyA])
    await withV2Client(async (client, transport) => {
      const first = transport.sessionId
      current = await notesApp(store, [keyA, keyB])
      expect((await listTags(client)).isError).toBeFalsy()
      current = await notesApp(store, [keyB, keyA])
      expect((await listTags(client)).isError).toBeFalsy()
      expect(transport.sessionId).toBe(first)
      current = await notesApp(store, [keyB])
      await expect(listTags(client)).rejects.toThrow(/Session not found/)
    })
  })

  it('the v1 SDK keeps its session across many SESSION_TTL_SECONDS while it is used, expired rows purged; an idle one dies', async () => {
    current = await notesApp(store)
    const host = await hosts.connect(url, FORM_CLIENT)
    const idle = await hosts.connect(url)
    const first = idOf(host)
    const sid = await sidOf(first)
    const noteId = await createNote(host, 'Long-lived')
    // Ten steps of 25 s: 250 s of use, over four lifetimes of 60 s.
    for (let step = 0; step < 10; step++) {
      clock.now += 25_000
      await purge(store)
      expect(await noteExists(host, noteId)).toBe(true)
    }
    // It adopted a re-sealed id; the one it replaced names the same live session.
    expect(idOf(host)).not.toBe(first)
    expect(await sidOf(idOf(host))).toBe(sid)
    expect(await expectResult(await rawPing(first), 1)).toStrictEqual({})
    // An interactive flow on the slid session: its SSE stream and its answer POST.
    host.person.elicit = acceptingWith({ confirm: true })
    expect((await host.callTool('delete_note', { id: noteId })).isError).toBeFalsy()
    expect(await noteExists(host, noteId)).toBe(false)
    // The host that sat idle past its lifetime lost its session.
    await expect(idle.client.ping()).rejects.toThrow(/Session not found/)
  })

  it('the v1 SDK keeps its session across a key rotation done while it is connected: add, promote, retire', async () => {
    current = await notesApp(store, [keyA])
    const host = await hosts.connect(url)
    const first = idOf(host)
    const noteId = await createNote(host, 'Rotated')
    // Added on every replica: nothing changes.
    current = await notesApp(store, [keyA, keyB])
    expect(await noteExists(host, noteId)).toBe(true)
    expect(idOf(host)).toBe(first)
    // Promoted: the next answer moves the session to B.
    current = await notesApp(store, [keyB, keyA])
    expect(await noteExists(host, noteId)).toBe(true)
    expect(idOf(host)).not.toBe(first)
    // Retired: the id sealed with A no longer opens; the client's does.
    current = await notesApp(store, [keyB])
    await expectError(await rawPing(first), { status: 404, code: SESSION_NOT_FOUND, id: 1 })
    expect(await noteExists(host, noteId)).toBe(true)
    const updated = await host.callTool('update_note', {
      id: noteId,
      expectedVersion: 1,
      body: 'After the rotation.',
    })
    expect(updated.isError).toBeFalsy()
  })
})
