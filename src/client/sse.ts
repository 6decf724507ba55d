/**
 * @module client/sse
 * Server-sent events as the driver reads them: `sseData` yields the data of each event (its `data:`
 * lines joined by newlines) from a response body, skipping comments and the other fields (`event`,
 * `id`, `retry`), with any of CRLF, CR or LF ending a line, also when a chunk splits a CRLF. What the
 * data means (JSON-RPC messages) is `client/exchange`'s business.
 *
 * The body is cancelled when the caller stops reading or the signal aborts; a read that fails is a
 * transport failure, or the signal's reason after an abort.
 */
import { transportFailure } from './abort.ts'

const LINE_BREAK = /\r\n|\r|\n/

/** Yields each SSE event's data (its `data:` lines joined by newlines), skipping other fields. */
export async function* sseData(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal
): AsyncGenerator<string> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const onAbort = () => void reader.cancel(signal.reason).catch(() => {})
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    let buffer = ''
    let data: string[] = []
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>
      try {
        chunk = await reader.read()
      } catch (error) {
        throw transportFailure(error, signal, 'the event stream broke')
      }
      signal.throwIfAborted()
      if (chunk.done) return
      buffer += decoder.decode(chunk.value, { stream: true })
      // A trailing CR may be the first half of CRLF: keep it until the next chunk.
      const cut = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length
      const lines = buffer.slice(0, cut).split(LINE_BREAK)
      buffer = (lines.pop() ?? '') + buffer.slice(cut)
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield data.join('\n')
          data = []
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
        } else if (line === 'data') {
          data.push('')
        }
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
    void reader.cancel().catch(() => {})
  }
}
