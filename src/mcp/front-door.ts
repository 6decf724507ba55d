/**
 * @module mcp/front-door
 * `createMcpServer`: the engine's front door. From the tools, resources and prompts a server
 * defines, it makes a Web-standard `fetch(request)` handler (what `export default` wants on
 * Workers, Deno and Bun, and `serve({ fetch })` takes on Node) and `close()`, with defaults that make
 * the smallest server safe and working:
 * - requests reach it on one path (`/mcp`), Host and Origin limited to loopback until
 *   `allowedHosts` says otherwise (DNS-rebinding defence), bodies limited to 1 MiB;
 * - `requestState` and 2025 session ids sealed with the `stateKeys` ring (the `STATE_KEYS` text
 *   every replica shares), or with an ephemeral key and a logged warning when none is given;
 * - the caller from `authenticate(request)`, else one local principal; the scopes a caller holds,
 *   when the hook says, checked against each operation's (a tool's `scopes`), too few answered with
 *   the caller's 403 step-up challenge (`stateless-mcp/bearer` makes such a hook from OAuth tokens);
 * - both protocol eras: 2026-07-28 requests, and 2025-era clients (`initialize`, sessions, GET
 *   streams) with their state in the engine store (in memory unless `store` names a shared one) and
 *   their answers carried by the event bus (in process unless `bus` names a shared one);
 * - tasks when a tool declares `task`, run as `tasks` says (a `scheduler` hands them to another
 *   runtime's runners: Durable Objects on Workers);
 * - caps on what one caller may hold: streams held open, per 2025 session and per principal
 *   (`maxStreamsPerSession`, `maxStreamsPerPrincipal`), 2025 sessions and their subscriptions per
 *   principal (`maxSessionsPerPrincipal`, `maxSubscriptionsPerPrincipal`), live tasks per principal
 *   (`tasks.maxLiveTasksPerPrincipal`);
 * - the store's expired rows swept every ten minutes, driven by requests (`requestDrivenSweeps`);
 * - no telemetry unless `telemetry` is given (`otelTelemetry` of `stateless-mcp/otel`): then each
 *   request is observed, and the engine store's calls with it.
 * A misconfiguration (nothing to serve, a name defined twice, a key ring that does not parse, a cap,
 * lifetime or task option out of bounds, `tasks` for a server with no task tool) throws here, at
 * construction, with a message naming the fix. What the handler does with a request is
 * `handler.ts`'s; the checks before it are `request-guard.ts`'s.
 */
import { InProcessEventBus, type EventBus } from './event-bus.ts'
import { errorMessage, ErrorCode } from './errors.ts'
import { createMcpHandler } from './handler.ts'
import { formatKeyRing, generateKey, importKeyRing, parseKeyRing, type RawKey } from './key-ring.ts'
import { consoleLogger, describeError, type McpLogger } from './logger.ts'
import {
  declaredTooLarge,
  DEFAULT_MAX_BODY_BYTES,
  hostGuard,
  isJsonMediaType,
  jsonRpcErrorResponse,
  LOOPBACK_HOSTS,
  NOT_UTF8_MESSAGE,
  readBody,
  tooLargeMessage,
  UNSUPPORTED_MEDIA_TYPE_MESSAGE,
} from './request-guard.ts'
import { MAX_STATE_TTL_SECONDS, StateSealer } from './sealed-state.ts'
import { compileServer, type CompiledServer, type ServerDefinition } from './server.ts'
import { finalResponse } from './streaming.ts'
import { MAX_SESSION_TTL_SECONDS } from './legacy/protocol.ts'
import { positiveWholeNumber } from './options.ts'
import { sessionLimits, type SessionLimitOptions } from './session-store.ts'
import { StreamLimits, type StreamLimitOptions } from './stream-limits.ts'
import { taskSettings, type ServerTaskOptions } from './tasks/options.ts'
import type { EngineStore } from './stores/engine-store.ts'
import { PURGE_INTERVAL_MS, sweepExpired } from './stores/expiry-sweeps.ts'
import { MemoryEngineStore } from './stores/memory.ts'
import type { McpHandler, McpHttpInput } from './http-input.ts'
import type { AppTelemetry } from './observer.ts'
import type { RequestId } from './wire.ts'

