/**
 * @module mcp/bearer/resource-metadata
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of an MCP endpoint: the document that tells a
 * client which authorization servers issue tokens for it (`protectedResourceMetadata`), where the
 * document lives (`resourceMetadataUrl`: the well-known path inserted before the resource's path,
 * RFC 9728 §3.1), and a Web-standard handler answering it at that path and at the root well-known
 * path, where MCP clients look next (`protectedResourceMetadataHandler`). `scopes_supported` is the
 * baseline, the minimal set for basic use (MCP authorization); more comes by step-up challenges, and
 * `offline_access` is never listed (SEP-2207: refresh tokens are between client and AS).
 */

const WELL_KNOWN_PATH = '/.well-known/oauth-protected-resource'

/**
 * What the metadata document states.
 *
 * @example
 * const options: ProtectedResourceMetadataOptions = {
 *   resource: 'https://mcp.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com'],
 *   scopesSupported: ['notes:read'],
 * }
 */
export interface ProtectedResourceMetadataOptions {
  /** The MCP endpoint's canonical URL: the audience its tokens name. */
  resource: string
  /** Issuer identifiers of the authorization servers whose tokens it accepts. */
  authorizationServers: readonly string[]
  /** The baseline scopes; omitted from the document when empty. */
  scopesSupported?: readonly string[]
}

/**
 * The RFC 9728 document (the fields an MCP server states).
 *
 * @example
 * const document: ProtectedResourceMetadata = protectedResourceMetadata(options)
 * document.authorization_servers // ['https://auth.example.com']
 */
export interface ProtectedResourceMetadata {
  resource: string
  authorization_servers: string[]
  bearer_methods_supported: ['header']
  scopes_supported?: string[]
}

/**
 * The protected-resource metadata document of `options.resource`.
 *
 * @example
 * const document = protectedResourceMetadata({
 *   resource: 'https://mcp.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com'],
 * })
 * // { resource: 'https://mcp.example.com/mcp', authorization_servers: [...], bearer_methods_supported: ['header'] }
 */
export function protectedResourceMetadata({
  resource,
  authorizationServers,
  scopesSupported = [],
}: ProtectedResourceMetadataOptions): ProtectedResourceMetadata {
  return {
    resource,
    authorization_servers: [...authorizationServers],
    bearer_methods_supported: ['header'],
    ...(scopesSupported.length > 0
      ? { scopes_supported: scopesSupported.filter((scope) => scope !== 'offline_access') }
      : {}),
  }
}

/** `resource` as a URL, or a `TypeError` naming what `caller` was given. */
function resourceUrl(resource: string, caller: string): URL {
  if (!URL.canParse(resource)) {
    throw new TypeError(
      `${caller}: the resource must be the MCP endpoint's absolute URL (https://mcp.example.com/mcp), got ${JSON.stringify(resource)}`
    )
  }
  return new URL(resource)
}

/** The path of `url` after the well-known prefix (none for the root path). */
const resourcePath = (url: URL) => (url.pathname === '/' ? '' : url.pathname)

/**
 * Where the metadata of `resource` lives (RFC 9728 §3.1): the well-known path inserted between its
 * host and its path; what 401 challenges name as `resource_metadata`.
 *
 * @example
 * resourceMetadataUrl('https://mcp.example.com/mcp')
 * // 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp'
 */
export function resourceMetadataUrl(resource: string): string {
  const url = resourceUrl(resource, 'resourceMetadataUrl')
  return `${url.origin}${WELL_KNOWN_PATH}${resourcePath(url)}${url.search}`
}

/**
 * A handler answering GET and HEAD of the metadata document at the resource's well-known path and at
 * the root one (`/.well-known/oauth-protected-resource`); `undefined` for any other path, so it goes
 * in front of the server's own `fetch`. The front door answers only its endpoint's path, so the
 * well-known paths at the origin's root stay with whoever routes them.
 *
 * @example
 * import { createMcpServer } from 'stateless-mcp'
 * import { bearerAuth, protectedResourceMetadataHandler } from 'stateless-mcp/bearer'
 *
 * const resource = 'https://mcp.example.com/mcp'
 * const issuer = 'https://auth.example.com'
 * const server = createMcpServer(definition, {
 *   allowedHosts: ['mcp.example.com'],
 *   authenticate: bearerAuth({ issuer, audience: resource, jwksUrl: `${issuer}/jwks.json` }),
 * })
 * const metadata = protectedResourceMetadataHandler({ resource, authorizationServers: [issuer] })
 * export default { fetch: (request: Request) => metadata(request) ?? server.fetch(request) }
 */
export function protectedResourceMetadataHandler(
  options: ProtectedResourceMetadataOptions
): (request: Request) => Response | undefined {
  const own = resourceUrl(options.resource, 'protectedResourceMetadataHandler')
  const paths = new Set([WELL_KNOWN_PATH, `${WELL_KNOWN_PATH}${resourcePath(own)}`])
  const document = JSON.stringify(protectedResourceMetadata(options))
  return function serveMetadata(request) {
    if (!paths.has(new URL(request.url).pathname)) return undefined
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } })
    }
    return new Response(request.method === 'HEAD' ? null : document, {
      headers: { 'content-type': 'application/json' },
    })
  }
}
