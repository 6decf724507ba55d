/**
 * The caps on held-open streams per session and per principal (`stream-limits.ts`), in-process on the
 * notes app with bearer auth (real in-memory SQLite store, in-process event bus), caps set small
 * through the environment: `subscriptions/listen` streams, 2025 GET streams and 2025 interactive
 * POSTs waiting for the client's answer count together; one over a cap is refused with -32602 and
 * `data` `{ cap: 'streams', scope, limit, held }` before anything opens: a stream's opening (listen,
 * GET) with 429, an interactive call with 200, as JSON or inside the SSE stream it already streams
 * progress on (it asks nothing and changes nothing); and a
 * slot comes back however its stream's connection is done — the client closing it or going away,
 * the server dropping a stream fallen behind, the end of one the server ended (shutdown) read by its
 * client or dropped when nobody read it within the grace period (fake timers stand in for the
 * period), an interactive call answered or cancelled. An end is seen as the stream's own end (the
 * reader's cancel, the last message, the body's error), never as time passing.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as z from 'zod'
import { createApp } from '../../src/app.ts'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { definitions, text } from '../../src/mcp/definitions.ts'
import { DEFAULT_END_GRACE_MS, DEFAULT_MAX_BACKLOG_EVENTS } from '../../src/mcp/event-stream.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { StreamLimits } from '../../src/mcp/stream-limits.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer } from '../../src/mcp/server.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import {
  SseReaders,
  TEST_AUTH_ENV,
  bearer,
  startSession,
  type LegacySession,
  type SseReader,
} from '../support/legacy-request.ts'
import {
  expectError,
  mcpInit,
  parseSse,
  requestApp,
  type JsonObject,
} from '../support/mcp-request.ts'

const INVALID_PARAMS = -32602
const PER_SESSION = 2
const PER_PRINCIPAL = 3
const CAPS = {
  ...TEST_AUTH_ENV,
  MAX_STREAMS_PER_SESSION: String(PER_SESSION),
  MAX_STREAMS_PER_PRINCIPAL: String(PER_PRINCIPAL),
}
/** Which cap refuses: the session's or the principal's, and its limit. */
type Cap = { scope: 'session' | 'principal'; limit: number }
const SESSION_FULL: Cap = { scope: 'session', limit: PER_SESSION }
const PRINCIPAL_FULL: Cap = { scope: 'principal', limit: PER_PRINCIPAL }

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const { store, engineStore } = await sqliteStores()

const streams = new SseReaders()
afterEach(() => streams.cancelAll())

/** A notes app of its own: its caps count only the streams of one test. */
function notesApp(shutdown?: AbortSignal) {
  const bus = new InProcessEventBus()
  return { app: createApp(parseConfig(CAPS), { store, engineStore, sealer, bus, shutdown }), bus }
}
type Deps = ReturnType<typeof notesApp>['app']

const LIST_CHANGES = { resourcesListChanged: true }

/** The init of a listen POST of `subject` (`postMcp` sends the same). */
async function listenInit(
  subject: string,
  id: string | number,
  notifications: JsonObject = LIST_CHANGES
): Promise<RequestInit> {
  return mcpInit('subscriptions/listen', {
    id,
    params: { notifications },
    headers: await bearer(subject),
  })
}

async function listen(app: Deps, subject: string, id: string | number, notifications?: JsonObject) {
  return requestApp(app, '/mcp', await listenInit(subject, id, notifications))
}

/** An open listen stream, its acknowledgment read. */
async function openListen(
  app: Deps,
  subject: string,
  id: string | number,
  notifications?: JsonObject
): Promise<SseReader> {
  const stream = streams.open(await listen(app, subject, id, notifications))
  expect(await stream.next()).toMatchObject({ method: 'notifications/subscriptions/acknowledged' })
  return stream
}

async function session(app: Deps, subject: string): Promise<LegacySession> {
  return (
    await startSession(app, { headers: await bearer(subject), capabilities: { elicitation: {} } })
  ).session
}

