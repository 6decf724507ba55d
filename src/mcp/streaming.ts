/**
 * @module mcp/streaming
 * How one request's answer goes back: a single `application/json` response when the handler sends
 * nothing before its result, or a `text/event-stream` scoped to the request when it sends progress or
 * log notifications first (the final response then ends the stream). The client closing the stream
 * cancels the request: the channel aborts its signal and sends nothing more. Also the SSE framing and
 * keep-alive comments shared with `subscriptions/listen`.
 */

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

const JSON_HEADERS = { 'content-type': 'application/json' }
const encoder = new TextEncoder()

export function jsonResponse(message: unknown, status = 200): Response {
  return new Response(JSON.stringify(message), { status, headers: JSON_HEADERS })
}

export function sseEvent(message: unknown): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(message)}\n\n`)
}

export const SSE_KEEPALIVE = encoder.encode(': keep-alive\n\n')

/** The final message of a request and the HTTP status to use if it is sent as plain JSON. */
export interface FinalMessage {
  message: unknown
  status: number
}

/**
 * Collects the notifications a handler sends and decides, on the first one, to answer with SSE.
 * `abort` is the request's controller: closing the stream aborts it.
 */
export class ResponseChannel {
  readonly #abort: AbortController
  #buffered: unknown[] | undefined = []
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined
  #wake: (() => void) | undefined

  constructor(abort: AbortController) {
    this.#abort = abort
  }

  /** Sends a notification related to this request (dropped once the client is gone). */
  notify(message: unknown): void {
    if (this.#abort.signal.aborted) return
    if (this.#controller) {
      this.#controller.enqueue(sseEvent(message))
    } else if (this.#buffered) {
      this.#buffered.push(message)
      this.#wake?.()
    }
  }

  /** Waits for the final message or the first notification, whichever comes first, and answers. */
  async respond(final: Promise<FinalMessage>): Promise<Response> {
    const first = new Promise<'notified'>((resolve) => {
      this.#wake = () => resolve('notified')
      // The handler may have notified before its first await, i.e. before this promise existed.
      if (this.#buffered?.length) resolve('notified')
    })
    const winner = await Promise.race([final.then(() => 'final' as const), first])
    if (winner === 'final' && this.#buffered?.length === 0) {
      const { message, status } = await final
      this.#buffered = undefined
      return jsonResponse(message, status)
    }
    return this.#stream(final)
  }

  #stream(final: Promise<FinalMessage>): Response {
    const abort = this.#abort
    const buffered = this.#buffered ?? []
    this.#buffered = undefined
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        for (const message of buffered) controller.enqueue(sseEvent(message))
        this.#controller = controller
        final.then(({ message }) => {
          if (abort.signal.aborted) return
          this.#controller = undefined
          controller.enqueue(sseEvent(message))
          controller.close()
        })
      },
      cancel: () => {
        this.#controller = undefined
        abort.abort()
      },
    })
    return new Response(body, { status: 200, headers: SSE_HEADERS })
  }
}
