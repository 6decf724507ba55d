/**
 * @module http/app
 * `createHttpApp` assembles the HTTP face shared by every server built on the engine (the notes server
 * and the conformance fixture). A request meets, in this order: the `X-Replica` header naming the
 * replica that answered (set on the way out, when REPLICA_ID is configured); on `/mcp`, the Origin/Host
 * guard (403, `origin-guard.ts`); then the MCP route (`mcp-route.ts`): for POST the body size (413),
 * bearer auth (400/401/503, `bearer-auth.ts`), Content-Type (415) and strict UTF-8 (-32700), then
 * the engine; for GET and DELETE bearer auth, then the engine; any other method goes to the engine
 * unauthenticated, which answers it 405. Besides `/mcp`: the liveness and readiness probes
 * (`/healthz`, `/readyz`: `health-route.ts`) and the protected-resource metadata
 * (`well-known-route.ts`). With auth configured, the token audience is the canonical URL of the
 * endpoint (`<base>/mcp`, unless AUTH_AUDIENCE overrides it), the scopes of basic use
 * (`scopes.baseline`, plus AUTH_REQUIRED_SCOPE) are what the metadata lists and every 401 asks for,
 * and `scopes.implies` is the application's hierarchy. An application's own pages (`routes/`) are
 * mounted by its composition root (`src/app.ts`); nothing under `src/http/` imports `routes/`. Anything
 * thrown past them all still gets a JSON-RPC answer: 500 with -32603 and no detail (`app.onError`;
 * the cause is logged), or, for a store that cannot be reached (a page's included), 503 with
 * `Retry-After` and -32030 (`mcp/errors.ts`).
 */
import { Hono } from 'hono'
import {
  Challenges,
  mergeScopes,
  TokenVerifier,
  type ScopeImplications,
} from 'stateless-mcp/bearer'
import { createAuthServices, type AuthServices } from '../auth/services.ts'
import type { Config } from '../config.ts'
import { ErrorCode } from 'stateless-mcp'
import {
  consoleLogger,
  describeError,
  errorMessage,
  finalResponse,
  INTERNAL_ERROR_MESSAGE,
  StoreUnavailableError,
  type McpHandler,
} from 'stateless-mcp/compose'
import { bearerAuth } from './bearer-auth.ts'
import { jsonRpcError } from './errors.ts'
import { healthRoute } from './health-route.ts'
import { mcpRoute } from './mcp-route.ts'
import { originGuard } from './origin-guard.ts'
import { wellKnownRoute } from './well-known-route.ts'

export interface HttpAppOptions {
  config: Config
  handler: McpHandler
  /** The application's scope policy; default none (no hierarchy, no baseline). */
  scopes?: { implies: ScopeImplications; baseline: readonly string[] }
  /** Shared auth parts (JWKS cache); built from `config.auth` when absent. */
  authServices?: AuthServices
  /** Aborted once this replica's shutdown began: `/readyz` answers 503 (`health-route.ts`). */
  draining?: AbortSignal
}

/** Base URL used in links and metadata: PUBLIC_URL, else the local listening address. */
export function publicBaseUrl(config: Config): string {
  return (
    config.publicUrl ??
    `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`
  )
}

export function createHttpApp({
  config,
  handler,
  scopes,
  authServices,
  draining,
}: HttpAppOptions): Hono {
  const app = new Hono()
  app.onError(function answerInternalError(error) {
    if (error instanceof StoreUnavailableError)
      return finalResponse(errorMessage(null, error, consoleLogger))
    consoleLogger.error('unhandled error', { error: describeError(error) })
    return jsonRpcError(null, 500, INTERNAL_ERROR_MESSAGE, {}, ErrorCode.InternalError)
  })
  const base = publicBaseUrl(config)
  if (config.replicaId) {
    const replica = config.replicaId
    app.use(async function nameReplica(c, next) {
      await next()
      c.res.headers.set('x-replica', replica)
    })
  }
  app.use(
    '/mcp',
    originGuard({
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
      maxBodyBytes: config.maxBodyBytes,
    })
  )
  const auth = config.auth
  const baseline = auth ? mergeScopes(auth.requiredScopes, scopes?.baseline ?? []) : []
  const resource = `${base}/mcp`
  const authenticate = bearerAuth({
    auth: auth && {
      verifier: new TokenVerifier({
        issuer: auth.issuer,
        audience: auth.audience ?? resource,
        key: (authServices ?? createAuthServices(auth, { logger: consoleLogger })).tokenKey,
        implies: scopes?.implies,
      }),
      challenges: new Challenges({
        resourceMetadataUrl: `${base}/.well-known/oauth-protected-resource/mcp`,
        baseline,
      }),
      requiredScopes: auth.requiredScopes,
    },
    maxBodyBytes: config.maxBodyBytes,
    logger: consoleLogger,
  })
  app.route('/', mcpRoute({ handler, maxBodyBytes: config.maxBodyBytes, authenticate }))
  app.route('/', healthRoute({ draining }))
  app.route('/', wellKnownRoute({ auth, resource, scopesSupported: baseline }))
  return app
}
