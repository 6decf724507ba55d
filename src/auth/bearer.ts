/**
 * @module auth/bearer
 * Bearer-token authentication for the MCP endpoint (MCP authorization: OAuth 2.1 resource server).
 * Every request is verified on its own with jose: signature (remote JWKS or a shared HS256 secret),
 * issuer, audience (this server), expiry, and the required scope. Failures answer 401 (or 403 for a
 * missing scope) with a `WWW-Authenticate` challenge pointing at the protected-resource metadata.
 * The verified principal (issuer + subject) and client are set on the context; without auth every
 * request is the single local principal. Tokens are never logged.
 *
 * @example
 * app.use('/mcp', bearerAuth({ auth: config.auth, resourceMetadataUrl }))
 */
import type { MiddlewareHandler } from 'hono'
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { AuthConfig } from '../config.ts'
import { jsonRpcError, peekRequestId } from '../http/errors.ts'

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
  }
}

export interface BearerAuthOptions {
  auth: AuthConfig | undefined
  /** URL of this server's protected-resource metadata (RFC 9728), named in every challenge. */
  resourceMetadataUrl: string
  maxBodyBytes?: number
}

function hasScope(payload: JWTPayload, required: string): boolean {
  const granted = typeof payload.scope === 'string' ? payload.scope.split(' ') : []
  return required.split(' ').every((scope) => granted.includes(scope))
}

export function bearerAuth({
  auth,
  resourceMetadataUrl,
  maxBodyBytes = 65536,
}: BearerAuthOptions): MiddlewareHandler {
  if (!auth) {
    return async function localPrincipal(c, next) {
      c.set('principal', LOCAL_PRINCIPAL)
      await next()
    }
  }
  const key: Uint8Array | JWTVerifyGetKey = auth.jwksUrl
    ? createRemoteJWKSet(new URL(auth.jwksUrl))
    : new TextEncoder().encode(auth.jwtSecret)
  const scope = auth.requiredScope
  const challenge = (extra: string) =>
    `Bearer resource_metadata="${resourceMetadataUrl}"${scope ? `, scope="${scope}"` : ''}${extra}`

  return async function authenticate(c, next) {
    const header = c.req.header('authorization')
    const token = header?.match(/^Bearer ([A-Za-z0-9._~+/-]+=*)$/i)?.[1]
    if (!token) {
      const detail = header === undefined ? '' : ', error="invalid_request"'
      return jsonRpcError(
        await peekRequestId(c, maxBodyBytes),
        401,
        'Unauthorized: a bearer access token is required.',
        { 'www-authenticate': challenge(detail) }
      )
    }
    let payload: JWTPayload
    try {
      const verified = await jwtVerify(token, key as JWTVerifyGetKey, {
        issuer: auth.issuer,
        audience: auth.audience,
        requiredClaims: ['sub', 'exp'],
      })
      payload = verified.payload
    } catch {
      return jsonRpcError(
        await peekRequestId(c, maxBodyBytes),
        401,
        'Unauthorized: the access token is invalid or expired.',
        {
          'www-authenticate': challenge(', error="invalid_token"'),
        }
      )
    }
    if (scope && !hasScope(payload, scope)) {
      return jsonRpcError(
        await peekRequestId(c, maxBodyBytes),
        403,
        'Forbidden: the access token lacks the required scope.',
        {
          'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${resourceMetadataUrl}"`,
        }
      )
    }
    c.set('principal', tokenPrincipal(payload.iss as string, payload.sub as string))
    const client = payload.azp ?? payload.client_id
    c.set('client', typeof client === 'string' ? client : undefined)
    await next()
  }
}
