/**
 * @module app
 * `createApp(config, deps)` builds the notes server's Hono app for either runtime: the notes MCP
 * server compiled once, the engine handler bound to the store, sealer and event bus, the shared HTTP
 * face (`http/app.ts`) with the notes scope policy (`notes:write` implies `notes:read`; reading is the
 * baseline), and the share-approval pages behind the url-mode elicitation, behind the same Host/Origin
 * guard as `/mcp` and, with auth, the web sign-in (`auth/web-login.ts`). The long-lived auth parts
 * (JWKS cache, OIDC client) come from `deps.auth` when the runtime shares them across apps (a Worker
 * builds one app per origin), else they are built here. This is the notes app's composition root:
 * the one module under `src/` that imports `routes/` (the app's own pages); the engine, HTTP, notes
 * and storage modules never do. The runtime entry (`node/server.ts`, `worker.ts`) chooses the store,
 * the key ring and telemetry (whose store wrapper is applied here, once); nothing here imports
 * `node:*`.
 */
import type { Hono } from 'hono'
import { shareRoute } from '../routes/share.ts'
import { createAuthServices, type AuthServices } from './auth/services.ts'
import { WebLogin } from './auth/web-login.ts'
import type { Config } from './config.ts'
import { createHttpApp, publicBaseUrl } from './http/app.ts'
import { originGuard } from './http/origin-guard.ts'
import type { EventBus, McpLogger } from 'stateless-mcp'
import {
  consoleLogger,
  createMcpHandler,
  type StateSealer,
  StreamLimits,
  type TaskOptions,
} from 'stateless-mcp/compose'
import { READ, SCOPE_IMPLIES } from './notes/scopes.ts'
import { createNotesServer } from './notes/server.ts'
import type { NotesStore } from './notes/store.ts'
import type { EngineStore } from 'stateless-mcp'
import type { AppTelemetry } from 'stateless-mcp'

export interface AppDeps {
  /** The notes application's store: notes, share requests and links. */
  store: NotesStore
  /** The engine's state: 2025-era sessions and their streams, tasks (often the same database). */
  engineStore: EngineStore
  sealer: StateSealer
  bus: EventBus
  logger?: McpLogger
  /**
   * Aborted once this replica's shutdown began, before `shutdown`: `/readyz` answers 503 and the
   * replica takes no work over from others (`McpHandlerOptions.draining`) while it still serves.
   * The Worker has none: it is always ready.
   */
  draining?: AbortSignal
  /**
   * Aborted on shutdown, once new connections are refused: open listen and 2025 streams are let go
   * with `retry`, and call and task leases released.
   */
  shutdown?: AbortSignal
  /**
   * The count of held-open streams per session and principal, when the runtime shares one across
   * apps (a Worker builds one app per origin, and counts per isolate); else one per app, from
   * `config.streamLimits`.
   */
  streamLimits?: StreamLimits
  now?: () => number
  /** Auth parts shared across apps (with `config.auth`); built per app when absent. */
  auth?: AuthServices
  /**
   * Set where the runtime sends a response only once it has ended (Lambda behind API Gateway): why a
   * 2025 call cannot ask the person mid-call, its answer to a call that would
   * (`InteractiveFlowBounds.unavailable`).
   */
  wholeResponses?: string
  /**
   * Serves tasks (`import_notes`, `export_notes`, in `engineStore`): Node runs its share of them
   * and takes over those of replicas that died; the Worker passes a scheduler that hands each to its
   * Durable Object runner. The cap on live tasks and the retention of ended ones come from
   * `config.tasks` unless given here.
   */
  tasks?: Omit<TaskOptions, 'store' | 'now'>
  /**
   * Traces and metrics (`telemetry/`, on `stateless-mcp/otel`), when the runtime entry configured
   * them: the engine observes every request, and both stores are wrapped once here so their calls
   * become child spans.
   */
  telemetry?: AppTelemetry
}

/** The notes server, compiled once per process or isolate (the Worker's task runners use it too). */
export const notesServer = createNotesServer()

export function createApp(config: Config, deps: AppDeps): Hono {
  const baseUrl = publicBaseUrl(config)
  const now = deps.now ?? Date.now
  const store = deps.telemetry ? deps.telemetry.instrumentStore(deps.store) : deps.store
  const engineStore = deps.telemetry
    ? deps.telemetry.instrumentStore(deps.engineStore)
    : deps.engineStore
  const handler = createMcpHandler({
    server: notesServer,
    deps: { notes: store, bus: deps.bus, baseUrl, now },
    sealer: deps.sealer,
    bus: deps.bus,
    logger: deps.logger,
    draining: deps.draining,
    shutdown: deps.shutdown,
    streamLimits: deps.streamLimits ?? new StreamLimits(config.streamLimits),
    listen: { maxDurationMs: config.streamMaxMs },
    legacy: {
      stream: { maxDurationMs: config.streamMaxMs },
      sessions: engineStore,
      sessionTtlSeconds: config.sessionTtlSeconds,
      ...config.sessionLimits,
      input: deps.wholeResponses === undefined ? undefined : { unavailable: deps.wholeResponses },
    },
    tasks: deps.tasks && { ...config.tasks, ...deps.tasks, store: engineStore, now },
    telemetry: deps.telemetry,
  })
  const logger = deps.logger ?? consoleLogger
  const authServices = config.auth && (deps.auth ?? createAuthServices(config.auth, { logger }))
  const app = createHttpApp({
    config,
    handler,
    scopes: { implies: SCOPE_IMPLIES, baseline: READ },
    authServices,
    draining: deps.draining,
  })
  const guard = originGuard({
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
  })
  let auth: { login: WebLogin | undefined } | undefined
  if (authServices) {
    const oidc = authServices.oidc
    if (!oidc) {
      logger.warn('share approvals need AUTH_WEB_CLIENT_ID and AUTH_WEB_CLIENT_SECRET', {
        effect: 'the approval pages answer 503: nobody can be checked, so nobody can decide',
      })
    }
    auth = { login: oidc && new WebLogin({ oidc, sealer: deps.sealer, baseUrl }) }
  }
  app.route('/', shareRoute({ notes: store, now, guard, baseUrl, auth }))
  return app
}
