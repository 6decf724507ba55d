/**
 * @module mcp/modern-era
 * The 2026-07-28 face of the engine: one parsed message of that revision in, one `Response` out
 * (`handler.ts` parses the body and chooses the era). It owns the order of the pipeline after the
 * HTTP layer (Origin/Host, body size and authentication are the route's job): envelope →
 * notification (the base scopes, then 202) → method known and advertised (404 + -32601) → scopes
 * (403, `scopes.ts`) → dispatch → stamp `resultType`, `_meta` serverInfo and cache hints → JSON or
 * SSE. How a request goes on after the envelope is the one question it asks of the method table
 * (`routeOf`, `dispatch.ts`): `subscriptions/listen` is served by `subscriptions.ts`, results that
 * depend only on the compiled server (discover, and the pages the server cuts of its static lists)
 * are serialised once, one cache entry per such page whatever cursors clients send, and everything
 * else is dispatched. Every failure after parsing, serialising the result included, becomes a
 * JSON-RPC error body that echoes the request id (anything but an `McpError` as -32603 without
 * detail, its cause logged), with its status from the one table in `errors.ts`, except scopes found
 * lacking once a method is under way (`InsufficientScopeError`: a task's tool's, known from its
 * record), answered with the same 403 challenge as the check before dispatch. With telemetry on,
 * each request's observation (started by `handler.ts`) is settled where its answer is decided.
 */
import { dispatch, dispatchEnv, routeOf, type DispatchBase, type StaticPage } from './dispatch.ts'
import type { DispatchEnv, DispatchResult, TaskService } from './dispatch-env.ts'
import { parseMessage, type McpRequest } from './envelope.ts'
import { ErrorCode, McpError, errorMessage } from './errors.ts'
import type { McpHttpInput } from './http-input.ts'
import type { McpLogger } from './logger.ts'
import type { RequestObservation } from './observer.ts'
import { META_SERVER_INFO } from './protocol.ts'
import { InsufficientScopeError, scopeChallenge, scopeRefusal } from './scopes.ts'
import type { CompiledServer } from './server.ts'
import type { StateSealer } from './sealed-state.ts'
import {
  Cancellation,
  ResponseChannel,
  finalMessageOf,
  finalResponse,
  jsonText,
  type FinalMessage,
} from './streaming.ts'
import { serveListen, type ListenService } from './subscriptions.ts'
import type { JsonObject, RequestId } from './wire.ts'

export interface ModernEraOptions<Deps> {
  /** The era's server: with tasks, it advertises the extension. */
  server: CompiledServer<Deps>
  deps: Deps
  sealer: StateSealer
  logger: McpLogger
  /** Serves the tasks extension; absent: no request may have a task. */
  tasks?: TaskService<Deps>
  /** Serves `subscriptions/listen`; absent without a bus, when the server cannot listen. */
  listen?: ListenService<Deps>
}

