/**
 * @module mcp/event-stream
 * A held-open SSE stream fed by the event bus, shared by `subscriptions/listen` (2026-07-28) and the
 * GET stream of a 2025-era session: optional opening messages, then one message per bus event the
 * caller maps (in order, even when mapping is asynchronous), keep-alive comments so proxies keep an
 * idle stream open, and an end. The caller names what the stream listens for (its principal);
 * events outside that interest are dropped on arrival, and `map` still decides what is sent.
 *
 * Bounded memory, whatever the client does. The stream respects its own backpressure: messages wait
 * in the stream's queue only up to `maxQueuedBytes` (the queue's high-water mark, counted in bytes);
 * while it is full nothing more is mapped, and events wait as a backlog of references to the event
 * objects every stream shares, at most `maxBacklogEvents` of them. An asynchronous `map` runs for
 * one event at a time, so store lookups never pile up either.
 *
 * How a stream ends, and when its connection is done (`onEnd` runs then, once: the caller's stream
 * slot, `stream-limits.ts`, is released there, so a caller's count is of connections, not of
 * streams the server has given up on):
 * - The client goes away (the request's signal, or the reader cancels): nothing more is sent.
 * - An event arrives to a full backlog: the client has stopped reading (or `map`, a store lookup,
 *   cannot keep up). The reason goes to the log (a structured warning, never a body) and the stream
 *   is errored, which drops its queue and makes the runtime reset the connection (@hono/node-server
 *   destroys the socket, Workers abort the response): closing it instead would leave the queue, and
 *   the socket, to a client that never reads, with no write timeout on Node to end them. The client
 *   reconnects and re-reads, as it must after any reconnect (the 2025 SDKs reopen a GET stream that
 *   broke as they do one that ended).
 * - The maximum duration, server shutdown, or the end of what the stream belongs to (`ended`: the
 *   2025 session of a GET stream, `legacy/session-end.ts`) ends it gracefully: an optional closing message and
 *   an optional SSE `retry` field (when a reconnecting client should come back) join the queue, and
 *   the stream closes once the client has read all of it. A client that has not within `endGraceMs`
 *   is not reading: that is logged and the stream errored as above. No timer outlives the end.
 */
import type { McpLogger } from './logger.ts'
import { concerns, type EventBus, type EventInterest, type ServerEvent } from './event-bus.ts'
import { positiveWholeNumber } from './options.ts'
import {
  SSE_HEADERS,
  SSE_KEEPALIVE,
  closeQuietly,
  sseEvent,
  sseIdentified,
  sseRetry,
} from './streaming.ts'

/**
 * How often a held-open stream sends a comment when it has nothing else to say (`keepAliveMs`), so
 * that proxies keep the connection and a client that left is noticed: 15 seconds.
 *
 * @example
 * ```ts
 * import { DEFAULT_KEEPALIVE_MS } from 'stateless-mcp/compose'
 *
 * // a proxy that drops connections idle for 10 seconds
 * const listen = { keepAliveMs: Math.min(DEFAULT_KEEPALIVE_MS, 8_000) }
 * ```
 */
export const DEFAULT_KEEPALIVE_MS = 15_000
/**
 * How long a held-open stream (a listen stream, a 2025 GET stream) lasts before it ends gracefully
 * and its client reconnects, unless `maxDurationMs` says otherwise: an hour.
 *
 * @example
 * ```ts
 * import { compileServer, createMcpHandler, DEFAULT_MAX_STREAM_MS } from 'stateless-mcp/compose'
 *
 * // a platform that ends every request after 15 minutes
 * const maxDurationMs = Math.min(DEFAULT_MAX_STREAM_MS, 14 * 60_000)
 * const handler = createMcpHandler({
 *   server: compileServer(definition),
 *   deps: undefined,
 *   sealer,
 *   bus,
 *   listen: { maxDurationMs },
 *   legacy: { sessions: store, stream: { maxDurationMs } },
 * })
 * ```
 */
export const DEFAULT_MAX_STREAM_MS = 60 * 60_000
/**
 * Bytes of messages a stream holds unread before it stops mapping events: about 150 notifications.
 * The buffers beyond it (the runtime's socket writer, the kernel's, a proxy's) hold far more, so it
 * fills only when the client has not read for a while; it is small because every open stream may
 * hold it, and nothing is lost while it is full (events wait in the backlog). `maxQueuedBytes`
 * says otherwise.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_QUEUED_BYTES } from 'stateless-mcp/compose'
 *
 * // resources whose update notifications are large
 * const listen = { maxQueuedBytes: 4 * DEFAULT_MAX_QUEUED_BYTES }
 * ```
 */
