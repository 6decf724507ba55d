/**
 * The pieces of resumable 2025 streams on their own (`src/mcp/legacy/stream-log.ts`), on a real
 * in-memory SQLite store: event ids and what a `Last-Event-ID` may name, which stored event is a
 * call's final response, a log storing each event before writing it to its connection, the log that
 * finds its number taken by another replica (it lost the stream and writes nothing more), the bound
 * on kept events, and a connection that lets go with a `retry` or cuts off a client that stops
 * reading.
 */
import { describe, expect, it } from 'vitest'
import { InProcessEventBus, type ServerEvent } from '../../src/mcp/event-bus.ts'
import { consoleLogger } from '../../src/mcp/logger.ts'
import {
  MAX_KEPT_EVENTS_PER_STREAM,
  SseConnection,
  StreamLog,
  eventId,
  isFinalEvent,
  newStreamId,
  parseEventId,
} from '../../src/mcp/legacy/stream-log.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { parseSse } from '../support/mcp-request.ts'

const store = new SqliteEngineStore({ path: ':memory:' })
await store.migrate()
const NOW = Date.now()
const context = {
  store,
  bus: new InProcessEventBus(),
  logger: { ...consoleLogger, warn: () => {} },
  now: () => NOW,
  retentionMs: 60_000,
}
const bounds = { keepAliveMs: 60_000, maxDurationMs: 60_000, retryMs: 1000, maxQueuedBytes: 256 }

/** Everything a connection's response carries, once it has ended. */
const bodyOf = (connection: SseConnection) => connection.response.text()

describe('event ids', () => {
  it('names a POST stream p… and a GET stream g…, and reads back what it wrote', () => {
    const post = newStreamId('post')
    const get = newStreamId('get')
    expect(post).toMatch(/^p[A-Za-z0-9_-]{16}$/)
    expect(get).toMatch(/^g[A-Za-z0-9_-]{16}$/)
    expect(parseEventId(eventId(post, 7))).toStrictEqual({ stream: post, seq: 7, kind: 'post' })
    expect(parseEventId(eventId(get, 0))).toStrictEqual({ stream: get, seq: 0, kind: 'get' })
  })

  it.each([
    '',
    'p.1',
    `x${'A'.repeat(16)}.1`,
    `p${'A'.repeat(15)}.1`,
    `p${'A'.repeat(17)}.1`,
    `p${'A'.repeat(16)}`,
    `p${'A'.repeat(16)}.`,
    `p${'A'.repeat(16)}.-1`,
    `p${'A'.repeat(16)}.1.2`,
    `p${'A'.repeat(16)}.1234567890`,
    `p${'A'.repeat(15)}/.1`,
  ])('refuses %j as no id of ours', (text) => {
    expect(parseEventId(text)).toBeUndefined()
  })

  it('tells a final response from requests and notifications', () => {
    expect(isFinalEvent('{"jsonrpc":"2.0","id":1,"result":{}}')).toBe(true)
    expect(isFinalEvent('{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}')).toBe(true)
    expect(isFinalEvent('{"jsonrpc":"2.0","id":"s2c","method":"elicitation/create"}')).toBe(false)
    expect(isFinalEvent('{"jsonrpc":"2.0","method":"notifications/message"}')).toBe(false)
    expect(isFinalEvent('not json')).toBe(false)
    expect(isFinalEvent('[1]')).toBe(false)
  })
})

