/**
 * @module mcp/sealed-state
 * The sealed `requestState` codec: `StateSealer.seal` turns a replay journal plus the request it
 * belongs to into an opaque token, and `StateSealer.open` turns a token from the wire back into the
 * journal, or rejects it. Any replica holding the same key ring opens what any other sealed.
 *
 * Token: compact JWE, `alg: "dir"`, `enc: "A256GCM"`, protected header exactly
 * `{alg, enc, kid}` (authenticated as AAD), no compression. Plaintext: canonical JSON claims
 *   `v` version (1) · `iat`/`exp` seconds since the epoch · `p` principal tag (HMAC-SHA256 under the
 *   kid's principal key, first 16 bytes, base64url; never the raw principal) · `m` method ·
 *   `t` target (tool/prompt name or resource URI) · `a` base64url SHA-256 of the canonical JSON of the
 *   arguments (`{}` when absent or null) · `j` the journal · `n` a 16-byte random nonce.
 *
 * Contract:
 * - `seal` refuses a plaintext over `maxPayloadBytes` with `StateTooLargeError` (never truncates), and
 *   throws `TypeError` for a malformed binding or a journal with no exact JSON form. It always seals
 *   with the ring's first key.
 * - `open` fails closed: every failure, whatever its cause, is an `InvalidRequestStateError` whose
 *   `message` is the frozen wire text and whose `reason` (an `OpenFailureReason`) is for the server
 *   log only. The type and length of the token are checked before any decoding, the header before any
 *   decryption (so an unknown kid never reaches the cipher), then every claim.
 * - Rotation works by construction: a token opens while its kid is in the ring; a retired kid is
 *   `unknown_kid`.
 *
 * Left to others: composing the principal string (issuer, subject, client — the auth layer), choosing
 * which request fields form `args`, merging journals across rounds and single-use nonce bookkeeping
 * (the replay engine), mapping errors to the wire (`mcp/errors`), key configuration (`mcp/key-ring`).
 * Runtime-neutral: Web Crypto, jose and zod only.
 */

import { base64url, CompactEncrypt, compactDecrypt } from 'jose'
import { z } from 'zod'
import { canonicalJson, sha256Base64url } from './canonical-json.ts'
import { InvalidRequestStateError } from './errors.ts'
import type { KeyRing, RingKey } from './key-ring.ts'
import { randomBytes } from './random.ts'

export const STATE_VERSION = 1
export const DEFAULT_STATE_TTL_SECONDS = 600
export const MAX_STATE_TTL_SECONDS = 86_400
export const DEFAULT_MAX_STATE_TOKEN_CHARS = 16_384
export const DEFAULT_MAX_STATE_PAYLOAD_BYTES = 8_192
export const DEFAULT_STATE_CLOCK_SKEW_SECONDS = 60
/** Smallest payload cap accepted: room for the claims around a small journal. */
export const MIN_STATE_PAYLOAD_BYTES = 512
/** Largest payload cap accepted; request bodies are capped well below a few MiB anyway. */
export const MAX_STATE_PAYLOAD_BYTES = 1_048_576
export const MAX_STATE_CLOCK_SKEW_SECONDS = 3_600

const ALG = 'dir'
const ENC = 'A256GCM'
const NONCE_BYTES = 16
const PRINCIPAL_TAG_BYTES = 16
/** Longest kid the key ring admits; used to size the header when checking the caps agree. */
const MAX_KID_CHARS = 32
const IV_BYTES = 12
const IV_CHARS = 16 // 96-bit IV
const TAG_BYTES = 16
const TAG_CHARS = 22 // 128-bit tag

const BASE64URL = /^[A-Za-z0-9_-]+$/
const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

const encoder = new TextEncoder()
const strictDecoder = new TextDecoder('utf-8', { fatal: true })

/** What a state is bound to. `args` is digested as canonical JSON (`undefined`/`null` → `{}`). */
export interface StateBinding {
  readonly principal: string
  readonly method: string
  readonly target: string
  readonly args: unknown
}

export interface SealedState {
  /** The compact JWE to send as `requestState`. */
  readonly token: string
  /** The random nonce inside it (base64url, 16 bytes), e.g. for single-use bookkeeping. */
  readonly nonce: string
}

export interface OpenedState {
  readonly journal: unknown
  readonly nonce: string
  /** The `iat` claim: seconds since the epoch when the state was sealed. */
  readonly issuedAt: number
}