/** The JSON-RPC response of request `id` around a result already serialised as JSON text. */
function resultText(id: RequestId, result: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`
}

/**
 * The JSON answer of a message refused with `error` (its status from `errors.ts`' table), settling
 * its `observation`; `stage` says whether the envelope or the method refused it.
 */
export function errorAnswer(
  id: RequestId | null,
  error: unknown,
  logger: McpLogger,
  observation: RequestObservation | undefined,
  stage: 'envelope' | 'method' = 'method'
): Response {
  observation?.failed(error)
  return finalResponse(errorMessage(id, error, logger, stage))
}

export class ModernEra<Deps> {
  readonly #server: CompiledServer<Deps>
  readonly #logger: McpLogger
  readonly #tasks: TaskService<Deps> | undefined
  readonly #listen: ListenService<Deps> | undefined
  /** What every dispatched request shares (`dispatchEnv` adds the request's own). */
  readonly #dispatchBase: DispatchBase<Deps>
  readonly #serverInfoMeta: JsonObject
  /**
   * Serialised results that depend only on the compiled server, by `StaticPage.key`: bounded by the
   * pages the server defines (a few per list), never by what clients send.
   */
  readonly #staticResults = new Map<string, string>()

  constructor({ server, deps, sealer, logger, tasks, listen }: ModernEraOptions<Deps>) {
    this.#server = server
    this.#logger = logger
    this.#tasks = tasks
    this.#listen = listen
    this.#dispatchBase = { server, deps, sealer, logger }
    this.#serverInfoMeta = { [META_SERVER_INFO]: server.info }
  }

  /**
   * One parsed message of revision 2026-07-28; `observation` is its telemetry, if on. Throws the
   * `EnvelopeError` of a message that is not one (`handler.ts` answers it).
   */
  post(
    message: unknown,
    input: McpHttpInput,
    observation: RequestObservation | undefined
  ): Response | Promise<Response> {
    const parsed = parseMessage(message, input.headers)
    if (parsed.kind === 'request') return this.#request(parsed.request, input, observation)
    const notification = { id: null, method: parsed.method, params: {} }
    const denied = scopeChallenge(this.#server, notification, input, observation)
    if (denied) return denied
    observation?.succeeded()
    return new Response(null, { status: 202 })
  }

  #request(
    request: McpRequest,
    input: McpHttpInput,
    observation: RequestObservation | undefined
  ): Response | Promise<Response> {
    const server = this.#server
    const { id, method } = request
    // A server that does not declare `logging` never sends notifications/message (LOG Capabilities).
    if (!server.capabilities.logging) delete request.logLevel
    const route = routeOf(server, request)
    if (route.kind === 'unadvertised') {
      const error = new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`)
      return errorAnswer(id, error, this.#logger, observation)
    }
    const denied = scopeChallenge(server, request, input, observation)
    if (denied) return denied
    let page: StaticPage | undefined
    switch (route.kind) {
      case 'listen':
        return this.#openListen(request, input, observation)
      case 'refused':
        return errorAnswer(id, route.error, this.#logger, observation)
      case 'static': {
        const cached = route.key === undefined ? undefined : this.#staticResults.get(route.key)
        if (cached !== undefined) {
          observation?.succeeded()
          return jsonText(resultText(id, cached))
        }
        page = route
      }
    }
    const cancellation = new Cancellation(input.signal)
    const channel = new ResponseChannel(cancellation)
    const env = dispatchEnv(this.#dispatchBase, request, input, cancellation, {
      channel,
      headers: input.headers,
      tasks: this.#tasks,
      observation,
    })
    return channel.respond(
      observation
        ? observation.run(() => this.#settle(request, env, input, page))
        : this.#settle(request, env, input, page)
    )
  }

  #openListen(
    request: McpRequest,
    input: McpHttpInput,
    observation: RequestObservation | undefined
  ): Response {
    try {
      // Listen is advertised only when the server can listen, which needs a bus (`handler.ts`).
      return serveListen(this.#listen!, request, input, observation)
    } catch (error) {
      return errorAnswer(request.id, error, this.#logger, observation)
    }
  }

  /**
   * Runs the method and settles it into the final message: the stamped result, or the JSON-RPC error
   * of whatever failed on the way, serialisation included (a cycle or a BigInt in a result is a
   * -32603, not an unhandled rejection); a static `page` is kept once serialised. Never rejects.
   */
  async #settle(
    request: McpRequest,
    env: DispatchEnv<Deps>,
    input: McpHttpInput,
    page: StaticPage | undefined
  ): Promise<FinalMessage> {
    try {
      const outcome = await dispatch(request, env, page?.offset)
      const result = JSON.stringify(this.#stamp(outcome))
      // A result whose own toJSON answers undefined serialises to nothing at all.
      if (typeof result !== 'string') throw new TypeError('The result has no JSON form.')
      if (page?.key !== undefined) this.#staticResults.set(page.key, result)
      env.observation?.succeeded(outcome.result)
      return { text: resultText(request.id, result), status: 200 }
    } catch (error) {
      env.observation?.failed(error)
      if (error instanceof InsufficientScopeError)
        return finalMessageOf(scopeRefusal(error, request.id, input))
      return errorMessage(request.id, error, this.#logger)
    }
  }

  #stamp(outcome: DispatchResult): JsonObject {
    const result = outcome.result
    if (result.resultType === 'input_required' || result.resultType === 'task')
      return { ...result, _meta: this.#serverInfoMeta }
    const stamped: JsonObject = {
      ...result,
      resultType: 'complete',
      _meta: { ...(result._meta as JsonObject | undefined), ...this.#serverInfoMeta },
    }
    if (outcome.cache) {
      const hint = outcome.interactive
        ? { ttlMs: 0, cacheScope: 'private' }
        : this.#server.cache[outcome.cache]
      stamped.ttlMs = hint.ttlMs
      stamped.cacheScope = hint.cacheScope
    }
    return stamped
  }
}