describe('StreamLog', () => {
  it('stores each event, then writes it to the connection with its id; announces it once that connection is gone', async () => {
    const sid = `sid-${crypto.randomUUID()}`
    const stream = newStreamId('post')
    const heard: ServerEvent[] = []
    const bus = new InProcessEventBus()
    bus.subscribe((event) => heard.push(event))
    const log = new StreamLog({ ...context, bus }, sid, stream)
    const connection = new SseConnection(bounds)
    log.attach(connection)
    expect(await log.append('{"n":1}')).toBe(true)
    const seq = log.reserve()
    expect(await log.append('{"n":2}', seq)).toBe(true)
    // Its own connection open, nobody follows the stream elsewhere: no signal.
    expect(heard).toStrictEqual([])
    connection.close()
    expect(await log.append('{"n":3}')).toBe(true)
    const body = await bodyOf(connection)
    expect(body).toBe(`id: ${stream}.1\ndata: {"n":1}\n\nid: ${stream}.2\ndata: {"n":2}\n\n`)
    expect(await store.readEvents(sid, stream, 0, 10, NOW)).toStrictEqual([
      { seq: 1, payload: '{"n":1}' },
      { seq: 2, payload: '{"n":2}' },
      { seq: 3, payload: '{"n":3}' },
    ])
    expect(heard).toStrictEqual([{ kind: 'stream_appended', session: sid, stream }])
  })

  it('loses the stream when another replica stored its number first: nothing more is written', async () => {
    const sid = `sid-${crypto.randomUUID()}`
    const stream = newStreamId('post')
    expect(await store.appendEvent(sid, stream, 1, '{"theirs":1}', NOW + 60_000)).toBe(true)
    const log = new StreamLog(context, sid, stream)
    const connection = new SseConnection(bounds)
    log.attach(connection)
    expect(await log.append('{"mine":1}')).toBe(false)
    expect(log.lost).toBe(true)
    expect(await log.append('{"mine":2}')).toBe(false)
    connection.close()
    expect(await bodyOf(connection)).toBe('')
    expect(await store.readEvents(sid, stream, 0, 10, NOW)).toStrictEqual([
      { seq: 1, payload: '{"theirs":1}' },
    ])
  })

  it(`keeps at most ${MAX_KEPT_EVENTS_PER_STREAM} events of a stream; later ones go out live only`, async () => {
    const sid = `sid-${crypto.randomUUID()}`
    const stream = newStreamId('post')
    const log = new StreamLog(context, sid, stream, MAX_KEPT_EVENTS_PER_STREAM - 1)
    const connection = new SseConnection({ ...bounds, maxQueuedBytes: 1 << 20 })
    log.attach(connection)
    for (let n = 0; n < 3; n++) expect(await log.append(`{"n":${n}}`)).toBe(true)
    connection.close()
    expect(parseSse(await bodyOf(connection))).toStrictEqual([{ n: 0 }, { n: 1 }, { n: 2 }])
    const kept = await store.readEvents(sid, stream, 0, 10, NOW)
    expect(kept).toStrictEqual([{ seq: MAX_KEPT_EVENTS_PER_STREAM, payload: '{"n":0}' }])
  })

  /**
   * The log of a new stream whose record is still being stored (`keep` settles that), attached to a
   * connection that `shutdown` lets go.
   */
  function streamBeingKept(shutdown: AbortSignal) {
    const stream = newStreamId('post')
    const kept = Promise.withResolvers<boolean>()
    const log = new StreamLog(context, `sid-${crypto.randomUUID()}`, stream, 0, kept.promise)
    const connection = new SseConnection({ ...bounds, shutdown })
    log.attach(connection)
    return { stream, log, connection, keep: kept.resolve, kept: kept.promise }
  }

  it('lets its connection go (shutdown, its bound) only after what it queued: the client always holds an id to resume from', async () => {
    const shutdown = new AbortController()
    const { stream, log, connection, keep } = streamBeingKept(shutdown.signal)
    log.prime()
    // The server shuts down while the stream's record is still being stored.
    shutdown.abort()
    expect(connection.open).toBe(true)
    keep(true)
    expect(await bodyOf(connection)).toBe(`id: ${stream}.0\ndata: \n\nretry: 1000\n\n`)
  })

  it('a stream opened while the server already shuts down is let go only once its priming event, primed later, is out', async () => {
    const { stream, log, connection, keep, kept } = streamBeingKept(AbortSignal.abort())
    // The connection's let-go is due at once; the caller keeps the record and primes only later.
    await Promise.resolve()
    keep(true)
    await kept
    expect(connection.open).toBe(true)
    log.prime()
    expect(await bodyOf(connection)).toBe(`id: ${stream}.0\ndata: \n\nretry: 1000\n\n`)
  })

  it('a stream that is not kept is let go at shutdown without waiting for an id it will never have', async () => {
    const log = new StreamLog(
      context,
      `sid-${crypto.randomUUID()}`,
      newStreamId('post'),
      0,
      Promise.resolve(false)
    )
    const shutdown = new AbortController()
    const connection = new SseConnection({ ...bounds, shutdown: shutdown.signal })
    log.attach(connection)
    shutdown.abort()
    expect(await bodyOf(connection)).toBe('retry: 1000\n\n')
  })
})

describe('SseConnection', () => {
  it('lets go with a retry hint, once, and then writes nothing', async () => {
    const closed: string[] = []
    const connection = new SseConnection(bounds, () => closed.push('closed'))
    connection.event('p.0', '')
    connection.letGo()
    connection.letGo()
    connection.event('p.1', '{}')
    expect(connection.open).toBe(false)
    expect(await bodyOf(connection)).toBe('id: p.0\ndata: \n\nretry: 1000\n\n')
    expect(closed).toStrictEqual(['closed'])
  })

  it('lets go at shutdown', async () => {
    const shutdown = new AbortController()
    const connection = new SseConnection({ ...bounds, shutdown: shutdown.signal })
    shutdown.abort()
    expect(await bodyOf(connection)).toBe('retry: 1000\n\n')
  })

  it('cuts off a client that stops reading once more than the bound waits unread', async () => {
    let ended = 0
    const connection = new SseConnection(bounds, () => ended++)
    // One event larger than the bound still goes out: the queue was empty.
    connection.event('p.1', 'x'.repeat(300))
    expect(connection.open).toBe(true)
    // The next one finds the bound passed and nobody reading: the connection is errored.
    connection.event('p.2', '{}')
    expect(connection.open).toBe(false)
    expect(ended).toBe(1)
    await expect(bodyOf(connection)).rejects.toThrow(/stopped reading/)
  })

  it('ends when its reader cancels, and runs its end once', async () => {
    let ended = 0
    const connection = new SseConnection(bounds, () => ended++)
    await (connection.response.body as ReadableStream).cancel()
    connection.close()
    expect(connection.open).toBe(false)
    expect(ended).toBe(1)
  })
})