export const DEFAULT_MAX_QUEUED_BYTES = 16 * 1024
/**
 * Events a stream holds back (while its queue is full or `map` is busy) before it counts as too far
 * behind and ends. Each is a reference to the event object all streams share, a few bytes, so a burst
 * of the largest bulk operation (20 notes, 40 events) fits many times over; a client this far behind
 * has missed a great deal and is better served by reconnecting and re-reading. `maxBacklogEvents`
 * says otherwise.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_BACKLOG_EVENTS } from 'stateless-mcp/compose'
 *
 * // bulk operations that publish thousands of events at once
 * const listen = { maxBacklogEvents: 10 * DEFAULT_MAX_BACKLOG_EVENTS }
 * ```
 */
export const DEFAULT_MAX_BACKLOG_EVENTS = 1_000
/**
 * How long a stream the server ends gracefully waits for the client to read what is still queued
 * (at most `maxQueuedBytes` and the closing message) before it is errored: a client that reads
 * takes a moment; one that has not read within a keep-alive interval is not reading, and its
 * connection is reset instead of kept open for it. `endGraceMs` says otherwise.
 *
 * @example
 * ```ts
 * import { DEFAULT_END_GRACE_MS } from 'stateless-mcp/compose'
 *
 * // a shutdown that must finish within 10 seconds
 * const listen = { endGraceMs: Math.min(DEFAULT_END_GRACE_MS, 5_000) }
 * ```
 */
export const DEFAULT_END_GRACE_MS = 15_000
/** Highest of any bound accepted: a bound is a bound, not "unlimited" by another name. */
const MAX_BOUND = 1 << 30

/**
 * The bounds of a held-open stream (`createMcpHandler`'s `listen` and `legacy.stream`), all
 * optional, each a whole number from 1 to 2^30.
 */
export interface EventStreamBounds {
  /** Default {@link DEFAULT_KEEPALIVE_MS}. */
  keepAliveMs?: number
  /** Default {@link DEFAULT_MAX_STREAM_MS}. */
  maxDurationMs?: number
  /** Default {@link DEFAULT_MAX_QUEUED_BYTES}. */
  maxQueuedBytes?: number
  /** Default {@link DEFAULT_MAX_BACKLOG_EVENTS}. */
  maxBacklogEvents?: number
  /** Default {@link DEFAULT_END_GRACE_MS}. */
  endGraceMs?: number
}

/**
 * Checks `bounds` once, where they are configured (the handlers' construction): each must be a
 * whole number from 1 to `MAX_BOUND`. Throws the `RangeError` of `options.ts` naming the option
 * under `where`.
 */
export function validateStreamBounds(bounds: EventStreamBounds | undefined, where: string): void {
  for (const [name, value] of Object.entries<number | undefined>({ ...bounds })) {
    if (value !== undefined) positiveWholeNumber(`${where}.${name}`, value, { max: MAX_BOUND })
  }
}

export interface EventStreamOptions extends EventStreamBounds {
  bus: EventBus
  /** What the stream listens for, told to the bus; other events are dropped on arrival. */
  interest: EventInterest
  /** Aborted when the client goes away. */
  signal: AbortSignal
  /** Aborted when the server shuts down: the stream then ends gracefully. */
  shutdown?: AbortSignal
  /** Aborted when what the stream belongs to has ended (its 2025 session): it ends gracefully. */
  ended?: AbortSignal
  /**
   * Messages that acknowledge the stream: sent first, once the bus hears for it (its subscription's
   * `ready`, `Unsubscribe`), so nothing published after a client read them is missed.
   */
  opening?: readonly unknown[]
  /**
   * Gives every message an SSE `id`, `<stream>.<n>` with `n` counting on from `after` (a 2025-era
   * GET stream, resumable with `Last-Event-ID`: `legacy/stream-log.ts`); without it, messages
   * carry no id.
   */
  ids?: { stream: string; after: number }
  /** The message to send for an event, or `undefined` to skip it (or a promise of either). */
  map(event: ServerEvent): unknown
  /** The last message of a graceful end, if any. */
  closing?: () => unknown
  /** Sent as the SSE `retry` field at a graceful end: when a reconnecting client should come back. */
  retryMs?: number
  /** Where a stream errored for its client (fallen behind, its end unread) is reported. */
  logger: McpLogger
  /** What names the stream in the log (its kind, a session prefix); never a body or a credential. */
  logFields: Record<string, unknown>
  /** Runs once when the stream's connection is done, whichever way (see the module header). */
  onEnd?: () => void
}

function isPromise(value: unknown): value is Promise<unknown> {
  return typeof (value as Promise<unknown> | undefined)?.then === 'function'
}

