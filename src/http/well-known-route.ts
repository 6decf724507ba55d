/**
 * @module http/well-known-route
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint, at both well-known paths the
 * spec allows (root and `/mcp`-suffixed). Served only when bearer auth is configured; without auth
 * there is no authorization server to name, and these paths answer 404. The document is the
 * engine's (`stateless-mcp/bearer`'s `protectedResourceMetadata`: the baseline scopes, never
 * `offline_access`).
 */
import { Hono } from 'hono'
import { protectedResourceMetadata } from 'stateless-mcp/bearer'
import type { AuthConfig } from '../config.ts'

export interface WellKnownOptions {
  auth: AuthConfig | undefined
  /** Canonical URL of the MCP endpoint (the token audience). */
  resource: string
  /** The baseline scopes; omitted from the document when empty. */
  scopesSupported: readonly string[]
}

export function wellKnownRoute({ auth, resource, scopesSupported }: WellKnownOptions): Hono {
  const route = new Hono()
  if (!auth) return route
  const metadata = protectedResourceMetadata({
    resource,
    authorizationServers: auth.authorizationServers,
    scopesSupported,
  })
  route.get('/.well-known/oauth-protected-resource', (c) => c.json(metadata))
  route.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json(metadata))
  return route
}
