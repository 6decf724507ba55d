/**
 * @module mcp/compact-jwe
 * The token format of everything the server seals with its key ring (`requestState` today, 2025-era
 * session ids next): compact JWE with `alg: "dir"`, `enc: "A256GCM"`, a protected header of exactly
 * `{alg, enc, kid}` (authenticated as AAD, naming the ring key), a 96-bit IV, a 128-bit tag and no
 * compression. `CompactJwe` encrypts plaintext bytes with the ring's sealing key (its first) and
 * decrypts with whichever ring key the header names; what the plaintext means is the caller's.
 *
 * Contract of `decrypt`: it fails closed with an `InvalidJweError` whose `reason` is for the server log
 * only. The type and length of the token are checked before any decoding, every part's base64url must
 * be canonical (one spelling per token), and the header is checked before any decryption, so an
 * oversize token or an unknown kid never reaches the cipher.
 *
 * The cipher is jose on Web Crypto by default; a runtime with a faster AES-256-GCM (Node's synchronous
 * `node:crypto`, see `node-crypto.ts`) passes it as `aesGcm`, and the codec then writes and reads the
 * same bytes itself: tokens are interchangeable either way. Runtime-neutral: Web Crypto and jose.
 */
import { base64url, CompactEncrypt, compactDecrypt } from 'jose'
import { isCanonicalBase64url } from './base64url.ts'
import { MAX_KID_CHARS, type KeyRing, type RingKey } from './key-ring.ts'
import { randomBytes } from './random.ts'

const ALG = 'dir'
const ENC = 'A256GCM'
const IV_BYTES = 12
const IV_CHARS = 16 // 96-bit IV
const TAG_BYTES = 16
const TAG_CHARS = 22 // 128-bit tag

const encoder = new TextEncoder()
const strictDecoder = new TextDecoder('utf-8', { fatal: true })

