/**
 * @module mcp/compact-jwe
 * The token format of everything the server seals with its key ring (`requestState`, 2025-era session
 * ids): compact JWE with `alg: "dir"`, `enc: "A256GCM"`, a protected header of exactly
 * `{alg, enc, kid}` (authenticated as AAD, naming the ring key), a 96-bit IV, a 128-bit tag and no
 * compression: the bytes jose's `CompactEncrypt` writes and its `compactDecrypt` reads. `CompactJwe`
 * encrypts plaintext bytes with the ring's sealing key (its first) and decrypts with whichever ring key
 * the header names; what the plaintext means is the caller's.
 *
 * Contract of `decrypt`: it fails closed with an `InvalidJweError` whose `reason` is for the server log
 * only. The type and length of the token are checked before any decoding, every part's base64url must
 * be canonical (one spelling per token), and the header is checked before any decryption, so an
 * oversize token or an unknown kid never reaches the cipher.
 *
 * The codec writes and reads the five parts itself, around AES-256-GCM: Web Crypto under the ring's
 * `CryptoKey`s by default, or a runtime's faster cipher (`aesGcm`: Node's synchronous `node:crypto`,
 * `node/crypto.ts`), and likewise its base64url (`base64url`). The protected header of every ring key
 * is written once, at construction: sealing reuses it, and a token naming a ring key in exactly that
 * spelling is matched without decoding its header again (any other spelling is decoded and checked in
 * full). Tokens are interchangeable whichever cipher and codec wrote them. Runtime-neutral.
 */
import {
  isBase64urlCodec,
  isCanonicalBase64url,
  JOSE_BASE64URL,
  type Base64urlCodec,
} from './base64url.ts'
import { MAX_KID_CHARS, type KeyRing, type RingKey } from './key-ring.ts'
import { randomBytes } from './random.ts'
import { decodeUtf8 } from './utf8.ts'

const ALG = 'dir'
const ENC = 'A256GCM'
const IV_BYTES = 12
const IV_CHARS = 16 // 96-bit IV
const TAG_BYTES = 16
const TAG_CHARS = 22 // 128-bit tag

const encoder = new TextEncoder()

/** Ciphertext and authentication tag of one AES-256-GCM encryption. */
export interface AesGcmOutput {
  readonly ciphertext: Uint8Array
  readonly tag: Uint8Array
}

/** AES-256-GCM with the ring key named `kid` and a 128-bit tag; may answer synchronously. */
export interface AesGcm {
  encrypt(
    kid: string,
    iv: Uint8Array,
    plaintext: Uint8Array,
    aad: Uint8Array
  ): AesGcmOutput | Promise<AesGcmOutput>
  /** Throws (or rejects) when the tag does not verify. */
  decrypt(
    kid: string,
    iv: Uint8Array,
    ciphertext: Uint8Array,
    tag: Uint8Array,
    aad: Uint8Array
  ): Uint8Array | Promise<Uint8Array>
}

export interface CompactJweOptions {
  /** Its first key encrypts; every key decrypts. */
  readonly keyRing: KeyRing
  /** Longest token `decrypt` looks at, in characters (see `compactJweChars`). */
  readonly maxTokenChars: number
  /** A runtime's own AES-256-GCM under the ring's keys; default Web Crypto. */
  readonly aesGcm?: AesGcm
  /** A runtime's own base64url; default jose's. */
  readonly base64url?: Base64urlCodec
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

/** A ring key with its protected header as written (base64url) and as AAD (its ASCII bytes). */
interface HeaderedKey {
  readonly key: RingKey
  readonly header: string
  readonly aad: Uint8Array
}

/** AES-256-GCM through Web Crypto under the ring's imported content keys. */
function webCryptoAesGcm(keyRing: KeyRing): AesGcm {
  const contentKey = (kid: string) => {
    const key = keyRing.get(kid)
    if (!key) throw new Error(`no key ${kid} in the ring`)
    return key.contentKey
  }
  const params = (iv: Uint8Array, aad: Uint8Array): AesGcmParams => ({
    name: 'AES-GCM',
    iv: iv as Uint8Array<ArrayBuffer>,
    additionalData: aad as Uint8Array<ArrayBuffer>,
    tagLength: TAG_BYTES * 8,
  })
  return {
    async encrypt(kid, iv, plaintext, aad) {
      const sealed = new Uint8Array(
        await crypto.subtle.encrypt(
          params(iv, aad),
          contentKey(kid),
          plaintext as Uint8Array<ArrayBuffer>
        )
      )
      const tagStart = sealed.length - TAG_BYTES
      return { ciphertext: sealed.subarray(0, tagStart), tag: sealed.subarray(tagStart) }
    },
    async decrypt(kid, iv, ciphertext, tag, aad) {
      const sealed = new Uint8Array(ciphertext.length + TAG_BYTES)
      sealed.set(ciphertext)
      sealed.set(tag, ciphertext.length)
      return new Uint8Array(await crypto.subtle.decrypt(params(iv, aad), contentKey(kid), sealed))
    },
  }
}

export class CompactJwe {
  readonly maxTokenChars: number
  readonly #keyRing: KeyRing
  readonly #aesGcm: AesGcm
  readonly #base64url: Base64urlCodec
  /** Every ring key by its protected header as this codec writes it. */
  readonly #headers = new Map<string, HeaderedKey>()
  readonly #sealing: HeaderedKey

