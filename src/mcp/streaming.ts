/**
 * @module mcp/streaming
 * How one request's answer goes back: a single `application/json` response when the handler sends
 * nothing before its result, or a `text/event-stream` scoped to the request when it sends progress or
 * log notifications first (the final response then ends the stream). The client closing the stream
 * cancels the request: the channel aborts its signal and sends nothing more. Also the SSE framing,
 * keep-alive comments and `retry` field shared with the held-open streams (`event-stream.ts`).
 *
 * Nothing here can fail once a request is answered: notifications are serialised when they are sent
 * (a value JSON cannot express throws at the handler's `ctx.progress`/`ctx.log` call), and the final
 * message arrives as text from `modern-era.ts`, which settles every failure into a JSON-RPC error
 * before it gets here (`respond` is given a promise that never rejects).
 */

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

const JSON_HEADERS = { 'content-type': 'application/json' }
const encoder = new TextEncoder()

/** A JSON response of `message`; throws when JSON cannot express it (a cycle, a BigInt). */
export function jsonResponse(message: unknown, status = 200): Response {
  return jsonText(JSON.stringify(message), status)
}

/** A JSON response from text that is already serialised. */
export function jsonText(text: string, status = 200): Response {
  return new Response(text, { status, headers: JSON_HEADERS })
}

/** One SSE event carrying `message`; throws when JSON cannot express it (a cycle, a BigInt). */
export function sseEvent(message: unknown): Uint8Array {
  return sseText(JSON.stringify(message))
}

/** One SSE event carrying JSON text that is already serialised. */
export function sseText(text: string): Uint8Array {
  return encoder.encode(`data: ${text}\n\n`)
}

/**
 * One SSE event with an `id` (a resumable stream's: `legacy/stream-log.ts`) carrying the JSON text
 * `data`; empty `data` makes the priming event a client resumes from before any message.
 */
export function sseIdentified(id: string, data: string): Uint8Array {
  return encoder.encode(`id: ${id}\ndata: ${data}\n\n`)
}

/**
 * An SSE comment, as bytes: sent on an idle event stream so that proxies keep it open, or first, so
 * that a runtime sends a stream's head before it has anything to say.
 *
 * @example
 * ```ts
 * import { SSE_KEEPALIVE } from 'stateless-mcp/compose'
 *
 * // the engine's event stream, begun by a comment
 * const body = response.body!.pipeThrough(
 *   new TransformStream<Uint8Array, Uint8Array>({
 *     start: (controller) => controller.enqueue(SSE_KEEPALIVE),
 *   })
 * )
 * return new Response(body, response)
 * ```
 */
export const SSE_KEEPALIVE = encoder.encode(': keep-alive\n\n')

/** The SSE `retry` field: how many milliseconds a client that reconnects should wait first. */
export function sseRetry(ms: number): Uint8Array {
  return encoder.encode(`retry: ${ms}\n\n`)
}

/** The final message of a request as JSON text, and the HTTP status to use if it is sent as plain JSON. */
export interface FinalMessage {
  text: string
  status: number
  /**
   * The headers to send it with as plain JSON, when not just its content type (a 403 challenge, a
   * store refusal's `Retry-After`).
   */
  headers?: Headers
}

/**
 * The final message sent as plain JSON: with its own headers when it has them. Turns what
 * `errorMessage` answers into a `Response`.
 *
 * @example
 * ```ts
 * import { consoleLogger, errorMessage, finalResponse } from 'stateless-mcp/compose'
 *
 * return finalResponse(errorMessage(null, error, consoleLogger))
 * ```
 */
export function finalResponse({ text, status, headers }: FinalMessage): Response {
  return headers ? new Response(text, { status, headers }) : jsonText(text, status)
}

/** A response decided elsewhere (the HTTP layer's scope challenge) as the final message of a request. */
export async function finalMessageOf(response: Response): Promise<FinalMessage> {
  return { text: await response.text(), status: response.status, headers: response.headers }
}

/**
 * The cancellation of one request: the client going away (the upstream signal) or closing the
 * response stream. The `AbortSignal` handed to handlers is only made if one asks for it: most never
 * do, and an AbortController with its listener per request is measurable on the hot path.
 */
