/**
 * @module auth/bearer
 * Bearer-token authentication of the MCP endpoint (MCP authorization: an OAuth 2.1 resource server).
 * Every request is authenticated on its own, from its `Authorization: Bearer` header only (a token in
 * the URL is refused: it ends up in logs and histories). The token is verified by `TokenVerifier`
 * (signature, algorithm, issuer, exact audience, lifetime). The context gets the principal (issuer +
 * subject), the OAuth client, the granted scopes (hierarchy applied), the base scopes
 * (AUTH_REQUIRED_SCOPE) and the 403 step-up challenge the engine answers with when an operation needs
 * more than granted: the base scopes plus its own, all named in one challenge (`mcp/scopes.ts`
 * decides from the parsed body, never from headers). Without
 * auth every request is the single local principal and every operation is allowed. Tokens are never
 * logged. The answers themselves are `challenges.ts`'.
 *
 * @example
 * app.use('/mcp', bearerAuth({ auth: { verifier, challenges, requiredScopes: [] } }))
 */
import type { MiddlewareHandler } from 'hono'
import type { McpLogger } from '../mcp/logger.ts'
import type { RequestId } from '../mcp/wire.ts'
import { peekRequestId } from '../http/errors.ts'
import type { Challenges } from './challenges.ts'
import { KeysUnavailableError } from './jwks.ts'
import { InvalidTokenError, type TokenVerifier } from './token-verifier.ts'

export const LOCAL_PRINCIPAL = 'local'

/** The principal of a verified token: its issuer and subject, unambiguously joined. */
export function tokenPrincipal(issuer: string, subject: string): string {
  return JSON.stringify([issuer, subject])
}

declare module 'hono' {
  interface ContextVariableMap {
    /** The authenticated caller (JSON `[issuer, subject]`), or `local` without auth. */
    principal: string
    /** The OAuth client of the token (`azp` or `client_id`), when the token names one. */
    client: string | undefined
    /** The scopes the token grants, hierarchy applied; unset without auth (everything allowed). */
    grantedScopes: ReadonlySet<string> | undefined
    /** Scopes every operation needs (AUTH_REQUIRED_SCOPE), checked with the operation's own. */
    baseScopes: readonly string[] | undefined
    /** The 403 step-up challenge naming every scope an operation needs (unset without auth). */
    insufficientScope: ((required: readonly string[], id: RequestId | null) => Response) | undefined
  }
}

export interface BearerAuth {
  verifier: TokenVerifier
  challenges: Challenges
  /** Scopes every operation needs besides its own (AUTH_REQUIRED_SCOPE). */
  requiredScopes: readonly string[]
}

export interface BearerAuthOptions {
  /** Without it, every request is the local principal. */
  auth: BearerAuth | undefined
  /** Bodies up to this size are read to echo the request id in a refusal. */
  maxBodyBytes?: number
  logger?: McpLogger
}

/** `Bearer <token68>` (RFC 6750 §2.1; the scheme is case-insensitive, RFC 9110 §11.1). */
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i
const BEARER_SCHEME = /^Bearer(?: |$)/i

export function bearerAuth({
  auth,
  maxBodyBytes = 65536,
  logger,
}: BearerAuthOptions): MiddlewareHandler {
  if (!auth) {
    return async function localPrincipal(c, next) {
      c.set('principal', LOCAL_PRINCIPAL)
      await next()
    }
  }
  const { verifier, challenges, requiredScopes } = auth
  const insufficientScope = (required: readonly string[], id: RequestId | null) =>
    challenges.insufficientScope(id, required)

  return async function authenticate(c, next) {
    const id = () => peekRequestId(c, maxBodyBytes)
    if (c.req.query('access_token') !== undefined) {
      return challenges.invalidRequest(
        await id(),
        'Access tokens in the URL are refused; send the token in the Authorization header.'
      )
    }
    const header = c.req.header('authorization')
    if (header === undefined || !BEARER_SCHEME.test(header)) {
      return challenges.missingToken(await id())
    }
    const token = BEARER.exec(header)?.[1]
    if (token === undefined) {
      return challenges.invalidRequest(
        await id(),
        'The Authorization header must be "Bearer" and one access token.'
      )
    }
    let verified
    try {
      verified = await verifier.verify(token)
    } catch (error) {
      if (error instanceof InvalidTokenError) {
        return challenges.invalidToken(await id(), error.description)
      }
      if (error instanceof KeysUnavailableError) {
        logger?.error('token keys unavailable', { error: error.message })
        return challenges.unavailable(await id())
      }
      throw error
    }
    c.set('principal', tokenPrincipal(verified.issuer, verified.subject))
    c.set('client', verified.client)
    c.set('grantedScopes', verified.scopes)
    c.set('baseScopes', requiredScopes)
    c.set('insufficientScope', insufficientScope)
    await next()
  }
}