/** AES-256-GCM with the ring key named `kid` (16-byte tag appended to the ciphertext). */
export interface AesGcm {
  encrypt(kid: string, iv: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array
  /** Throws when the tag does not verify. */
  decrypt(kid: string, iv: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array
}

export interface CompactJweOptions {
  /** Its first key encrypts; every key decrypts. */
  readonly keyRing: KeyRing
  /** Longest token `decrypt` looks at, in characters (see `compactJweChars`). */
  readonly maxTokenChars: number
  /** A runtime's own AES-256-GCM under the ring's keys; default jose on Web Crypto. */
  readonly aesGcm?: AesGcm
}

/** Why `decrypt` refused a token. Logged, never sent to a client. */
export type JweFailureReason =
  'not_a_string' | 'too_long' | 'malformed' | 'unknown_kid' | 'bad_header' | 'decrypt_failed'

/** A token `decrypt` refused; `reason` is for the server log only. */
export class InvalidJweError extends Error {
  override name = 'InvalidJweError'
  readonly reason: JweFailureReason

  constructor(reason: JweFailureReason) {
    super(`invalid compact JWE: ${reason}`)
    this.reason = reason
  }
}

export interface DecryptedJwe {
  readonly plaintext: Uint8Array
  /** The ring key the header named (e.g. to key further checks of the plaintext). */
  readonly key: RingKey
}

export class CompactJwe {
  readonly maxTokenChars: number
  readonly #keyRing: KeyRing
  readonly #aesGcm: AesGcm | undefined

  private constructor(options: CompactJweOptions) {
    this.#keyRing = options.keyRing
    this.#aesGcm = options.aesGcm
    this.maxTokenChars = options.maxTokenChars
  }

  /** Validates the options (`TypeError`/`RangeError`) and returns a codec. */
  static create(options: CompactJweOptions): CompactJwe {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('CompactJwe options must be an object')
    }
    const { keyRing, maxTokenChars, aesGcm } = options
    if (
      typeof keyRing !== 'object' ||
      keyRing === null ||
      typeof keyRing.get !== 'function' ||
      typeof keyRing.sealingKid !== 'string' ||
      keyRing.get(keyRing.sealingKid) === undefined
    ) {
      throw new TypeError('keyRing must be an imported KeyRing that holds its sealing key')
    }
    if (!(Number.isInteger(maxTokenChars) && maxTokenChars >= compactJweChars(0))) {
      throw new RangeError(`maxTokenChars must be a whole number of at least ${compactJweChars(0)}`)
    }
    if (
      aesGcm !== undefined &&
      (typeof aesGcm.encrypt !== 'function' || typeof aesGcm.decrypt !== 'function')
    ) {
      throw new TypeError('aesGcm must have encrypt and decrypt functions')
    }
    return new CompactJwe({ keyRing, maxTokenChars, aesGcm })
  }

  /** The key `encrypt` uses: the ring's first. */
  get sealingKey(): RingKey {
    return this.#keyRing.get(this.#keyRing.sealingKid) as RingKey
  }

  /** `plaintext` as a compact JWE under the sealing key (its kid in the protected header). */
  async encrypt(plaintext: Uint8Array): Promise<string> {
    const key = this.sealingKey
    if (!this.#aesGcm) {
      return new CompactEncrypt(plaintext)
        .setProtectedHeader({ alg: ALG, enc: ENC, kid: key.kid })
        .encrypt(key.contentKey)
    }
    // The bytes jose would write: header, empty encrypted key, IV, ciphertext, tag.
    const header = base64url.encode(JSON.stringify({ alg: ALG, enc: ENC, kid: key.kid }))
    const iv = randomBytes(IV_BYTES)
    const sealed = this.#aesGcm.encrypt(key.kid, iv, plaintext, encoder.encode(header))
    const tagStart = sealed.length - TAG_BYTES
    const ciphertext = base64url.encode(sealed.subarray(0, tagStart))
    return `${header}..${base64url.encode(iv)}.${ciphertext}.${base64url.encode(sealed.subarray(tagStart))}`
  }

  /** The plaintext of a token from the wire and the key that opened it, or `InvalidJweError`. */
  async decrypt(token: unknown): Promise<DecryptedJwe> {
    if (typeof token !== 'string') return reject('not_a_string')
    if (token.length > this.maxTokenChars) return reject('too_long')

    const parts = token.split('.')
    if (parts.length !== 5) return reject('malformed')
    const [header = '', encryptedKey, iv = '', ciphertext = '', tag = ''] = parts
    if (!(
      encryptedKey === '' &&
      iv.length === IV_CHARS &&
      tag.length === TAG_CHARS &&
      isCanonicalBase64url(header) &&
      isCanonicalBase64url(iv) &&
      isCanonicalBase64url(ciphertext) &&
      isCanonicalBase64url(tag)
    )) {
      return reject('malformed')
    }

    const key = this.#keyFor(header)
    try {
      if (this.#aesGcm) {
        const encrypted = base64url.decode(ciphertext)
        const sealed = new Uint8Array(encrypted.length + TAG_BYTES)
        sealed.set(encrypted)
        sealed.set(base64url.decode(tag), encrypted.length)
        const plaintext = this.#aesGcm.decrypt(
          key.kid,
          base64url.decode(iv),
          sealed,
          encoder.encode(header)
        )
        return { plaintext, key }
      }
      const { plaintext } = await compactDecrypt(token, key.contentKey, {
        keyManagementAlgorithms: [ALG],
        contentEncryptionAlgorithms: [ENC],
        maxDecompressedLength: 0,
      })
      return { plaintext, key }
    } catch {
      return reject('decrypt_failed')
    }
  }

  /** Reads the protected header without trusting it; only `{alg:"dir", enc:"A256GCM", kid}` passes. */
  #keyFor(encodedHeader: string): RingKey {
    let header: unknown
    try {
      header = JSON.parse(strictDecoder.decode(base64url.decode(encodedHeader)))
    } catch {
      return reject('malformed')
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header)) {
      return reject('malformed')
    }
    const { alg, enc, kid } = header as Record<string, unknown>
    if (!(
      Object.keys(header).length === 3 &&
      alg === ALG &&
      enc === ENC &&
      typeof kid === 'string'
    )) {
      return reject('bad_header')
    }
    return this.#keyRing.get(kid) ?? reject('unknown_kid')
  }
}

/** Length of the longest token holding a `payloadBytes` plaintext (kid at its longest). */
export function compactJweChars(payloadBytes: number): number {
  const header = JSON.stringify({ alg: ALG, enc: ENC, kid: 'k'.repeat(MAX_KID_CHARS) })
  const b64 = (bytes: number) => Math.ceil((bytes * 4) / 3)
  return (
    b64(encoder.encode(header).byteLength) + 2 + IV_CHARS + 1 + b64(payloadBytes) + 1 + TAG_CHARS
  )
}

function reject(reason: JweFailureReason): never {
  throw new InvalidJweError(reason)
}
