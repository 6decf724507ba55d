/**
 * @module mcp/handler
 * `createMcpHandler` is the engine's entry: one POSTed MCP message in, one `Response` out, using Web
 * standards only so it runs unchanged on Node and Workers. It owns the order of the pipeline after the
 * HTTP layer (Origin/Host, method, body size and authentication are the route's job): envelope →
 * notification (202) → method known and advertised (404 + -32601) → dispatch → stamp `resultType`,
 * `_meta` serverInfo and cache hints → JSON or SSE. Every error answer is a JSON-RPC error body that
 * echoes the request id, with its status from the one table in `errors.ts`. Nothing thrown inside
 * reaches the client as a stack trace.
 */
import {
  dispatch,
  isAdvertised,
  parseParams,
  type DispatchResult,
  type McpLogger,
} from './dispatch.ts'
import { EnvelopeError, parseMessage, type McpRequest } from './envelope.ts'
import { ErrorCode, McpError, httpStatusFor } from './errors.ts'
import type { EventBus } from './events.ts'
import { META_SERVER_INFO, METHODS } from './protocol.ts'
import type { StateSealer } from './sealed-state.ts'
import type { McpServer } from './server.ts'
import {
  Cancellation,
  ResponseChannel,
  jsonResponse,
  jsonText,
  type FinalMessage,
} from './streaming.ts'
import { listen } from './subscriptions.ts'
import { ListenParamsSchema, type JsonObject, type RequestId } from './wire.ts'

export interface McpHandlerOptions<App> {
  server: McpServer<App>
  app: App
  sealer: StateSealer
  /** Feeds `subscriptions/listen`; required when the server advertises listChanged or subscribe. */
  bus?: EventBus
  logger?: McpLogger
  /** Aborted when the process shuts down: open listen streams then end gracefully. */
  shutdown?: AbortSignal
  listen?: { keepAliveMs?: number; maxDurationMs?: number }
}

export interface McpHttpInput {
  body: string
  headers: Headers
  /** The caller, as authenticated by the HTTP layer (or the single local principal). */
  principal: string
  /** The OAuth client the caller authenticated through, if any (sealed states are bound to it). */
  client?: string
  /** Aborted when the client goes away. */
  signal?: AbortSignal
}

export type McpHandler = (input: McpHttpInput) => Promise<Response>

/** Methods whose results depend only on the compiled server and the cursor: serialised once. */
const STATIC_METHODS: ReadonlySet<string> = new Set([
  METHODS.discover,
  METHODS.toolsList,
  METHODS.promptsList,
  METHODS.resourceTemplatesList,
])
/** Pages remembered at most (a forged cursor may name any offset; the cache must stay bounded). */
const STATIC_RESULTS_LIMIT = 64

function staticResultKey(request: McpRequest): string | undefined {
  if (!STATIC_METHODS.has(request.method)) return undefined
  const cursor = request.params.cursor
  if (cursor === undefined) return request.method
  return typeof cursor === 'string' ? `${request.method} ${cursor}` : undefined
}

/** Logs as one JSON line per event on stderr; never includes request bodies or credentials. */
export const consoleLogger: McpLogger = {
  warn: (message, fields) => console.warn(JSON.stringify({ level: 'warn', message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ level: 'error', message, ...fields })),
}

export function createMcpHandler<App>(options: McpHandlerOptions<App>): McpHandler {
  const { server, app, sealer, bus, shutdown } = options
  const logger = options.logger ?? consoleLogger
  const serverInfoMeta = { [META_SERVER_INFO]: server.info }
  /** Serialised results that depend only on the server definition and the cursor (bounded). */
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
    if (result.resultType === 'input_required') return { ...result, _meta: serverInfoMeta }
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

  function failure(
    id: RequestId | null,
    error: unknown,
    stage: 'envelope' | 'method'
  ): FinalMessage {
    const mcpError =
      error instanceof McpError
        ? error
        : new McpError(
            ErrorCode.InternalError,
            'Internal error: the server failed to process the request; the failure was logged.'
          )
    if (!(error instanceof McpError))
      logger.error('request failed', {
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      })
    return {
      message: { jsonrpc: '2.0', id, error: mcpError.toJSON() },
      status: httpStatusFor(mcpError, stage),
    }
  }

  return async function handleMcp({
    body,
    headers,
    principal,
    client,
    signal,
  }: McpHttpInput): Promise<Response> {
    let request: McpRequest
    try {
      const parsed = parseMessage(body, headers)
      if (parsed.kind === 'notification') return new Response(null, { status: 202 })
      request = parsed.request
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error
      const { message, status } = failure(error.id, error.error, 'envelope')
      return jsonResponse(message, status)
    }

    const { id, method } = request
    // A server that does not declare `logging` never sends notifications/message (LOG Capabilities).
    if (!server.capabilities.logging) delete request.logLevel
    if (!isAdvertised(server as McpServer<unknown>, method)) {
      const { message, status } = failure(
        id,
        new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`),
        'method'
      )
      return jsonResponse(message, status)
    }

    const cancellation = new Cancellation(signal)

    if (method === METHODS.listen) {
      try {
        const { notifications } = parseParams(ListenParamsSchema, request.params)
        return listen(server as McpServer<unknown>, {
          id,
          requested: notifications,
          principal,
          bus: bus!,
          signal: cancellation.signal,
          shutdown,
          ...options.listen,
        })
      } catch (error) {
        const { message, status } = failure(id, error, 'method')
        return jsonResponse(message, status)
      }
    }

    const cacheKey = staticResultKey(request)
    if (cacheKey !== undefined) {
      const cached = staticResults.get(cacheKey)
      if (cached !== undefined)
        return jsonText(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${cached}}`)
    }

    const channel = new ResponseChannel(cancellation)
    const final: Promise<FinalMessage> = dispatch(request, {
      server,
      app,
      principal,
      client,
      request,
      channel,
      cancellation,
      sealer,
      logger,
      headers,
    }).then(
      (outcome) => {
        const result = stamp(outcome)
        if (cacheKey !== undefined && staticResults.size < STATIC_RESULTS_LIMIT) {
          staticResults.set(cacheKey, JSON.stringify(result))
        }
        return { message: { jsonrpc: '2.0', id, result }, status: 200 }
      },
      (error) => failure(id, error, 'method')
    )
    return channel.respond(final)
  }
}
