/**
 * @module auth/services
 * The long-lived parts of authorization, built once per process (Node) or isolate (Workers) and shared
 * by every app built on them: the key that checks access-token signatures (the issuer's JWKS, fetched
 * and cached by `RemoteJwks`, or the HS256 secret) and the approval pages' OIDC client. One
 * `RemoteJwks` per JWKS URL, so access tokens and ID tokens signed by the same server share one cache.
 * What depends on a base URL (the audience, the metadata URL, cookies) is built per app.
 */
import type { JWTVerifyGetKey } from 'jose'
import type { McpLogger } from 'stateless-mcp'
import { RemoteJwks } from 'stateless-mcp/bearer'
import type { AuthConfig } from '../config.ts'
import { OidcClient } from './oidc-client.ts'

export interface AuthServices {
  /** The JWKS resolver (asymmetric algorithms) or the HS256 secret. */
  readonly tokenKey: JWTVerifyGetKey | Uint8Array
  /** The approval pages' sign-in, when AUTH_WEB_CLIENT_ID is configured. */
  readonly oidc: OidcClient | undefined
}

export interface AuthServicesOptions {
  /** Default `globalThis.fetch` (looked up per request). */
  fetch?: typeof fetch
  now?: () => number
  logger?: McpLogger
}

export function createAuthServices(
  auth: AuthConfig,
  options: AuthServicesOptions = {}
): AuthServices {
  const keySets = new Map<string, RemoteJwks>()
  const jwksFor = (url: string): RemoteJwks => {
    let keys = keySets.get(url)
    if (keys === undefined) {
      keys = new RemoteJwks({
        url,
        fetch: options.fetch,
        now: options.now,
        onStale: (reason) => options.logger?.warn('jwks refresh failed', { reason }),
      })
      keySets.set(url, keys)
    }
    return keys
  }
  return {
    tokenKey:
      auth.jwksUrl === undefined
        ? new TextEncoder().encode(auth.jwtSecret)
        : jwksFor(auth.jwksUrl).getKey,
    oidc:
      auth.webClient &&
      new OidcClient({
        issuer: auth.issuer,
        clientId: auth.webClient.id,
        clientSecret: auth.webClient.secret,
        jwksFor,
        fetch: options.fetch,
        now: options.now,
      }),
  }
}
