/**
 * @module mcp/bearer/challenges
 * What the MCP endpoint answers when authorization fails, as an `AuthRefusal`: the HTTP status, the
 * JSON-RPC error code and message, and the headers, `Cache-Control: no-store` and, for 401 and 403, a
 * `WWW-Authenticate: Bearer` challenge naming the protected-resource metadata (RFC 9728) so a client
 * can find the authorization server (`refusalResponse` writes it as a JSON-RPC error response,
 * echoing the request id when known):
 * - no credentials (no `Authorization`, or another scheme): 401 with `resource_metadata` and the
 *   baseline `scope`, and no `error` (RFC 6750 §3.1);
 * - malformed credentials (a `Bearer` header without exactly one token, a token in the URL): 400
 *   `error="invalid_request"`;
 * - a token this server does not accept: 401 `error="invalid_token"` with a description of why;
 * - too few scopes: 403 `error="insufficient_scope"` naming every scope the operation needs (base
 *   scopes included, granted ones too: SEP-2350 leaves the union to the client), one challenge;
 * - the authorization server's keys unreachable: 503 without a challenge (not the token's fault, so a
 *   client must not throw its token away).
 * `offline_access` never appears in a challenge: it is not this server's to ask for (SEP-2207).
 */
import { ErrorCode } from '../errors.ts'
import { jsonRpcErrorResponse } from '../request-guard.ts'
import type { RequestId } from '../wire.ts'
import { mergeScopes } from './scopes.ts'

/**
 * One refusal of an authorization failure: the HTTP status, the JSON-RPC error and the headers.
 *
 * @example
 * const refusal: AuthRefusal = challenges.missingToken()
 * refusal.status // 401
 * refusal.headers['www-authenticate'] // Bearer scope="notes:read", resource_metadata="https://…"
 */
export interface AuthRefusal {
  status: 400 | 401 | 403 | 503
  code: ErrorCode
  message: string
  headers: Record<string, string>
}

/**
 * Where a client finds this server's authorization details, and the scopes every 401 asks for.
 *
 * @example
 * const options: ChallengesOptions = {
 *   resourceMetadataUrl: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
 *   baseline: ['notes:read'],
 * }
 */
export interface ChallengesOptions {
  /** URL of this server's protected-resource metadata. */
  resourceMetadataUrl: string
  /** The scopes of basic use (PRM `scopes_supported`), asked for in every 401. */
  baseline: readonly string[]
}

const NO_STORE = { 'cache-control': 'no-store' }

/** One auth-param: `name="value"` (values here never hold `"` or `\`). */
const param = (name: string, value: string) => `${name}="${value}"`

/** The scopes to name in a challenge: each once, never `offline_access`. */
const challengeScopes = (scopes: readonly string[]) =>
  mergeScopes(scopes.filter((scope) => scope !== 'offline_access')).join(' ')

/**
 * The refusals of one protected resource, each with its `WWW-Authenticate` challenge.
 *
 * @example
 * const challenges = new Challenges({
 *   resourceMetadataUrl: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
 *   baseline: ['notes:read'],
 * })
 * return refusalResponse(null, challenges.insufficientScope(['notes:write']))
 */
export class Challenges {
  readonly #metadata: string
  readonly #baseline: string

  constructor({ resourceMetadataUrl, baseline }: ChallengesOptions) {
    this.#metadata = resourceMetadataUrl
    this.#baseline = challengeScopes(baseline)
  }

  #challenge(status: 400 | 401 | 403, message: string, params: string[]): AuthRefusal {
    params.push(param('resource_metadata', this.#metadata))
    const headers = { ...NO_STORE, 'www-authenticate': `Bearer ${params.join(', ')}` }
    return { status, code: ErrorCode.InvalidRequest, message, headers }
  }

  #scopeParam(scopes: string): string[] {
    return scopes === '' ? [] : [param('scope', scopes)]
  }

  /** 401 for a request without a bearer token. */
  missingToken(): AuthRefusal {
    return this.#challenge(
      401,
      'Unauthorized: send an OAuth access token for this server in the Authorization header.',
      this.#scopeParam(this.#baseline)
    )
  }

  /** 400 for malformed bearer credentials. */
  invalidRequest(description: string): AuthRefusal {
    return this.#challenge(400, `Bad Request: ${description}`, [
      param('error', 'invalid_request'),
      param('error_description', description),
    ])
  }

  /** 401 for a token this server does not accept. */
  invalidToken(description: string): AuthRefusal {
    return this.#challenge(401, `Unauthorized: ${description}`, [
      param('error', 'invalid_token'),
      param('error_description', description),
      ...this.#scopeParam(this.#baseline),
    ])
  }

  /** 403 naming every scope the operation needs. */
  insufficientScope(needed: readonly string[]): AuthRefusal {
    const scopes = challengeScopes(needed)
    const description = `This operation needs the scope(s) ${scopes}.`
    return this.#challenge(403, `Forbidden: ${description}`, [
      param('error', 'insufficient_scope'),
      ...this.#scopeParam(scopes),
      param('error_description', description),
    ])
  }

  /** 503 when the authorization server's keys cannot be had. */
  unavailable(): AuthRefusal {
    return {
      status: 503,
      code: ErrorCode.InternalError,
      message:
        'Service Unavailable: the authorization server cannot be reached to check the token; try again shortly.',
      headers: { ...NO_STORE, 'retry-after': '5' },
    }
  }
}

/**
 * The JSON-RPC error response of `refusal`, answering request `id` (`null` when unknown).
 *
 * @example
 * const response = refusalResponse(null, challenges.missingToken()) // 401, WWW-Authenticate: Bearer …
 */
export function refusalResponse(id: RequestId | null, refusal: AuthRefusal): Response {
  return jsonRpcErrorResponse(id, refusal.status, refusal.message, refusal.headers, refusal.code)
}
