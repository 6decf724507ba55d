/**
 * @module mcp/handler
 * `createMcpHandler` is the engine's entry: one POSTed MCP message in, one `Response` out, using Web
 * standards only so it runs unchanged on Node and Workers. It parses the body once and lets it decide
 * the era (`legacy/classify.ts`): 2025-era messages, and GET/DELETE of 2025 sessions, go to
 * `legacy/handler.ts` when `legacy` is configured; other methods, and a GET or DELETE naming no
 * session, are a 405 (`notPost` says the one exception, a 2025 client's DELETE). With `tasks` it
 * serves the tasks extension on the modern era (`tasks/engine.ts`) and starts this replica's
 * takeover loop. For 2026-07-28 it owns the order of the pipeline after the HTTP layer (Origin/Host,
 * body size and authentication are the route's job): envelope → notification (the base scopes, then
 * 202) → method known and advertised (404 + -32601) → scopes (403, `scopes.ts`) → dispatch → stamp
 * `resultType`, `_meta` serverInfo and cache hints → JSON or SSE. Every failure after parsing,
 * serialising the result included, becomes a JSON-RPC error body that echoes the request id (anything
 * but an `McpError` as -32603 without detail, its cause logged), with its status from the one table
 * in `errors.ts` — except scopes found lacking once a method is under way (`InsufficientScopeError`:
 * a task's tool's, known from its record), answered with the same 403 challenge as the check before
 * dispatch. Nothing thrown inside reaches the client as a stack trace, and what escapes this
 * handler is answered by `http/app.ts`. Results that depend only on the compiled server (discover, and
 * the pages the server cuts of its static lists) are serialised once: one cache entry per such page,
 * whatever cursors clients send. With `telemetry`, every message read is observed (its span, parented
 * on the client's trace context, and its duration: `mcp/observer.ts`) and settles it where
 * the answer is decided; without, each hook is an optional call on `undefined`. Held-open streams
 * (listen here, GET and waiting interactive POSTs of 2025 sessions) count against one
 * `StreamLimits` for both eras: over a caller's cap a listen or GET stream is refused with 429
 * before it opens, a call that would wait with 200 (the cap rule of `errors.ts`).
 */
import type { McpHandler, McpHttpInput } from './http-input.ts'
import { dispatch, dispatchEnv, isAdvertised, staticResultKey } from './dispatch.ts'
import type { DispatchEnv, DispatchResult } from './dispatch-env.ts'
import { consoleLogger, describeError, type McpLogger } from './logger.ts'
import { EnvelopeError, parseJson, parseMessage, type McpRequest } from './envelope.ts'
import { ErrorCode, McpError, errorMessage } from './errors.ts'
import { validateStreamBounds, type EventStreamBounds } from './event-stream.ts'
import type { EventBus } from './event-bus.ts'
import { META_SERVER_INFO, METHODS, TASKS_EXTENSION } from './protocol.ts'
import type { StateSealer } from './sealed-state.ts'
import { withExtension, type CompiledServer } from './server.ts'
import { InsufficientScopeError, scopeChallenge, scopeRefusal } from './scopes.ts'
import { StreamLimits, type StreamSlot } from './stream-limits.ts'
import { Cancellation, finalMessageOf, jsonText, type FinalMessage } from './streaming.ts'
import { listen } from './subscriptions.ts'
import { parseParams } from './params.ts'
import { ListenParamsSchema, type JsonObject, type RequestId } from './wire.ts'
import { classifyMessage, headerEra } from './legacy/classify.ts'
import { DEFAULT_SESSION_TTL_SECONDS, HEADER_SESSION_ID } from './legacy/protocol.ts'
import { createLegacyEra, type LegacyEra, type LegacyEraOptions } from './legacy/handler.ts'
import type { SessionStore } from './session-store.ts'
import { TaskEngine } from './tasks/engine.ts'
import { DEFAULT_TASK_TAKEOVER_INTERVAL_MS, type TaskOptions } from './tasks/options.ts'
import type { McpTelemetry, RequestObservation } from './observer.ts'

