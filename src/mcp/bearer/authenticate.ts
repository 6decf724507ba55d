/**
 * @module mcp/bearer/authenticate
 * Bearer-token authentication (MCP authorization: an OAuth 2.1 resource server), apart from HTTP:
 * `authenticateBearer` reads one request's credentials, from its `Authorization: Bearer` header only
 * (a token in the URL is refused: it ends up in logs and histories), verifies the token with
 * `TokenVerifier` (signature, algorithm, issuer, exact audience, lifetime) and answers the caller it
 * names (the principal, issuer + subject; the OAuth client; the granted scopes, hierarchy applied) or
 * the refusal to answer with (`challenges.ts`). Tokens are never logged. The front door's hook that
 * applies it (and hands the engine the 403 step-up challenge) is `front-door-auth.ts`; an HTTP
 * framework's middleware calls it the same way.
 */
import type { McpLogger } from '../logger.ts'
import type { AuthRefusal, Challenges } from './challenges.ts'
import { KeysUnavailableError } from './jwks.ts'
import { InvalidTokenError, type TokenVerifier } from './token-verifier.ts'

/**
 * The principal of a verified token: its issuer and subject, unambiguously joined (JSON
 * `[issuer, subject]`), so that two authorization servers' subjects never meet.
 *
 * @example
 * tokenPrincipal('https://auth.example.com', 'alice') // '["https://auth.example.com","alice"]'
 */
export function tokenPrincipal(issuer: string, subject: string): string {
  return JSON.stringify([issuer, subject])
}

/**
 * How one protected resource authenticates: its verifier, its refusals, and the scopes every
 * operation needs.
 *
 * @example
 * const auth: BearerAuth = { verifier, challenges, requiredScopes: ['notes:read'] }
 */
export interface BearerAuth {
  verifier: TokenVerifier
  challenges: Challenges
  /** Scopes every operation needs besides its own. */
  requiredScopes: readonly string[]
}

/**
 * What one request presents: its `Authorization` header, and whether its URL carries a token.
 *
 * @example
 * const credentials: BearerCredentials = {
 *   authorization: request.headers.get('authorization') ?? undefined,
 *   tokenInUrl: new URL(request.url).searchParams.has('access_token'),
 * }
 */
export interface BearerCredentials {
  authorization: string | undefined
  tokenInUrl: boolean
}

/**
 * The caller a verified token names.
 *
 * @example
 * const { principal, client, grantedScopes } = outcome.caller
 */
export interface BearerCaller {
  /** `[issuer, subject]` as JSON (`tokenPrincipal`). */
  principal: string
  /** The OAuth client of the token (`azp` or `client_id`), when the token names one. */
  client: string | undefined
  /** The scopes the token grants, hierarchy applied. */
  grantedScopes: ReadonlySet<string>
}

/** `Bearer <token68>` (RFC 6750 §2.1; the scheme is case-insensitive, RFC 9110 §11.1). */
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i
const BEARER_SCHEME = /^Bearer(?: |$)/i

/**
 * The caller `credentials` authenticate, or the refusal; anything but a token's fault throws.
 *
 * @example
 * const outcome = await authenticateBearer(auth, credentials, logger)
 * if ('refusal' in outcome) return refusalResponse(null, outcome.refusal)
 * const { principal, grantedScopes } = outcome.caller
 */
export async function authenticateBearer(
  { verifier, challenges }: BearerAuth,
  { authorization, tokenInUrl }: BearerCredentials,
  logger?: McpLogger
): Promise<{ caller: BearerCaller } | { refusal: AuthRefusal }> {
  if (tokenInUrl) {
    return {
      refusal: challenges.invalidRequest(
        'Access tokens in the URL are refused; send the token in the Authorization header.'
      ),
    }
  }
  if (authorization === undefined || !BEARER_SCHEME.test(authorization)) {
    return { refusal: challenges.missingToken() }
  }
  const token = BEARER.exec(authorization)?.[1]
  if (token === undefined) {
    return {
      refusal: challenges.invalidRequest(
        'The Authorization header must be "Bearer" and one access token.'
      ),
    }
  }
  let verified
  try {
    verified = await verifier.verify(token)
  } catch (error) {
    if (error instanceof InvalidTokenError) {
      return { refusal: challenges.invalidToken(error.description) }
    }
    if (error instanceof KeysUnavailableError) {
      logger?.error('token keys unavailable', { error: error.message })
      return { refusal: challenges.unavailable() }
    }
    throw error
  }
  return {
    caller: {
      principal: tokenPrincipal(verified.issuer, verified.subject),
      client: verified.client,
      grantedScopes: verified.scopes,
    },
  }
}