/**
 * The principal of every request when no `authenticate` hook is given.
 *
 * @example
 * ```ts
 * import { LOCAL_PRINCIPAL } from 'stateless-mcp'
 *
 * // in a handler
 * if (ctx.principal === LOCAL_PRINCIPAL) ctx.log('warning', 'served without authentication')
 * ```
 */
export const LOCAL_PRINCIPAL = 'local'

/**
 * Who made a request, as an `authenticate` hook found, and what they may do.
 *
 * @example
 * const caller: Caller = {
 *   principal: 'alice',
 *   scopes: ['notes:read'],
 *   insufficientScope: (required) => new Response(`needs ${required.join(' ')}`, { status: 403 }),
 * }
 */
export interface Caller {
  /** A stable id of the person or system (e.g. the token's issuer and subject). */
  principal: string
  /** The OAuth client it came through, if any: sealed state is bound to it too. */
  client?: string
  /**
   * The scopes the caller holds, hierarchy applied. Given, an operation runs only when they hold
   * `requiredScopes` and its own (a tool's `scopes`); absent, every operation is allowed.
   */
  scopes?: readonly string[]
  /** Scopes every operation needs besides its own (checked only when `scopes` is given). */
  requiredScopes?: readonly string[]
  /**
   * The answer to an operation needing scopes the caller lacks: `required` names them all (the
   * required ones first), `id` is the JSON-RPC request's. Default a JSON-RPC 403 naming them, without
   * a `WWW-Authenticate` challenge.
   */
  insufficientScope?: (required: readonly string[], id: RequestId | null) => Response
}

/**
 * Finds who made `request`: a {@link Caller}, or the `Response` to answer instead (a 401 with its
 * `WWW-Authenticate` challenge, say). Runs after the Host/Origin and size checks, before the body
 * is read.
 */
export type Authenticate = (request: Request) => Caller | Response | Promise<Caller | Response>

/**
 * What `createMcpServer` takes besides the definition: the key ring, the hosts it answers, who the
 * caller is, the store and bus replicas share, 2025 sessions, tasks, the caps on what one caller may
 * hold (`max<What>Per<Scope>`, whole numbers from 1 to `MAX_CAP`), telemetry. Each has a safe
 * default.
 *
 * @example
 * const options: McpServerOptions<undefined> = {
 *   stateKeys: process.env.STATE_KEYS,
 *   allowedHosts: ['mcp.example.com'],
 *   maxSessionsPerPrincipal: 100,
 *   tasks: { maxLiveTasksPerPrincipal: 8 },
 * }
 */
export interface McpServerOptions<Deps> extends StreamLimitOptions, SessionLimitOptions {
  /** What handlers see as `ctx.deps`. */
  deps?: Deps
  /**
   * The key ring sealing `requestState` and session ids: `kid:secret` entries, comma-separated, the
   * first sealing (the `STATE_KEYS` format; make one with {@link generateStateKeys}). Every replica
   * of a deployment gets the same. Absent, an ephemeral key is made and a warning logged: nothing
   * sealed then opens on another replica or after a restart.
   */
  stateKeys?: string
  /**
   * Lifetime of one sealed round, in seconds. Default `DEFAULT_STATE_TTL_SECONDS` (ten minutes), at
   * most `MAX_STATE_TTL_SECONDS` (a day).
   */
  stateTtlSeconds?: number
  /** The endpoint's path; other paths are 404. Default `/mcp`. */
  path?: string
  /**
   * Host names (no port) the server answers to; `['*']` for any. Default loopback only
   * (`localhost`, `127.0.0.1`, `[::1]`): add the public host name when deploying.
   */
  allowedHosts?: readonly string[]
  /** Browser origins allowed besides those of an allowed host (`https://app.example.com`). */
  allowedOrigins?: readonly string[]
  /** Largest request body in bytes (413 above). Default 1 MiB. */
  maxBodyBytes?: number
  /** Finds the caller of each request; without it every request is {@link LOCAL_PRINCIPAL}. */
  authenticate?: Authenticate
  /**
   * Where 2025 sessions and streams and tasks are kept. Default in this process's memory: enough
   * for one replica; replicas behind a load balancer share one (`stateless-mcp/sqlite`,
   * `/postgres`, `/d1`).
   */
  store?: EngineStore
  /**
   * Carries list changes, resource updates and 2025 answers between requests. Default in process;
   * replicas share one (`stateless-mcp/postgres`'s bus, the Durable Object bus of
   * `stateless-mcp/workers`).
   */
  bus?: EventBus
  /** Serve 2025-era clients (`initialize` and sessions) on the same path. Default `true`. */
  legacy?: boolean
  /**
   * Lifetime of a 2025 session id in seconds, renewed while the session is used. Default
   * `DEFAULT_SESSION_TTL_SECONDS` (a week), at most `MAX_SESSION_TTL_SECONDS` (30 days).
   */
  sessionTtlSeconds?: number
  /**
   * How the tasks of `task` tools run (in the `store`): this replica's share, lifetimes, the cap per
   * principal, or a `scheduler` that runs them elsewhere. Only for a server with a `task` tool.
   */
  tasks?: ServerTaskOptions
  /** Where the server's warnings and errors go. Default one JSON line each on the console. */
  logger?: McpLogger
  /**
   * Observes every request (a span per request parented on the client's trace context, metrics)
   * and the engine store's calls: `otelTelemetry({ tracer, meter })` of `stateless-mcp/otel`.
   * Default none, and nothing of it loaded.
   */
  telemetry?: AppTelemetry
}