export interface StateSealerOptions {
  readonly keyRing: KeyRing
  /** Lifetime of one sealed state (one round), in whole seconds, 1..86400. Default 600. */
  readonly ttlSeconds?: number
  /** Longest token `open` will look at, in characters. Default 16384. */
  readonly maxTokenChars?: number
  /** Largest claims plaintext `seal` will produce, in UTF-8 bytes (journal included). Default 8192. */
  readonly maxPayloadBytes?: number
  /** How far `iat` may run ahead of this replica's clock, in seconds. Default 60. */
  readonly clockSkewSeconds?: number
  /** Clock in milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number
  /**
   * SHA-256 of a string as base64url, for the arguments digest. Default: Web Crypto. A runtime with a
   * synchronous hash (Node's `node:crypto`) may pass it to save an asynchronous call per round; every
   * implementation must give the same digest, so replicas on different runtimes agree.
   */
  readonly sha256?: (text: string) => string | Promise<string>
  /**
   * AES-256-GCM under the ring's keys, for runtimes with a faster cipher than Web Crypto's (Node's
   * `node:crypto` is synchronous). The sealer then writes and reads the same compact JWE itself;
   * without it, jose does. Tokens are interchangeable either way.
   */
  readonly aesGcm?: AesGcm
}

/** AES-256-GCM with the ring key named `kid` (16-byte tag appended to the ciphertext). */
export interface AesGcm {
  encrypt(kid: string, iv: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array
  /** Throws when the tag does not verify. */
  decrypt(kid: string, iv: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array
}

/** Principal tags remembered per sealer (they depend only on the key and the principal). */
const PRINCIPAL_TAG_CACHE_SIZE = 4096

/** Why `open` rejected a token. Logged, never sent: the wire always says "Invalid or expired requestState". */
export type OpenFailureReason =
  | 'not_a_string'
  | 'too_long'
  | 'malformed'
  | 'unknown_kid'
  | 'bad_header'
  | 'decrypt_failed'
  | 'bad_claims'
  | 'expired'
  | 'issued_in_future'
  | 'principal_mismatch'
  | 'method_mismatch'
  | 'target_mismatch'
  | 'args_mismatch'
  /** The caller's binding is not strings / JSON args: a programming error, still answered closed. */
  | 'bad_binding'
  /** Anything unforeseen; present so that nothing but `InvalidRequestStateError` leaves `open`. */
  | 'internal_error'

/** The state (journal included) outgrew `maxPayloadBytes`; the flow must fail, not lose data. */
export class StateTooLargeError extends Error {
  override name = 'StateTooLargeError'
  readonly bytes: number
  readonly limit: number

  constructor(bytes: number, limit: number) {
    super(`requestState payload is ${bytes} bytes, over the ${limit}-byte limit`)
    this.bytes = bytes
    this.limit = limit
  }
}

const tag22 = z.string().regex(/^[A-Za-z0-9_-]{22}$/)
const ClaimsSchema = z
  .strictObject({
    v: z.literal(STATE_VERSION),
    iat: z.int().nonnegative(),
    exp: z.int().positive(),
    p: tag22,
    m: z.string(),
    t: z.string(),
    a: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
    j: z.unknown(),
    n: tag22,
  })
  .refine((claims) => claims.exp > claims.iat)

export class StateSealer {
  readonly ttlSeconds: number
  readonly maxTokenChars: number
  readonly maxPayloadBytes: number
  readonly clockSkewSeconds: number
  readonly #keyRing: KeyRing
  readonly #now: () => number
  readonly #sha256: (text: string) => string | Promise<string>
  readonly #principalTags = new Map<string, string>()
  readonly #aesGcm: AesGcm | undefined

  private constructor(options: Required<Omit<StateSealerOptions, 'aesGcm'>> & StateSealerOptions) {
    this.#keyRing = options.keyRing
    this.#now = options.now
    this.#sha256 = options.sha256
    this.#aesGcm = options.aesGcm
    this.ttlSeconds = options.ttlSeconds
    this.maxTokenChars = options.maxTokenChars
    this.maxPayloadBytes = options.maxPayloadBytes
    this.clockSkewSeconds = options.clockSkewSeconds
  }

  /** Validates the options (`TypeError`/`RangeError`) and returns a sealer. */
  static create(options: StateSealerOptions): StateSealer {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('StateSealer options must be an object')
    }
    const {
      keyRing,
      ttlSeconds = DEFAULT_STATE_TTL_SECONDS,
      maxPayloadBytes = DEFAULT_MAX_STATE_PAYLOAD_BYTES,
      maxTokenChars = DEFAULT_MAX_STATE_TOKEN_CHARS,
      clockSkewSeconds = DEFAULT_STATE_CLOCK_SKEW_SECONDS,
      now = Date.now,
      sha256 = sha256Base64url,
      aesGcm,
    } = options
    if (
      typeof keyRing !== 'object' ||
      keyRing === null ||
      typeof keyRing.get !== 'function' ||
      typeof keyRing.sealingKid !== 'string' ||
      keyRing.get(keyRing.sealingKid) === undefined
    ) {
      throw new TypeError('keyRing must be an imported KeyRing that holds its sealing key')
    }
    if (!(Number.isInteger(ttlSeconds) && ttlSeconds >= 1 && ttlSeconds <= MAX_STATE_TTL_SECONDS)) {
      throw new RangeError(`ttlSeconds must be a whole number from 1 to ${MAX_STATE_TTL_SECONDS}`)
    }
    if (!(
      Number.isInteger(maxPayloadBytes) &&
      maxPayloadBytes >= MIN_STATE_PAYLOAD_BYTES &&
      maxPayloadBytes <= MAX_STATE_PAYLOAD_BYTES
    )) {
      throw new RangeError(
        `maxPayloadBytes must be a whole number from ${MIN_STATE_PAYLOAD_BYTES} to ${MAX_STATE_PAYLOAD_BYTES}`
      )
    }
    const needed = tokenCharsFor(maxPayloadBytes)
    if (!(Number.isInteger(maxTokenChars) && maxTokenChars >= needed)) {
      throw new RangeError(
        `maxTokenChars must be a whole number of at least ${needed} to admit a ${maxPayloadBytes}-byte payload`
      )
    }
    if (!(
      Number.isFinite(clockSkewSeconds) &&
      clockSkewSeconds >= 0 &&
      clockSkewSeconds <= MAX_STATE_CLOCK_SKEW_SECONDS
    )) {
      throw new RangeError(`clockSkewSeconds must be from 0 to ${MAX_STATE_CLOCK_SKEW_SECONDS}`)
    }
    if (typeof now !== 'function')
      throw new TypeError('now must be a function returning milliseconds')
    if (typeof sha256 !== 'function') throw new TypeError('sha256 must be a function')
    if (
      aesGcm !== undefined &&
      (typeof aesGcm.encrypt !== 'function' || typeof aesGcm.decrypt !== 'function')
    ) {
      throw new TypeError('aesGcm must have encrypt and decrypt functions')
    }
    return new StateSealer({
      keyRing,
      ttlSeconds,
      maxPayloadBytes,
      maxTokenChars,
      clockSkewSeconds,
      now,
      sha256,
      aesGcm,
    })
  }

  /** Seals `journal` for exactly this request, with the ring's first key. */
  async seal(binding: StateBinding, journal: unknown): Promise<SealedState> {
    if (!isBinding(binding)) {
      throw new TypeError('seal: binding needs string principal, method and target')
    }
    if (journal === undefined) throw new TypeError('seal: the journal must be a JSON value')
    const key = this.#keyRing.get(this.#keyRing.sealingKid) as RingKey
    const iat = Math.floor(this.#now() / 1000)
    const nonce = base64url.encode(randomBytes(NONCE_BYTES))
    const { principalTag: p, argsDigest: a } = await this.#bindingDigests(key, binding)
    const claims = {
      v: STATE_VERSION,
      iat,
      exp: iat + this.ttlSeconds,
      p,
      m: binding.method,
      t: binding.target,
      a,
      j: journal,
      n: nonce,
    }
    // Plain JSON (only the arguments digest needs a canonical form), refusing what JSON would alter.
    const plaintext = encoder.encode(JSON.stringify(claims, exactJson))
    if (plaintext.byteLength > this.maxPayloadBytes) {
      throw new StateTooLargeError(plaintext.byteLength, this.maxPayloadBytes)
    }
    const token = this.#aesGcm
      ? encryptCompact(this.#aesGcm, key.kid, plaintext)
      : await new CompactEncrypt(plaintext)
          .setProtectedHeader({ alg: ALG, enc: ENC, kid: key.kid })
          .encrypt(key.contentKey)
    return { token, nonce }
  }

  /** Opens a `requestState` from the wire for this request, or throws `InvalidRequestStateError`. */
  async open(token: unknown, binding: StateBinding): Promise<OpenedState> {
    try {
      return await this.#open(token, binding)
    } catch (error) {
      if (error instanceof InvalidRequestStateError) throw error
      throw new InvalidRequestStateError('internal_error' satisfies OpenFailureReason)
    }
  }

  async #open(token: unknown, binding: StateBinding): Promise<OpenedState> {
    if (typeof token !== 'string') return reject('not_a_string')
    if (token.length > this.maxTokenChars) return reject('too_long')
    if (!isBinding(binding)) return reject('bad_binding')

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

    let plaintext: Uint8Array
    try {
      if (this.#aesGcm) {
        const encrypted = base64url.decode(ciphertext)
        const sealed = new Uint8Array(encrypted.length + TAG_BYTES)
        sealed.set(encrypted)
        sealed.set(base64url.decode(tag), encrypted.length)
        plaintext = this.#aesGcm.decrypt(
          key.kid,
          base64url.decode(iv),
          sealed,
          encoder.encode(header)
        )
      } else {
        const result = await compactDecrypt(token, key.contentKey, {
          keyManagementAlgorithms: [ALG],
          contentEncryptionAlgorithms: [ENC],
          maxDecompressedLength: 0,
        })
        plaintext = result.plaintext
      }
    } catch {
      return reject('decrypt_failed')
    }

    let parsed: unknown
    try {
      parsed = JSON.parse(strictDecoder.decode(plaintext))
    } catch {
      return reject('bad_claims')
    }
    const checked = ClaimsSchema.safeParse(parsed)
    if (!checked.success) return reject('bad_claims')
    const claims = checked.data

    const nowMs = this.#now()
    if (!(claims.exp * 1000 > nowMs)) return reject('expired')
    if (!(claims.iat * 1000 <= nowMs + this.clockSkewSeconds * 1000)) {
      return reject('issued_in_future')
    }

    // Computed only now, so a token that fails earlier costs no more Web Crypto calls. (Starting them
    // alongside the decryption saves latency on an idle Node process but costs throughput under load.)
    const digests = await this.#bindingDigests(key, binding).catch(() => null)
    if (digests === null) return reject('bad_binding')
    if (!constantTimeEqual(claims.p, digests.principalTag)) return reject('principal_mismatch')
    if (claims.m !== binding.method) return reject('method_mismatch')
    if (claims.t !== binding.target) return reject('target_mismatch')
    if (!constantTimeEqual(claims.a, digests.argsDigest)) return reject('args_mismatch')

    return { journal: claims.j, nonce: claims.n, issuedAt: claims.iat }
  }

  /** The principal tag (keyed by the token's kid, remembered) and the digest of the arguments. */
  async #bindingDigests(
    key: RingKey,
    binding: StateBinding
  ): Promise<{ principalTag: string; argsDigest: string }> {
    const argsDigest = this.#sha256(canonicalJson(binding.args ?? {}))
    const cacheKey = `${key.kid}\u0000${binding.principal}`
    let principalTag = this.#principalTags.get(cacheKey)
    if (principalTag === undefined) {
      const mac = await crypto.subtle.sign(
        'HMAC',
        key.principalKey,
        encoder.encode(binding.principal)
      )
      principalTag = base64url.encode(new Uint8Array(mac, 0, PRINCIPAL_TAG_BYTES))
      if (this.#principalTags.size >= PRINCIPAL_TAG_CACHE_SIZE) this.#principalTags.clear()
      this.#principalTags.set(cacheKey, principalTag)
    }
    return { principalTag, argsDigest: await argsDigest }
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

function reject(reason: OpenFailureReason): never {
  throw new InvalidRequestStateError(reason)
}

function isBinding(binding: StateBinding): boolean {
  return (
    typeof binding === 'object' &&
    binding !== null &&
    typeof binding.principal === 'string' &&
    typeof binding.method === 'string' &&
    typeof binding.target === 'string'
  )
}

/** The `p` and `a` claims for `binding` under `key`: the principal tag and the arguments digest. */
/** The compact JWE (`dir`, `A256GCM`) jose would write, with a runtime-provided cipher. */
function encryptCompact(aesGcm: AesGcm, kid: string, plaintext: Uint8Array): string {
  const header = base64url.encode(JSON.stringify({ alg: ALG, enc: ENC, kid }))
  const iv = randomBytes(IV_BYTES)
  const sealed = aesGcm.encrypt(kid, iv, plaintext, encoder.encode(header))
  const tagStart = sealed.length - TAG_BYTES
  const ciphertext = base64url.encode(sealed.subarray(0, tagStart))
  return `${header}..${base64url.encode(iv)}.${ciphertext}.${base64url.encode(sealed.subarray(tagStart))}`
}

/** A `JSON.stringify` replacer that refuses values JSON would silently change (NaN, ±Infinity). */
function exactJson(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new TypeError('seal: the journal holds a number JSON cannot represent')
  }
  return value
}

/** Equal-length strings compared without an early exit; unequal lengths are simply unequal. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/**
 * Non-empty unpadded base64url in its one canonical spelling: the length is not 1 mod 4 and the
 * unused low bits of the last character are zero (lenient decoders ignore them, which would let
 * several spellings of one token all open).
 */
function isCanonicalBase64url(text: string): boolean {
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

/** Length of the longest token holding a `payloadBytes` plaintext (kid at its longest). */
function tokenCharsFor(payloadBytes: number): number {
  const header = JSON.stringify({ alg: ALG, enc: ENC, kid: 'k'.repeat(MAX_KID_CHARS) })
  const b64 = (bytes: number) => Math.ceil((bytes * 4) / 3)
  return (
    b64(encoder.encode(header).byteLength) + 2 + IV_CHARS + 1 + b64(payloadBytes) + 1 + TAG_CHARS
  )
}
