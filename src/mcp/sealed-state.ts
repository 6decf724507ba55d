/**
 * @module mcp/sealed-state
 * The sealed `requestState` codec: `StateSealer.seal` turns a replay journal plus the request it
 * belongs to into an opaque token, and `StateSealer.open` turns a token from the wire back into the
 * journal, or rejects it. Any replica holding the same key ring opens what any other sealed.
 *
 * Token: the key ring's compact JWE (`mcp/compact-jwe`: `dir` + `A256GCM`, kid in the protected
 * header, caps and header checked before decrypting). Plaintext: the JSON claims `state-claims.ts`
 * writes and reads (version, times, principal tag, method, target, arguments digest, journal, nonce);
 * here the principal tag (HMAC-SHA256 under the kid's principal key, first 16 bytes, base64url; never
 * the raw principal), the arguments digest (base64url SHA-256 of the canonical JSON of the arguments,
 * `{}` when absent or null) and the 16-byte random nonce are made.
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
 * - A token past its `exp` is `expired`, unless the caller opens it with `{ expired: 'accept' }`:
 *   then an authentic one (decrypted, claims well formed, not issued in the future, bound to this
 *   request) opens whatever its age, for a caller whose own record decides how long it lives (a
 *   2025-era session id, `legacy/session.ts`). `requestState` is never opened so.
 * - A state that never leaves the process (the rounds of a 2025-era flow) is not sealed: `hold`
 *   answers what `open` would answer for the token `seal` would make (the same checks, bound and
 *   lifetime, the journal a copy through its JSON form), without the cipher, and `openHeld` refuses
 *   it once expired, as `open` would.
 *
 * Left to others: composing the principal string (issuer, subject, client — the auth layer), choosing
 * which request fields form `args`, merging journals across rounds and single-use nonce bookkeeping
 * (the replay engine), mapping errors to the wire (`mcp/errors`), key configuration (`mcp/key-ring`),
 * the token format (`mcp/compact-jwe`). Runtime-neutral: Web Crypto (and jose's base64url by default).
 */

import { JOSE_BASE64URL, type Base64urlCodec } from './base64url.ts'
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
import {
  claimsText,
  journalText,
  readClaims,
  SIZED_ARGS_DIGEST,
  SIZED_PRINCIPAL_TAG,
  type Claims,
  type ClaimsDraft,
} from './state-claims.ts'
import { decodeUtf8 } from './utf8.ts'

/**
 * Lifetime of one sealed round (a `requestState`) unless `stateTtlSeconds` (`ttlSeconds` of a
 * sealer) says otherwise: ten minutes for the person to answer and the client to come back.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_STATE_TTL_SECONDS } from 'stateless-mcp'
 *
 * // forms people take a while to fill in
 * const server = createMcpServer(definition, { stateTtlSeconds: 3 * DEFAULT_STATE_TTL_SECONDS })
 * ```
 */
export const DEFAULT_STATE_TTL_SECONDS = 600
/**
 * Longest lifetime a sealed round may be given (a day): a `RangeError` above.
 *
 * @example
 * ```ts
 * import { createMcpServer, MAX_STATE_TTL_SECONDS } from 'stateless-mcp'
 *
 * const wanted = Number(process.env.STATE_TTL_SECONDS ?? 600)
 * const server = createMcpServer(definition, {
 *   stateTtlSeconds: Math.min(wanted, MAX_STATE_TTL_SECONDS),
 * })
 * ```
 */
export const MAX_STATE_TTL_SECONDS = 86_400
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

/** What a state is bound to. `args` is digested as canonical JSON (`undefined`/`null` → `{}`). */
export interface StateBinding {
  readonly principal: string
  readonly method: string
  readonly target: string
  readonly args: unknown
}

/** A state sealed into a token, with the nonce and expiry inside it. */
export interface SealedState {
  /** The compact JWE to send as `requestState`. */
  readonly token: string
  /** The random nonce inside it (base64url, 16 bytes), e.g. for single-use bookkeeping. */
  readonly nonce: string
  /** The `exp` claim: seconds since the epoch after which the state no longer opens. */
  readonly expiresAt: number
}

/** What a sealed state opened to: its journal, nonce and lifetime. */
export interface OpenedState {
  readonly journal: unknown
  readonly nonce: string
  /** The `iat` claim: seconds since the epoch when the state was sealed. */
  readonly issuedAt: number
  /** The `exp` claim: seconds since the epoch after which the state no longer opens. */
  readonly expiresAt: number
}

/** How `open` treats a token past its `exp`: `'refuse'` (the default) or `'accept'` (see the contract). */
export interface OpenOptions {
  readonly expired?: 'refuse' | 'accept'
}

/** What {@link StateSealer.create} takes: the key ring, and the lifetime and bounds of a state. */
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
  /** A runtime's faster base64url (Node's `Buffer`); see `CompactJweOptions.base64url`. */
  readonly base64url?: Base64urlCodec
}

