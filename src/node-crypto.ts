/**
 * @module node-crypto
 * Node-only fast paths the runtime-neutral engine accepts as options: a synchronous SHA-256 from
 * `node:crypto` for the sealer's arguments digest (Web Crypto's asynchronous digest costs a thread-pool
 * round trip per call on Node). Same digest as the default, so Node and Workers replicas agree.
 */
import { createHash } from 'node:crypto'

export function nodeSha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url')
}
