/**
 * Resumable streams of 2025-era sessions and calls that outlive their replica, in-process on the
 * notes app (real in-memory SQLite store shared by every replica, in-process buses), trying to break
 * them: a POST stream opens with a priming event (2025-11-25 only) and numbers its events; a dropped
 * connection cancels nothing, and a `GET` with `Last-Event-ID` on any replica replays what followed
 * on that stream only and continues it; ids of another session, another principal, none of ours, or
 * past their retention get nothing; a stream that has ended with nothing left answers 204; the GET
 * notification stream resumes with list-changed hints; `ctx.closeStream()` lets go of a connection
 * with `retry`. A replica that "dies" (its store calls fail from a chosen moment on, so it never
 * writes again) leaves its waiting call to another replica (the one serving the resumed stream, or
 * the one the client's answer reaches), which claims it once the lease has run out and finishes it
 * from the checkpoint: the note is deleted once, also when the dead replica had deleted it before it
 * could store the answer; a replica whose shutdown began claims nothing (an answer reaching it is
 * stored for the next replica, a resume there lets go with `retry`). A session holding as many kept streams as it may, over several replicas,
 * has its next waiting call refused with a message a person can act on (that stream is written live
 * only, never stored), while another session goes on; calls that ended never fill it (the oldest
 * ended streams make room).
 *
 * Waits are events (the next SSE message, the end of a stream), never timers: the replica taking
 * over sees the dead one's lease run out through its own clock (`legacy.now`), set past the lease.
 */
import { getEventListeners } from 'node:events'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { InProcessEventBus, type EventBus } from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { ErrorCode, StoreUnavailableError } from '../../src/mcp/errors.ts'
import { consoleLogger } from '../../src/mcp/logger.ts'
import { CallStream } from '../../src/mcp/legacy/call-stream.ts'
import type { LegacySession as OpenedSession } from '../../src/mcp/legacy/session.ts'
import { DEFAULT_MAX_STREAMS_PER_SESSION } from '../../src/mcp/stream-limits.ts'
import { MAX_STREAMS_KEPT_PER_SESSION } from '../../src/mcp/stream-store.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { createApp } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { createNotesServer } from '../../src/notes/server.ts'
import type { EngineStore } from '../../src/mcp/stores/engine-store.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { compileServer, type CompiledServer } from '../../src/mcp/server.ts'
import { text } from '../../src/mcp/definitions.ts'
import type { NotesDeps } from '../../src/notes/deps.ts'
import { noArgsTools } from '../support/no-args-tool.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'
import {
  LegacySession,
  SseReaders,
  TEST_AUTH_ENV,
  startSession,
  type SseReader,
} from '../support/legacy-request.ts'
import { expectError, type JsonObject } from '../support/mcp-request.ts'
import { expectInsufficientScope, signTestToken } from '../support/test-tokens.ts'

const INVALID_REQUEST = -32600
const LEASE_MS = 10_000
/** How far ahead of real time a replica's clock runs to see another's lease as run out. */
const PAST_THE_LEASE = LEASE_MS + 1_000

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
/** The notes, and the engine's state every replica shares (`store`). */
const { store: notes, engineStore: store } = await sqliteStores()
const notesServer = createNotesServer()

const streams = new SseReaders()
afterEach(() => streams.cancelAll())
const reader = (response: Response) => streams.open(response)

/** Stops the replicas a test left waiting (their flows release their leases and end). */
const shutdowns: AbortController[] = []
afterEach(() => {
  for (const shutdown of shutdowns.splice(0)) shutdown.abort()
})

interface ReplicaOptions {
  /** The replica's engine store (default the shared one). */
  store?: EngineStore
  /** The replica's notes store (default the shared one). */
  notes?: NotesStore
  bus?: EventBus
  /** Added to the replica's clock. */
  skewMs?: number
  retentionMs?: number
  /** How long a connection stays open before the server lets go of it (`STREAM_MAX_SECONDS`). */
  maxDurationMs?: number
  /** The server behind the replica (default the notes server). */
  server?: CompiledServer<NotesDeps>
  /** Aborted: the replica's shutdown began (it claims no call). */
  draining?: AbortSignal
  /** Longest pause between two looks in the store for answers (default 20 ms). */
  answerPollMs?: number
}

