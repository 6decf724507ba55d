/**
 * What ends with a 2025-era session, in process (`legacy/session-end.ts`): the engine's handler with
 * the in-memory store and bus, a tool that asks its caller a question, and caps of two streams per
 * principal. A session ends by DELETE, by eviction when `initialize` finds its principal at a session
 * cap of one, and by the expiry of its record (the sealer's and the era's clock moved by the test,
 * the timer behind it faked and run); each time, its open GET stream ends, its call waiting for an
 * answer ends with -32001 saying the session ended, and the two slots they held are free at once: a
 * new session opens two streams where the cap was full; a call's stream resumed on another connection
 * carries the call's error too. The event itself crosses a bus between processes as every event does
 * (its wire schema) and reaches only listeners of its session. Waits are the streams' ends, never
 * timers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Hono } from 'hono'
import * as z from 'zod'
import {
  InProcessEventBus,
  LOCAL_PRINCIPAL,
  MemoryEngineStore,
  text,
  tool,
  type McpLogger,
  type ServerEvent,
} from 'stateless-mcp'
import { StateSealer, StreamLimits, compileServer, createMcpHandler } from 'stateless-mcp/compose'
import {
  concerns,
  eventScope,
  parseServerEvent,
  serializeServerEvent,
} from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import {
  SseReaders,
  startSession,
  type LegacySession,
  type SseReader,
} from '../support/legacy-request.ts'
import type { JsonObject } from '../support/mcp-request.ts'

const SESSION_NOT_FOUND = -32001
const TTL_SECONDS = 60
const FORM_CLIENT = { elicitation: {} }

/** Asks the caller's name, then greets it. */
const greet = tool({
  name: 'greet',
  description: 'Greets a person, asking the name first.',
  input: z.object({}),
  async run(_args, ctx) {
    const answer = await ctx.elicit('name', {
      message: 'What is your name?',
      schema: z.object({ name: z.string() }),
    })
    return text(answer.action === 'accept' ? `Hello, ${answer.content.name}` : 'Hello')
  },
})
const server = compileServer({ info: { name: 'session-end', version: '1.0.0' }, tools: [greet] })

/** The clock of the sealer (session ids and records) and of the era: tests move it. */
const clock = { now: Date.now() }
const sealer = StateSealer.create({
  keyRing: await importKeyRing([generateKey()]),
  now: () => clock.now,
})

/** Keeps the warnings expected here (an eviction) off the test output. */
const quiet: McpLogger = { warn: () => {}, error: () => {} }

/** A replica: the engine's handler on `store` and `bus`, a principal holding two streams at most. */
async function replica(options: { maxSessionsPerPrincipal?: number } = {}) {
  const sessions = new MemoryEngineStore()
  await sessions.migrate()
  const bus = new InProcessEventBus()
  const events: ServerEvent[] = []
  bus.subscribe((event) => void events.push(event))
  const handler = createMcpHandler({
    server,
    deps: undefined,
    sealer,
    bus,
    logger: quiet,
    streamLimits: new StreamLimits({ maxStreamsPerPrincipal: 2 }),
    legacy: {
      sessions,
      sessionTtlSeconds: TTL_SECONDS,
      maxSessionsPerPrincipal: options.maxSessionsPerPrincipal,
      now: () => clock.now,
    },
  })
  const app = new Hono()
  app.all('/mcp', async (c) =>
    handler({
      method: c.req.method,
      body: c.req.method === 'POST' ? await c.req.text() : '',
      headers: c.req.raw.headers,
      principal: LOCAL_PRINCIPAL,
      signal: c.req.raw.signal,
    })
  )
  return { app, bus, events }
}

const streams = new SseReaders()
afterEach(async () => {
  vi.useRealTimers()
  await streams.cancelAll()
})

/** What `session` holds: its GET stream and a call waiting for the answer to its question. */
async function holdStreams(session: LegacySession) {
  const get = streams.open(await session.get())
  const call = streams.open(
    await session.request('tools/call', { name: 'greet', arguments: {} }, { id: 'greet' })
  )
  expect(await call.next()).toMatchObject({ method: 'elicitation/create' })
  return { get, call }
}

/** The principal's two stream slots are taken: one more stream is refused (429). */
async function expectCapFull(session: LegacySession) {
  const refused = await session.get()
  expect(refused.status).toBe(429)
  expect(await refused.json()).toMatchObject({ error: { data: { cap: 'streams', held: 2 } } })
}

/** Both were ended for the session: the GET stream closes, the call answers -32001. */
async function expectEnded({ get, call }: { get: SseReader; call: SseReader }) {
  expect(await get.rest()).toStrictEqual([])
  expect(await call.rest()).toStrictEqual([
    {
      jsonrpc: '2.0',
      id: 'greet',
      error: { code: SESSION_NOT_FOUND, message: expect.stringMatching(/^Session ended: /) },
    },
  ])
}