/** A running MCP server: its `fetch` handler, and `close()` to let its streams and store go. */
export interface McpServer {
  /** Answers one HTTP request to the server (any path; the endpoint is `options.path`). */
  fetch(request: Request): Promise<Response>
  /**
   * Ends open streams (clients resume elsewhere), stops the tasks running here and releases their
   * leases and those of waiting calls, then closes the store it made.
   */
  close(): Promise<void>
}

/**
 * A fresh key ring in the `STATE_KEYS` format (one key), for {@link McpServerOptions.stateKeys}.
 *
 * @example
 * // once, then keep it as a secret every replica gets:
 * console.log(generateStateKeys()) // k20261206ab3d:Jq4…
 */
export function generateStateKeys(): string {
  return formatKeyRing([generateKey()])
}

/**
 * Makes the `fetch` handler of an MCP server that serves `definition`'s tools, resources and
 * prompts to clients of both protocol eras, any replica answering any request.
 *
 * @example
 * import { serve } from '@hono/node-server'
 * import * as z from 'zod'
 * import { createMcpServer, text, tool } from 'stateless-mcp'
 *
 * const hello = tool({
 *   name: 'hello',
 *   description: 'Says hello.',
 *   input: z.object({ name: z.string() }),
 *   run: ({ name }) => text(`Hello, ${name}`),
 * })
 * const server = createMcpServer(
 *   { info: { name: 'hello', version: '1.0.0' }, tools: [hello] },
 *   { stateKeys: process.env.STATE_KEYS }
 * )
 * serve({ fetch: server.fetch, port: 3000 })
 */