/** A replica of the notes app on the shared store and key ring. */
function replica(options: ReplicaOptions = {}) {
  const shutdown = new AbortController()
  shutdowns.push(shutdown)
  const sessions = options.store ?? store
  const bus = options.bus ?? new InProcessEventBus()
  const now = () => Date.now() + (options.skewMs ?? 0)
  return createHttpApp({
    config: parseConfig({}),
    handler: createMcpHandler({
      server: options.server ?? notesServer,
      deps: { notes: options.notes ?? notes, bus, baseUrl: 'http://127.0.0.1:8787', now: Date.now },
      sealer,
      bus,
      draining: options.draining,
      shutdown: shutdown.signal,
      legacy: {
        sessions,
        now,
        input: { answerPollMs: options.answerPollMs ?? 20 },
        stream:
          options.maxDurationMs === undefined
            ? undefined
            : { maxDurationMs: options.maxDurationMs },
        resume: { leaseMs: LEASE_MS, retentionMs: options.retentionMs },
      },
    }),
  })
}

/**
 * The shared stores, until `die()`: from then on every call fails, as a replica that died makes no
 * more calls (`dieAfter` dies right after the first call of that name succeeds).
 */
function mortalStore(dieAfter?: keyof EngineStore | keyof NotesStore) {
  let dead = false
  const mortal = <Store extends object>(shared: Store): Store =>
    new Proxy(shared, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver)
        if (typeof value !== 'function') return value
        return async (...args: unknown[]) => {
          if (dead) throw new Error('this replica is dead')
          const result: unknown = await (value as (...a: unknown[]) => unknown).apply(target, args)
          if (name === dieAfter) dead = true
          return result
        }
      },
    })
  return {
    store: mortal<EngineStore>(store),
    notes: mortal<NotesStore>(notes),
    die: () => (dead = true),
  }
}

const FORM_CLIENT = { elicitation: {} }
const ACCEPT = { action: 'accept', content: { confirm: true } }

async function seed(title: string): Promise<string> {
  return (await notes.create(LOCAL_PRINCIPAL, { title, body: 'body', tags: [] }, Date.now())).id
}

const exists = async (id: string) => (await notes.get(LOCAL_PRINCIPAL, id)) !== undefined

/** The stream of `delete_note` of `noteId` called (as request `del`) in `session`. */
async function callDelete(session: LegacySession, noteId: string): Promise<SseReader> {
  return reader(
    await session.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: noteId } },
      { id: 'del' }
    )
  )
}

/** A form-capable session on `app`, and `delete_note` of a new note asking its confirmation. */
async function deleteFlow(
  app: ReturnType<typeof replica>,
  title: string,
  protocolVersion?: string
) {
  const noteId = await seed(title)
  const { session } = await startSession(app, { capabilities: FORM_CLIENT, protocolVersion })
  const stream = await callDelete(session, noteId)
  const ask = (await stream.next()) as JsonObject
  expect(ask).toMatchObject({ jsonrpc: '2.0', method: 'elicitation/create' })
  return { noteId, session, stream, ask, askId: stream.idOf(ask) as string }
}

/** The same session seen through another replica. */
function on(app: ReturnType<typeof replica>, session: LegacySession): LegacySession {
  return new LegacySession(app, session.id, session.protocolVersion)
}

/**
 * `delete_note` asking on a replica that then dies, its stream dropped, its confirmation answered
 * through `b`, whose clock sees the dead replica's lease as run out (`options` for more of `b`).
 */
async function orphanedDelete(title: string, options: ReplicaOptions = {}) {
  const mortal = mortalStore()
  const a = replica({ store: mortal.store })
  const b = replica({ skewMs: PAST_THE_LEASE, ...options })
  const flow = await deleteFlow(a, title)
  mortal.die()
  await flow.stream.cancel()
  expect((await on(b, flow.session).answer(flow.ask.id as string, ACCEPT)).status).toBe(202)
  return { ...flow, b }
}

/** `orphanedDelete` with its confirmation answered through a replica whose shutdown began. */
async function answeredWhileDraining(title: string) {
  const { b, ...flow } = await orphanedDelete(title, { draining: AbortSignal.abort() })
  return { ...flow, draining: b }
}

/** Resumes `session`'s stream after event `lastEventId`. */
function resume(session: LegacySession, lastEventId: string): Promise<Response> {
  return session.get({ 'last-event-id': lastEventId })
}

/**
 * `delete_note` asking on `a`, its stream dropped and resumed through `b` (which follows it while
 * `a` drives it), then confirmed: the resumed stream ends with the result.
 */
async function expectFollowed(
  a: ReturnType<typeof replica>,
  b: ReturnType<typeof replica>,
  title: string
): Promise<void> {
  const { session, stream, ask, askId } = await deleteFlow(a, title)
  await stream.cancel()
  const resumed = reader(await resume(on(b, session), askId))
  expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
  expect(await finalText(resumed)).toBe(`Deleted the note "${title}".`)
}

