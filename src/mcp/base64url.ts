/**
 * @module mcp/base64url
 * The base64url alphabet (RFC 4648 §5), the one check every sealed value read from the wire goes
 * through (`isCanonicalBase64url`), and the codec the sealer writes and reads tokens with
 * (`Base64urlCodec`): jose's `base64url` by default (native `toBase64` where the runtime has it), or a
 * runtime's own faster one (Node's `Buffer`, `node/crypto.ts`). Lenient decoders ignore the unused low
 * bits of the last character, so without the check several spellings of one token, or of one
 * configured secret, would all be accepted: callers check first, then decode. Runtime-neutral.
 */
import { base64url } from 'jose'

/** The 64 characters of base64url, in value order (index = 6-bit value). */
export const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

const BASE64URL = /^[A-Za-z0-9_-]+$/

/** Unpadded base64url. `decode` is only handed text that passed `isCanonicalBase64url`. */
export interface Base64urlCodec {
  encode(bytes: Uint8Array): string
  decode(text: string): Uint8Array
}

/** The default codec: jose's, on every runtime. */
export const JOSE_BASE64URL: Base64urlCodec = {
  encode: (bytes) => base64url.encode(bytes),
  decode: (text) => base64url.decode(text),
}

/** Whether `codec` has both functions (options are checked at construction). */
export function isBase64urlCodec(codec: unknown): codec is Base64urlCodec {
  return (
    typeof codec === 'object' &&
    codec !== null &&
    typeof (codec as Base64urlCodec).encode === 'function' &&
    typeof (codec as Base64urlCodec).decode === 'function'
  )
}

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