export function createMcpServer<Deps = undefined>(
  definition: ServerDefinition<Deps>,
  options: McpServerOptions<Deps> = {}
): McpServer {
  const server = compileServer(definition)
  if (
    server.tools.size + server.resources.size + server.templates.length + server.prompts.size ===
    0
  ) {
    throw new TypeError(
      'createMcpServer: the server defines nothing to serve: pass at least one tool in `tools` (or a resource, resource template or prompt)'
    )
  }
  const keys = options.stateKeys === undefined ? undefined : stateKeyRing(options.stateKeys)
  const logger = options.logger ?? consoleLogger
  const path = options.path ?? '/mcp'
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1) {
    throw new RangeError(
      `createMcpServer: maxBodyBytes must be a positive whole number of bytes, got ${String(maxBodyBytes)}`
    )
  }
  const guard = hostGuard({
    allowedHosts: options.allowedHosts ?? LOOPBACK_HOSTS,
    allowedOrigins: options.allowedOrigins,
  })
  const served = servedSettings(server, options)
  const ownStore = options.store === undefined
  const store = options.store ?? new MemoryEngineStore()
  const shutdown = new AbortController()
  // What `close()` awaits before it closes the store: the end of the runs of tasks started here.
  let runsStopped: Promise<void> | undefined
  const parts: HandlerParts = {
    store,
    keys,
    logger,
    shutdown: shutdown.signal,
    onRunsStopped: (stopped) => {
      runsStopped = stopped
    },
  }
  // Started by the first request, not here: Workers allow no random values or I/O at global scope.
  // A start that failed (the store unreachable, say) is tried again by the next request.
  let handler: Promise<McpHandler> | undefined
  const started = (): Promise<McpHandler> =>
    (handler ??= startHandler(server, options, served, parts).catch((error: unknown) => {
      handler = undefined
      throw error
    }))
  const authenticate: Authenticate =
    options.authenticate ?? (() => ({ principal: LOCAL_PRINCIPAL }))
  const sweeps = requestDrivenSweeps(store, logger)
  /** The started handler; a sweep of the (then migrated) store when one is due. */
  const ready = async (): Promise<McpHandler> => {
    const serving = await started()
    sweeps.due()
    return serving
  }

  async function serveRequest(request: Request): Promise<Response> {
    const { headers, method } = request
    const host = headers.get('host') ?? authorityOf(request.url)
    const refusal = guard(host, headers.get('origin') ?? undefined)
    if (refusal !== undefined) return jsonRpcErrorResponse(null, 403, refusal)
    const post = method === 'POST'
    if (post && declaredTooLarge(headers, maxBodyBytes))
      return jsonRpcErrorResponse(null, 413, tooLargeMessage(maxBodyBytes))
    const caller = await authenticate(request)
    if (caller instanceof Response) return caller
    const input: McpHttpInput = {
      method,
      body: '',
      headers,
      principal: caller.principal,
      client: caller.client,
      signal: request.signal,
      grantedScopes: caller.scopes && new Set(caller.scopes),
      baseScopes: caller.requiredScopes,
      insufficientScope: caller.insufficientScope,
    }
    if (!post) return (await ready())(input)
    if (!isJsonMediaType(headers.get('content-type')))
      return jsonRpcErrorResponse(null, 415, UNSUPPORTED_MEDIA_TYPE_MESSAGE)
    let body: string | undefined
    try {
      body = await readBody(request, maxBodyBytes)
    } catch {
      return jsonRpcErrorResponse(null, 400, NOT_UTF8_MESSAGE, {}, ErrorCode.ParseError)
    }
    if (body === undefined) return jsonRpcErrorResponse(null, 413, tooLargeMessage(maxBodyBytes))
    return (await ready())({ ...input, body })
  }

  return {
    async fetch(request: Request): Promise<Response> {
      if (!isPath(request.url, path)) return new Response('Not Found', { status: 404 })
      try {
        return await serveRequest(request)
      } catch (error) {
        return finalResponse(errorMessage(null, error, logger))
      }
    },
    async close(): Promise<void> {
      shutdown.abort()
      await Promise.all([runsStopped, sweeps.stop()])
      if (ownStore) await store.close()
    },
  }
}

/**
 * Sweeps of the store's expired rows driven by requests, on every runtime alike (a Worker may keep
 * no timer between requests): the first request after {@link PURGE_INTERVAL_MS} since the last
 * sweep starts one in the background, bounded as `sweepExpired` bounds it, one at a time. Sessions,
 * streams and tasks whose lifetime ended so leave the store, the in-memory one included, even on a
 * server nobody restarts.
 */
function requestDrivenSweeps(
  store: EngineStore,
  logger: McpLogger
): { due(): void; stop(): Promise<void> } {
  let last = Date.now()
  let running: Promise<void> | undefined
  let stopped = false
  return {
    due() {
      const now = Date.now()
      if (stopped || running || now - last < PURGE_INTERVAL_MS) return
      last = now
      running = sweepExpired(store, now)
        .catch((error: unknown) => {
          logger.warn('expired-row sweep failed; a later request retries', {
            error: describeError(error),
          })
        })
        .then(() => {
          running = undefined
        })
    },
    /** Starts no more sweeps, and resolves once the one running (if any) has ended. */
    async stop() {
      stopped = true
      await running
    },
  }
}

/** Where `url`'s path begins (its length when it has none). */
function pathStart(url: string): number {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  return start < 0 ? url.length : start
}