/** The stream's remaining messages end with the tool result of `del`; returns its text. */
async function finalText(stream: SseReader): Promise<string> {
  const rest = await stream.rest()
  const final = rest.at(-1) as JsonObject
  expect(final).toMatchObject({ jsonrpc: '2.0', id: 'del' })
  return (final.result as { content: [{ text: string }] }).content[0].text
}

describe('event ids and priming', () => {
  it('opens a 2025-11-25 POST stream with a priming event, then numbers every event of it', async () => {
    const app = replica()
    const { stream, ask, askId, session } = await deleteFlow(app, 'Primed')
    const [priming] = stream.ids
    expect(priming).toMatch(/^p[A-Za-z0-9_-]{16}\.0$/)
    const streamId = (priming as string).slice(0, -2)
    expect(askId).toBe(`${streamId}.1`)
    // The request id names the stream and the event that carries it.
    expect(ask.id).toBe(`s2c-${streamId}-1.tools/call.delete_note`)
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    const rest = await stream.rest()
    expect(stream.ids).toEqual([`${streamId}.0`, `${streamId}.1`, `${streamId}.2`])
    expect(rest).toHaveLength(1)
  })

  it('sends no empty priming event to a 2025-06-18 session, but still numbers its events', async () => {
    const app = replica()
    const { stream, askId } = await deleteFlow(app, 'Not primed', '2025-06-18')
    expect(stream.ids).toEqual([askId])
    expect(askId).toMatch(/^p[A-Za-z0-9_-]{16}\.1$/)
  })

  it('numbers the events of the GET notification stream', async () => {
    const app = replica()
    const { session } = await startSession(app)
    const get = reader(await session.get())
    await seed('A change the stream hears')
    await session.request('tools/call', {
      name: 'create_note',
      arguments: { title: 'Heard', body: 'b' },
    })
    const heard = (await get.next()) as JsonObject
    expect(heard.method).toBe('notifications/resources/list_changed')
    expect(get.idOf(heard)).toMatch(/^g[A-Za-z0-9_-]{16}\.1$/)
  })
})

describe('resuming a POST stream', () => {
  it('cancels nothing when the connection drops: the answer deletes, and a resume on another replica replays the result', async () => {
    const a = replica()
    const b = replica()
    const { noteId, session, stream, ask, askId } = await deleteFlow(a, 'Dropped')
    await stream.cancel()
    expect((await on(b, session).answer(ask.id as string, ACCEPT)).status).toBe(202)
    const resumed = reader(await resume(on(b, session), askId))
    expect(await finalText(resumed)).toBe('Deleted the note "Dropped".')
    expect(await exists(noteId)).toBe(false)
    // The replayed event keeps its number.
    expect(resumed.ids).toEqual([askId.replace(/\.1$/, '.2')])
  })

  it('replays from the priming event everything the stream carried, in order', async () => {
    const app = replica()
    const { session, stream, ask } = await deleteFlow(app, 'From the start')
    const [priming] = stream.ids as [string]
    await stream.cancel()
    const resumed = reader(await resume(session, priming))
    expect(await resumed.next()).toStrictEqual(ask)
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    expect(await finalText(resumed)).toBe('Deleted the note "From the start".')
  })

  it('follows a stream another replica still drives (no shared bus: the store is the backstop)', async () => {
    await expectFollowed(replica(), replica(), 'Followed')
  })

  it('answers 204 for a stream that has ended with nothing left after the id', async () => {
    const app = replica()
    const { session, stream, ask } = await deleteFlow(app, 'Over')
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    await stream.rest()
    const last = stream.ids.at(-1) as string
    const response = await resume(session, last)
    expect(response.status).toBe(204)
    expect(await response.text()).toBe('')
  })

  it.each([
    ['no event id this server sends', () => 'not-an-id'],
    ['a stream id nobody made', () => `p${'A'.repeat(16)}.1`],
    ['an event id with a sign', () => `p${'A'.repeat(16)}.-1`],
  ])('refuses %s with 400 -32600', async (_case, lastEventId) => {
    const app = replica()
    const { session } = await startSession(app)
    await expectError(await resume(session, lastEventId()), {
      status: 400,
      code: INVALID_REQUEST,
      id: null,
    })
  })

  it('refuses a resume whose Accept takes no text/event-stream with 406', async () => {
    const app = replica()
    const { session, stream, askId } = await deleteFlow(app, 'Not acceptable')
    await stream.cancel()
    await expectError(await session.get({ 'last-event-id': askId, accept: 'application/json' }), {
      status: 406,
      code: INVALID_REQUEST,
      id: null,
    })
  })

  it("refuses another session's stream: its events are never sent", async () => {
    const app = replica()
    const { stream, askId } = await deleteFlow(app, 'Not yours')
    await stream.cancel()
    const { session: other } = await startSession(app)
    const error = await expectError(await resume(other, askId), {
      status: 400,
      code: INVALID_REQUEST,
      id: null,
    })
    expect(error.message).toMatch(/names no stream of this session/)
  })

  it('refuses a stream whose events are past their retention', async () => {
    const a = replica({ retentionMs: 60_000 })
    const later = replica({ retentionMs: 60_000, skewMs: 120_000 })
    const { session, stream, askId } = await deleteFlow(a, 'Too late')
    await stream.cancel()
    await expectError(await resume(on(later, session), askId), {
      status: 400,
      code: INVALID_REQUEST,
      id: null,
    })
  })
})

