/**
 * @module client/client
 * `McpClient`, the project's MCP client driver for stateless 2026-07-28 servers over Streamable HTTP,
 * used by the tests, the load test and hosts. One method per request the revision defines; each call
 * declares the client's capabilities and info in its `_meta` (retries included), plus a progress token
 * and a log level when asked. `tools/call`, `resources/read` and `prompts/get` run the multi
 * round-trip loop (`client/rounds`); `listen` holds a `subscriptions/listen` stream open.
 *
 * Tasks (extension `io.modelcontextprotocol/tasks`, declared with the `tasks` option): the server
 * may answer a `tools/call` with a task. `startToolCall` answers either the result or the task's
 * handle (`McpTask`, `client/tasks`: poll, answer, cancel); `callTool` follows a task to its
 * result, so a caller that only wants the result need not care. `getTask` and `resumeTask` reach a
 * task by its id (one kept from an earlier process, say).
 *
 * Bounds: `timeoutMs` over the whole call, handler time included (the loop's own bounds are in
 * `client/rounds`); following a task is bounded by `taskTimeoutMs`. A call keeps its state in its
 * own locals, so parallel calls on one client share nothing but the id counter. A caller's abort
 * rejects with the caller's own reason; a timeout is an `McpDriverError` with reason `timeout`.
 *
 * Left to others: caching (`ttlMs`), authorization flows (pass `headers`, e.g. a bearer token),
 * `Mcp-Param-*` headers for `x-mcp-header` tool arguments, reconnecting `subscriptions/listen`.
 * Web standards only (fetch, streams, TextEncoder/TextDecoder, AbortSignal), no `node:*`.
 */
import {
  LOG_LEVELS,
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  METHODS,
  NAMED_METHODS,
  PROTOCOL_VERSION,
  type LogLevel,
} from '../mcp/protocol.ts'
import type { ListenFilter } from '../mcp/subscriptions.ts'
import {
  isObject,
  type CallToolResult,
  type GetPromptResult,
  type JsonObject,
  type ReadResourceResult,
  type RequestId,
} from '../mcp/wire.ts'
import { bounded } from './abort.ts'
import { postRequest, readAnswer, serverError, type JsonRpcNotification } from './exchange.ts'
import {
  endpoint,
  integer,
  resolveClientOptions,
  type ClientSettings,
  type McpClientOptions,
} from './options.ts'
import { driveCall, type Call, type RoundClient } from './rounds.ts'
import {
  createdTask,
  getTask,
  McpTask,
  type TaskClient,
  type TaskInfo,
  type TaskRequestOptions,
} from './tasks.ts'

export interface RequestOptions {
  signal?: AbortSignal
  /** Notifications the server sends on this call's streams (progress, log messages), every round. */
  onNotification?: (notification: JsonRpcNotification) => void
  progressToken?: string | number
  logLevel?: LogLevel
  /**
   * This request's transport retries, instead of the client's: e.g. 0 for a call whose effect must
   * not happen twice and has no key that would make a re-sent round act once.
   */
  transportRetries?: number
}

export interface ListenRequestOptions {
  /** Aborting it ends the subscription; `listen` then resolves. */
  signal?: AbortSignal
  onNotification: (notification: JsonRpcNotification) => void
}

/** What a `tools/call` answered: its result, or (only to a client declaring tasks) a task. */
export type ToolCallOutcome =
  { kind: 'result'; result: CallToolResult & JsonObject } | { kind: 'task'; task: McpTask }

export type CompletionReference =
  { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string }

export class McpClient {
  readonly #settings: ClientSettings
  /** The settings and id source the round loop runs on. */
  readonly #rounds: RoundClient
  /** What the task handles run on. */
  readonly #tasks: TaskClient
  readonly #idPrefix = crypto.randomUUID().slice(0, 8)
  #lastId = 0