const openGet = async (of: LegacySession) => streams.open(await of.get())

/** A `delete_note` of a fresh note, held open by its confirmation question (read from the stream). */
async function holdDelete(of: LegacySession, subject: string, id: string) {
  const note = await store.create(
    tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, subject),
    {
      title: `Held ${id}`,
      body: '',
      tags: [],
    },
    Date.now()
  )
  const stream = streams.open(
    await of.request('tools/call', { name: 'delete_note', arguments: { id: note.id } }, { id })
  )
  const ask = (await stream.next()) as JsonObject
  expect(ask).toMatchObject({ method: 'elicitation/create' })
  return { stream, ask, noteId: note.id }
}

/** The JSON-RPC error refusing a caller that holds `cap`'s limit of streams. */
function refusal({ scope, limit }: Cap) {
  return {
    code: INVALID_PARAMS,
    message:
      scope === 'session'
        ? `Too many open streams: this session holds ${limit} streams open on this server (GET streams and calls waiting for an answer), and at most ${limit} are allowed; close one, or let a waiting call finish, then try again.`
        : `Too many open streams: you hold ${limit} streams open on this server (subscriptions/listen and GET streams, and calls waiting for an answer), and at most ${limit} are allowed; close some, or let waiting calls finish, then try again.`,
    data: { cap: 'streams', scope, limit, held: limit },
  }
}

/** A stream's opening refused at `cap`: 429 before anything opens. */
const expectRefused = (response: Response, id: string | number | null, cap: Cap) =>
  expectError(response, { status: 429, code: INVALID_PARAMS, id }).then((error) =>
    expect(error).toStrictEqual(refusal(cap))
  )

/** An interactive call refused at `cap`: an operation refused, answered with 200. */
const expectCallRefused = (response: Response, id: string | number, cap: Cap) =>
  expectError(response, { status: 200, code: INVALID_PARAMS, id }).then((error) =>
    expect(error).toStrictEqual(refusal(cap))
  )