describe('a call that stopped before it waited for the client', () => {
  /** Released by the test: until then the tool's handler runs (it has sent its progress). */
  let release = () => {}
  const stalling = compileServer<NotesDeps>({
    info: { name: 'stalling', version: '1' },
    tools: [
      noArgsTools<NotesDeps>()(
        'stalls',
        'Reports progress, then runs until released.',
        async (ctx) => {
          ctx.progress(1, 2, 'halfway')
          await new Promise<void>((resolve) => (release = resolve))
          return text('done')
        }
      ),
    ],
  })

  it('is ended with a JSON-RPC error by the replica its resumed stream reaches, once its driver is gone: never run again', async () => {
    const order: string[] = []
    const mortal = mortalStore()
    const watched = new Proxy(mortal.store, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver)
        if (name !== 'createStream' || typeof value !== 'function') return value
        return async (...args: unknown[]) => {
          const created: unknown = await (value as (...a: unknown[]) => unknown).apply(target, args)
          order.push('record stored')
          return created
        }
      },
    })
    const a = replica({ store: watched, server: stalling })
    const b = replica({ skewMs: PAST_THE_LEASE, server: stalling })
    const { session } = await startSession(a)
    const call = reader(
      await session.request(
        'tools/call',
        { name: 'stalls', arguments: {}, _meta: { progressToken: 'p' } },
        { id: 'del' }
      )
    )
    const progress = (await call.next()) as JsonObject
    order.push('first event read')
    expect(progress).toMatchObject({ method: 'notifications/progress', params: { progress: 1 } })
    // Nothing reaches the client before its stream's record (and lease) is stored.
    expect(order).toStrictEqual(['record stored', 'first event read'])
    expect(call.ids[0]).toMatch(/\.0$/)
    mortal.die()
    await call.cancel()
    const resumed = reader(await resume(on(b, session), call.idOf(progress) as string))
    const [ended] = (await resumed.rest()) as [JsonObject]
    expect(ended).toMatchObject({ jsonrpc: '2.0', id: 'del', error: { code: -32603 } })
    expect((ended.error as { message: string }).message).toMatch(/stopped before it finished/)
    release()
    // Ended: a later resume has nothing left (204), and nothing ran it again.
    expect((await resume(on(b, session), resumed.idOf(ended) as string)).status).toBe(204)
  })
})

describe('resuming with auth', () => {
  const alice = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice')
  const authApp = createApp(parseConfig(TEST_AUTH_ENV), {
    store: notes,
    engineStore: store,
    sealer,
    bus: new InProcessEventBus(),
  })
  const tokenOf = async (subject: string, scope?: string) => ({
    authorization: `Bearer ${await signTestToken({ subject, scope })}`,
  })

  it("gives another principal nothing (404, as for any session not its own), and a token of the session's principal without the call's scopes the 403", async () => {
    const noteId = (await notes.create(alice, { title: 'Hers', body: 'b', tags: [] }, Date.now()))
      .id
    const { session } = await startSession(authApp, {
      capabilities: FORM_CLIENT,
      headers: await tokenOf('alice', 'notes:write'),
    })
    const stream = await callDelete(session, noteId)
    const ask = (await stream.next()) as JsonObject
    const askId = stream.idOf(ask) as string
    await stream.cancel()
    const mallory = await session.get({
      'last-event-id': askId,
      ...(await tokenOf('mallory', 'notes:write')),
    })
    await expectError(mallory, { status: 404, code: -32001, id: null })
    await expectInsufficientScope(
      await session.get({ 'last-event-id': askId, ...(await tokenOf('alice', 'notes:read')) }),
      'notes:write',
      null
    )
    // Her own token with the call's scopes resumes it.
    const resumed = reader(
      await session.get({ 'last-event-id': askId, ...(await tokenOf('alice', 'notes:write')) })
    )
    expect(
      (await session.answer(ask.id as string, ACCEPT, await tokenOf('alice', 'notes:write'))).status
    ).toBe(202)
    expect(await finalText(resumed)).toBe('Deleted the note "Hers".')
  })
})

