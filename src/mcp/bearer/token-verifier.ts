/**
 * @module mcp/bearer/token-verifier
 * `TokenVerifier.verify(token)`: is this bearer token an access token for this server, and whose? A
 * JWT passes only if all hold (MCP authorization; OAuth 2.1 §5.2; RFC 8707; RFC 9068):
 * - signed with an allowed algorithm: the asymmetric ones (`ASYMMETRIC_ALGORITHMS`) with the
 *   authorization server's JWKS, or HS256 alone with a configured shared secret. `alg: none`, an
 *   HMAC "signed" with a public key, or any algorithm outside the list fails before a key is looked up;
 * - `iss` is the configured issuer, and `aud` (string or array) holds exactly this server's audience,
 *   its canonical URL by default, never a prefix or a look-alike;
 * - `sub` and `exp` are present, `exp` and `nbf` hold and `iat` is not in the future, each within a
 *   bounded clock skew of `CLOCK_TOLERANCE_SECONDS`.
 * The result is the caller (issuer and subject), the OAuth client (`azp`, else `client_id`) and the
 * granted scopes with the hierarchy applied. Results are remembered per token (under its SHA-256, never
 * the token itself) until the token expires, at most `VERIFIED_CACHE_SIZE` of them, so a client that
 * sends the same token on every request pays for one signature check.
 *
 * Failures are `InvalidTokenError`s whose `description` is safe to send (`error_description`); the
 * cause, if any, is for the log. Runtime-neutral: Web Crypto and jose.
 */
import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { sha256Base64url } from '../canonical-json.ts'
import { expandScopes, tokenScopes, type ScopeImplications } from './scopes.ts'

/**
 * What signs access tokens verified with a JWKS: never a symmetric algorithm.
 *
 * @example
 * await jwtVerify(idToken, jwks.getKey, { issuer, audience, algorithms: [...ASYMMETRIC_ALGORITHMS] })
 */
export const ASYMMETRIC_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
])
/**
 * The one algorithm accepted with a shared secret.
 *
 * @example
 * await jwtVerify(token, secret, { algorithms: [...SECRET_ALGORITHMS] })
 */
export const SECRET_ALGORITHMS: readonly string[] = Object.freeze(['HS256'])
/**
 * How far the clocks of this server and the authorization server may disagree, in seconds.
 *
 * @example
 * await jwtVerify(idToken, jwks.getKey, { clockTolerance: CLOCK_TOLERANCE_SECONDS })
 */
export const CLOCK_TOLERANCE_SECONDS = 30
/**
 * How many verified tokens a {@link TokenVerifier} remembers (the oldest go first).
 *
 * @example
 * console.log(`at most ${VERIFIED_CACHE_SIZE} tokens are remembered`)
 */
export const VERIFIED_CACHE_SIZE = 1024

/**
 * What a verified access token says: who, through which client, with which scopes, until when.
 *
 * @example
 * const { issuer, subject, scopes } = await verifier.verify(token)
 * if (!scopes.has('notes:read')) return forbidden()
 */
export interface VerifiedToken {
  readonly issuer: string
  readonly subject: string
  /** `azp`, else `client_id`, when the token names its OAuth client. */
  readonly client: string | undefined
  /** Granted scopes, hierarchy applied. */
  readonly scopes: ReadonlySet<string>
  /** `exp` in milliseconds since the epoch. */
  readonly expiresAt: number
}

/**
 * Which tokens a {@link TokenVerifier} accepts.
 *
 * @example
 * const options: TokenVerifierOptions = {
 *   issuer: 'https://auth.example.com',
 *   audience: 'https://mcp.example.com/mcp',
 *   key: new RemoteJwks({ url: 'https://auth.example.com/.well-known/jwks.json' }).getKey,
 *   implies: { 'notes:write': ['notes:read'] },
 * }
 */
export interface TokenVerifierOptions {
  issuer: string
  audience: string
  /** The JWKS resolver (asymmetric algorithms) or the HS256 secret. */
  key: JWTVerifyGetKey | Uint8Array
  implies?: ScopeImplications
  now?: () => number
}