  /** Checks every option (`TypeError`/`RangeError`); see `McpClientOptions` for the defaults. */
  constructor(options: McpClientOptions) {
    const settings = resolveClientOptions(options)
    this.#settings = settings
    this.#rounds = {
      fetch: settings.fetch,
      headers: settings.headers,
      handlers: settings.handlers,
      maxRounds: settings.maxRounds,
      onRound: settings.onRound,
      newId: () => this.#newId(),
      endpoint: () => this.#endpoint(),
    }
    this.#tasks = {
      request: (method, params, options) => this.request(method, params, options),
      handlers: settings.handlers,
      timeoutMs: settings.timeoutMs,
      taskTimeoutMs: settings.taskTimeoutMs,
    }
  }

  /**
   * Sends one request and returns its final result. For `tools/call`, `resources/read` and
   * `prompts/get` it runs the multi round-trip loop until the result is complete.
   */
  async request(
    method: string,
    params: JsonObject = {},
    options: RequestOptions = {}
  ): Promise<JsonObject> {
    if (typeof method !== 'string' || method.length === 0) {
      throw new TypeError('method must be a non-empty string')
    }
    if (method === METHODS.listen) throw new TypeError('use listen() for subscriptions/listen')
    if (!isObject(params)) throw new TypeError('params must be an object')
    const field = NAMED_METHODS[method]
    if (field && typeof params[field] !== 'string') {
      throw new TypeError(`${method} needs params.${field} as a string`)
    }
    const meta = this.#meta(params._meta, options)

    const { timeoutMs, tasks } = this.#settings
    const transportRetries =
      options.transportRetries === undefined
        ? this.#settings.transportRetries
        : integer('transportRetries', options.transportRetries, 0)
    let lastResult: JsonObject | undefined
    return bounded(
      timeoutMs,
      options.signal,
      async (signal) => {
        const call: Call = {
          method,
          params,
          meta,
          signal,
          onNotification: options.onNotification,
          tasks,
          transportRetries,
        }
        try {
          return await driveCall(this.#rounds, call)
        } finally {
          lastResult = call.lastResult
        }
      },
      () => ({ message: `${method} did not complete within ${timeoutMs} ms`, lastResult })
    )
  }

  discover(options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.discover, {}, options)
  }

  listTools(cursor?: string, options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.toolsList, page(cursor), options)
  }

  /** `tools/call` to its result; a task the server answered instead is followed to its end. */
  async callTool(
    name: string,
    args?: JsonObject,
    options?: RequestOptions
  ): Promise<CallToolResult & JsonObject> {
    const outcome = await this.startToolCall(name, args, options)
    if (outcome.kind === 'result') return outcome.result
    return outcome.task.result({ signal: options?.signal })
  }

  /**
   * `tools/call` (its multi round-trip rounds included) up to what it answered: the result, or, when
   * this client declares the tasks extension, possibly a task to follow (`McpTask`).
   */
  async startToolCall(
    name: string,
    args?: JsonObject,
    options?: RequestOptions
  ): Promise<ToolCallOutcome> {
    const params = args === undefined ? { name } : { name, arguments: args }
    const result = await this.request(METHODS.toolsCall, params, options)
    if (result.resultType === 'task') {
      return { kind: 'task', task: new McpTask(this.#tasks, createdTask(result), false) }
    }
    return { kind: 'result', result: result as CallToolResult & JsonObject }
  }

  /** `tasks/get`: the task as it is now. */
  getTask(taskId: string, options?: TaskRequestOptions): Promise<TaskInfo> {
    return getTask(this.#tasks, taskId, options)
  }

  /** A handle on a task known by its id, as `tasks/get` shows it now. */
  async resumeTask(taskId: string, options?: TaskRequestOptions): Promise<McpTask> {
    return new McpTask(this.#tasks, await this.getTask(taskId, options), true)
  }

  async readResource(
    uri: string,
    options?: RequestOptions
  ): Promise<ReadResourceResult & JsonObject> {
    return (await this.request(METHODS.resourcesRead, { uri }, options)) as ReadResourceResult &
      JsonObject
  }

  async getPrompt(
    name: string,
    args?: Record<string, string>,
    options?: RequestOptions
  ): Promise<GetPromptResult & JsonObject> {
    const params = args === undefined ? { name } : { name, arguments: args }
    return (await this.request(METHODS.promptsGet, params, options)) as GetPromptResult & JsonObject
  }

  complete(
    ref: CompletionReference,
    argument: { name: string; value: string },
    context?: { arguments?: Record<string, string> },
    options?: RequestOptions
  ): Promise<JsonObject> {
    const params = context === undefined ? { ref, argument } : { ref, argument, context }
    return this.request(METHODS.complete, params, options)
  }

  listResources(cursor?: string, options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.resourcesList, page(cursor), options)
  }

  listResourceTemplates(cursor?: string, options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.resourceTemplatesList, page(cursor), options)
  }

  listPrompts(cursor?: string, options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.promptsList, page(cursor), options)
  }

  /**
   * Opens a `subscriptions/listen` stream and hands every notification on it to `onNotification`.
   * Resolves when the stream ends (gracefully or not: reconnecting is the caller's choice) or when
   * `signal` aborts; `timeoutMs` does not apply. Rejects on a JSON-RPC error, a transport failure while
   * connecting or reading, or a protocol violation.
   */
  async listen(filter: ListenFilter, options: ListenRequestOptions): Promise<void> {
    if (!isObject(filter)) throw new TypeError('filter must be an object')
    if (typeof options?.onNotification !== 'function') {
      throw new TypeError('listen needs an onNotification function')
    }
    const signal = options.signal ?? new AbortController().signal
    const id = this.#newId()
    const params = { notifications: filter, _meta: this.#meta(undefined, {}) }
    try {
      const response = await postRequest(
        this.#rounds,
        this.#endpoint(),
        id,
        METHODS.listen,
        params,
        signal
      )
      const final = await readAnswer(response, id, signal, options.onNotification)
      if (final && 'error' in final) throw serverError(final.error, response.status)
    } catch (error) {
      if (signal.aborted) return
      throw error
    }
  }

  #meta(extra: unknown, options: RequestOptions): JsonObject {
    if (extra !== undefined && !isObject(extra))
      throw new TypeError('params._meta must be an object')
    const { progressToken, logLevel } = options
    if (
      progressToken !== undefined &&
      typeof progressToken !== 'string' &&
      !Number.isSafeInteger(progressToken)
    ) {
      throw new TypeError('progressToken must be a string or an integer')
    }
    if (logLevel !== undefined && !LOG_LEVELS.includes(logLevel)) {
      throw new RangeError(`logLevel must be one of ${LOG_LEVELS.join(', ')}`)
    }
    const meta: JsonObject = {
      ...extra,
      [META_PROTOCOL_VERSION]: PROTOCOL_VERSION,
      [META_CLIENT_CAPABILITIES]: this.#settings.capabilities,
      [META_CLIENT_INFO]: this.#settings.clientInfo,
    }
    if (progressToken !== undefined) meta.progressToken = progressToken
    if (logLevel !== undefined) meta[META_LOG_LEVEL] = logLevel
    return meta
  }

  #endpoint(): string {
    const { urls, url } = this.#settings
    return urls ? endpoint('urls()', urls()) : url
  }

  /** Unique per client instance, and across instances thanks to the random prefix. */
  #newId(): RequestId {
    this.#lastId += 1
    return `${this.#idPrefix}-${this.#lastId}`
  }
}

function page(cursor: string | undefined): JsonObject {
  return cursor === undefined ? {} : { cursor }
}