interface BindingDigests {
  principalTag: string
  argsDigest: string
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

/**
 * Seals state into opaque tokens any replica holding the same key ring opens (module header): the
 * `requestState` of multi round-trip requests and the ids of 2025-era sessions, given to
 * `createMcpHandler`, and any value of an application's that must travel through a client sealed
 * and bound (a cookie, say).
 *
 * @example
 * ```ts
 * import { importKeyRing, parseKeyRing, StateSealer } from 'stateless-mcp/compose'
 *
 * const sealer = StateSealer.create({
 *   keyRing: await importKeyRing(parseKeyRing(process.env.STATE_KEYS!)),
 *   ttlSeconds: 900,
 * })
 * const binding = { principal: 'alice', method: 'cookie', target: 'session', args: {} }
 * const { token } = await sealer.seal(binding, { signedIn: true })
 * const { journal } = await sealer.open(token, binding) // { signedIn: true }
 * ```
 */
export class StateSealer {
  readonly ttlSeconds: number
  readonly maxTokenChars: number
  readonly maxPayloadBytes: number
  readonly clockSkewSeconds: number
  readonly #jwe: CompactJwe
  readonly #base64url: Base64urlCodec
  readonly #now: () => number
  readonly #sha256: (text: string) => string | Promise<string>
  readonly #principalTags = new Map<string, string>()