/**
 * The token is not one this server accepts; `description` is what the challenge may say.
 *
 * @example
 * try {
 *   await verifier.verify(token)
 * } catch (error) {
 *   if (error instanceof InvalidTokenError) return refusalResponse(null, challenges.invalidToken(error.description))
 *   throw error
 * }
 */
export class InvalidTokenError extends Error {
  override name = 'InvalidTokenError'
  readonly description: string

  constructor(description: string, options?: { cause?: unknown }) {
    super(description, options)
    this.description = description
  }
}

function describe(error: unknown, audience: string): string {
  if (error instanceof errors.JWTExpired) return 'The access token expired.'
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'aud':
        return `The access token is not for this server: its audience must be ${audience}.`
      case 'iss':
        return 'The access token was issued by another authorization server.'
      case 'nbf':
        return 'The access token is not valid yet.'
      default:
        return `The access token's "${error.claim}" claim is missing or invalid.`
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return 'The access token is signed with an algorithm this server refuses.'
  if (error instanceof errors.JWKSNoMatchingKey)
    return 'The access token is signed with an unknown key.'
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return 'The access token signature is invalid.'
  return 'The access token is malformed.'
}

/**
 * Verifies bearer tokens as the module header says, remembering each verified one until it expires.
 *
 * @example
 * const verifier = new TokenVerifier({
 *   issuer: 'https://auth.example.com',
 *   audience: 'https://mcp.example.com/mcp',
 *   key: new RemoteJwks({ url: 'https://auth.example.com/.well-known/jwks.json' }).getKey,
 * })
 * const { issuer, subject, client, scopes } = await verifier.verify(token)
 */
export class TokenVerifier {
  readonly audience: string
  readonly #issuer: string
  readonly #key: JWTVerifyGetKey | Uint8Array
  readonly #algorithms: string[]
  readonly #implies: ScopeImplications
  readonly #now: () => number
  /** Verified tokens by SHA-256, oldest first. */
  readonly #verified = new Map<string, VerifiedToken>()

  constructor(options: TokenVerifierOptions) {
    this.#issuer = options.issuer
    this.audience = options.audience
    this.#key = options.key
    this.#algorithms = [
      ...(options.key instanceof Uint8Array ? SECRET_ALGORITHMS : ASYMMETRIC_ALGORITHMS),
    ]
    this.#implies = options.implies ?? {}
    this.#now = options.now ?? Date.now
  }

  /** The verified token, or `InvalidTokenError`; `KeysUnavailableError` when no keys can be had. */
  async verify(token: string): Promise<VerifiedToken> {
    const digest = await sha256Base64url(token)
    const now = this.#now()
    const known = this.#verified.get(digest)
    if (known !== undefined) {
      if (now < known.expiresAt) return known
      this.#verified.delete(digest)
    }
    const verified = await this.#verify(token, now)
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) {
      this.#verified.delete(this.#verified.keys().next().value as string)
    }
    this.#verified.set(digest, verified)
    return verified
  }

  async #verify(token: string, now: number): Promise<VerifiedToken> {
    let payload: JWTPayload
    try {
      const options = {
        issuer: this.#issuer,
        audience: this.audience,
        algorithms: this.#algorithms,
        requiredClaims: ['sub', 'exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(now),
      }
      // Two calls only for jose's overloads: one takes a key, the other a key resolver.
      payload = (
        this.#key instanceof Uint8Array
          ? await jwtVerify(token, this.#key, options)
          : await jwtVerify(token, this.#key, options)
      ).payload
    } catch (error) {
      if (!(error instanceof errors.JOSEError)) throw error
      throw new InvalidTokenError(describe(error, this.audience), { cause: error })
    }
    if (typeof payload.iat === 'number' && payload.iat > now / 1000 + CLOCK_TOLERANCE_SECONDS) {
      throw new InvalidTokenError('The access token is not valid yet.')
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') {
      throw new InvalidTokenError('The access token\'s "sub" claim is missing or invalid.')
    }
    const client = payload.azp ?? payload.client_id
    return Object.freeze({
      issuer: payload.iss as string,
      subject: payload.sub,
      client: typeof client === 'string' ? client : undefined,
      scopes: expandScopes(tokenScopes(payload), this.#implies),
      expiresAt: (payload.exp as number) * 1000,
    })
  }
}
