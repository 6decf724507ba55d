/**
 * @module notes/tokens
 * Unguessable tokens of the share flow: share-request ids (the only thing the approval URL carries),
 * read-only link ids and the approval page's CSRF tokens. Each is `SHARE_TOKEN_BYTES` random bytes
 * from Web Crypto as unpadded base64url. Also recognises the format (so malformed ids never reach a
 * store). Comparing a token with another in constant time is `mcp/constant-time`'s. Runtime-neutral.
 */
import { randomBase64url } from 'stateless-mcp'
import { SHARE_TOKEN_BYTES, SHARE_TOKEN_PATTERN } from './limits.ts'

export function randomToken(): string {
  return randomBase64url(SHARE_TOKEN_BYTES)
}

export function isToken(value: string): boolean {
  return SHARE_TOKEN_PATTERN.test(value)
}
