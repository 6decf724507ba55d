/**
 * @module mcp/random
 * Random bytes for nonces, IVs and keys on the hot path. Each `crypto.getRandomValues` call has a fixed
 * cost far above that of a few bytes, so bytes are drawn from a pool refilled 4 KiB at a time. Every
 * byte is handed out once (slices are copies), so no nonce or IV is ever reused; `randomBase64url`
 * spells them as text. Runtime-neutral.
 */
import { base64url } from 'jose'

const POOL_BYTES = 4096
let pool = new Uint8Array(0)
let offset = 0

/** `count` fresh random bytes (at most the pool size). */
export function randomBytes(count: number): Uint8Array {
  if (!(Number.isInteger(count) && count > 0 && count <= POOL_BYTES)) {
    throw new RangeError(`randomBytes: count must be from 1 to ${POOL_BYTES}`)
  }
  if (offset + count > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES))
    offset = 0
  }
  const bytes = pool.slice(offset, offset + count)
  offset += count
  return bytes
}

/**
 * `count` fresh random bytes as unpadded base64url: ids, keys and secrets. `count` is from 1 to
 * 4096 (a `RangeError` otherwise).
 *
 * @example
 * ```ts
 * import { randomBase64url } from 'stateless-mcp'
 *
 * const shareToken = randomBase64url(32) // 43 URL-safe characters, 256 random bits
 * ```
 */
export function randomBase64url(count: number): string {
  return base64url.encode(randomBytes(count))
}