describe('letting go of a connection', () => {
  it('lets go of a POST connection at the stream bound with a retry; the resumed stream finishes the flow', async () => {
    const app = replica({ maxDurationMs: 1 })
    const noteId = await seed('Bounded')
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const first = await callDelete(session, noteId)
    // Whatever the first connection carried before it was let go of, it ends with the retry hint.
    const carried = await first.rest()
    expect(first.retries).toEqual([1000])
    let ask = carried.find((message) => message.method === 'elicitation/create')
    let last = first.ids.at(-1) as string
    // Each connection is let go of too: resume until the question has arrived.
    for (let tries = 0; !ask && tries < 100; tries++) {
      const again = reader(await resume(session, last))
      ask = (await again.rest()).find((message) => message.method === 'elicitation/create')
      last = again.ids.at(-1) ?? last
    }
    if (!ask) throw new Error('the question never arrived')
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    let final: JsonObject | undefined
    for (let tries = 0; !final && tries < 100; tries++) {
      const again = reader(await resume(session, last))
      final = (await again.rest()).find((message) => message.id === 'del')
      last = again.ids.at(-1) ?? last
    }
    expect(final?.result).toMatchObject({ content: [{ text: 'Deleted the note "Bounded".' }] })
    expect(await exists(noteId)).toBe(false)
  })

  it('lets go of the connection when the handler calls ctx.closeStream, and answers on the resumed stream', async () => {
    const fixture = createFixtureApp(parseConfig({}), {
      sealer,
      bus: new InProcessEventBus(),
      sessions: store,
    })
    const { session } = await startSession(fixture)
    const first = reader(
      await session.request(
        'tools/call',
        { name: 'test_reconnection', arguments: {} },
        { id: 'del' }
      )
    )
    expect(await first.rest()).toStrictEqual([])
    expect(first.retries).toEqual([1000])
    const [priming] = first.ids as [string]
    const resumed = reader(await resume(session, priming))
    expect(await finalText(resumed)).toMatch(/^Reconnection test completed/)
  })
})

