/**
 * @module http/bearer-auth
 * The Hono middleware that authenticates the MCP endpoint (`stateless-mcp/bearer`'s
 * `authenticateBearer` decides): it sets the
 * context's principal (issuer + subject), the OAuth client, the granted scopes (hierarchy applied),
 * the base scopes (AUTH_REQUIRED_SCOPE) and the 403 step-up challenge the engine answers with when an
 * operation needs more than granted (the base scopes plus its own, all named in one challenge;
 * `mcp/scopes.ts` decides from the parsed body, never from headers), or answers the refusal of
 * the engine's `Challenges` as a JSON-RPC error response, echoing the request id when the body is small
 * enough to read it. Without auth every request is the single local principal and every operation is
 * allowed.
 *
 * @example
 * app.use('/mcp', bearerAuth({ auth: { verifier, challenges, requiredScopes: [] } }))
 */
import type { MiddlewareHandler } from 'hono'
import { LOCAL_PRINCIPAL, type McpLogger } from 'stateless-mcp'
import { authenticateBearer, refusalResponse, type BearerAuth } from 'stateless-mcp/bearer'
import type { RequestId } from 'stateless-mcp/compose'
import { peekRequestId } from './errors.ts'

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

export interface BearerAuthOptions {
  /** Without it, every request is the local principal. */
  auth: BearerAuth | undefined
  /** Bodies up to this size are read to echo the request id in a refusal. */
  maxBodyBytes?: number
  logger?: McpLogger
}

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
  const { challenges, requiredScopes } = auth
  const insufficientScope = (required: readonly string[], id: RequestId | null) =>
    refusalResponse(id, challenges.insufficientScope(required))

  return async function authenticate(c, next) {
    const outcome = await authenticateBearer(
      auth,
      {
        authorization: c.req.header('authorization'),
        tokenInUrl: c.req.query('access_token') !== undefined,
      },
      logger
    )
    if ('refusal' in outcome) {
      return refusalResponse(await peekRequestId(c, maxBodyBytes), outcome.refusal)
    }
    const { caller } = outcome
    c.set('principal', caller.principal)
    c.set('client', caller.client)
    c.set('grantedScopes', caller.grantedScopes)
    c.set('baseScopes', requiredScopes)
    c.set('insufficientScope', insufficientScope)
    await next()
  }
}
