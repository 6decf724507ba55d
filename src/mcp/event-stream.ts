/**
 * @module mcp/event-stream
 * A held-open SSE stream fed by the event bus, shared by `subscriptions/listen` (2026-07-28) and the
 * GET stream of a 2025-era session: optional opening messages, then one message per bus event the
 * caller maps (in order, even when mapping is asynchronous), keep-alive comments so proxies keep an
 * idle stream open, and an end that is graceful (an optional closing message, an optional SSE `retry`
 * field telling a reconnecting client when to come back) on server shutdown, at the maximum duration
 * or when the client falls too far behind, and silent when the client goes away. The caller names
 * what the stream listens for (its principal); events outside that interest are dropped on arrival,
 * and `map` still decides what is sent. Nothing about the stream outlives it: `onEnd` runs once,
 * whichever way it ends (the caller's stream slot, `stream-limits.ts`, is released there).
 *
 * Bounded memory, whatever the client does. The stream respects its own backpressure: messages wait
 * in the stream's queue only up to `maxQueuedBytes` (the queue's high-water mark, counted in bytes);
 * while it is full nothing more is mapped, and events wait as a backlog of references to the event
 * objects every stream shares, at most `maxBacklogEvents` of them. An event arriving to a full
 * backlog means the client has stopped reading (or `map`, a store lookup, cannot keep up): the
 * stream then ends gracefully, with the reason in the log (a structured warning, never a body), and
 * the client reconnects and re-reads, as it must after any reconnect. An asynchronous `map` runs for
 * one event at a time, so store lookups never pile up either.
 */
import type { McpLogger } from './dispatch.ts'
import { concerns, type EventBus, type EventInterest, type ServerEvent } from './events.ts'
import { positiveWholeNumber } from './options.ts'
import { SSE_HEADERS, SSE_KEEPALIVE, closeQuietly, sseEvent, sseRetry } from './streaming.ts'

export const DEFAULT_KEEPALIVE_MS = 15_000
export const DEFAULT_MAX_STREAM_MS = 60 * 60_000
/**
 * Bytes of messages a stream holds unread before it stops mapping events: about 150 notifications.
 * The buffers beyond it (the runtime's socket writer, the kernel's, a proxy's) hold far more, so it
 * fills only when the client has not read for a while; it is small because every open stream may
 * hold it, and nothing is lost while it is full (events wait in the backlog).
 */
export const DEFAULT_MAX_QUEUED_BYTES = 16 * 1024
/**
 * Events a stream holds back (while its queue is full or `map` is busy) before it counts as too far
 * behind and ends. Each is a reference to the event object all streams share, a few bytes, so a burst
 * of the largest bulk operation (20 notes, 40 events) fits many times over; a client this far behind
 * has missed a great deal and is better served by reconnecting and re-reading.
 */
export const DEFAULT_MAX_BACKLOG_EVENTS = 1_000
/** Highest of either bound accepted: a bound is a bound, not "unlimited" by another name. */
const MAX_BOUND = 1 << 30

/** The bounds of a held-open stream, all optional (each has the default above). */
export interface EventStreamBounds {
  keepAliveMs?: number
  maxDurationMs?: number
  maxQueuedBytes?: number
  maxBacklogEvents?: number
}

/**
 * Checks `bounds` once, where they are configured (the handlers' construction): each must be a
 * whole number from 1 to `MAX_BOUND`. Throws the `RangeError` of `options.ts` naming the option
 * under `where`.
 */
