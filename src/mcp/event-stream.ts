/**
 * @module mcp/event-stream
 * A held-open SSE stream fed by the event bus, shared by `subscriptions/listen` (2026-07-28) and the
 * GET stream of a 2025-era session: optional opening messages, then one message per bus event the
 * caller maps (in order, even when mapping is asynchronous), keep-alive comments so proxies keep it
 * open, and an end that is graceful (an optional closing message) on server shutdown or at the
 * maximum duration, and silent when the client goes away. The caller names what the stream listens
 * for (its principal), which the bus may route by; `map` still decides what is sent. Nothing about
 * the stream outlives it.
 */
import type { EventBus, EventInterest, ServerEvent } from './events.ts'
import { SSE_HEADERS, SSE_KEEPALIVE, closeQuietly, sseEvent } from './streaming.ts'

export const DEFAULT_KEEPALIVE_MS = 15_000
export const DEFAULT_MAX_STREAM_MS = 60 * 60_000

export interface EventStreamOptions {
  bus: EventBus
  /** What the stream listens for, told to the bus (`map` still decides what is sent). */
  interest: EventInterest
  /** Aborted when the client goes away. */
  signal: AbortSignal
  /** Aborted when the server shuts down: the stream then ends gracefully. */
  shutdown?: AbortSignal
  keepAliveMs?: number
  maxDurationMs?: number
  /** Messages sent as soon as the stream opens. */
  opening?: readonly unknown[]
  /** The message to send for an event, or `undefined` to skip it. */
  map(event: ServerEvent): unknown | Promise<unknown>
  /** The last message of a graceful end, if any. */
  closing?: () => unknown
}

export function eventStream(options: EventStreamOptions): Response {
  const { bus, signal, shutdown } = options
  let cleanup = () => {}
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true
      /** Events are mapped one after another so they reach the client in the order they happened. */
      let queue: Promise<void> = Promise.resolve()
      const send = (chunk: Uint8Array) => {
        if (!open) return
        try {
          controller.enqueue(chunk)
        } catch {
          end(false)
        }
      }
      const end = (graceful: boolean) => {
        if (!open) return
        if (graceful && options.closing) {
          const last = options.closing()
          if (last !== undefined) send(sseEvent(last))
        }
        open = false
        cleanup()
        closeQuietly(controller)
      }

      for (const message of options.opening ?? []) send(sseEvent(message))
      const unsubscribe = bus.subscribe((event) => {
        queue = queue
          .then(async () => {
            const message = await options.map(event)
            if (message !== undefined) send(sseEvent(message))
          })
          .catch(() => {
            // A failed lookup drops this one notification, never the stream.
          })
      }, options.interest)
      const keepAlive = setInterval(
        () => send(SSE_KEEPALIVE),
        options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS
      )
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
    cancel() {
      cleanup()
    },
  })
  return new Response(body, { status: 200, headers: SSE_HEADERS })
}
