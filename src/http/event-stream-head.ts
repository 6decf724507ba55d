/**
 * @module http/event-stream-head
 * For runtimes that send a streamed response's head only with its first body bytes (Bun; Lambda's
 * response streaming): an event stream begun by a keep-alive comment, so a stream with nothing to say
 * yet (a 2025 GET stream, say) hands its client the headers at once instead of at the first
 * keep-alive. Every other response is left as it is.
 */
import { SSE_KEEPALIVE } from 'stateless-mcp/compose'

/** Whether `response` is an event stream with a body. */
export function isEventStream(response: Response): boolean {
  return (
    response.body !== null &&
    response.headers.get('content-type')?.startsWith('text/event-stream') === true
  )
}

/** `response` with its event stream begun by a comment; any other response as it is. */
export function withStreamHeadFirst(response: Response): Response {
  if (!isEventStream(response)) return response
  const opened = response.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start: (controller) => controller.enqueue(SSE_KEEPALIVE),
    })
  )
  return new Response(opened, response)
}
