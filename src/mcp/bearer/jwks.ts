/**
 * @module mcp/bearer/jwks
 * `RemoteJwks`: an authorization server's signing keys (its JWKS document), fetched with `fetch` and
 * kept for the life of the process (Node) or isolate (Workers), handed to jose as a key resolver.
 *
 * - The document is fetched on first use and again once it is `maxAgeMs` old; one fetch at a time,
 *   whoever asks meanwhile waits for it (single flight).
 * - A token whose `kid` the cached keys do not hold triggers one refetch (the server may have rotated
 *   keys), at most once per `cooldownMs`, so tokens with made-up kids cannot make this server hammer
 *   the authorization server. A lookup that just fetched never refetches.
 * - A failed fetch keeps the keys already held (logged) and is retried after `cooldownMs`; with no keys
 *   at all it is a `KeysUnavailableError` (the caller answers 503: not the token's fault), and so is
 *   every lookup until `cooldownMs` has passed, without a fetch: tokens sent during an outage do not
 *   turn into requests to the authorization server.
 * - Each fetch is bounded: `timeoutMs`, a `MAX_JWKS_BYTES` body, JSON with a `keys` array; jose
 *   validates the keys themselves. Selection (kid, alg, use, key_ops) is jose's `createLocalJWKSet`.
 *
 * Runtime-neutral: Web standards and jose only.
 */
import {
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWSHeaderParameters,
} from 'jose'
import { readBounded } from '../bounded-body.ts'
import { decodeUtf8 } from '../utf8.ts'

/**
 * How long fetched keys are used before the document is fetched again (10 minutes).
 *
 * @example
 * new RemoteJwks({ url, maxAgeMs: DEFAULT_JWKS_MAX_AGE_MS / 2 })
 */
export const DEFAULT_JWKS_MAX_AGE_MS = 10 * 60_000
/**
 * Least time between two fetches that a failure or an unknown `kid` causes (30 seconds).
 *
 * @example
 * new RemoteJwks({ url, cooldownMs: DEFAULT_JWKS_COOLDOWN_MS * 2 })
 */
export const DEFAULT_JWKS_COOLDOWN_MS = 30_000
/**
 * Longest wait for the JWKS document (5 seconds).
 *
 * @example
 * new RemoteJwks({ url, timeoutMs: DEFAULT_JWKS_TIMEOUT_MS * 2 })
 */
export const DEFAULT_JWKS_TIMEOUT_MS = 5_000
/**
 * Largest JWKS document read, in bytes (real ones hold a few keys: a few KiB).
 *
 * @example
 * const text = await boundedText(response, MAX_JWKS_BYTES)
 */
export const MAX_JWKS_BYTES = 256 * 1024

/**
 * Where the keys are and how they are kept: the defaults suit any authorization server.
 *
 * @example
 * const options: RemoteJwksOptions = { url: 'https://auth.example.com/.well-known/jwks.json' }
 */
export interface RemoteJwksOptions {
  url: string
  /** Default `globalThis.fetch`, looked up per fetch. */
  fetch?: typeof fetch
  /** Clock in milliseconds since the epoch; default `Date.now`. */
  now?: () => number
  maxAgeMs?: number
  cooldownMs?: number
  timeoutMs?: number
  /** Told when a refresh fails while older keys stay in use. */
  onStale?: (reason: string) => void
}

/**
 * The authorization server's keys could not be had at all (fetch failed, nothing cached): answer
 * 503, not 401, since the token is not at fault.
 *
 * @example
 * try {
 *   await verifier.verify(token)
 * } catch (error) {
 *   if (error instanceof KeysUnavailableError) return new Response(null, { status: 503 })
 *   throw error
 * }
 */
export class KeysUnavailableError extends Error {
  override name = 'KeysUnavailableError'
}

type KeyResolver = ReturnType<typeof createLocalJWKSet>

/**
 * Reads at most `limit` bytes of a response body as strict UTF-8 text; more is an error.
 *
 * @example
 * const document = JSON.parse(await boundedText(await fetch(url), 64 * 1024)) as unknown
 */
export async function boundedText(response: Response, limit: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'))
  if (Number.isFinite(declared) && declared > limit) throw new Error(`body over ${limit} bytes`)
  const bytes = await readBounded(response.body, limit)
  if (bytes === undefined) throw new Error(`body over ${limit} bytes`)
  return decodeUtf8(bytes)
}

