/**
 * @module mcp/bounded-body
 * A request's or response's body read into memory up to a limit, and no further: the request body
 * the engine reads (`request-guard.ts`'s `readBody`) and the JWKS a bearer check fetches
 * (`bearer/jwks.ts`). Web standards only.
 */

/**
 * The bytes of a request's or response's `body` (none: empty), read at most `maxBytes` into memory:
 * `undefined` when they grow past that (the reading stops there).
 */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number
): Promise<Uint8Array | undefined> {
  if (!body) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}
