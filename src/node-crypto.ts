/**
 * @module node-crypto
 * Node-only fast paths the runtime-neutral engine accepts as options: a synchronous SHA-256 and
 * AES-256-GCM from `node:crypto` for the sealer (each Web Crypto call costs a thread-pool round trip on
 * Node). Same digests and the same compact JWE as the defaults, so Node and Workers replicas agree.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey } from 'node:crypto'
import type { AesGcm } from './mcp/compact-jwe.ts'
import { importKeyRing, type RawKey } from './mcp/key-ring.ts'
import { StateSealer } from './mcp/sealed-state.ts'

export function nodeSha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url')
}

/**
 * AES-256-GCM from `node:crypto` for the compact-JWE codec, with the ring's secrets held as `KeyObject`s
 * (imported once). Produces and opens the same compact JWE as jose on Web Crypto.
 */
export function nodeAesGcm(keys: readonly RawKey[]): AesGcm {
  const secrets = new Map(keys.map((key) => [key.kid, createSecretKey(key.secret)]))
  const secretOf = (kid: string) => {
    const secret = secrets.get(kid)
    if (!secret) throw new Error(`no key ${kid} in the ring`)
    return secret
  }
  return {
    encrypt(kid, iv, plaintext, aad) {
      const cipher = createCipheriv('aes-256-gcm', secretOf(kid), iv)
      cipher.setAAD(aad)
      return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
    },
    decrypt(kid, iv, sealed, aad) {
      const decipher = createDecipheriv('aes-256-gcm', secretOf(kid), iv, { authTagLength: 16 })
      decipher.setAAD(aad)
      decipher.setAuthTag(sealed.subarray(sealed.length - 16))
      return Buffer.concat([
        decipher.update(sealed.subarray(0, sealed.length - 16)),
        decipher.final(),
      ])
    },
  }
}

/** The sealer as a Node process runs it: the ring imported once, with both `node:crypto` fast paths. */
export async function createNodeSealer(
  keys: readonly RawKey[],
  ttlSeconds: number
): Promise<StateSealer> {
  return StateSealer.create({
    keyRing: await importKeyRing(keys),
    ttlSeconds,
    sha256: nodeSha256,
    aesGcm: nodeAesGcm(keys),
  })
}