export function validateStreamBounds(bounds: EventStreamBounds | undefined, where: string): void {
  for (const [name, value] of Object.entries(bounds ?? {})) {
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
  /** Messages sent as soon as the stream opens. */
  opening?: readonly unknown[]
  /** The message to send for an event, or `undefined` to skip it. */
  map(event: ServerEvent): unknown | Promise<unknown>
  /** The last message of a graceful end, if any. */
  closing?: () => unknown
  /** Sent as the SSE `retry` field at a graceful end: when a reconnecting client should come back. */
  retryMs?: number
  /** Where a stream that fell too far behind is reported, with `logFields` and its bounds. */
  logger: McpLogger
  /** What names the stream in the log (its kind, a session prefix); never a body or a credential. */
  logFields: Record<string, unknown>
  /** Runs once when the stream has ended, whichever way. */
  onEnd?: () => void
}

function isPromise(value: unknown): value is Promise<unknown> {
  return typeof (value as Promise<unknown> | undefined)?.then === 'function'
}

export function eventStream(options: EventStreamOptions): Response {
  const { bus, signal, shutdown } = options
  const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES
  const maxBacklogEvents = options.maxBacklogEvents ?? DEFAULT_MAX_BACKLOG_EVENTS
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let open = true
  /** Events not mapped yet, oldest first: waiting for room in the queue or for `map`. */
  const backlog: ServerEvent[] = []
  let draining = false
  let cleanup = () => {}

  const send = (chunk: Uint8Array) => {
    if (!open) return
    try {
      controller.enqueue(chunk)
    } catch {
      end(false)
    }
  }
  const hasRoom = () => (controller.desiredSize ?? 0) > 0
  const end = (graceful: boolean) => {
    if (!open) return
    if (graceful) {
      const last = options.closing?.()
      if (last !== undefined) send(sseEvent(last))
      if (options.retryMs !== undefined) send(sseRetry(options.retryMs))
      if (!open) return // the client went away while the end was being sent
    }
    open = false
    backlog.length = 0
    cleanup()
    closeQuietly(controller)
    options.onEnd?.()
  }
  /** Maps the backlog in order while the queue has room; one `map` at a time. */
  const drain = async () => {
    if (draining) return
    draining = true
    try {
      while (open && backlog.length > 0 && hasRoom()) {
        const event = backlog.shift() as ServerEvent
        try {
          const mapped = options.map(event)
          const message = isPromise(mapped) ? await mapped : mapped
          if (message !== undefined) send(sseEvent(message))
        } catch {
          // A failed lookup drops this one notification, never the stream.
        }
      }
    } finally {
      draining = false
    }
  }
  const fellBehind = () => {
    options.logger.warn('stream ended: the client fell too far behind', {
      ...options.logFields,
      reason: 'backlog_full',
      backlogEvents: backlog.length,
      queuedBytes: maxQueuedBytes - (controller.desiredSize ?? 0),
      maxBacklogEvents,
      maxQueuedBytes,
    })
    end(true)
  }

  const body = new ReadableStream<Uint8Array>(
    {
      start(streamController) {
        controller = streamController
        for (const message of options.opening ?? []) send(sseEvent(message))
        const unsubscribe = bus.subscribe((event) => {
          if (!open || !concerns(options.interest, event)) return
          if (backlog.length >= maxBacklogEvents) return fellBehind()
          backlog.push(event)
          void drain()
        }, options.interest)
        // A keep-alive goes out only when nothing else waits: an unread queue needs none.
        const keepAlive = setInterval(() => {
          if (controller.desiredSize === maxQueuedBytes) send(SSE_KEEPALIVE)
        }, options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS)
        const maxDuration = setTimeout(
          () => end(true),
          options.maxDurationMs ?? DEFAULT_MAX_STREAM_MS
        )
        const onShutdown = () => end(true)
        const onClientGone = () => end(false)
        shutdown?.addEventListener('abort', onShutdown)
        signal.addEventListener('abort', onClientGone)
        cleanup = () => {
          unsubscribe()
          clearInterval(keepAlive)
          clearTimeout(maxDuration)
          shutdown?.removeEventListener('abort', onShutdown)
          signal.removeEventListener('abort', onClientGone)
        }
        if (shutdown?.aborted) end(true)
        else if (signal.aborted) end(false)
      },
      /** The client read: the queue has room again, so the backlog moves on. */
      pull() {
        void drain()
      },
      cancel() {
        end(false)
      },
    },
    { highWaterMark: maxQueuedBytes, size: (chunk) => chunk.byteLength }
  )
  return new Response(body, { status: 200, headers: SSE_HEADERS })
}