describe('resuming the GET notification stream', () => {
  it('goes on under the same id, numbered on, opening with a list-changed hint', async () => {
    const app = replica()
    const { session } = await startSession(app)
    const first = `g${'B'.repeat(16)}.41`
    const resumed = reader(await resume(session, first))
    const hint = (await resumed.next()) as JsonObject
    expect(hint).toStrictEqual({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' })
    expect(resumed.idOf(hint)).toBe(`g${'B'.repeat(16)}.42`)
  })
})

describe('a call that outlives its replica', () => {
  it('is claimed by the replica a resume reaches once the dead one’s lease ran out, and the note deleted once', async () => {
    const { noteId, session, askId, b } = await orphanedDelete('Orphaned')
    const resumed = reader(await resume(on(b, session), askId))
    expect(await finalText(resumed)).toBe('Deleted the note "Orphaned".')
    expect(await exists(noteId)).toBe(false)
  })

  it('is taken over by the replica its answer reaches, the result kept for the resumed stream', async () => {
    const { noteId, session, askId } = await orphanedDelete('Answered elsewhere')
    // Its clock sees the dead replica's lease still held: it can only follow, never claim.
    const c = replica()
    const resumed = reader(await resume(on(c, session), askId))
    expect(await finalText(resumed)).toBe('Deleted the note "Answered elsewhere".')
    expect(await exists(noteId)).toBe(false)
  })

  it('is not claimed while its replica holds the lease: the resume follows it instead', async () => {
    // Its clock is behind: the lease looks fresh for longer.
    await expectFollowed(replica(), replica({ skewMs: -PAST_THE_LEASE }), 'Still alive')
  })

  it('is finished by the replica that claimed it when the answer reaches the one that lost its lease unaware', async () => {
    const bus = new InProcessEventBus()
    // `a` still waits for the answer; `b`, whose clock sees a's lease as run out, claims the call
    // on a resume and waits too, woken only by the bus (it never looks in the store on a timer).
    const a = replica({ bus })
    // b's first look for answers, once it waits for them (subscribed to the bus already).
    const looked = Promise.withResolvers<void>()
    const watched = new Proxy(store, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          if (name === 'readInput') looked.resolve()
          return (value as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    })
    const b = replica({ store: watched, bus, skewMs: PAST_THE_LEASE, answerPollMs: Infinity })
    const { noteId, session, stream, ask, askId } = await deleteFlow(a, 'Lost lease')
    await stream.cancel()
    const resumed = reader(await resume(on(b, session), askId))
    await looked.promise
    // The answer goes to `a`, which hands it to its own stale wait: the bus must still wake `b`.
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    expect(await finalText(resumed)).toBe('Deleted the note "Lost lease".')
    expect(await exists(noteId)).toBe(false)
  })

  it('deletes once when the dead replica deleted the note but never stored the answer', async () => {
    const mortal = mortalStore('delete')
    const a = replica({ store: mortal.store, notes: mortal.notes })
    const b = replica({ skewMs: PAST_THE_LEASE })
    const { noteId, session, stream, ask, askId } = await deleteFlow(a, 'Half done')
    await stream.cancel()
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    // `a` deletes and dies before its answer is stored: `b` re-runs the round from the checkpoint.
    const resumed = reader(await resume(on(b, session), askId))
    expect(await finalText(resumed)).toBe('Deleted the note "Half done".')
    expect(await exists(noteId)).toBe(false)
  })
})

describe('a replica whose shutdown began', () => {
  it('stores an answer to an orphaned call but claims nothing: a resume there replays and lets go with a retry, the next replica finishes it', async () => {
    const title = 'Answered while draining'
    const { noteId, session, stream, ask, askId, draining } = await answeredWhileDraining(title)
    const replayed = reader(await resume(on(draining, session), stream.ids[0]!))
    expect(await replayed.rest()).toEqual([ask])
    expect(replayed.retries).toEqual([1000])
    expect(await exists(noteId)).toBe(true)

    const resumed = reader(await resume(on(replica({ skewMs: PAST_THE_LEASE }), session), askId))
    expect(await finalText(resumed)).toBe(`Deleted the note "${title}".`)
    expect(await exists(noteId)).toBe(false)
  })
})

describe('a resumed connection let go before anything new is written', () => {
  it('tells the client again where it is, so the v1 SDK resumes this stream and not the GET stream', async () => {
    const title = 'Let go with nothing new'
    const { noteId, session, askId, draining } = await answeredWhileDraining(title)
    // Resumed after its last event on a replica that claims nothing: it lets go at once.
    const replayed = reader(await resume(on(draining, session), askId))
    expect(await replayed.rest()).toEqual([])
    expect(replayed.ids).toEqual([askId])
    expect(replayed.retries).toEqual([1000])

    const resumed = reader(await resume(on(replica({ skewMs: PAST_THE_LEASE }), session), askId))
    expect(await finalText(resumed)).toBe(`Deleted the note "${title}".`)
    expect(await exists(noteId)).toBe(false)
  })
})

describe('what a call leaves on its replica', () => {
  it('nothing on the shutdown signal once it ended: a replica serving calls for weeks holds none of them', async () => {
    const app = replica()
    const shutdown = shutdowns.at(-1) as AbortController
    const before = getEventListeners(shutdown.signal, 'abort').length
    for (const title of ['Left nothing 1', 'Left nothing 2', 'Left nothing 3']) {
      const { session, stream, ask } = await deleteFlow(app, title)
      expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
      expect(await finalText(stream)).toBe(`Deleted the note "${title}".`)
    }
    // The last call releases its lease just after its answer went out.
    await vi.waitFor(
      () => expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(before),
      {
        timeout: 30_000,
      }
    )
  })

  it('nothing either when the release of its lease is refused (a database outage): the lease runs out instead', async () => {
    const releases: unknown[] = []
    const refusing = new Proxy(store, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver)
        if (typeof value !== 'function') return value
        const method = (value as (...a: unknown[]) => unknown).bind(target)
        if (name !== 'updateStream') return method
        return (...args: unknown[]) => {
          const patch = args[3] as { leaseOwner?: unknown }
          if (patch.leaseOwner !== null) return method(...args)
          releases.push(patch)
          return Promise.reject(new StoreUnavailableError(new Error('ECONNREFUSED')))
        }
      },
    })
    const app = replica({ store: refusing })
    const shutdown = shutdowns.at(-1) as AbortController
    const before = getEventListeners(shutdown.signal, 'abort').length
    const { session, stream, ask } = await deleteFlow(app, 'Released during an outage')
    expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
    expect(await finalText(stream)).toBe('Deleted the note "Released during an outage".')
    await vi.waitFor(() => expect(releases).toHaveLength(1), { timeout: 30_000 })
    await vi.waitFor(
      () => expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(before),
      {
        timeout: 30_000,
      }
    )
  })

  it('a call that asks once shutdown began lets its lease go at once: the replica its client resumes on claims it without waiting for the lease to run out, and finishes it', async () => {
    const mortal = mortalStore()
    const a = replica({ store: mortal.store })
    ;(shutdowns.at(-1) as AbortController).abort()
    const noteId = await seed('Asked while shutting down')
    const { session } = await startSession(a, { capabilities: FORM_CLIENT })
    const stream = await callDelete(session, noteId)
    const seen = await stream.rest()
    expect(stream.retries).toEqual([1000])
    // The replica is gone, its clock no further on than the survivor's: only a released lease lets
    // the survivor take the call over now.
    mortal.die()
    const b = replica()
    const resumed = reader(await resume(on(b, session), stream.ids.at(-1) as string))
    const ask =
      seen.find((message) => message.method === 'elicitation/create') ?? (await resumed.next())
    expect(ask).toMatchObject({ method: 'elicitation/create' })
    if (!ask) throw new Error('no question asked')
    expect((await on(b, session).answer(ask.id as string, ACCEPT)).status).toBe(202)
    expect(await finalText(resumed)).toBe('Deleted the note "Asked while shutting down".')
    expect(await exists(noteId)).toBe(false)
  })
})

