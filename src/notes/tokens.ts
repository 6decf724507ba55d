/**
 * @module notes/tokens
 * Unguessable tokens of the share flow: share-request ids (the only thing the approval URL carries),
 * read-only link ids and the approval page's CSRF tokens. Each is `SHARE_TOKEN_BYTES` random bytes
 * from Web Crypto as unpadded base64url. Also recognises the format (so malformed ids never reach a
 * store) and compares two tokens in constant time. Runtime-neutral.
 */
import { base64url } from 'jose'
import { randomBytes } from '../mcp/random.ts'
import { SHARE_TOKEN_BYTES, SHARE_TOKEN_PATTERN } from './limits.ts'

const encoder = new TextEncoder()

export function randomToken(): string {
  return base64url.encode(randomBytes(SHARE_TOKEN_BYTES))
}

export function isToken(value: string): boolean {
  return SHARE_TOKEN_PATTERN.test(value)
}

/** Whether two strings are equal, in time that depends only on their lengths. */
export function tokensEqual(a: string, b: string): boolean {
  const left = encoder.encode(a)
  const right = encoder.encode(b)
  if (left.length !== right.length) return false
  let difference = 0
  for (let i = 0; i < left.length; i++) difference |= (left[i] as number) ^ (right[i] as number)
  return difference === 0
}