  private constructor(
    jwe: CompactJwe,
    options: Required<Omit<StateSealerOptions, 'aesGcm' | 'keyRing' | 'maxTokenChars'>>
  ) {
    this.#jwe = jwe
    this.#base64url = options.base64url
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
      base64url = JOSE_BASE64URL,
    } = options
    // Checks the ring, the cipher and the base64url codec.
    const jwe = CompactJwe.create({ keyRing, maxTokenChars, aesGcm, base64url })
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
    return new StateSealer(jwe, {
      ttlSeconds,
      maxPayloadBytes,
      clockSkewSeconds,
      now,
      sha256,
      base64url,
    })
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
      base64url: this.#base64url,
    })
  }

  /**
   * Seals `journal` for exactly this request, with the ring's first key. `nonce` is for re-sealing a
   * state under its identity (a renewed session id keeps its `sid`); a new state gets a random one.
   */
  async seal(binding: StateBinding, journal: unknown, nonce?: string): Promise<SealedState> {
    const claims = this.#claims(binding, journal, nonce)
    const key = this.#jwe.sealingKey
    const digests = this.#bindingDigests(key, binding)
    const { principalTag, argsDigest } = digests instanceof Promise ? await digests : digests
    const plaintext = encoder.encode(claimsText(claims, principalTag, argsDigest))
    if (plaintext.byteLength > this.maxPayloadBytes) {
      throw new StateTooLargeError(plaintext.byteLength, this.maxPayloadBytes)
    }
    const token = this.#jwe.encrypt(plaintext)
    return {
      token: token instanceof Promise ? await token : token,
      nonce: claims.nonce,
      expiresAt: claims.exp,
    }
  }

  /**
   * What `open` would answer, now, for the token `seal` would make of `journal`, without sealing it:
   * for a state that never leaves this process (the rounds of a 2025-era flow). The same checks
   * and bounds as `seal` (`TypeError`, `StateTooLargeError` for a plaintext `seal` would refuse) and
   * the same lifetime (`openHeld`); the journal is a copy through its JSON form, as `open` gives.
   */
  hold(binding: StateBinding, journal: unknown): OpenedState {
    const claims = this.#claims(binding, journal)
    // The principal tag and the arguments digest have fixed lengths: this is the plaintext's size.
    const bytes = encoder.encode(
      claimsText(claims, SIZED_PRINCIPAL_TAG, SIZED_ARGS_DIGEST)
    ).byteLength
    if (bytes > this.maxPayloadBytes) throw new StateTooLargeError(bytes, this.maxPayloadBytes)
    return {
      journal: JSON.parse(claims.journalText) as unknown,
      nonce: claims.nonce,
      issuedAt: claims.iat,
      expiresAt: claims.exp,
    }
  }

  /** A held state (`hold`) while it lives, as `open` would answer it; else `InvalidRequestStateError`. */
  openHeld(held: OpenedState): OpenedState {
    if (!(held.expiresAt * 1000 > this.#now())) return reject('expired')
    return held
  }

  /** This sealer's clock, in milliseconds since the epoch: what a state's age is judged by. */
  now(): number {
    return this.#now()
  }

  /**
   * Whether `token` is sealed with the ring's first key, the one `seal` uses now (says nothing of
   * whether it opens): a state sealed before a rotation is not.
   */
  sealedWithSealingKey(token: string): boolean {
    return this.#jwe.namesSealingKey(token)
  }

  /** The claims of a new state for `binding`, checked, awaiting the binding's digests. */
  #claims(
    binding: StateBinding,
    journal: unknown,
    nonce = this.#base64url.encode(randomBytes(NONCE_BYTES))
  ): ClaimsDraft {
    if (!isBinding(binding)) {
      throw new TypeError('seal: binding needs string principal, method and target')
    }
    const text = journalText(journal)
    const iat = Math.floor(this.#now() / 1000)
    return {
      iat,
      exp: iat + this.ttlSeconds,
      method: binding.method,
      target: binding.target,
      journalText: text,
      nonce,
    }
  }

  /**
   * Opens a `requestState` from the wire for this request, or throws `InvalidRequestStateError`;
   * `options.expired: 'accept'` opens an authentic token past its `exp` too.
   */
  async open(
    token: unknown,
    binding: StateBinding,
    options: OpenOptions = {}
  ): Promise<OpenedState> {
    try {
      const opened = this.#open(token, binding, options.expired === 'accept')
      return opened instanceof Promise ? await opened : opened
    } catch (error) {
      if (error instanceof InvalidRequestStateError) throw error
      throw new InvalidRequestStateError('internal_error' satisfies OpenFailureReason)
    }
  }

  // Each step answers at once when its value is at hand (Node's synchronous cipher and hash, a
  // remembered principal tag), so a round on Node opens its state without a single await.
  #open(
    token: unknown,
    binding: StateBinding,
    acceptExpired: boolean
  ): OpenedState | Promise<OpenedState> {
    if (!isBinding(binding)) return reject('bad_binding')
    let decrypted: DecryptedJwe | Promise<DecryptedJwe>
    try {
      decrypted = this.#jwe.decrypt(token)
    } catch (error) {
      return rejectJwe(error)
    }
    return decrypted instanceof Promise
      ? decrypted.then((opened) => this.#readOpened(opened, binding, acceptExpired), rejectJwe)
      : this.#readOpened(decrypted, binding, acceptExpired)
  }

  #readOpened(
    { plaintext, key }: DecryptedJwe,
    binding: StateBinding,
    acceptExpired: boolean
  ): OpenedState | Promise<OpenedState> {
    let parsed: unknown
    try {
      parsed = JSON.parse(decodeUtf8(plaintext))
    } catch {
      return reject('bad_claims')
    }
    const claims = readClaims(parsed)
    if (claims === undefined) return reject('bad_claims')

    const nowMs = this.#now()
    if (!acceptExpired && !(claims.exp * 1000 > nowMs)) return reject('expired')
    if (!(claims.iat * 1000 <= nowMs + this.clockSkewSeconds * 1000)) {
      return reject('issued_in_future')
    }

    // Computed only now, so a token that fails earlier costs no more Web Crypto calls. (Starting them
    // alongside the decryption saves latency on an idle Node process but costs throughput under load.)
    let digests: BindingDigests | Promise<BindingDigests>
    try {
      digests = this.#bindingDigests(key, binding)
    } catch {
      return reject('bad_binding')
    }
    return digests instanceof Promise
      ? digests.then(
          (computed) => matchBinding(claims, computed, binding),
          () => reject('bad_binding')
        )
      : matchBinding(claims, digests, binding)
  }

  /**
   * The principal tag (keyed by the token's kid, remembered) and the digest of the arguments: at once
   * when both are at hand (a remembered tag and a synchronous hash, the common case on Node), else a
   * promise. Throws `TypeError` for arguments with no exact JSON form.
   */
  #bindingDigests(key: RingKey, binding: StateBinding): BindingDigests | Promise<BindingDigests> {
    const argsDigest = this.#sha256(canonicalJson(binding.args ?? {}))
    const cacheKey = `${key.kid}\u0000${binding.principal}`
    const principalTag = this.#principalTags.get(cacheKey)
    if (principalTag !== undefined && typeof argsDigest === 'string') {
      return { principalTag, argsDigest }
    }
    return this.#digestsOnWebCrypto(key, cacheKey, binding.principal, principalTag, argsDigest)
  }

  async #digestsOnWebCrypto(
    key: RingKey,
    cacheKey: string,
    principal: string,
    remembered: string | undefined,
    argsDigest: string | Promise<string>
  ): Promise<BindingDigests> {
    let principalTag = remembered
    if (principalTag === undefined) {
      const mac = await crypto.subtle.sign('HMAC', key.principalKey, encoder.encode(principal))
      principalTag = this.#base64url.encode(new Uint8Array(mac, 0, PRINCIPAL_TAG_BYTES))
      if (this.#principalTags.size >= PRINCIPAL_TAG_CACHE_SIZE) this.#principalTags.clear()
      this.#principalTags.set(cacheKey, principalTag)
    }
    return { principalTag, argsDigest: await argsDigest }
  }
}

function reject(reason: OpenFailureReason): never {
  throw new InvalidRequestStateError(reason)
}

function rejectJwe(error: unknown): never {
  return reject(error instanceof InvalidJweError ? error.reason : 'internal_error')
}

/** The opened state when its claims name this principal, request and arguments. */
function matchBinding(claims: Claims, digests: BindingDigests, binding: StateBinding): OpenedState {
  if (!constantTimeEqual(claims.p, digests.principalTag)) return reject('principal_mismatch')
  if (claims.m !== binding.method) return reject('method_mismatch')
  if (claims.t !== binding.target) return reject('target_mismatch')
  if (!constantTimeEqual(claims.a, digests.argsDigest)) return reject('args_mismatch')
  return { journal: claims.j, nonce: claims.n, issuedAt: claims.iat, expiresAt: claims.exp }
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
