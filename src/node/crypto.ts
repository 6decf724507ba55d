/**
 * @module node/crypto
 * Node-only fast paths the runtime-neutral engine accepts as options: a synchronous SHA-256 and
 * AES-256-GCM from `node:crypto`, and base64url through `Buffer`, for the sealer (each Web Crypto call
 * costs a thread-pool round trip on Node, and jose's base64url goes through `btoa` there). Same
 * digests and the same compact JWE as the defaults, so Node and Workers replicas agree.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hash } from 'node:crypto'
import {
  type AesGcm,
  type Base64urlCodec,
  importKeyRing,
  type RawKey,
  StateSealer,
} from 'stateless-mcp/compose'

const TAG_BYTES = 16

export function nodeSha256(text: string): string {
  return hash('sha256', text, 'base64url')
}

/**
 * base64url through `Buffer` (native). Its decoder is lenient, like every decoder: the codec's
 * callers check canonical spelling first (`isCanonicalBase64url`).
 */
export const nodeBase64url: Base64urlCodec = {
  encode: (bytes) =>
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url'),
  decode: (text) => Buffer.from(text, 'base64url'),
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
      const cipher = createCipheriv('aes-256-gcm', secretOf(kid), iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(aad)
      const ciphertext = cipher.update(plaintext)
      // GCM is a stream mode: `final` writes no bytes, it computes the tag.
      cipher.final()
      return { ciphertext, tag: cipher.getAuthTag() }
    },
    decrypt(kid, iv, ciphertext, tag, aad) {
      const decipher = createDecipheriv('aes-256-gcm', secretOf(kid), iv, {
        authTagLength: TAG_BYTES,
      })
      decipher.setAAD(aad)
      decipher.setAuthTag(tag)
      const plaintext = decipher.update(ciphertext)
      decipher.final()
      return plaintext
    },
  }
}

/** The sealer as a Node process runs it: the ring imported once, with the `node:crypto` fast paths. */
export async function createNodeSealer(
  keys: readonly RawKey[],
  ttlSeconds: number
): Promise<StateSealer> {
  return StateSealer.create({
    keyRing: await importKeyRing(keys),
    ttlSeconds,
    sha256: nodeSha256,
    aesGcm: nodeAesGcm(keys),
    base64url: nodeBase64url,
  })
}