describe('subscriptions/listen streams', () => {
  it('refuses a principal its listen stream past the cap with 429, and takes one again once a stream is closed', async () => {
    const { app } = notesApp()
    const open = [] as SseReader[]
    for (let index = 0; index < PER_PRINCIPAL; index++)
      open.push(await openListen(app, 'alice', index))
    await expectRefused(await listen(app, 'alice', 'over'), 'over', PRINCIPAL_FULL)
    // Another principal's count is its own.
    await openListen(app, 'bob', 'bob')

    await open[0]!.cancel()
    await openListen(app, 'alice', 'again')
    await expectRefused(await listen(app, 'alice', 'over again'), 'over again', PRINCIPAL_FULL)
  })

  it('takes the slot back when the client goes away (the request is aborted)', async () => {
    const { app } = notesApp()
    for (let index = 0; index < PER_PRINCIPAL - 1; index++) await openListen(app, 'alice', index)
    const gone = new AbortController()
    const response = await requestApp(app, '/mcp', {
      ...(await listenInit('alice', 'leaving')),
      signal: gone.signal,
    })
    expect(response.status).toBe(200)
    await expectRefused(await listen(app, 'alice', 'over'), 'over', PRINCIPAL_FULL)
    gone.abort()
    await openListen(app, 'alice', 'after')
  })

  it('takes the slot back when the server drops a stream that fell too far behind', async () => {
    const { app, bus } = notesApp()
    // Streams that send nothing for the flood below, so they never fall behind.
    const quiet = { resourceSubscriptions: ['note://n_elsewhere'] }
    for (let index = 0; index < PER_PRINCIPAL - 1; index++) {
      await openListen(app, 'alice', index, quiet)
    }
    const behind = await listen(app, 'alice', 'behind')
    expect(behind.status).toBe(200)
    await expectRefused(await listen(app, 'alice', 'over'), 'over', PRINCIPAL_FULL)
    const alice = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice')
    for (let index = 0; index <= DEFAULT_MAX_BACKLOG_EVENTS * 2; index++) {
      bus.publish({ kind: 'resources_list_changed', principal: alice })
    }
    await expect(behind.text()).rejects.toMatchObject({ name: 'StreamDroppedError' })
    // Exactly the one slot came back.
    await openListen(app, 'alice', 'after')
    await expectRefused(await listen(app, 'alice', 'over again'), 'over again', PRINCIPAL_FULL)
  })

  it('takes every slot back at shutdown', async () => {
    const shutdown = new AbortController()
    const { app } = notesApp(shutdown.signal)
    const open = [] as SseReader[]
    for (let index = 0; index < PER_PRINCIPAL; index++)
      open.push(await openListen(app, 'alice', index))
    shutdown.abort()
    for (const stream of open) {
      expect(await stream.rest()).toEqual([expect.objectContaining({ result: expect.anything() })])
    }
    // A stream opened during shutdown ends at once, with its slot.
    for (let index = 0; index < PER_PRINCIPAL + 1; index++) {
      const late = streams.open(await listen(app, 'alice', `late-${index}`))
      expect((await late.rest()).at(-1)).toMatchObject({ result: { resultType: 'complete' } })
    }
  })

  it('keeps the slot of a stream ended at shutdown until its end is read, or until the grace period drops it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] })
    try {
      const shutdown = new AbortController()
      const { app } = notesApp(shutdown.signal)
      const unread: Response[] = []
      for (let index = 0; index < PER_PRINCIPAL; index++) {
        unread.push(await listen(app, 'alice', index))
      }
      shutdown.abort()
      // Ended, but nobody has read the ends: every slot is still held.
      await expectRefused(await listen(app, 'alice', 'over'), 'over', PRINCIPAL_FULL)

      // One end is read: that slot comes back, to a stream that ends at once and is not read.
      const [read, ...others] = unread as [Response, ...Response[]]
      expect(parseSse(await read.text()).at(-1)).toMatchObject({
        id: 0,
        result: { resultType: 'complete' },
      })
      const late = await listen(app, 'alice', 'late')
      expect(late.status).toBe(200)
      await expectRefused(await listen(app, 'alice', 'over again'), 'over again', PRINCIPAL_FULL)

      // The grace period runs out: the ends nobody read are dropped, and their slots come back.
      vi.advanceTimersByTime(DEFAULT_END_GRACE_MS)
      for (const response of [...others, late]) {
        await expect(response.text()).rejects.toMatchObject({ name: 'StreamDroppedError' })
      }
      for (let index = 0; index < PER_PRINCIPAL; index++) {
        streams.open(await listen(app, 'alice', `after-${index}`))
      }
      await expectRefused(
        await listen(app, 'alice', 'over at last'),
        'over at last',
        PRINCIPAL_FULL
      )
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('2025 GET streams', () => {
  it('refuses a session its GET stream past the session cap, and a principal past its own', async () => {
    const { app } = notesApp()
    const one = await session(app, 'alice')
    const first = await openGet(one)
    await openGet(one)
    await expectRefused(await one.get(), null, SESSION_FULL)

    const two = await session(app, 'alice')
    await openGet(two)
    await expectRefused(await two.get(), null, PRINCIPAL_FULL)
    // The listen streams of the principal count too.
    await expectRefused(await listen(app, 'alice', 'listen'), 'listen', PRINCIPAL_FULL)

    await first.cancel()
    await openGet(two)
    await expectRefused(await one.get(), null, PRINCIPAL_FULL)
  })
})

describe('2025 interactive calls waiting for an answer', () => {
  it('refuses a call that would wait past the session cap before asking anything, and takes it again once a call is answered', async () => {
    const { app } = notesApp()
    const alice = await session(app, 'alice')
    const answered = await holdDelete(alice, 'alice', 'first')
    await holdDelete(alice, 'alice', 'second')

    const note = await store.create(
      tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice'),
      {
        title: 'Not asked about',
        body: '',
        tags: [],
      },
      Date.now()
    )
    const refused = await alice.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: note.id } },
      { id: 'third' }
    )
    await expectCallRefused(refused, 'third', SESSION_FULL)
    expect(
      await store.get(tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice'), note.id)
    ).toBeDefined()
    // The GET stream counts with them.
    await expectRefused(await alice.get(), null, SESSION_FULL)

    expect(
      (await alice.answer(answered.ask.id, { action: 'accept', content: { confirm: true } })).status
    ).toBe(202)
    expect((await answered.stream.rest()).at(-1)).toMatchObject({ id: 'first', result: {} })
    await holdDelete(alice, 'alice', 'fourth')
  })

  it('counts waiting calls of all a principal’s sessions, and takes a slot back when a call is cancelled', async () => {
    const { app } = notesApp()
    const one = await session(app, 'alice')
    const two = await session(app, 'alice')
    const cancelled = await holdDelete(one, 'alice', 'one')
    await openGet(one)
    await holdDelete(two, 'alice', 'two')
    await expectRefused(await two.get(), null, PRINCIPAL_FULL)

    expect((await one.notify('notifications/cancelled', { requestId: 'one' })).status).toBe(202)
    expect(await cancelled.stream.rest()).toEqual([])
    await openGet(two)
  })
})

describe('a 2025 interactive call refused after it streamed progress', () => {
  const GO_ON = z.object({ ok: z.boolean() })
  /** Streams progress, then asks: a refusal at its first ask comes inside its SSE stream. */
  const progressThenAsk = definitions<null>().tool({
    name: 'progress_then_ask',
    description: 'Reports progress, then asks whether to go on.',
    input: z.object({}),
    async run(_args, ctx) {
      ctx.progress(1, 2, 'Started')
      const answer = await ctx.elicit('go_on', { message: 'Go on?', schema: GO_ON })
      return text(answer.action)
    },
  })

  it('answers the same -32602 at 200 inside the stream as it does as JSON', async () => {
    const server = compileServer<null>({
      info: { name: 'stream-limits-progress', version: '0.0.0' },
      tools: [progressThenAsk],
    })
    const handler = createMcpHandler({
      server,
      deps: null,
      sealer,
      bus: new InProcessEventBus(),
      legacy: { sessions: engineStore },
      streamLimits: new StreamLimits({ maxStreamsPerSession: 1 }),
    })
    const app = createHttpApp({ config: parseConfig({}), handler })
    const { session: one } = await startSession(app, { capabilities: { elicitation: {} } })
    await openGet(one)
    const cap: Cap = { scope: 'session', limit: 1 }
    const call = (id: string, meta?: JsonObject) =>
      one.request('tools/call', { name: progressThenAsk.name, arguments: {}, _meta: meta }, { id })

    await expectCallRefused(await call('json'), 'json', cap)
    const streamed = streams.open(await call('sse', { progressToken: 'p' }))
    expect(await streamed.rest()).toStrictEqual([
      expect.objectContaining({ method: 'notifications/progress' }),
      { jsonrpc: '2.0', id: 'sse', error: refusal(cap) },
    ])
  })
})

describe('configuration', () => {
  it('refuses caps that are not whole numbers from 1, naming the variable', () => {
    expect(() => parseConfig({ MAX_STREAMS_PER_SESSION: '0' })).toThrow(/MAX_STREAMS_PER_SESSION/)
    expect(() => parseConfig({ MAX_STREAMS_PER_PRINCIPAL: '2.5' })).toThrow(
      /MAX_STREAMS_PER_PRINCIPAL/
    )
    expect(() => new StreamLimits({ maxStreamsPerPrincipal: Infinity })).toThrow(RangeError)
    expect(() => new StreamLimits({ maxStreamsPerPrincipal: Infinity })).toThrow(
      'maxStreamsPerPrincipal must be a whole number from 1 to 100000, got Infinity'
    )
  })
})
