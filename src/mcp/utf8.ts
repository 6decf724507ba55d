/**
 * @module mcp/utf8
 * Strict UTF-8 decoding for everything the server reads as text (request bodies, sealed payloads,
 * token headers, cursors): malformed bytes are refused, never replaced. A fatal `TextDecoder` is
 * several times slower than a replacing one on Node (a microsecond for a small body), so valid text
 * is decoded once by the replacing decoder, and only text that then holds U+FFFD — malformed input
 * always does, valid input rarely — is decoded again strictly to tell the two apart.
 */

const replacing = new TextDecoder('utf-8')
const fatal = new TextDecoder('utf-8', { fatal: true })

/**
 * `bytes` as text; throws a `TypeError` when they are not well-formed UTF-8. A BOM is dropped.
 * Use it to read a request body the engine will parse: malformed bytes are refused, not replaced.
 *
 * @example
 * ```ts
 * import { ErrorCode } from 'stateless-mcp'
 * import { decodeUtf8, jsonRpcErrorResponse, NOT_UTF8_MESSAGE } from 'stateless-mcp/compose'
 *
 * let body: string
 * try {
 *   body = decodeUtf8(await request.arrayBuffer())
 * } catch {
 *   return jsonRpcErrorResponse(null, 400, NOT_UTF8_MESSAGE, {}, ErrorCode.ParseError)
 * }
 * ```
 */
export function decodeUtf8(bytes: ArrayBuffer | Uint8Array): string {
  const text = replacing.decode(bytes)
  return text.includes('\uFFFD') ? fatal.decode(bytes) : text
}
