/**
 * Sessions that never strand a host (`src/mcp/legacy/renewal.ts`, `SessionCodec.renew`): when a
 * 2025-era session id is due (past half its life, or sealed with a key that is not the ring's first),
 * which answers carry its renewed `Mcp-Session-Id` (every POST answer: JSON, SSE, 202; never GET or
 * DELETE), what the renewed id is (the same session, a fresh expiry, the ring's first key; the old
 * one still opens until its own expiry), and what the store keeps (the record and its subscriptions
 * past the old expiry; a session DELETEd meanwhile stays ended). Then real clients with their
 * default settings against the notes app served in-process: the v1 SDK client's session outlives
 * SESSION_TTL_SECONDS while it is used, and a key rotation (add, promote, retire) done while it is
 * connected; the v2 client, which never adopts a renewed id, keeps its own for its lifetime. Time is
 * the sealers' injected clock, moved by the tests; nothing sleeps.
 */
import { serve, type ServerType } from '@hono/node-server'
import { Client as V2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from '../../src/auth/bearer.ts'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing, type RawKey } from '../../src/mcp/key-ring.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { SessionCodec } from '../../src/mcp/legacy/session.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { noteUri } from '../../src/notes/format.ts'
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

/** The notes app on `store`, with the shortest session lifetime and ring `keys`. */
async function notesApp(
  store: SqliteNotesStore,
  keys: RawKey[] = [keyA],
  logger?: RecordingLogger
): Promise<Hono> {
  const config = parseConfig({ SESSION_TTL_SECONDS: String(TTL_SECONDS) })
  return createApp(config, { store, sealer: await sealerFor(keys), bus, logger })
}

