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

/** `bytes` as text; throws a `TypeError` when they are not well-formed UTF-8. A BOM is dropped. */
export function decodeUtf8(bytes: ArrayBuffer | Uint8Array): string {
  const text = replacing.decode(bytes)
  return text.includes('\uFFFD') ? fatal.decode(bytes) : text
}
