/**
 * @module mcp/base64url
 * The base64url alphabet (RFC 4648 §5) and the one check every sealed value read from the wire goes
 * through: `isCanonicalBase64url`. Encoding and decoding are jose's `base64url`; lenient decoders
 * ignore the unused low bits of the last character, so without this check several spellings of one
 * token, or of one configured secret, would all be accepted. Runtime-neutral.
 */

/** The 64 characters of base64url, in value order (index = 6-bit value). */
export const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

const BASE64URL = /^[A-Za-z0-9_-]+$/

/**
 * Non-empty unpadded base64url in its one canonical spelling: the length is not 1 mod 4 and the
 * unused low bits of the last character are zero.
 */
export function isCanonicalBase64url(text: string): boolean {
  if (!BASE64URL.test(text)) return false
  const last = BASE64URL_ALPHABET.indexOf(text.charAt(text.length - 1))
  switch (text.length % 4) {
    case 1:
      return false
    case 2:
      return (last & 0b1111) === 0
    case 3:
      return (last & 0b11) === 0
    default:
      return true
  }
}