describe('a call whose stream cannot be recorded', () => {
  it.each(['createStream', 'expectInput'] as const)(
    'in a database outage (%s refused), answers the outage error (-32030, retry shortly), not an internal error and never a stream left waiting; deletes nothing',
    async (refused) => {
      const outage = new Proxy(store, {
        get(target, name, receiver) {
          const value: unknown = Reflect.get(target, name, receiver)
          if (typeof value !== 'function') return value
          if (name !== refused) return (value as (...a: unknown[]) => unknown).bind(target)
          return () => Promise.reject(new StoreUnavailableError(new Error('ECONNREFUSED')))
        },
      })
      const app = replica({ store: outage })
      const noteId = await seed(`Asked during an outage (${refused})`)
      const { session } = await startSession(app, { capabilities: FORM_CLIENT })
      const stream = await callDelete(session, noteId)
      const answer = (await stream.next()) as JsonObject
      expect(answer).toMatchObject({
        id: 'del',
        error: { code: ErrorCode.StoreUnavailable, message: expect.stringMatching(/retry/) },
      })
      expect(await exists(noteId)).toBe(true)
    }
  )
})

describe("the cap on a session's kept streams", () => {
  /** `delete_note` of a new note on `session`, waiting for its confirmation. */
  async function waitingDelete(session: LegacySession, title: string) {
    const noteId = await seed(title)
    const name = 'delete_note'
    const stream = reader(await session.request('tools/call', { name, arguments: { id: noteId } }))
    expect(await stream.next()).toMatchObject({ method: 'elicitation/create' })
    return stream
  }

  it('refuses a call that would wait once its session holds as many kept streams as it may, across replicas; another session is unaffected', async () => {
    // Each replica lets a session hold only so many waiting calls open on it: the cap in the store
    // is reached over several, as a session's calls spread over a fleet.
    const replicas = Math.ceil(MAX_STREAMS_KEPT_PER_SESSION / DEFAULT_MAX_STREAMS_PER_SESSION)
    const apps = Array.from({ length: replicas + 1 }, () => replica())
    const { session } = await startSession(apps[0]!, { capabilities: FORM_CLIENT })
    for (let i = 0; i < MAX_STREAMS_KEPT_PER_SESSION; i++) {
      const app = apps[Math.floor(i / DEFAULT_MAX_STREAMS_PER_SESSION)]!
      await waitingDelete(on(app, session), `Waiting ${i}`)
    }
    const fresh = apps[replicas]!
    const noteId = await seed('One too many')
    const refused = reader(
      await on(fresh, session).request(
        'tools/call',
        { name: 'delete_note', arguments: { id: noteId } },
        { id: 'del' }
      )
    )
    expect(await refused.next()).toStrictEqual({
      jsonrpc: '2.0',
      id: 'del',
      error: {
        code: -32602,
        message: expect.stringMatching(
          new RegExp(
            `^Too many calls of this session are in progress \\(${MAX_STREAMS_KEPT_PER_SESSION}\\b.*; let some finish or cancel them first`
          )
        ) as unknown,
        data: {
          cap: 'streams',
          scope: 'session',
          limit: MAX_STREAMS_KEPT_PER_SESSION,
          held: MAX_STREAMS_KEPT_PER_SESSION,
        },
      },
    })
    expect(await refused.next()).toBeUndefined()
    expect(await exists(noteId)).toBe(true)
    // Its stream was not kept: its events carry no id, so the client has nothing to resume from.
    expect(refused.ids).toStrictEqual([])
    // Another session of the same principal has its own room.
    const other = await deleteFlow(fresh, 'Another session')
    expect((await other.session.answer(other.ask.id as string, ACCEPT)).status).toBe(202)
    expect(await finalText(other.stream)).toBe('Deleted the note "Another session".')
  })

  it('a stream refused by the cap is written live only, its events never stored, the warning logged once', async () => {
    const sid = `sid-${crypto.randomUUID()}`
    const now = Date.now()
    for (let i = 0; i < MAX_STREAMS_KEPT_PER_SESSION; i++) {
      const kept = { sid, stream: `kept-${i}`, expiresAt: now + 60_000 }
      expect(await store.createStream(kept, MAX_STREAMS_KEPT_PER_SESSION, now)).toBeDefined()
    }
    const warnings: string[] = []
    const context = {
      store,
      bus: new InProcessEventBus(),
      logger: { warn: (message: string) => warnings.push(message), error: () => {} },
      now: () => now,
      retentionMs: 60_000,
      connection: {
        keepAliveMs: 60_000,
        maxDurationMs: 60_000,
        retryMs: 1000,
        maxQueuedBytes: 1 << 16,
      },
      leases: {
        store,
        owner: 'replica-test',
        leaseMs: LEASE_MS,
        retentionMs: 60_000,
        now: () => now,
        logger: consoleLogger,
        held: new Set<string>(),
      },
    }
    const session = { sid, protocolVersion: '2025-11-25' } as OpenedSession
    const request = {
      id: 1,
      method: 'tools/call',
      params: {},
      protocolVersion: '2025-11-25',
      clientCapabilities: {},
    }
    const call = new CallStream(context, session, request)
    const live = reader(call.open().connection!.response)
    for (let n = 1; n <= 3; n++)
      call.notify({ jsonrpc: '2.0', method: 'notifications/message', params: { n } })
    for (let n = 1; n <= 3; n++) expect(await live.next()).toMatchObject({ params: { n } })
    expect(await call.lease()).toBe('session-full')
    // No priming event and no ids: nothing could resume it.
    expect(live.ids).toStrictEqual([])
    const { stream } = call.open()
    expect(await store.getStream(sid, stream)).toBeUndefined()
    expect(await store.readEvents(sid, stream, 0, 10, now)).toStrictEqual([])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/not kept/)
  })

  it('counts only calls in progress: after more interactive calls than it may keep, all ended, the next one still asks and finishes; the oldest ended stream made room', async () => {
    const app = replica()
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    /** A confirmed `delete_note` on `session`, to its end; the id of its stream's priming event. */
    async function completedDelete(title: string): Promise<string> {
      const noteId = await seed(title)
      const stream = await callDelete(session, noteId)
      const ask = (await stream.next()) as JsonObject
      expect(ask).toMatchObject({ method: 'elicitation/create' })
      expect((await session.answer(ask.id as string, ACCEPT)).status).toBe(202)
      expect(await finalText(stream)).toBe(`Deleted the note "${title}".`)
      expect(await exists(noteId)).toBe(false)
      return stream.ids[0] as string
    }
    const primings: string[] = []
    for (let i = 0; i <= MAX_STREAMS_KEPT_PER_SESSION; i++) {
      primings.push(await completedDelete(`Done ${i}`))
    }
    const last = await completedDelete('One more')
    // The oldest ended streams gave up their places: nothing resumes them.
    await expectError(await resume(session, primings[0]!), {
      status: 400,
      code: INVALID_REQUEST,
      id: null,
    })
    // The newest is still kept, for a client that lost its connection before the answer.
    const replayed = reader(await resume(session, last))
    expect(await replayed.next()).toMatchObject({ method: 'elicitation/create' })
    expect(await finalText(replayed)).toBe('Deleted the note "One more".')
  })
})