/**
 * An authorization server's JWKS, fetched and kept as the module header says; hand `getKey` to
 * jose or to {@link TokenVerifier}.
 *
 * @example
 * const jwks = new RemoteJwks({ url: 'https://auth.example.com/.well-known/jwks.json' })
 * const { payload } = await jwtVerify(token, jwks.getKey, { issuer, audience })
 */
export class RemoteJwks {
  readonly url: string
  readonly #fetch: typeof fetch | undefined
  readonly #now: () => number
  readonly #maxAgeMs: number
  readonly #cooldownMs: number
  readonly #timeoutMs: number
  readonly #onStale: (reason: string) => void
  #keys: KeyResolver | undefined
  /** Why the last fetch failed while no keys are held; lookups fail with it until `#refreshAt`. */
  #unavailable: string | undefined
  /** When the held keys should be fetched again. */
  #refreshAt = 0
  #lastUnknownKidRefetch = Number.NEGATIVE_INFINITY
  #inFlight: Promise<void> | undefined

  constructor(options: RemoteJwksOptions) {
    this.url = new URL(options.url).href
    this.#fetch = options.fetch
    this.#now = options.now ?? Date.now
    this.#maxAgeMs = options.maxAgeMs ?? DEFAULT_JWKS_MAX_AGE_MS
    this.#cooldownMs = options.cooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_JWKS_TIMEOUT_MS
    this.#onStale = options.onStale ?? (() => {})
  }

  /** jose's key resolver (`jwtVerify(token, jwks.getKey, …)`). */
  readonly getKey = async (
    header: JWSHeaderParameters,
    token: FlattenedJWSInput
  ): Promise<CryptoKey> => {
    let fetched = false
    if (this.#keys === undefined || this.#now() >= this.#refreshAt) {
      if (this.#unavailable !== undefined && this.#now() < this.#refreshAt) {
        throw new KeysUnavailableError(this.#unavailable)
      }
      await this.#refresh()
      fetched = true
    }
    try {
      return await (this.#keys as KeyResolver)(header, token)
    } catch (error) {
      const now = this.#now()
      if (
        !(error instanceof errors.JWKSNoMatchingKey) ||
        fetched ||
        now - this.#lastUnknownKidRefetch < this.#cooldownMs
      ) {
        throw error
      }
      this.#lastUnknownKidRefetch = now
      await this.#refresh()
      return (this.#keys as KeyResolver)(header, token)
    }
  }

  /** One fetch for everyone who needs it now; keeps older keys when it fails. */
  #refresh(): Promise<void> {
    this.#inFlight ??= this.#load()
      .then(
        (keys) => {
          this.#keys = keys
          this.#unavailable = undefined
          this.#refreshAt = this.#now() + this.#maxAgeMs
        },
        (error: unknown) => {
          const reason = error instanceof Error ? error.message : String(error)
          this.#refreshAt = this.#now() + this.#cooldownMs
          if (this.#keys === undefined) {
            this.#unavailable = `JWKS ${this.url} unavailable: ${reason}`
            throw new KeysUnavailableError(this.#unavailable)
          }
          this.#onStale(`JWKS ${this.url} refresh failed, older keys kept: ${reason}`)
        }
      )
      .finally(() => {
        this.#inFlight = undefined
      })
    return this.#inFlight
  }

  async #load(): Promise<KeyResolver> {
    const fetchJwks = this.#fetch ?? globalThis.fetch
    const response = await fetchJwks(this.url, {
      headers: { accept: 'application/jwk-set+json, application/json' },
      signal: AbortSignal.timeout(this.#timeoutMs),
    })
    if (!response.ok) {
      await response.body?.cancel()
      throw new Error(`HTTP ${response.status}`)
    }
    const document = JSON.parse(await boundedText(response, MAX_JWKS_BYTES)) as unknown
    if (
      typeof document !== 'object' ||
      document === null ||
      !Array.isArray((document as { keys?: unknown }).keys)
    ) {
      throw new Error('not a JWK Set')
    }
    return createLocalJWKSet(document as JSONWebKeySet)
  }
}