async function memoryStore<T extends SqliteNotesStore>(
  make: () => T = () => new SqliteNotesStore({ path: ':memory:' }) as T
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

describe('SessionCodec renewal', () => {
  it('is not due while younger than half its life and sealed with the ring’s first key', async () => {
    const codec = await codecFor([keyA])
    const session = await codec.issue(LOCAL_PRINCIPAL, CLIENT)
    expect(codec.isDue(session)).toBe(false)
    clock.now += HALF_LIFE - 1_000
    const older = await codec.open(session.token, LOCAL_PRINCIPAL)
    expect(older && codec.isDue(older)).toBe(false)
    expect(older && (await codec.renew(older, LOCAL_PRINCIPAL))).toBeUndefined()
    // Sealed in whole seconds: from half its life on, whatever the millisecond it was issued at.
    clock.now += 1_000
    expect(older && codec.isDue(older)).toBe(true)
  })

  it('renews a due session as itself: same sid and claims, a fresh expiry; the old id opens until its own', async () => {
    const codec = await codecFor([keyA])
    const session = await codec.issue(LOCAL_PRINCIPAL, CLIENT)
    clock.now += HALF_LIFE
    const renewed = await codec.renew(session, LOCAL_PRINCIPAL)
    expect(renewed).toMatchObject({
      sid: session.sid,
      protocolVersion: session.protocolVersion,
      clientCapabilities: session.clientCapabilities,
      clientInfo: session.clientInfo,
    })
    expect(renewed?.token).not.toBe(session.token)
    expect(renewed?.expiresAt).toBe(session.expiresAt + HALF_LIFE)
    const reopened = await codec.open(renewed?.token as string, LOCAL_PRINCIPAL)
    expect(reopened).toStrictEqual(renewed)
    expect(reopened && codec.isDue(reopened)).toBe(false)
    // Still bound to its principal.
    expect(await codec.open(renewed?.token as string, 'someone-else')).toBeUndefined()
    // The old id opens until its own expiry, the renewed one beyond it.
    clock.now = session.expiresAt - 1
    expect((await codec.open(session.token, LOCAL_PRINCIPAL))?.sid).toBe(session.sid)
    clock.now = session.expiresAt
    expect(await codec.open(session.token, LOCAL_PRINCIPAL)).toBeUndefined()
    expect((await codec.open(renewed?.token as string, LOCAL_PRINCIPAL))?.sid).toBe(session.sid)
  })

  it('is due at once when sealed with a key that is no longer the first; renewed, it opens once that key is retired', async () => {
    const session = await (await codecFor([keyA])).issue(LOCAL_PRINCIPAL, CLIENT)
    // Added, not yet promoted: nothing to do.
    const added = await codecFor([keyA, keyB])
    const onAdded = await added.open(session.token, LOCAL_PRINCIPAL)
    expect(onAdded && added.isDue(onAdded)).toBe(false)
    // Promoted: a fresh id sealed with A is due.
    clock.now += 1_000
    const promoted = await codecFor([keyB, keyA])
    const onPromoted = await promoted.open(session.token, LOCAL_PRINCIPAL)
    expect(onPromoted && promoted.isDue(onPromoted)).toBe(true)
    const renewed = await promoted.renew(onPromoted!, LOCAL_PRINCIPAL)
    expect(renewed?.sid).toBe(session.sid)
    // A retired: only the renewed id opens.
    const retired = await codecFor([keyB])
    expect(await retired.open(session.token, LOCAL_PRINCIPAL)).toBeUndefined()
    expect((await retired.open(renewed!.token, LOCAL_PRINCIPAL))?.sid).toBe(session.sid)
  })

  it('never shortens a session: a replica with a shorter lifetime renews nothing, even for the key', async () => {
    const session = await (await codecFor([keyA], 3_600)).issue(LOCAL_PRINCIPAL, CLIENT)
    clock.now += 1_800_000
    for (const short of [await codecFor([keyA]), await codecFor([keyB, keyA])]) {
      const opened = await short.open(session.token, LOCAL_PRINCIPAL)
      expect(opened && short.isDue(opened)).toBe(true)
      expect(await short.renew(opened!, LOCAL_PRINCIPAL)).toBeUndefined()
    }
  })
})

describe('the renewed Mcp-Session-Id on answers', () => {
  let store: SqliteNotesStore
  let app: Hono

  beforeAll(async () => {
    store = await memoryStore()
    app = await notesApp(store)
  })
  afterAll(() => store.close())

  it('is on a JSON answer once the id is due, and on none before; the renewed id is the same session', async () => {
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const early = await session.request('logging/setLevel', { level: 'error' }, { id: 1 })
    expect(early.headers.get(HEADER_SESSION_ID)).toBeNull()
    await expectResult(early)
    clock.now += HALF_LIFE
    const due = await session.request('ping', undefined, { id: 2 })
    const renewed = new LegacySession(app, renewedId(due, session), session.protocolVersion)
    expect(await expectResult(due, 2)).toStrictEqual({})
    expect(await sidOf(renewed.id)).toBe(await sidOf(session.id))
    // Fresh again: its answers carry no id.
    const next = await renewed.request('ping', undefined, { id: 3 })
    expect(next.headers.get(HEADER_SESSION_ID)).toBeNull()
    await expectResult(next, 3)
    // One session: ending it through the renewed id ends the old id too.
    expect((await renewed.delete()).status).toBe(204)
    await expectGone(session)
    await expectGone(renewed)
  })

  it('is on every POST answer: the 202 of a notification, an SSE stream and the 202 of an answer; not on GET or DELETE', async () => {
    const noteId = (await store.create(LOCAL_PRINCIPAL, { title: 'Due', body: 'x', tags: [] }, 1))
      .id
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    clock.now += HALF_LIFE
    const notified = await session.notify('notifications/initialized')
    expect(notified.status).toBe(202)
    renewedId(notified, session)

    const call = await session.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: noteId } },
      { id: 'del' }
    )
    expect(call.headers.get('content-type')).toMatch(/^text\/event-stream/)
    renewedId(call, session)
    const stream = new SseReader(call)
    const ask = (await stream.next()) as { id: string }
    const answered = await session.answer(ask.id, { action: 'accept', content: { confirm: true } })
    expect(answered.status).toBe(202)
    renewedId(answered, session)
    expect((await stream.rest()).at(-1)).toMatchObject({
      id: 'del',
      result: { content: [{ type: 'text', text: 'Deleted the note "Due".' }] },
    })

    const listening = await session.get()
    expect(listening.status).toBe(200)
    expect(listening.headers.get(HEADER_SESSION_ID)).toBeNull()
    await listening.body?.cancel()
    const ended = await session.delete()
    expect(ended.status).toBe(204)
    expect(ended.headers.get(HEADER_SESSION_ID)).toBeNull()
  })

  it('keeps the record and its subscriptions past the old expiry, purged, while the renewed id is used', async () => {
    const noteId = (await store.create(LOCAL_PRINCIPAL, { title: 'Kept', body: 'x', tags: [] }, 1))
      .id
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const sid = (await sidOf(session.id)) as string
    await expectResult(
      await session.request('resources/subscribe', { uri: noteUri(noteId) }, { id: 1 })
    )
    clock.now += HALF_LIFE
    const renewed = new LegacySession(
      app,
      renewedId(await session.request('ping', undefined, { id: 2 }), session),
      session.protocolVersion
    )
    clock.now += HALF_LIFE + 1_000
    while ((await store.purgeExpired(clock.now, 1000)) > 0);
    await expectGone(session)
    expect(await store.isSubscribed(sid, noteUri(noteId))).toBe(true)
    expect(
      await expectResult(await renewed.request('ping', undefined, { id: 3 }), 3)
    ).toStrictEqual({})
    expect((await renewed.delete()).status).toBe(204)
  })

  it('sends no id for a session DELETEd while its renewal is decided: it stays ended', async () => {
    class EndedMeanwhile extends SqliteNotesStore {
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

  it('answers all the same, with the old id kept, when the store fails the renewal (logged)', async () => {
    class FailingRenewal extends SqliteNotesStore {
      override async renewSession(): Promise<boolean> {
        throw new Error('store unavailable')
      }
    }
    const failing = await memoryStore(() => new FailingRenewal({ path: ':memory:' }))
    const logger = new RecordingLogger()
    const onFailing = await notesApp(failing, [keyA], logger)
    const { session } = await startSession(onFailing)
    clock.now += HALF_LIFE
    const ping = await session.request('ping', undefined, { id: 1 })
    expect(ping.headers.get(HEADER_SESSION_ID)).toBeNull()
    expect(await expectResult(ping)).toStrictEqual({})
    expect(
      logger.count('renewing a 2025-era session id failed; the answer keeps the old one')
    ).toBe(1)
    await failing.close()
  })
})

describe('real clients with their default settings', () => {
  let store: SqliteNotesStore
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

  it('the v1 SDK keeps its session across many SESSION_TTL_SECONDS while it is used, expired rows purged; an idle one is not renewed', async () => {
    current = await notesApp(store)
    const host = await hosts.connect(url, FORM_CLIENT)
    const idle = await hosts.connect(url)
    const first = idOf(host)
    const sid = await sidOf(first)
    const noteId = await createNote(host, 'Long-lived')
    // Ten steps of 25 s: 250 s of use, over four lifetimes of 60 s.
    for (let step = 0; step < 10; step++) {
      clock.now += 25_000
      while ((await store.purgeExpired(clock.now, 1000)) > 0);
      expect(await noteExists(host, noteId)).toBe(true)
    }
    expect(idOf(host)).not.toBe(first)
    expect(await sidOf(idOf(host))).toBe(sid)
    await expectError(await rawPing(first), { status: 404, code: SESSION_NOT_FOUND, id: 1 })
    // An interactive flow on the renewed session: its SSE stream and its answer POST.
    host.person.elicit = acceptingWith({ confirm: true })
    expect((await host.callTool('delete_note', { id: noteId })).isError).toBeFalsy()
    expect(await noteExists(host, noteId)).toBe(false)
    // The host that sat idle past its lifetime was never renewed.
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

  it('the v2 client, which takes the id only from initialize, keeps the one it has for its own lifetime', async () => {
    current = await notesApp(store)
    const client = new V2Client({ name: 'renewal-v2', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(url))
    await client.connect(transport)
    try {
      const first = transport.sessionId
      expect(first).toMatch(/^[\x21-\x7e]+$/)
      clock.now += HALF_LIFE + 10_000
      // Its answers carry a renewed id, which it does not take: the one it has still opens.
      expect((await client.callTool({ name: 'list_tags', arguments: {} })).isError).toBeFalsy()
      expect(transport.sessionId).toBe(first)
      clock.now += HALF_LIFE
      await expect(client.callTool({ name: 'list_tags', arguments: {} })).rejects.toThrow(
        /Session not found/
      )
    } finally {
      await client.close()
    }
  })
})