export interface McpHandlerOptions<Deps> {
  server: CompiledServer<Deps>
  deps: Deps
  sealer: StateSealer
  /** Feeds `subscriptions/listen`; required when the server advertises listChanged or subscribe. */
  bus?: EventBus
  logger?: McpLogger
  /** Aborted when the process shuts down: open listen streams then end gracefully. */
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
  legacy?: {
    sessions: SessionStore
    /** Lifetime of a session id in seconds (default a week, at most 30 days). */
    sessionTtlSeconds?: number
    input?: LegacyEraOptions<Deps>['input']
    /** What one principal may keep in the store (`LegacyEraOptions.limits`). */
    limits?: LegacyEraOptions<Deps>['limits']
    stream?: LegacyEraOptions<Deps>['stream']
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

/** The JSON-RPC response of request `id` around a result already serialised as JSON text. */
function resultText(id: RequestId, result: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`
}

function missingBus(): never {
  throw new TypeError(
    'An event bus is required to serve 2025-era clients (answers and GET streams)'
  )
}

export function createMcpHandler<Deps>(options: McpHandlerOptions<Deps>): McpHandler {
  const { deps, sealer, bus, shutdown } = options
  const logger = options.logger ?? consoleLogger
  validateStreamBounds(options.listen, 'listen')
  const streamLimits = options.streamLimits ?? new StreamLimits()
  const tasks =
    options.tasks && new TaskEngine({ server: options.server, deps, logger }, options.tasks)
  if (tasks) {
    const interval = options.tasks?.takeoverIntervalMs ?? DEFAULT_TASK_TAKEOVER_INTERVAL_MS
    if (interval !== 0) tasks.startTakeover(interval, shutdown)
    const onStopped = options.tasks?.onStopped
    const stop = () => {
      const stopped = tasks.shutdown()
      onStopped?.(stopped)
    }
    shutdown?.addEventListener('abort', stop, { once: true })
  }
  // The modern era's server: with tasks, it advertises the extension (2025-era sessions never see it).
  const server = tasks ? withExtension(options.server, TASKS_EXTENSION) : options.server
  /** What every dispatched request shares (`dispatchEnv` adds the request's own). */
  const dispatchBase = { server, deps, sealer, logger }
  const serverInfoMeta = { [META_SERVER_INFO]: server.info }
  const observer = options.telemetry?.forServer(server)
  /**
   * Serialised results that depend only on the compiled server, by `staticResultKey`: bounded by the
   * pages the server defines (a few per list), never by what clients send.
   */
  const staticResults = new Map<string, string>()
  if (
    !bus &&
    (server.capabilities.tools?.listChanged ||
      server.capabilities.prompts?.listChanged ||
      server.capabilities.resources?.listChanged ||
      server.capabilities.resources?.subscribe)
  ) {
    throw new TypeError(
      'An event bus is required when the server advertises listChanged or subscribe'
    )
  }

  function stamp(outcome: DispatchResult): JsonObject {
    const result = outcome.result
    if (result.resultType === 'input_required' || result.resultType === 'task')
      return { ...result, _meta: serverInfoMeta }
    const stamped: JsonObject = {
      ...result,
      resultType: 'complete',
      _meta: { ...(result._meta as JsonObject | undefined), ...serverInfoMeta },
    }
    if (outcome.cache) {
      const hint = outcome.interactive
        ? { ttlMs: 0, cacheScope: 'private' }
        : server.cache[outcome.cache]
      stamped.ttlMs = hint.ttlMs
      stamped.cacheScope = hint.cacheScope
    }
    return stamped
  }

  /**
   * Runs the method and settles it into the final message: the stamped result, or the JSON-RPC error
   * of whatever failed on the way, serialisation included (a cycle or a BigInt in a result is a
   * -32603, not an unhandled rejection). Never rejects.
   */
  async function settle(
    request: McpRequest,
    env: DispatchEnv<Deps>,
    input: McpHttpInput,
    cacheKey: string | undefined
  ): Promise<FinalMessage> {
    try {
      const outcome = await dispatch(request, env)
      const result = JSON.stringify(stamp(outcome))
      // A result whose own toJSON answers undefined serialises to nothing at all.
      if (typeof result !== 'string') throw new TypeError('The result has no JSON form.')
      if (cacheKey !== undefined) staticResults.set(cacheKey, result)
      env.observation?.succeeded(outcome.result)
      return { text: resultText(request.id, result), status: 200 }
    } catch (error) {
      env.observation?.failed(error)
      if (error instanceof InsufficientScopeError)
        return finalMessageOf(scopeRefusal(error, request.id, input))
      return errorMessage(request.id, error, logger)
    }
  }

  function answerError(
    id: RequestId | null,
    error: unknown,
    observation: RequestObservation | undefined,
    stage: 'envelope' | 'method' = 'method'
  ): Response {
    observation?.failed(error)
    const { text, status } = errorMessage(id, error, logger, stage)
    return jsonText(text, status)
  }

  const legacy: LegacyEra | undefined =
    options.legacy &&
    createLegacyEra({
      server: options.server,
      deps,
      sealer,
      sessionSealer: sealer.withTtl(
        options.legacy.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS
      ),
      sessions: options.legacy.sessions,
      bus: bus ?? missingBus(),
      logger,
      shutdown,
      now: options.legacy.now,
      input: options.legacy.input,
      limits: options.legacy.limits,
      stream: options.legacy.stream,
      streamLimits,
      telemetry: observer,
    })

  /** 405 with `allow` and a JSON-RPC error body saying `message`. */
  function methodNotAllowed(message: string, allow: string): Response {
    const { text } = errorMessage(null, new McpError(ErrorCode.InvalidRequest, message), logger)
    return new Response(text, {
      status: 405,
      headers: { 'content-type': 'application/json', allow },
    })
  }

  /**
   * Any method but POST. GET and DELETE serve 2025-era sessions (`legacy`): one naming a session goes
   * there, and so does a DELETE naming none from a 2025-era client (`headerEra`: no 2026-07-28
   * `MCP-Protocol-Version`), which the 2025 transport answers as any request lacking the session id
   * it requires, 400 "send initialize first" (a 405 would tell it sessions cannot be ended). Every
   * other GET or DELETE without a session (a 2026-07-28 client's either, and a GET, which has no
   * stream to open) is 405 with `Allow: POST`; any other method a 405 listing every method served.
   */
  function notPost(input: McpHttpInput, method: string): Promise<Response> | Response {
    if (!legacy) {
      return methodNotAllowed(
        'Method Not Allowed: this stateless MCP endpoint accepts POST only.',
        'POST'
      )
    }
    if (method !== 'GET' && method !== 'DELETE') {
      return methodNotAllowed(
        `Method Not Allowed: ${method} is not served here; POST messages, or GET and DELETE a 2025-era session.`,
        'GET, POST, DELETE'
      )
    }
    const { headers } = input
    if (headers.has(HEADER_SESSION_ID) || (method === 'DELETE' && headerEra(headers) === 'legacy'))
      return method === 'GET' ? legacy.get(input) : legacy.delete(input)
    return methodNotAllowed(
      `Method Not Allowed: ${method} needs the Mcp-Session-Id of a 2025-era session from initialize; 2026-07-28 clients POST only.`,
      'POST'
    )
  }

  return async function handleMcp(input: McpHttpInput): Promise<Response> {
    const { body, headers, principal, signal } = input
    if (input.method !== undefined && input.method !== 'POST') return notPost(input, input.method)
    let request: McpRequest
    let observation: RequestObservation | undefined
    try {
      const message = parseJson(body)
      observation = observer?.request(message, headers)
      // The body decides the era (legacy/classify.ts); the modern path below is exactly 2026-07-28.
      if (legacy && classifyMessage(message, headers) === 'legacy')
        return legacy.post(message, input, observation)
      const parsed = parseMessage(message, headers)
      if (parsed.kind === 'notification') {
        const notification = { id: null, method: parsed.method, params: {} }
        const denied = scopeChallenge(server, notification, input, observation)
        if (denied) return denied
        observation?.succeeded()
        return new Response(null, { status: 202 })
      }
      request = parsed.request
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error
      return answerError(error.id, error.error, observation, 'envelope')
    }

    const { id, method } = request
    // A server that does not declare `logging` never sends notifications/message (LOG Capabilities).
    if (!server.capabilities.logging) delete request.logLevel
    if (!isAdvertised(server, method)) {
      return answerError(
        id,
        new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`),
        observation
      )
    }
    const denied = scopeChallenge(server, request, input, observation)
    if (denied) return denied

    const cancellation = new Cancellation(signal)

    if (method === METHODS.listen) {
      let slot: StreamSlot | undefined
      try {
        const { notifications } = parseParams(ListenParamsSchema, request.params)
        slot = streamLimits.acquire({ principal }, 'listen')
        const stream = listen(server, {
          ...options.listen,
          id,
          requested: notifications,
          principal,
          bus: bus!,
          signal: cancellation.signal,
          shutdown,
          logger,
          onEnd: slot.release,
        })
        if (!observer) return stream
        observation?.succeeded()
        return observer.stream('listen', request.protocolVersion, stream)
      } catch (error) {
        slot?.release() // nothing holds a stream that failed to open
        return answerError(id, error, observation)
      }
    }

    let cacheKey: string | undefined
    try {
      cacheKey = staticResultKey(server, request)
    } catch (error) {
      return answerError(id, error, observation)
    }
    if (cacheKey !== undefined) {
      const cached = staticResults.get(cacheKey)
      if (cached !== undefined) {
        observation?.succeeded()
        return jsonText(resultText(id, cached))
      }
    }

    const env = dispatchEnv(dispatchBase, request, input, cancellation, {
      headers,
      tasks,
      observation,
    })
    return env.channel.respond(
      observation
        ? observation.run(() => settle(request, env, input, cacheKey))
        : settle(request, env, input, cacheKey)
    )
  }
}