export class Cancellation {
  readonly #upstream: AbortSignal | undefined
  #controller: AbortController | undefined
  #cancelled = false

  constructor(upstream?: AbortSignal) {
    this.#upstream = upstream
  }

  get cancelled(): boolean {
    return this.#cancelled || this.#upstream?.aborted === true
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      const controller = new AbortController()
      if (this.cancelled) controller.abort()
      else this.#upstream?.addEventListener('abort', () => controller.abort(), { once: true })
      this.#controller = controller
    }
    return this.#controller.signal
  }

  cancel(): void {
    this.#cancelled = true
    this.#controller?.abort()
  }
}

/** Where a handler's notifications for its request go (`ctx.progress`, `ctx.log`, `ctx.closeStream`). */
export interface RequestChannel {
  /** Sends a notification related to the request; throws when JSON cannot express it. */
  notify(message: unknown): void
  /** Sends an SSE comment so proxies keep a waiting stream open (nothing before SSE). */
  keepAlive(): void
  /**
   * Ends the connection carrying the answer with an SSE `retry`, the request going on, where the
   * client can resume it (a 2025-era stream); absent where it cannot.
   */
  closeStream?(): void
}

/**
 * Collects the notifications a handler sends and decides, on the first one, to answer with SSE.
 * Closing the stream cancels the request.
 */
export class ResponseChannel implements RequestChannel {
  readonly #cancellation: Cancellation
  /** Notifications (as SSE events) sent before the answer was chosen; `undefined` once it was. */
  #buffered: Uint8Array[] | undefined = []
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined
  /** Set while `respond` waits: switches the answer to SSE on the first notification. */
  #openStream: (() => void) | undefined

  constructor(cancellation: Cancellation) {
    this.#cancellation = cancellation
  }

  /**
   * Sends a notification related to this request (dropped once the client is gone). Throws, to the
   * handler that sent it, when JSON cannot express the message.
   */
  notify(message: unknown): void {
    if (this.#cancellation.cancelled) return
    if (this.#controller) {
      this.#controller.enqueue(sseEvent(message))
    } else if (this.#buffered) {
      this.#buffered.push(sseEvent(message))
      this.#openStream?.()
    }
  }

  /** Sends an SSE comment so proxies keep a stream open while the request waits (no-op before SSE). */
  keepAlive(): void {
    if (this.#cancellation.cancelled || !this.#controller) return
    this.#controller.enqueue(SSE_KEEPALIVE)
  }

  /**
   * Answers with plain JSON when the final message comes before any notification, and with SSE from
   * the first notification on (the handler may have sent one before this was called). `final` must
   * never reject: it carries failures as JSON-RPC errors.
   */
  respond(final: Promise<FinalMessage>): Promise<Response> {
    return new Promise<Response>((resolve) => {
      this.#openStream = () => {
        this.#openStream = undefined
        resolve(this.#stream(final))
      }
      if (this.#buffered?.length) return this.#openStream()
      // `final` never rejects (see above).
      void final.then((message) => {
        if (!this.#openStream) return // already streaming: the stream sends it
        this.#openStream = undefined
        this.#buffered = undefined
        resolve(finalResponse(message))
      })
    })
  }

  #stream(final: Promise<FinalMessage>): Response {
    const cancellation = this.#cancellation
    const buffered = this.#buffered ?? []
    this.#buffered = undefined
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        for (const event of buffered) controller.enqueue(event)
        this.#controller = controller
        void final.then(({ text }) => {
          this.#controller = undefined
          if (cancellation.cancelled) {
            closeQuietly(controller)
            return
          }
          controller.enqueue(sseText(text))
          controller.close()
        })
      },
      cancel: () => {
        this.#controller = undefined
        cancellation.cancel()
      },
    })
    return new Response(body, { status: 200, headers: SSE_HEADERS })
  }
}

/** Closes a stream the client may already have cancelled. */
export function closeQuietly(controller: ReadableStreamDefaultController<Uint8Array>): void {
  try {
    controller.close()
  } catch {
    // already closed or errored by the client going away
  }
}