  private constructor(options: Required<CompactJweOptions>) {
    this.#keyRing = options.keyRing
    this.#aesGcm = options.aesGcm
    this.#base64url = options.base64url
    this.maxTokenChars = options.maxTokenChars
    for (const kid of options.keyRing.kids) {
      const key = options.keyRing.get(kid) as RingKey
      const header = this.#base64url.encode(
        encoder.encode(JSON.stringify({ alg: ALG, enc: ENC, kid }))
      )
      this.#headers.set(header, { key, header, aad: encoder.encode(header) })
    }
    this.#sealing = [...this.#headers.values()].find(
      ({ key }) => key.kid === options.keyRing.sealingKid
    ) as HeaderedKey
  }

  /** Validates the options (`TypeError`/`RangeError`) and returns a codec. */
  static create(options: CompactJweOptions): CompactJwe {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('CompactJwe options must be an object')
    }
    const { keyRing, maxTokenChars, aesGcm, base64url = JOSE_BASE64URL } = options
    if (
      typeof keyRing !== 'object' ||
      keyRing === null ||
      typeof keyRing.get !== 'function' ||
      typeof keyRing.sealingKid !== 'string' ||
      !Array.isArray(keyRing.kids) ||
      !keyRing.kids.includes(keyRing.sealingKid) ||
      !keyRing.kids.every((kid: string) => keyRing.get(kid) !== undefined)
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
    if (!isBase64urlCodec(base64url)) {
      throw new TypeError('base64url must have encode and decode functions')
    }
    return new CompactJwe({
      keyRing,
      maxTokenChars,
      aesGcm: aesGcm ?? webCryptoAesGcm(keyRing),
      base64url,
    })
  }

  /** The key `encrypt` uses: the ring's first. */
  get sealingKey(): RingKey {
    return this.#sealing.key
  }

  /**
   * Whether `token` names the sealing key in the header `encrypt` writes (says nothing of whether it
   * opens): a token of another key, or another spelling of the header, is not.
   */
  namesSealingKey(token: string): boolean {
    return token.startsWith(`${this.#sealing.header}.`)
  }

  /**
   * `plaintext` as a compact JWE under the sealing key (its kid in the protected header): at once with
   * a synchronous cipher, else a promise.
   */
  encrypt(plaintext: Uint8Array): string | Promise<string> {
    const { key, header, aad } = this.#sealing
    const iv = randomBytes(IV_BYTES)
    const sealed = this.#aesGcm.encrypt(key.kid, iv, plaintext, aad)
    const codec = this.#base64url
    // Header, empty encrypted key (dir), IV, ciphertext, tag.
    const compact = ({ ciphertext, tag }: AesGcmOutput) =>
      `${header}..${codec.encode(iv)}.${codec.encode(ciphertext)}.${codec.encode(tag)}`
    return sealed instanceof Promise ? sealed.then(compact) : compact(sealed)
  }

  /**
   * The plaintext of a token from the wire and the key that opened it: at once with a synchronous
   * cipher, else a promise. A refused token throws `InvalidJweError`, before the cipher synchronously
   * and from an asynchronous cipher as a rejection: callers `await` the call inside their `try`.
   */
  decrypt(token: unknown): DecryptedJwe | Promise<DecryptedJwe> {
    if (typeof token !== 'string') return reject('not_a_string')
    if (token.length > this.maxTokenChars) return reject('too_long')

    const parts = token.split('.')
    if (parts.length !== 5) return reject('malformed')
    const [header = '', encryptedKey, iv = '', ciphertext = '', tag = ''] = parts
    const known = this.#headers.get(header)
    if (!(
      encryptedKey === '' &&
      iv.length === IV_CHARS &&
      tag.length === TAG_CHARS &&
      (known !== undefined || isCanonicalBase64url(header)) &&
      isCanonicalBase64url(iv) &&
      isCanonicalBase64url(ciphertext) &&
      isCanonicalBase64url(tag)
    )) {
      return reject('malformed')
    }

    const key = known?.key ?? this.#keyFor(header)
    const codec = this.#base64url
    let opened: Uint8Array | Promise<Uint8Array>
    try {
      opened = this.#aesGcm.decrypt(
        key.kid,
        codec.decode(iv),
        codec.decode(ciphertext),
        codec.decode(tag),
        known?.aad ?? encoder.encode(header)
      )
    } catch {
      return reject('decrypt_failed')
    }
    return opened instanceof Promise
      ? opened.then(
          (plaintext) => ({ plaintext, key }),
          () => reject('decrypt_failed')
        )
      : { plaintext: opened, key }
  }

  /** Reads a protected header without trusting it; only `{alg:"dir", enc:"A256GCM", kid}` passes. */
  #keyFor(encodedHeader: string): RingKey {
    let header: unknown
    try {
      header = JSON.parse(decodeUtf8(this.#base64url.decode(encodedHeader)))
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
