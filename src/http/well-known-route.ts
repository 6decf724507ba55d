/**
 * @module http/well-known-route
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint, at both well-known paths the
 * spec allows (root and `/mcp`-suffixed). Served only when bearer auth is configured; without auth
 * there is no authorization server to name, and these paths answer 404. `scopes_supported` is the
 * baseline, the minimal set for basic use (MCP authorization); more comes by step-up challenges, and
 * `offline_access` is never listed (SEP-2207: refresh tokens are between client and AS).
 */
import { Hono } from 'hono'
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
  const metadata = {
    resource,
    authorization_servers: auth.authorizationServers,
    bearer_methods_supported: ['header'],
    ...(scopesSupported.length > 0
      ? { scopes_supported: scopesSupported.filter((scope) => scope !== 'offline_access') }
      : {}),
  }
  route.get('/.well-known/oauth-protected-resource', (c) => c.json(metadata))
  route.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json(metadata))
  return route
}
