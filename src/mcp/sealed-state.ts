/**
 * @module mcp/sealed-state
 * The sealed `requestState` codec: `StateSealer.seal` turns a replay journal plus the request it
 * belongs to into an opaque token, and `StateSealer.open` turns a token from the wire back into the
 * journal, or rejects it. Any replica holding the same key ring opens what any other sealed.
 *
 * Token: the key ring's compact JWE (`mcp/compact-jwe`: `dir` + `A256GCM`, kid in the protected
 * header, caps and header checked before decrypting). Plaintext: JSON claims
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
 *   log only. The token passes the codec's checks first (type, length, canonical parts, header: an
 *   unknown kid never reaches the cipher), then every claim is verified.
 * - Rotation works by construction: a token opens while its kid is in the ring; a retired kid is
 *   `unknown_kid`.
 *
 * Left to others: composing the principal string (issuer, subject, client — the auth layer), choosing
 * which request fields form `args`, merging journals across rounds and single-use nonce bookkeeping
 * (the replay engine), mapping errors to the wire (`mcp/errors`), key configuration (`mcp/key-ring`),
 * the token format (`mcp/compact-jwe`). Runtime-neutral: Web Crypto, jose and zod only.
 */

import { base64url } from 'jose'
import { z } from 'zod'
import { canonicalJson, sha256Base64url } from './canonical-json.ts'
import {
  CompactJwe,
  compactJweChars,
  InvalidJweError,
  type AesGcm,
  type DecryptedJwe,
  type JweFailureReason,
} from './compact-jwe.ts'
import { constantTimeEqual } from './constant-time.ts'
import { InvalidRequestStateError } from './errors.ts'
import type { KeyRing, RingKey } from './key-ring.ts'
import { randomBytes } from './random.ts'

const STATE_VERSION = 1
const DEFAULT_STATE_TTL_SECONDS = 600
const MAX_STATE_TTL_SECONDS = 86_400
/** Longest lifetime `withTtl` admits: 2025-era session ids are sealed with the same ring for days. */
const MAX_DERIVED_TTL_SECONDS = 30 * 86_400
const DEFAULT_MAX_STATE_TOKEN_CHARS = 16_384
const DEFAULT_MAX_STATE_PAYLOAD_BYTES = 8_192
const DEFAULT_STATE_CLOCK_SKEW_SECONDS = 60
/** Smallest payload cap accepted: room for the claims around a small journal. */
const MIN_STATE_PAYLOAD_BYTES = 512
/** Largest payload cap accepted; request bodies are capped well below a few MiB anyway. */
const MAX_STATE_PAYLOAD_BYTES = 1_048_576
const MAX_STATE_CLOCK_SKEW_SECONDS = 3_600

const NONCE_BYTES = 16
const PRINCIPAL_TAG_BYTES = 16

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
   * `node:crypto` is synchronous); see `CompactJweOptions.aesGcm`. Tokens are interchangeable either way.
   */
  readonly aesGcm?: AesGcm
}

/** Principal tags remembered per sealer (they depend only on the key and the principal). */
const PRINCIPAL_TAG_CACHE_SIZE = 4096

/** Why `open` rejected a token. Logged, never sent: the wire always says "Invalid or expired requestState". */
export type OpenFailureReason =
  | JweFailureReason
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
  readonly #jwe: CompactJwe
  readonly #now: () => number
  readonly #sha256: (text: string) => string | Promise<string>
  readonly #principalTags = new Map<string, string>()

  private constructor(
    jwe: CompactJwe,
    options: Required<Omit<StateSealerOptions, 'aesGcm' | 'keyRing' | 'maxTokenChars'>>
  ) {
    this.#jwe = jwe
    this.#now = options.now
    this.#sha256 = options.sha256
    this.ttlSeconds = options.ttlSeconds
    this.maxTokenChars = jwe.maxTokenChars
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
    const jwe = CompactJwe.create({ keyRing, maxTokenChars, aesGcm })
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
    const needed = compactJweChars(maxPayloadBytes)
    if (!(maxTokenChars >= needed)) {
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
    return new StateSealer(jwe, { ttlSeconds, maxPayloadBytes, clockSkewSeconds, now, sha256 })
  }

  /**
   * A sealer on the same key ring, caps, clock and digest with another lifetime, from 1 s to 30 days:
   * what seals 2025-era session ids (`legacy/session.ts`). Tokens of both stay apart by their binding.
   */
  withTtl(ttlSeconds: number): StateSealer {
    if (!(
      Number.isInteger(ttlSeconds) &&
      ttlSeconds >= 1 &&
      ttlSeconds <= MAX_DERIVED_TTL_SECONDS
    )) {
      throw new RangeError(`ttlSeconds must be a whole number from 1 to ${MAX_DERIVED_TTL_SECONDS}`)
    }
    return new StateSealer(this.#jwe, {
      ttlSeconds,
      maxPayloadBytes: this.maxPayloadBytes,
      clockSkewSeconds: this.clockSkewSeconds,
      now: this.#now,
      sha256: this.#sha256,
    })
  }

  /** Seals `journal` for exactly this request, with the ring's first key. */
  async seal(binding: StateBinding, journal: unknown): Promise<SealedState> {
    if (!isBinding(binding)) {
      throw new TypeError('seal: binding needs string principal, method and target')
    }
    if (journal === undefined) throw new TypeError('seal: the journal must be a JSON value')
    const key = this.#jwe.sealingKey
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
    return { token: await this.#jwe.encrypt(plaintext), nonce }
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
    if (!isBinding(binding)) return reject('bad_binding')
    let opened: DecryptedJwe
    try {
      opened = await this.#jwe.decrypt(token)
    } catch (error) {
      return reject(error instanceof InvalidJweError ? error.reason : 'internal_error')
    }
    const { plaintext, key } = opened

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

/** A `JSON.stringify` replacer that refuses values JSON would silently change (NaN, ±Infinity). */
function exactJson(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new TypeError('seal: the journal holds a number JSON cannot represent')
  }
  return value
}