/**
 * Why a stream was errored. A runtime may print it (@hono/node-server does, once per stream), so it
 * is one line that points at the structured log line, without a stack: it is a decision, not a fault.
 */
class StreamDroppedError extends Error {
  override name = 'StreamDroppedError'
  constructor(reason: string) {
    super(`the server dropped an SSE stream: ${reason} (logged as "stream ended: ${reason}")`)
    this.stack = `${this.name}: ${this.message}`
  }
}

/** The held-open SSE response of one stream (see the module header). */
export function eventStream(options: EventStreamOptions): Response {
  const source = new EventStreamSource(options)
  const body = new ReadableStream<Uint8Array>(source, {
    highWaterMark: source.maxQueuedBytes,
    size: (chunk) => chunk.byteLength,
  })
  return new Response(body, { status: 200, headers: SSE_HEADERS })
}

/**
 * What one stream holds and does: it is fed (the bus, the keep-alive, the maximum duration,
 * shutdown) while open, maps its backlog into the queue while the queue has room, and ends in one of
 * the ways the module header lists. The `ReadableStream` calls `start`, `pull` and `cancel`.
 */
class EventStreamSource implements UnderlyingDefaultSource<Uint8Array> {
  /** The queue's high-water mark, in bytes. */
  readonly maxQueuedBytes: number
  readonly #options: EventStreamOptions
  readonly #maxBacklogEvents: number
  readonly #endGraceMs: number
  #controller!: ReadableStreamDefaultController<Uint8Array>
  /**
   * `open` while events are sent; `ending` once the server ended it and its last messages wait to
   * be read; `done` once its connection is (then `onEnd` has run).
   */
  #state: 'open' | 'ending' | 'done' = 'open'
  /** Events not mapped yet, oldest first: waiting for room in the queue or for `map`. */
  readonly #backlog: ServerEvent[] = []
  #draining = false
  /** Whether the opening messages went out (once the bus hears for this stream). */
  #acknowledged = false
  /** Messages sent so far (numbered on from `ids.after`). */
  #sent = 0
  /** Stops what feeds an open stream (`#feed`). */
  #stopFeeding = () => {}
  #endGrace: ReturnType<typeof setTimeout> | undefined

  constructor(options: EventStreamOptions) {
    this.#options = options
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES
    this.#maxBacklogEvents = options.maxBacklogEvents ?? DEFAULT_MAX_BACKLOG_EVENTS
    this.#endGraceMs = options.endGraceMs ?? DEFAULT_END_GRACE_MS
  }

