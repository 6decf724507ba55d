/**
 * @module mcp/handler
 * `createMcpHandler` is the engine's entry: one POSTed MCP message in, one `Response` out, using Web
 * standards only so it runs unchanged on Node and Workers. It parses the body once (`parseJson`, the
 * one gate of both eras) and lets it decide the era (`legacy/classify.ts`): 2025-era messages, and
 * GET/DELETE of 2025 sessions, go to `legacy/handler.ts` when `legacy` is configured, 2026-07-28
 * messages to `modern-era.ts`, which owns that revision's pipeline (without `legacy`, a 2025
 * `initialize` is answered -32022 naming the revisions served); other methods, and a GET or
 * DELETE naming no session, are a 405 (`notPost` says the one exception, a 2025 client's DELETE).
 * With `tasks` it serves the tasks extension on the modern era (`tasks/engine.ts`) and starts this
 * replica's takeover loop. Nothing thrown inside reaches the client as a stack trace, and what
 * escapes this handler is answered by `http/app.ts`. With `telemetry`, every message read is
 * observed (its span, parented on the client's trace context, and its duration:
 * `mcp/observer.ts`), and settled by its era where the answer is decided; without, each hook is an
 * optional call on `undefined`. Held-open streams (listen, GET and waiting interactive POSTs of 2025
 * sessions) count against one `StreamLimits` for both eras: over a caller's cap a listen or GET
 * stream is refused with 429 before it opens, a call that would wait with 200 (the cap rule of
 * `errors.ts`).
 */
import type { McpHandler, McpHttpInput } from './http-input.ts'
import { consoleLogger, type McpLogger } from './logger.ts'
import { EnvelopeError, parseJson } from './envelope.ts'
import { ErrorCode, McpError, errorMessage } from './errors.ts'
import { validateStreamBounds, type EventStreamBounds } from './event-stream.ts'
import type { EventBus } from './event-bus.ts'
import { errorAnswer, ModernEra } from './modern-era.ts'
import { SUPPORTED_PROTOCOL_VERSIONS, TASKS_EXTENSION } from './protocol.ts'
import type { StateSealer } from './sealed-state.ts'
import { withExtension, type CompiledServer } from './server.ts'
import { StreamLimits } from './stream-limits.ts'
import { canListen } from './subscriptions.ts'
import { classifyMessage, headerEra } from './legacy/classify.ts'
import {
  DEFAULT_SESSION_TTL_SECONDS,
  HEADER_SESSION_ID,
  LEGACY_METHODS,
  LEGACY_PROTOCOL_VERSIONS,
} from './legacy/protocol.ts'
import { createLegacyEra, type LegacyEra, type StreamResumeOptions } from './legacy/handler.ts'
import type { InteractiveFlowBounds } from './legacy/transport.ts'
import type { SessionLimitOptions, SessionStore } from './session-store.ts'
import { TaskEngine } from './tasks/engine.ts'
import { takeoverInterval, type TaskOptions } from './tasks/options.ts'
import type { McpTelemetry, RequestObservation, ServerTelemetry } from './observer.ts'
import { isObject, isRequestId } from './wire.ts'

/**
 * What {@link createMcpHandler} serves and with what: the compiled server and its `deps`, the
 * sealer, the event bus, and the optional parts (2025-era sessions, tasks, stream caps, shutdown,
 * telemetry).
 */
export interface McpHandlerOptions<Deps> {
  server: CompiledServer<Deps>
  deps: Deps
  sealer: StateSealer
  /** Feeds `subscriptions/listen`; required when the server advertises listChanged or subscribe. */
  bus?: EventBus
  logger?: McpLogger
  /**
   * Aborted once this replica's shutdown began, while it still serves what it is given: from then on
   * it takes no work over from other replicas (a waiting 2025 call, `legacy/call-lease.ts`; a task,
   * `tasks/runner.ts`) and leases no new task to itself, since it would let go of it a moment later.
   * `shutdown` implies it.
   */
  draining?: AbortSignal
  /**
   * Aborted when the process shuts down: open listen streams end gracefully, 2025 streams are let go
   * with `retry`, and the leases of waiting calls and running tasks are released.
   */
  shutdown?: AbortSignal
  /** Bounds of every `subscriptions/listen` stream (`event-stream.ts` defaults). */
  listen?: EventStreamBounds
  /**
   * How many streams (listen, 2025 GET, held interactive POSTs) one caller may hold open here
   * (`stream-limits.ts`); default a count of this handler's own with the default caps. A runtime
   * serving several handlers from one process or isolate passes them one instance.
   */
  streamLimits?: StreamLimits
  /**
   * Serves 2025-era clients (`initialize`, sealed sessions, GET streams, DELETE) on the same endpoint
   * and handlers; without it the endpoint speaks 2026-07-28 only. Needs `bus`.
   */
  legacy?: SessionLimitOptions & {
    sessions: SessionStore
    /** Lifetime of a session id in seconds (default a week, at most 30 days). */
    sessionTtlSeconds?: number
    /** Bounds of interactive flows: how long and how many rounds a call may wait for answers. */
    input?: InteractiveFlowBounds
    /** Bounds of the sessions' GET streams. */
    stream?: EventStreamBounds
    /** Resumable streams and the leases of waiting calls. */
    resume?: StreamResumeOptions
    now?: () => number
  }
  /**
   * Serves the tasks extension (`io.modelcontextprotocol/tasks`, advertised in `server/discover`):
   * `task` tools may answer `CreateTaskResult`, `tasks/get|update|cancel` are served, and this
   * replica runs tasks and takes over those whose runner died (every `takeoverIntervalMs`, until
   * `shutdown`). Without it no request may have a task.
   */
  tasks?: TaskOptions
  /**
   * Traces and metrics of every request (`mcp/observer.ts`); absent, the handler records
   * nothing and allocates nothing for telemetry.
   */
  telemetry?: McpTelemetry
}