/** The caps count the ended streams no more: a new session holds both slots again. */
async function expectSlotsFree(app: Hono) {
  const { session } = await startSession(app, { capabilities: FORM_CLIENT })
  const held = await holdStreams(session)
  await expectCapFull(session)
  return held
}

describe('the session_ended event', () => {
  it('crosses a bus between processes unchanged (the wire schema) and is scoped to its session', () => {
    const event: ServerEvent = { kind: 'session_ended', session: 'sid-1' }
    expect(parseServerEvent(serializeServerEvent(event))).toStrictEqual(event)
    expect(eventScope(event)).toStrictEqual({ session: 'sid-1' })
    expect(concerns({ principal: LOCAL_PRINCIPAL }, event)).toBe(false)
    expect(concerns({ session: 'sid-1' }, event)).toBe(true)
    expect(parseServerEvent(JSON.stringify({ ...event, extra: 1 }))).toBeUndefined()
  })
})

describe('an ended 2025 session ends what it holds', () => {
  it('DELETE ends its GET stream and its waiting call, and frees their slots', async () => {
    const { app, events } = await replica()
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const held = await holdStreams(session)
    await expectCapFull(session)

    expect((await session.delete()).status).toBe(204)
    expect(events).toContainEqual({ kind: 'session_ended', session: expect.any(String) })
    await expectEnded(held)
    expect((await session.get()).status).toBe(404)
    await expectSlotsFree(app)
  })

  it('DELETE ends a waiting call resumed on another connection: its resumed stream carries the error', async () => {
    const { app } = await replica()
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const first = streams.open(
      await session.request('tools/call', { name: 'greet', arguments: {} }, { id: 'greet' })
    )
    const ask = (await first.next()) as JsonObject
    expect(ask).toMatchObject({ method: 'elicitation/create' })
    // The connection drops; the client resumes the call's stream after the question.
    await first.cancel()
    const resumed = streams.open(await session.get({ 'last-event-id': first.idOf(ask) }))

    expect((await session.delete()).status).toBe(204)
    expect(await resumed.rest()).toStrictEqual([
      {
        jsonrpc: '2.0',
        id: 'greet',
        error: { code: SESSION_NOT_FOUND, message: expect.stringMatching(/^Session ended: /) },
      },
    ])
    await expectSlotsFree(app)
  })

  it('initialize at a session cap of one ends the session it evicts, with its streams and calls', async () => {
    const { app, events } = await replica({ maxSessionsPerPrincipal: 1 })
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const held = await holdStreams(session)

    const { session: next } = await startSession(app, { capabilities: FORM_CLIENT })
    expect(events.filter((event) => event.kind === 'session_ended')).toHaveLength(1)
    await expectEnded(held)
    expect((await session.get()).status).toBe(404)
    const nextHeld = await holdStreams(next)
    await expectCapFull(next)
    // The newest session is never the one evicted.
    await nextHeld.call.cancel()
  })

  it('the expiry of its record ends its GET stream and waiting call, once its timer finds it expired', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const { app, events } = await replica()
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const held = await holdStreams(session)
    await expectCapFull(session)

    // At the record's expiry nothing was announced: the holders' own timers find it expired. The
    // streams are read while the timers run, as a client reads them.
    const ended = expectEnded(held)
    clock.now += TTL_SECONDS * 1000
    await vi.advanceTimersByTimeAsync(TTL_SECONDS * 1000)
    await ended
    expect(events.some((event) => event.kind === 'session_ended')).toBe(false)
    expect((await session.get()).status).toBe(404)
    await expectSlotsFree(app)
  })

  it('a record that slid meanwhile keeps its holders: the timer re-reads it and waits for the new expiry', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const { app } = await replica()
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const get = streams.open(await session.get())

    // Past half its lifetime, a message slides the record a lifetime on.
    clock.now += (TTL_SECONDS / 2) * 1000 + 1
    expect((await session.request('ping', undefined, { id: 'ping' })).status).toBe(200)
    clock.now += (TTL_SECONDS / 2) * 1000
    await vi.advanceTimersByTimeAsync(TTL_SECONDS * 1000)
    // Still open: a list change would reach it, and one more stream still fits the cap.
    const second = streams.open(await session.get())
    await expectCapFull(session)
    await second.cancel()

    const rest = get.rest()
    clock.now += TTL_SECONDS * 1000
    await vi.advanceTimersByTimeAsync(TTL_SECONDS * 1000)
    expect(await rest).toStrictEqual([])
  })
})