/** Whether `url`'s path is `path` (read off the text: a URL per request costs). */
function isPath(url: string, path: string): boolean {
  const rest = url.slice(pathStart(url))
  const end = rest.search(/[?#]/)
  return (end < 0 ? rest : rest.slice(0, end) || '/') === path
}

/**
 * The host and port of `url`: what a request built in process without a `Host` header was sent
 * to (runtimes serving HTTP build the URL from that header).
 */
function authorityOf(url: string): string {
  return url.slice(url.indexOf('//') + 2, pathStart(url))
}

/** The raw ring of `text`, or a `TypeError` saying what is wrong and how to make a good one. */
function stateKeyRing(text: string): RawKey[] {
  try {
    return parseKeyRing(text)
  } catch (error) {
    throw new TypeError(
      `createMcpServer: stateKeys is not a key ring (${(error as Error).message}); make one with generateStateKeys() and give every replica the same text`,
      { cause: error }
    )
  }
}

/**
 * What a server's options make of its 2025 sessions, held streams and tasks, checked here so that
 * a bad value stops `createMcpServer` rather than the first request.
 */
interface ServedSettings {
  streamLimits: StreamLimits
  sessions: Required<SessionLimitOptions> & { sessionTtlSeconds?: number }
  /** The task options, when a tool declares `task` (else the server serves no tasks). */
  tasks: ServerTaskOptions | undefined
}

/**
 * The {@link ServedSettings} of `options` for `server`: throws a `RangeError` naming the option out
 * of bounds, or a `TypeError` for task options that cannot serve (`tasks` without a task tool, a
 * `scheduler` with a takeover loop).
 */
function servedSettings<Deps>(
  server: CompiledServer<Deps>,
  options: McpServerOptions<Deps>
): ServedSettings {
  const servesTasks = [...server.tools.values()].some((tool) => tool.definition.task)
  if (options.tasks && !servesTasks) {
    throw new TypeError(
      "createMcpServer: `tasks` is given but no tool declares `task`: add `task: 'optional'` (or 'required') to the tools that run as tasks, or leave `tasks` out"
    )
  }
  try {
    const { stateTtlSeconds, sessionTtlSeconds } = options
    if (stateTtlSeconds !== undefined) {
      positiveWholeNumber('stateTtlSeconds', stateTtlSeconds, { max: MAX_STATE_TTL_SECONDS })
    }
    if (sessionTtlSeconds !== undefined) {
      positiveWholeNumber('sessionTtlSeconds', sessionTtlSeconds, { max: MAX_SESSION_TTL_SECONDS })
    }
    const tasks = servesTasks ? (options.tasks ?? {}) : undefined
    if (tasks) taskSettings(tasks)
    return {
      streamLimits: new StreamLimits(options),
      sessions: { ...sessionLimits(options), sessionTtlSeconds },
      tasks,
    }
  } catch (error) {
    if (!(error instanceof RangeError || error instanceof TypeError)) throw error
    const Refusal = error instanceof RangeError ? RangeError : TypeError
    throw new Refusal(`createMcpServer: ${error.message}`, { cause: error })
  }
}

/** What the handler is started with besides the server and its options. */
interface HandlerParts {
  store: EngineStore
  keys: RawKey[] | undefined
  logger: McpLogger
  shutdown: AbortSignal
  /** Told of the promise that settles once the tasks run here have stopped (after `shutdown`). */
  onRunsStopped: (stopped: Promise<void>) => void
}

/** The engine's handler, once the key ring is imported and the store prepared. */
async function startHandler<Deps>(
  server: CompiledServer<Deps>,
  options: McpServerOptions<Deps>,
  served: ServedSettings,
  { store, keys, logger, shutdown, onRunsStopped }: HandlerParts
): Promise<McpHandler> {
  if (!keys) {
    logger.warn('no stateKeys given: sealing with an ephemeral key', {
      effect:
        'requestState and 2025 session ids open only in this process until it stops; give every replica the same stateKeys (generateStateKeys())',
    })
  }
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(keys ?? [generateKey()]),
    ttlSeconds: options.stateTtlSeconds,
  })
  await store.migrate()
  const observed = options.telemetry ? options.telemetry.instrumentStore(store) : store
  return createMcpHandler({
    server,
    deps: options.deps as Deps,
    sealer,
    bus: options.bus ?? new InProcessEventBus(),
    logger,
    shutdown,
    streamLimits: served.streamLimits,
    legacy: options.legacy === false ? undefined : { ...served.sessions, sessions: observed },
    tasks: served.tasks && { ...served.tasks, store: observed, onStopped: onRunsStopped },
    telemetry: options.telemetry,
  })
}