/**
 * The engine itself, for an application that composes its own HTTP face (module header): one
 * {@link McpHttpInput} in, one `Response` out. The face does what `createMcpServer` would do before
 * it: the Host/Origin check, the body limit, authentication, the media type and UTF-8 checks (the
 * helpers of `stateless-mcp/compose`). Throws `TypeError` for options that cannot serve (a server
 * advertising `listChanged` or `subscribe` without a `bus`).
 *
 * @example
 * ```ts
 * import { InProcessEventBus, MemoryEngineStore } from 'stateless-mcp'
 * import {
 *   compileServer,
 *   createMcpHandler,
 *   importKeyRing,
 *   parseKeyRing,
 *   StateSealer,
 * } from 'stateless-mcp/compose'
 *
 * const store = new MemoryEngineStore()
 * await store.migrate()
 * const handler = createMcpHandler({
 *   server: compileServer({ info: { name: 'hello', version: '1.0.0' }, tools: [hello] }),
 *   deps: undefined,
 *   sealer: StateSealer.create({
 *     keyRing: await importKeyRing(parseKeyRing(process.env.STATE_KEYS!)),
 *   }),
 *   bus: new InProcessEventBus(),
 *   legacy: { sessions: store },
 * })
 *
 * // in the face's POST route, once the request passed its checks:
 * const response = await handler({ body, headers: request.headers, principal: 'local' })
 * ```
 */
export function createMcpHandler<Deps>(options: McpHandlerOptions<Deps>): McpHandler {
  const { deps, sealer, bus, shutdown } = options
  const logger = options.logger ?? consoleLogger
  validateStreamBounds(options.listen, 'listen')
  const streamLimits = options.streamLimits ?? new StreamLimits()
  const draining = drainingSignal(options)
  const tasks = options.tasks && startTaskEngine(options, options.tasks, logger, draining)
  // The modern era's server: with tasks, it advertises the extension (2025-era sessions never see it).
  const server = tasks ? withExtension(options.server, TASKS_EXTENSION) : options.server
  const observer = options.telemetry?.forServer(server)
  if (!bus && canListen(server)) {
    throw new TypeError(
      'An event bus is required when the server advertises listChanged or subscribe'
    )
  }
  const legacy =
    options.legacy && legacyEra(options, options.legacy, logger, streamLimits, observer, draining)
  const modern = new ModernEra({
    server,
    deps,
    sealer,
    logger,
    tasks,
    listen: bus && {
      server,
      bus,
      bounds: options.listen,
      streamLimits,
      shutdown,
      logger,
      observer,
    },
  })

  return async function handleMcp(input: McpHttpInput): Promise<Response> {
    if (input.method !== undefined && input.method !== 'POST')
      return notPost(legacy, input, input.method, logger)
    let observation: RequestObservation | undefined
    try {
      const message = parseJson(input.body)
      observation = observer?.request(message, input.headers)
      // The body decides the era (legacy/classify.ts); the modern era is exactly 2026-07-28.
      if (classifyMessage(message, input.headers) === 'legacy') {
        if (legacy) return legacy.post(message, input, observation)
        if (isInitialize(message)) return modernOnly(message, logger, observation)
      }
      return modern.post(message, input, observation)
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error
      return errorAnswer(error.id, error.error, logger, observation, 'envelope')
    }
  }
}

/** Whether `message` is a 2025-era `initialize` request. */
function isInitialize(message: unknown): message is { id?: unknown; params?: unknown } {
  return isObject(message) && message.method === LEGACY_METHODS.initialize
}

/**
 * A 2025-era `initialize` sent to an endpoint built without `legacy`: -32022 (HTTP 400) naming the
 * revisions served, as a 2026-07-28 request of an unsupported revision is answered, instead of a
 * complaint about the `_meta` a 2025 client cannot know it should send.
 */
function modernOnly(
  message: { id?: unknown; params?: unknown },
  logger: McpLogger,
  observation: RequestObservation | undefined
): Response {
  const requested = isObject(message.params) ? message.params.protocolVersion : undefined
  const error = new McpError(
    ErrorCode.UnsupportedProtocolVersion,
    `Unsupported protocol version: this server speaks MCP ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')} only, without initialize or sessions; 2025-era revisions (${LEGACY_PROTOCOL_VERSIONS.join(', ')}) are not served here.`,
    { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested: requested ?? null }
  )
  return errorAnswer(
    isRequestId(message.id) ? message.id : null,
    error,
    logger,
    observation,
    'envelope'
  )
}