  /** Sends the opening messages, then starts feeding the stream (unless it is already over). */
  start(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const { signal, shutdown, ended } = this.#options
    this.#controller = controller
    const subscribed = this.#feed()
    signal.addEventListener('abort', this.#clientGone)
    if (signal.aborted) return this.#clientGone()
    if (shutdown?.aborted || ended?.aborted || !subscribed) {
      this.#acknowledge()
      if (shutdown?.aborted || ended?.aborted) this.#endGracefully()
      return
    }
    // The opening messages acknowledge the stream: not before the bus hears for it.
    const acknowledge = () => this.#acknowledge()
    subscribed.then(acknowledge, acknowledge)
  }

  /** Sends the opening messages, then lets the events heard meanwhile follow them. */
  #acknowledge(): void {
    if (this.#state !== 'open' || this.#acknowledged) return
    this.#acknowledged = true
    for (const message of this.#options.opening ?? []) this.#sendMessage(message)
    void this.#drain()
  }

  /** The client read: the queue has room again, so the backlog moves on, or an end is read. */
  pull(): void {
    if (this.#state === 'open') void this.#drain()
    else this.#closeIfRead()
  }

  cancel(): void {
    this.#clientGone()
  }

  /**
   * Starts what feeds the open stream: the bus, the keep-alive, the maximum duration, shutdown and
   * the end of what it belongs to ({@link #stopFeeding} stops them). Answers the bus's `ready`,
   * when its subscription takes a round trip.
   */
  #feed(): Promise<void> | undefined {
    const { bus, interest, shutdown, ended } = this.#options
    const unsubscribe = bus.subscribe(this.#accept, interest)
    // A keep-alive goes out only when nothing else waits: an unread queue needs none.
    const keepAlive = setInterval(() => {
      if (this.#controller.desiredSize === this.maxQueuedBytes) this.#send(SSE_KEEPALIVE)
    }, this.#options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS)
    const maxDuration = setTimeout(
      this.#endGracefully,
      this.#options.maxDurationMs ?? DEFAULT_MAX_STREAM_MS
    )
    shutdown?.addEventListener('abort', this.#endGracefully)
    ended?.addEventListener('abort', this.#endGracefully)
    this.#stopFeeding = () => {
      unsubscribe()
      clearInterval(keepAlive)
      clearTimeout(maxDuration)
      shutdown?.removeEventListener('abort', this.#endGracefully)
      ended?.removeEventListener('abort', this.#endGracefully)
    }
    return unsubscribe.ready
  }

  /** A bus event: into the backlog if the stream listens for it, or the end of a stream too far behind. */
  readonly #accept = (event: ServerEvent): void => {
    if (this.#state !== 'open' || !concerns(this.#options.interest, event)) return
    if (this.#backlog.length >= this.#maxBacklogEvents) return this.#fellBehind()
    this.#backlog.push(event)
    void this.#drain()
  }

  /** Maps the backlog in order while the queue has room; one `map` at a time. */
  async #drain(): Promise<void> {
    if (this.#draining || !this.#acknowledged) return
    this.#draining = true
    try {
      while (this.#state === 'open' && this.#backlog.length > 0 && this.#hasRoom()) {
        const event = this.#backlog.shift() as ServerEvent
        try {
          const mapped = this.#options.map(event)
          const message = isPromise(mapped) ? await mapped : mapped
          if (message !== undefined && this.#state === 'open') this.#sendMessage(message)
        } catch {
          // A failed lookup drops this one notification, never the stream.
        }
      }
    } finally {
      this.#draining = false
    }
  }

  #queuedBytes(): number {
    return this.maxQueuedBytes - (this.#controller.desiredSize ?? 0)
  }

  #hasRoom(): boolean {
    return (this.#controller.desiredSize ?? 0) > 0
  }

  /** Sends one message, with its id when the stream numbers them. */
  #sendMessage(message: unknown): void {
    const ids = this.#options.ids
    if (!ids) return this.#send(sseEvent(message))
    this.#send(sseIdentified(`${ids.stream}.${++this.#sent + ids.after}`, JSON.stringify(message)))
  }

  #send(chunk: Uint8Array): void {
    try {
      this.#controller.enqueue(chunk)
    } catch {
      this.#clientGone() // the reader cancelled the stream
    }
  }

  /** The server ends the stream: its last messages join the queue, and it closes once they are read. */
  readonly #endGracefully = (): void => {
    if (this.#state !== 'open') return
    this.#state = 'ending'
    this.#backlog.length = 0
    this.#stopFeeding()
    const last = this.#options.closing?.()
    if (last !== undefined) this.#sendMessage(last)
    if (this.#options.retryMs !== undefined) this.#send(sseRetry(this.#options.retryMs))
    if (this.#state !== 'ending' || this.#closeIfRead()) return
    this.#endGrace = setTimeout(
      () =>
        this.#drop('the client did not read the end of its stream', {
          reason: 'end_unread',
          queuedBytes: this.#queuedBytes(),
          endGraceMs: this.#endGraceMs,
        }),
      this.#endGraceMs
    )
  }

  /** Closes an ending stream once its client has read everything queued; true if it did. */
  #closeIfRead(): boolean {
    if (this.#state !== 'ending' || this.#controller.desiredSize !== this.maxQueuedBytes) {
      return false
    }
    this.#controller.close()
    this.#finish()
    return true
  }

  #fellBehind(): void {
    this.#drop('the client fell too far behind', {
      reason: 'backlog_full',
      backlogEvents: this.#backlog.length,
      queuedBytes: this.#queuedBytes(),
      maxBacklogEvents: this.#maxBacklogEvents,
      maxQueuedBytes: this.maxQueuedBytes,
    })
  }

  /** Drops the queue and has the runtime reset the connection; `why` and `fields` logged first. */
  #drop(why: string, fields: Record<string, unknown>): void {
    if (this.#state === 'done') return
    this.#options.logger.warn(`stream ended: ${why}`, { ...this.#options.logFields, ...fields })
    this.#controller.error(new StreamDroppedError(why))
    this.#finish()
  }

  /** The client went away (or cancelled the stream): nothing more is sent. */
  readonly #clientGone = (): void => {
    if (this.#state === 'done') return
    closeQuietly(this.#controller)
    this.#finish()
  }

  /** The connection is done: nothing of the stream is left running, and `onEnd` runs. */
  #finish(): void {
    if (this.#state === 'done') return
    this.#state = 'done'
    this.#backlog.length = 0
    this.#stopFeeding()
    clearTimeout(this.#endGrace)
    this.#options.signal.removeEventListener('abort', this.#clientGone)
    this.#options.onEnd?.()
  }
}
