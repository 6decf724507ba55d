/**
 * @module mcp/bearer/front-door-auth
 * `bearerAuth`: OAuth bearer tokens for `createMcpServer`, as an `authenticate` hook. It builds the
 * parts once (a `TokenVerifier` over the issuer's `RemoteJwks`, or over a key given; the
 * `Challenges` naming the protected-resource metadata) and, per request, reads the
 * `Authorization: Bearer` header (`authenticate.ts`), answering either the caller (principal issuer +
 * subject, OAuth client, granted scopes with the hierarchy applied, the required scopes and the 403
 * step-up challenge the front door answers with when a tool needs more) or the refusal as a JSON-RPC
 * error response: 400 for malformed credentials, 401 with its challenge for a missing or refused
 * token, 503 when the issuer's keys cannot be had. The hook runs before the body is read, so its
 * refusals carry no request id.
 */
import type { JWTVerifyGetKey } from 'jose'
import type { Authenticate } from '../front-door.ts'
import { consoleLogger, type McpLogger } from '../logger.ts'
import { authenticateBearer, type BearerAuth } from './authenticate.ts'
import { Challenges, refusalResponse } from './challenges.ts'
import { RemoteJwks } from './jwks.ts'
import { resourceMetadataUrl } from './resource-metadata.ts'
import { mergeScopes, type ScopeImplications } from './scopes.ts'
import { TokenVerifier } from './token-verifier.ts'

/**
 * Which tokens {@link bearerAuth} accepts and what its challenges say.
 *
 * @example
 * const options: BearerAuthOptions = {
 *   issuer: 'https://auth.example.com',
 *   audience: 'https://mcp.example.com/mcp',
 *   jwksUrl: 'https://auth.example.com/.well-known/jwks.json',
 *   requiredScopes: ['notes:read'],
 *   implies: { 'notes:write': ['notes:read'] },
 * }
 */
export interface BearerAuthOptions {
  /** The authorization server's issuer identifier: tokens' `iss` must be exactly this. */
  issuer: string
  /**
   * This server's canonical URL, the MCP endpoint's (`https://mcp.example.com/mcp`): tokens' `aud`
   * must hold exactly this (RFC 8707).
   */
  audience: string
  /**
   * The issuer's JWKS (its metadata's `jwks_uri`), fetched when first needed, kept, and fetched again
   * when stale or when a token names an unknown key. Give this or `key`.
   */
  jwksUrl?: string
  /**
   * The key instead of `jwksUrl`: a jose key resolver (`createLocalJWKSet(jwks)`) for asymmetric
   * algorithms, or an HS256 shared secret's bytes.
   */
  key?: JWTVerifyGetKey | Uint8Array
  /** Scopes every operation needs besides its own (a tool's `scopes`). Default none. */
  requiredScopes?: readonly string[]
  /** Scopes of basic use that every 401 asks for besides `requiredScopes`. Default none. */
  baselineScopes?: readonly string[]
  /** The scope hierarchy: a scope grants those it implies (`notes:write` → `notes:read`). */
  implies?: ScopeImplications
  /**
   * The protected-resource metadata URL that 401 and 403 challenges name. Default the RFC 9728 one
   * of `audience` ({@link resourceMetadataUrl}).
   */
  resourceMetadataUrl?: string
  /** Fetches the JWKS; default `globalThis.fetch`. */
  fetch?: typeof fetch
  /** Clock in milliseconds since the epoch; default `Date.now`. */
  now?: () => number
  /** Told when the keys cannot be had; default the console. Tokens are never logged. */
  logger?: McpLogger
}

/** A non-empty `value` of option `name` (an absolute URL if `url`), or a `TypeError` saying what to give. */
function required(value: unknown, name: string, example: string, url = false): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`bearerAuth: ${name} is required, e.g. ${example}`)
  }
  if (url && !URL.canParse(value)) {
    throw new TypeError(
      `bearerAuth: ${name} must be an absolute URL such as ${example}, got ${JSON.stringify(value)}`
    )
  }
  return value
}

/** The key that checks signatures: the one given, or the JWKS at `jwksUrl`. */
function verificationKey(options: BearerAuthOptions, logger: McpLogger) {
  if ((options.key === undefined) === (options.jwksUrl === undefined)) {
    throw new TypeError(
      "bearerAuth: give exactly one of jwksUrl (the authorization server's jwks_uri) and key (a jose key resolver or an HS256 secret)"
    )
  }
  if (options.key !== undefined) return options.key
  return new RemoteJwks({
    url: required(
      options.jwksUrl,
      'jwksUrl',
      "'https://auth.example.com/.well-known/jwks.json'",
      true
    ),
    fetch: options.fetch,
    now: options.now,
    onStale: (reason) => logger.warn('jwks refresh failed', { reason }),
  }).getKey
}

/** Whether `url` carries an access token in its query (refused: it ends up in logs). */
function tokenInUrl(url: string): boolean {
  return url.includes('?') && new URL(url).searchParams.has('access_token')
}

/**
 * An `authenticate` hook for `createMcpServer` accepting OAuth access tokens (JWTs) of `issuer` for
 * `audience`: the caller is the token's issuer and subject, through its client, holding its scopes;
 * a tool's `scopes` are then enforced, too few answered 403 with an `insufficient_scope` challenge.
 * Throws at once, naming the fix, when an option is missing or malformed. Serve the metadata the
 * challenges name with {@link protectedResourceMetadataHandler}.
 *
 * @example
 * import { serve } from '@hono/node-server'
 * import { createMcpServer } from 'stateless-mcp'
 * import { bearerAuth } from 'stateless-mcp/bearer'
 *
 * const server = createMcpServer(definition, {
 *   allowedHosts: ['mcp.example.com'],
 *   authenticate: bearerAuth({
 *     issuer: 'https://auth.example.com',
 *     audience: 'https://mcp.example.com/mcp',
 *     jwksUrl: 'https://auth.example.com/.well-known/jwks.json',
 *     requiredScopes: ['notes:read'],
 *   }),
 * })
 * serve({ fetch: server.fetch, port: 3000 })
 */
export function bearerAuth(options: BearerAuthOptions): Authenticate {
  const issuer = required(options.issuer, 'issuer', "'https://auth.example.com'")
  const audience = required(options.audience, 'audience', "'https://mcp.example.com/mcp'", true)
  const logger = options.logger ?? consoleLogger
  const requiredScopes = [...(options.requiredScopes ?? [])]
  const challenges = new Challenges({
    resourceMetadataUrl: options.resourceMetadataUrl ?? resourceMetadataUrl(audience),
    baseline: mergeScopes(requiredScopes, options.baselineScopes ?? []),
  })
  const auth: BearerAuth = {
    verifier: new TokenVerifier({
      issuer,
      audience,
      key: verificationKey(options, logger),
      implies: options.implies,
      now: options.now,
    }),
    challenges,
    requiredScopes,
  }
  const insufficientScope = (needed: readonly string[], id: string | number | null) =>
    refusalResponse(id, challenges.insufficientScope(needed))

  return async function authenticateBearerToken(request) {
    const outcome = await authenticateBearer(
      auth,
      {
        authorization: request.headers.get('authorization') ?? undefined,
        tokenInUrl: tokenInUrl(request.url),
      },
      logger
    )
    if ('refusal' in outcome) return refusalResponse(null, outcome.refusal)
    const { caller } = outcome
    return {
      principal: caller.principal,
      client: caller.client,
      scopes: [...caller.grantedScopes],
      requiredScopes,
      insufficientScope,
    }
  }
}