/** Aborted once this replica stops taking work over: at `draining`, or at `shutdown` without it. */
function drainingSignal({
  draining,
  shutdown,
}: Pick<McpHandlerOptions<unknown>, 'draining' | 'shutdown'>): AbortSignal | undefined {
  return draining && shutdown ? AbortSignal.any([draining, shutdown]) : (draining ?? shutdown)
}

/**
 * The task engine `taskOptions` describe, its takeover loop started (unless its interval is 0), no
 * task taken on from `draining` on, and its runs stopped when `shutdown` aborts (`onStopped` told
 * of the promise of their end).
 */
function startTaskEngine<Deps>(
  { server, deps, shutdown }: McpHandlerOptions<Deps>,
  taskOptions: TaskOptions,
  logger: McpLogger,
  draining: AbortSignal | undefined
): TaskEngine<Deps> {
  const tasks = new TaskEngine({ server, deps, logger }, taskOptions)
  draining?.addEventListener('abort', () => tasks.stopTakingWork(), { once: true })
  const interval = takeoverInterval(taskOptions)
  if (interval !== 0) tasks.startTakeover(interval, shutdown)
  const { onStopped } = taskOptions
  const stop = () => {
    const stopped = tasks.shutdown()
    onStopped?.(stopped)
  }
  shutdown?.addEventListener('abort', stop, { once: true })
  return tasks
}

/** The 2025 era `legacy` configures, on the server without the tasks extension. */
function legacyEra<Deps>(
  options: McpHandlerOptions<Deps>,
  legacy: NonNullable<McpHandlerOptions<Deps>['legacy']>,
  logger: McpLogger,
  streamLimits: StreamLimits,
  telemetry: ServerTelemetry | undefined,
  draining: AbortSignal | undefined
): LegacyEra {
  const { sealer, bus } = options
  const sessionSealer = sealer.withTtl(legacy.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS)
  if (!bus) {
    throw new TypeError(
      'An event bus is required to serve 2025-era clients (answers and GET streams)'
    )
  }
  return createLegacyEra({
    server: options.server,
    deps: options.deps,
    sealer,
    sessionSealer,
    sessions: legacy.sessions,
    bus,
    logger,
    draining,
    shutdown: options.shutdown,
    now: legacy.now,
    input: legacy.input,
    limits: legacy,
    stream: legacy.stream,
    resume: legacy.resume,
    streamLimits,
    telemetry,
  })
}

/** 405 with `allow` and a JSON-RPC error body saying `message`. */
function methodNotAllowed(message: string, allow: string, logger: McpLogger): Response {
  const { text } = errorMessage(null, new McpError(ErrorCode.InvalidRequest, message), logger)
  return new Response(text, {
    status: 405,
    headers: { 'content-type': 'application/json', allow },
  })
}

/**
 * The answer to a HEAD: the GET's status and header fields (RFC 9110), without its body; a stream
 * the GET opened is cancelled at once, which frees its place under the stream caps.
 */
async function headOf(get: Promise<Response> | Response): Promise<Response> {
  const response = await get
  await response.body?.cancel()
  return new Response(null, { status: response.status, headers: response.headers })
}

/**
 * Any method but POST. GET and DELETE serve 2025-era sessions (`legacy`): one naming a session goes
 * there, and so does a DELETE naming none from a 2025-era client (`headerEra`: no 2026-07-28
 * `MCP-Protocol-Version`), which the 2025 transport answers as any request lacking the session id
 * it requires, 400 "send initialize first" (a 405 would tell it sessions cannot be ended). HEAD is
 * answered as GET, without the body (`headOf`). Every
 * other GET or DELETE without a session (a 2026-07-28 client's either, and a GET, which has no
 * stream to open) is 405 with `Allow: POST`; any other method a 405 listing every method served.
 */
function notPost(
  legacy: LegacyEra | undefined,
  input: McpHttpInput,
  method: string,
  logger: McpLogger
): Promise<Response> | Response {
  if (!legacy) {
    return methodNotAllowed(
      'Method Not Allowed: this stateless MCP endpoint accepts POST only.',
      'POST',
      logger
    )
  }
  if (method === 'HEAD') return headOf(notPost(legacy, input, 'GET', logger))
  if (method !== 'GET' && method !== 'DELETE') {
    return methodNotAllowed(
      `Method Not Allowed: ${method} is not served here; POST messages, or GET and DELETE a 2025-era session.`,
      'GET, HEAD, POST, DELETE',
      logger
    )
  }
  const { headers } = input
  if (headers.has(HEADER_SESSION_ID) || (method === 'DELETE' && headerEra(headers) === 'legacy'))
    return method === 'GET' ? legacy.get(input) : legacy.delete(input)
  return methodNotAllowed(
    `Method Not Allowed: ${method} needs the Mcp-Session-Id of a 2025-era session from initialize; 2026-07-28 clients POST only.`,
    'POST',
    logger
  )
}
