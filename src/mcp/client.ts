/**
 * @module mcp/client
 * The project's MCP client driver for stateless 2026-07-28 servers over Streamable HTTP, used by hosts,
 * the tests and the load-test tool.
 *
 * It owns:
 * - the request shape: one POST per JSON-RPC request, with `Content-Type`, `Accept`,
 *   `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for `tools/call`/`prompts/get` (`params.name`)
 *   and `resources/read` (`params.uri`), sent as `=?base64?…?=` unless it is plain visible ASCII;
 *   and the per-request `_meta` (protocol version, client capabilities, client info, and on request
 *   a progress token and a log level). Capabilities are declared on every request, retries included;
 * - reading the answer, as one `application/json` message or as a `text/event-stream` whose
 *   notifications go to the caller and which ends at the response carrying the request's id. A
 *   server→client request on a stream is a protocol error (servers never send them in this revision);
 * - the multi round-trip loop for `tools/call`, `resources/read` and `prompts/get`: on `input_required`
 *   it asks the host's handlers for every key at once, then sends the same method and params again on a
 *   new id, with `inputResponses` holding only this round's answers and the server's `requestState`
 *   echoed verbatim (and only when the server sent one). A round that carries only `requestState` is
 *   retried after a short pause that doubles up to a ceiling.
 *
 * Bounds: `maxRounds` requests per call; `timeoutMs` over the whole call, handler time included; opt-in
 * transport retries that re-send the same round, on a new id and on the next endpoint from `urls()`,
 * when fetch fails, a 502/503/504 comes back, or an event stream ends before its response (the spec
 * says a broken stream loses the request). Nothing else is retried.
 *
 * Contract: a call keeps its state in its own locals, so parallel calls on one client share nothing but
 * the id counter. What the server answered as a JSON-RPC error is an `McpClientError` (code, message,
 * data and HTTP status kept); what the driver decides locally is an `McpDriverError` with a `reason`,
 * never confusable with a server error; a caller's abort rejects with the caller's own reason.
 *
 * Left to others: caching (`ttlMs`), authorization flows (pass `headers`, e.g. a bearer token),
 * `Mcp-Param-*` headers for `x-mcp-header` tool arguments, reconnecting `subscriptions/listen`.
 * Web standards only (fetch, streams, TextEncoder/TextDecoder, AbortSignal), no `node:*`.
 */
import {
  HEADER_METHOD,
  HEADER_NAME,
  HEADER_PROTOCOL_VERSION,
  LOG_LEVELS,
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  METHODS,
  NAMED_METHODS,
  PROTOCOL_VERSION,
  SUSPENDABLE_METHODS,
  type LogLevel,
} from './protocol.ts'
import type { ListenFilter } from './subscriptions.ts'
import type {
  CallToolResult,
  ClientCapabilities,
  CreateMessageParams,
  CreateMessageResult,
  ElicitAnswer,
  GetPromptResult,
  Implementation,
  JsonObject,
  ReadResourceResult,
  RequestId,
  Root,
} from './wire.ts'

export const DEFAULT_MAX_ROUNDS = 10
export const DEFAULT_TIMEOUT_MS = 60_000
export const DEFAULT_TRANSPORT_RETRIES = 0
/** First pause before re-sending a state-only round or a failed transport attempt; it doubles. */
export const RETRY_DELAY_MS = 50
/** Ceiling of that pause. */
export const MAX_RETRY_DELAY_MS = 250
export const DEFAULT_CLIENT_INFO: Readonly<Implementation> = {
  name: 'notes-mcp-client',
  version: '0.1.0',
}
/** Gateway answers that mean no replica produced a response: retried when `transportRetries` allows. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([502, 503, 504])

/** Largest delay a timer accepts on every runtime (2^31 − 1 ms); longer ones fire at once on Node. */
const MAX_TIMEOUT_MS = 2_147_483_647
const ACCEPT = 'application/json, text/event-stream'
const PLAIN_HEADER_VALUE = /^[\x21-\x7e]*$/
/** A literal that a server would read as the sentinel must itself be encoded. */
const SENTINEL_LIKE = /^=\?base64\?.*\?=$/
const LINE_BREAK = /\r\n|\r|\n/
const encoder = new TextEncoder()

// ---------------------------------------------------------------------------------------------------
// Public types

export interface JsonRpcNotification {
  jsonrpc: '2.0'
  method: string
  params?: JsonObject
}

/** What a handler learns about the input it is asked for. */
export interface InputContext {
  /** The server's key for this input request. */
  key: string
  /** The round whose `input_required` result asked (1 for the first answer). */
  round: number
  /** Aborted on timeout, on the caller's abort, or when a sibling handler of the same round fails. */
  signal: AbortSignal
}

/** `elicitation/create` params as the server sent them (form: `requestedSchema`; url: `url`). */
export type ElicitRequestParams = JsonObject & {
  message: string
  mode?: 'form' | 'url'
  requestedSchema?: JsonObject
  url?: string
}

export type ElicitContent = Record<string, string | number | boolean | string[]>

/** A form answer carries `content` when accepted; a URL-mode `accept` carries none. */
export type ElicitResult = ElicitAnswer<ElicitContent> | { action: 'accept' }

export interface InputHandlers {
  elicit?: (params: ElicitRequestParams, ctx: InputContext) => Promise<ElicitResult>
  sample?: (params: CreateMessageParams, ctx: InputContext) => Promise<CreateMessageResult>
  roots?: (ctx: InputContext) => Promise<{ roots: Root[] }>
}

/** One HTTP attempt of one round, reported after it settles (also when it failed). */
export interface RoundInfo {
  round: number
  /** 1 for the first send of a round, 2 and up for transport retries of it. */
  attempt: number
  id: RequestId
  url: string
  /** 0 when no HTTP response arrived (fetch failed or the call was aborted). */
  status: number
  headers: Headers
  resultType?: string
}

export type HeadersOption =
  Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>)

export interface McpClientOptions {
  /** The MCP endpoint. */
  url: string | URL
  /** Defaults to the global fetch; tests pass an in-process app's fetch. */
  fetch?: typeof fetch
  clientInfo?: Implementation
  /**
   * Declared on every request. Defaults to what `handlers` can answer (`elicit` → form elicitation,
   * `sample` → sampling, `roots` → roots); declaring a capability without its handler is refused.
   */
  capabilities?: ClientCapabilities
  /**
   * Extra headers for every attempt (a function is called per attempt, e.g. for a fresh token). They
   * cannot replace the protocol headers, which are set after them.
   */
  headers?: HeadersOption
  handlers?: InputHandlers
  /** Requests per call, first one included. */
  maxRounds?: number
  /** Bound on a whole call: every round, pause and handler. */
  timeoutMs?: number
  /** How many times one round is re-sent after a transport failure (default 0). */
  transportRetries?: number
  onRound?: (info: RoundInfo) => void
  /** Chooses the endpoint of each attempt (e.g. a different replica per round); defaults to `url`. */
  urls?: () => string | URL
}

export interface RequestOptions {
  signal?: AbortSignal
  /** Notifications the server sends on this call's streams (progress, log messages), every round. */
  onNotification?: (notification: JsonRpcNotification) => void
  progressToken?: string | number
  logLevel?: LogLevel
}

export interface ListenRequestOptions {
  /** Aborting it ends the subscription; `listen` then resolves. */
  signal?: AbortSignal
  onNotification: (notification: JsonRpcNotification) => void
}

export type CompletionReference =
  { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string }

/** A JSON-RPC error the server answered with. */
export class McpClientError extends Error {
  override name = 'McpClientError'
  readonly code: number
  readonly data: unknown
  readonly httpStatus: number

  constructor(code: number, message: string, data: unknown, httpStatus: number) {
    super(message)
    this.code = code
    this.data = data
    this.httpStatus = httpStatus
  }
}

export type DriverFailure = 'max_rounds' | 'timeout' | 'no_handler' | 'transport' | 'protocol'

/** A failure the driver decided locally; `lastResult` is the last result the server sent, if any. */
export class McpDriverError extends Error {
  override name = 'McpDriverError'
  readonly reason: DriverFailure
  readonly lastResult?: unknown

  constructor(
    reason: DriverFailure,
    message: string,
    options: { lastResult?: unknown; cause?: unknown } = {}
  ) {
    super(message, { cause: options.cause })
    this.reason = reason
    this.lastResult = options.lastResult
  }
}

// ---------------------------------------------------------------------------------------------------
// Client

/** One call's own state: nothing here is shared with another call. */
interface Call {
  method: string
  params: JsonObject
  meta: JsonObject
  signal: AbortSignal
  onNotification: ((notification: JsonRpcNotification) => void) | undefined
  lastResult?: JsonObject
}

type FinalMessage =
  { result: JsonObject } | { error: { code: number; message: string; data?: unknown } }

type InputJob = (ctx: InputContext) => Promise<unknown>

export class McpClient {
  readonly #url: string
  readonly #urls: (() => string | URL) | undefined
  readonly #fetch: typeof fetch
  readonly #clientInfo: Implementation
  readonly #capabilities: ClientCapabilities
  readonly #headers: HeadersOption | undefined
  readonly #handlers: InputHandlers
  readonly #maxRounds: number
  readonly #timeoutMs: number
  readonly #transportRetries: number
  readonly #onRound: ((info: RoundInfo) => void) | undefined
  readonly #idPrefix = crypto.randomUUID().slice(0, 8)
  #lastId = 0

  constructor(options: McpClientOptions) {
    if (!isObject(options)) throw new TypeError('McpClient options must be an object')
    this.#url = endpoint('url', options.url)
    this.#urls = optionalFunction('urls', options.urls)
    const fetchOption = optionalFunction('fetch', options.fetch)
    this.#fetch = fetchOption ?? ((input, init) => fetch(input, init))
    this.#onRound = optionalFunction('onRound', options.onRound)
    this.#maxRounds = integer('maxRounds', options.maxRounds ?? DEFAULT_MAX_ROUNDS, 1)
    this.#timeoutMs = integer(
      'timeoutMs',
      options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      1,
      MAX_TIMEOUT_MS
    )
    this.#transportRetries = integer(
      'transportRetries',
      options.transportRetries ?? DEFAULT_TRANSPORT_RETRIES,
      0
    )
    const headers = options.headers
    if (headers !== undefined && !isObject(headers) && typeof headers !== 'function') {
      throw new TypeError('headers must be an object or a function returning one')
    }
    this.#headers = headers

    const handlers: InputHandlers = options.handlers ?? {}
    if (!isObject(handlers as unknown)) throw new TypeError('handlers must be an object')
    for (const name of ['elicit', 'sample', 'roots'] as const) {
      optionalFunction(`handlers.${name}`, handlers[name])
    }
    // Picked and bound: handlers may be methods of a class instance (not copied by a spread).
    this.#handlers = {
      elicit: handlers.elicit?.bind(handlers),
      sample: handlers.sample?.bind(handlers),
      roots: handlers.roots?.bind(handlers),
    }

    const info = options.clientInfo ?? DEFAULT_CLIENT_INFO
    if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') {
      throw new TypeError('clientInfo must have a string name and version')
    }
    this.#clientInfo = structuredClone(info)

    if (options.capabilities !== undefined && !isObject(options.capabilities)) {
      throw new TypeError('capabilities must be an object')
    }
    const capabilities = structuredClone(options.capabilities ?? capabilitiesFor(handlers))
    for (const [capability, handler] of HANDLER_OF_CAPABILITY) {
      if (capabilities[capability] !== undefined && !handlers[handler]) {
        throw new TypeError(
          `capabilities.${capability} is declared but handlers.${handler} is missing: ` +
            'the server would ask for input this client cannot give'
        )
      }
    }
    this.#capabilities = capabilities
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

    const timeout = new AbortController()
    const timer = setTimeout(() => timeout.abort(), this.#timeoutMs)
    const signal = options.signal
      ? AbortSignal.any([options.signal, timeout.signal])
      : timeout.signal
    const call: Call = { method, params, meta, signal, onNotification: options.onNotification }
    try {
      return await this.#drive(call)
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason
      if (timeout.signal.aborted) {
        throw new McpDriverError(
          'timeout',
          `${method} did not complete within ${this.#timeoutMs} ms`,
          { lastResult: call.lastResult, cause: error }
        )
      }
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  discover(options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.discover, {}, options)
  }

  listTools(cursor?: string, options?: RequestOptions): Promise<JsonObject> {
    return this.request(METHODS.toolsList, page(cursor), options)
  }

  async callTool(
    name: string,
    args?: JsonObject,
    options?: RequestOptions
  ): Promise<CallToolResult & JsonObject> {
    const params = args === undefined ? { name } : { name, arguments: args }
    return (await this.request(METHODS.toolsCall, params, options)) as CallToolResult & JsonObject
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
      const response = await this.#post(this.#endpoint(), id, METHODS.listen, params, signal)
      const final = await readAnswer(response, id, signal, options.onNotification)
      if (final && 'error' in final) throw serverError(final.error, response.status)
    } catch (error) {
      if (signal.aborted) return
      throw error
    }
  }

  // -------------------------------------------------------------------------------------------------

  async #drive(call: Call): Promise<JsonObject> {
    const suspendable = SUSPENDABLE_METHODS.has(call.method)
    let params = call.params
    let stateOnlyStreak = 0
    for (let round = 1; ; round++) {
      const result = await this.#round(call, params, round)
      call.lastResult = result
      const type = result.resultType
      if (type === undefined || type === 'complete') return result
      if (type !== 'input_required') {
        throw protocolError(
          `${call.method} returned an unknown resultType ${JSON.stringify(type)}`,
          result
        )
      }
      if (!suspendable) {
        throw protocolError(`${call.method} may not return input_required`, result)
      }
      const { inputRequests, requestState } = result
      if (inputRequests !== undefined && !isObject(inputRequests)) {
        throw protocolError('inputRequests must be an object', result)
      }
      if (requestState !== undefined && typeof requestState !== 'string') {
        throw protocolError('requestState must be a string', result)
      }
      const keys = inputRequests ? Object.keys(inputRequests) : []
      if (keys.length === 0 && requestState === undefined) {
        throw protocolError('input_required carries neither inputRequests nor requestState', result)
      }
      if (round >= this.#maxRounds) {
        throw new McpDriverError(
          'max_rounds',
          `${call.method} still needed input after ${this.#maxRounds} rounds`,
          { lastResult: result }
        )
      }
      let inputResponses: JsonObject | undefined
      if (inputRequests && keys.length > 0) {
        inputResponses = await this.#answer(inputRequests, round, call.signal, result)
        stateOnlyStreak = 0
      } else {
        await pause(backoff(stateOnlyStreak++), call.signal)
      }
      params = retryParams(call.params, inputResponses, requestState)
    }
  }

  /** One round, re-sent on a new id after a transport failure while retries remain. */
  async #round(call: Call, params: JsonObject, round: number): Promise<JsonObject> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#attempt(call, params, round, attempt)
      } catch (error) {
        const retryable = error instanceof McpDriverError && error.reason === 'transport'
        if (!retryable || attempt > this.#transportRetries) throw error
        await pause(backoff(attempt - 1), call.signal)
      }
    }
  }

  async #attempt(
    call: Call,
    params: JsonObject,
    round: number,
    attempt: number
  ): Promise<JsonObject> {
    const id = this.#newId()
    const url = this.#endpoint()
    const info: RoundInfo = { round, attempt, id, url, status: 0, headers: new Headers() }
    try {
      const body = { ...params, _meta: call.meta }
      const response = await this.#post(url, id, call.method, body, call.signal)
      info.status = response.status
      info.headers = response.headers
      const final = await readAnswer(response, id, call.signal, call.onNotification)
      if (final === undefined) {
        throw new McpDriverError(
          'transport',
          `the event stream of ${call.method} ended before its response`
        )
      }
      if ('error' in final) throw serverError(final.error, response.status)
      const { resultType } = final.result
      if (typeof resultType === 'string') info.resultType = resultType
      return final.result
    } finally {
      this.#onRound?.(info)
    }
  }

  /** Runs the handlers of one round concurrently; none starts unless all of them exist. */
  async #answer(
    requests: JsonObject,
    round: number,
    signal: AbortSignal,
    result: JsonObject
  ): Promise<JsonObject> {
    const jobs = Object.entries(requests).map(
      ([key, request]) => [key, this.#job(key, request, result)] as const
    )
    const siblings = new AbortController()
    const ctxSignal = AbortSignal.any([signal, siblings.signal])
    const all = Promise.all(
      jobs.map(async ([key, job]) => {
        const answer = await job({ key, round, signal: ctxSignal })
        if (!isObject(answer)) {
          throw new TypeError(
            `the handler for input "${key}" returned ${summarize(answer)}, not an object`
          )
        }
        return answer
      })
    )
    try {
      const answers = await untilAborted(all, signal)
      return Object.fromEntries(jobs.map(([key], i) => [key, answers[i]]))
    } catch (error) {
      siblings.abort(error)
      throw error
    }
  }

  #job(key: string, request: unknown, result: JsonObject): InputJob {
    if (!isObject(request) || typeof request.method !== 'string') {
      throw protocolError(`input request "${key}" is not a {method, params} object`, result)
    }
    const { method, params } = request
    const needsParams = method !== 'roots/list'
    if (needsParams ? !isObject(params) : params !== undefined && !isObject(params)) {
      throw protocolError(`input request "${key}" (${method}) has invalid params`, result)
    }
    const missing = (handler: string) =>
      new McpDriverError(
        'no_handler',
        `the server asked for ${method} (input "${key}") but handlers.${handler} is not set`,
        { lastResult: result }
      )
    switch (method) {
      case 'elicitation/create': {
        const elicit = this.#handlers.elicit
        if (!elicit) throw missing('elicit')
        return (ctx) => elicit(params as ElicitRequestParams, ctx)
      }
      case 'sampling/createMessage': {
        const sample = this.#handlers.sample
        if (!sample) throw missing('sample')
        return (ctx) => sample(params as unknown as CreateMessageParams, ctx)
      }
      case 'roots/list': {
        const roots = this.#handlers.roots
        if (!roots) throw missing('roots')
        return (ctx) => roots(ctx)
      }
      default:
        throw protocolError(`input request "${key}" has unknown method ${method}`, result)
    }
  }

  async #post(
    url: string,
    id: RequestId,
    method: string,
    params: JsonObject,
    signal: AbortSignal
  ): Promise<Response> {
    const extra = typeof this.#headers === 'function' ? this.#headers() : this.#headers
    const headers = new Headers(await untilAborted(Promise.resolve(extra), signal))
    headers.set('content-type', 'application/json')
    headers.set('accept', ACCEPT)
    headers.set(HEADER_PROTOCOL_VERSION, PROTOCOL_VERSION)
    headers.set(HEADER_METHOD, method)
    const field = NAMED_METHODS[method]
    if (field) headers.set(HEADER_NAME, encodeHeaderValue(params[field] as string))
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, params })
    try {
      return await untilAborted(this.#fetch(url, { method: 'POST', headers, body, signal }), signal)
    } catch (error) {
      throw transportFailure(error, signal, `POST ${url} failed`)
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
      [META_CLIENT_CAPABILITIES]: this.#capabilities,
      [META_CLIENT_INFO]: this.#clientInfo,
    }
    if (progressToken !== undefined) meta.progressToken = progressToken
    if (logLevel !== undefined) meta[META_LOG_LEVEL] = logLevel
    return meta
  }

  #endpoint(): string {
    return this.#urls ? endpoint('urls()', this.#urls()) : this.#url
  }

  /** Unique per client instance, and across instances thanks to the random prefix. */
  #newId(): string {
    this.#lastId += 1
    return `${this.#idPrefix}-${this.#lastId}`
  }
}

// ---------------------------------------------------------------------------------------------------
// Wire helpers

/**
 * The value to send in `Mcp-Name` (or an `Mcp-Param-*` header): unchanged when it is visible ASCII,
 * otherwise `=?base64?<Base64 of its UTF-8>?=`. A literal that looks like the sentinel is encoded too,
 * so the server never decodes a value that was not encoded.
 */
export function encodeHeaderValue(value: string): string {
  if (PLAIN_HEADER_VALUE.test(value) && !SENTINEL_LIKE.test(value)) return value
  let binary = ''
  for (const byte of encoder.encode(value)) binary += String.fromCharCode(byte)
  return `=?base64?${btoa(binary)}?=`
}

/** Reads the answer to request `id`: the final message, or `undefined` if a stream ended without it. */
async function readAnswer(
  response: Response,
  id: RequestId,
  signal: AbortSignal,
  onNotification: ((notification: JsonRpcNotification) => void) | undefined
): Promise<FinalMessage | undefined> {
  const { status } = response
  const type = response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() ?? ''
  if (RETRYABLE_STATUSES.has(status)) {
    await discard(response)
    throw new McpDriverError('transport', `HTTP ${status}: no replica answered`)
  }
  if (type === 'text/event-stream' && response.ok && response.body) {
    for await (const data of sseData(response.body, signal)) {
      const message = parseMessage(data)
      if (typeof message.method === 'string' && !('id' in message)) {
        onNotification?.(message as unknown as JsonRpcNotification)
        continue
      }
      return finalMessage(message, id)
    }
    return undefined
  }
  if (type === 'application/json') {
    let text: string
    try {
      text = await untilAborted(response.text(), signal)
    } catch (error) {
      throw transportFailure(error, signal, 'reading the response failed')
    }
    const final = finalMessage(parseMessage(text), id)
    if ('result' in final && !response.ok) {
      throw new McpDriverError('protocol', `HTTP ${status} carried a result instead of an error`)
    }
    return final
  }
  await discard(response)
  throw new McpDriverError(
    'protocol',
    `unexpected answer: HTTP ${status} ${type || 'without a content type'}`
  )
}

/** Yields each SSE event's data (its `data:` lines joined by newlines), skipping other fields. */
async function* sseData(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal
): AsyncGenerator<string> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const onAbort = () => void reader.cancel(signal.reason).catch(() => {})
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    let buffer = ''
    let data: string[] = []
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>
      try {
        chunk = await reader.read()
      } catch (error) {
        throw transportFailure(error, signal, 'the event stream broke')
      }
      signal.throwIfAborted()
      if (chunk.done) return
      buffer += decoder.decode(chunk.value, { stream: true })
      // A trailing CR may be the first half of CRLF: keep it until the next chunk.
      const cut = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length
      const lines = buffer.slice(0, cut).split(LINE_BREAK)
      buffer = (lines.pop() ?? '') + buffer.slice(cut)
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield data.join('\n')
          data = []
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
        } else if (line === 'data') {
          data.push('')
        }
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
    void reader.cancel().catch(() => {})
  }
}

function parseMessage(text: string): JsonObject {
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    throw new McpDriverError('protocol', 'the server sent a message that is not valid JSON')
  }
  if (!isObject(message) || message.jsonrpc !== '2.0') {
    throw new McpDriverError(
      'protocol',
      'the server sent something that is not a JSON-RPC 2.0 message'
    )
  }
  return message
}

function finalMessage(message: JsonObject, id: RequestId): FinalMessage {
  if (typeof message.method === 'string') {
    throw new McpDriverError(
      'protocol',
      'id' in message
        ? `the server sent a ${message.method} request; 2026-07-28 servers never send requests`
        : `the server sent a ${message.method} notification where the response belongs`
    )
  }
  if ('error' in message) {
    const { error } = message
    if (message.id !== id && message.id !== null) {
      throw new McpDriverError(
        'protocol',
        `the server answered another request (id ${String(message.id)})`
      )
    }
    if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      throw new McpDriverError('protocol', 'the server sent a malformed JSON-RPC error')
    }
    return { error: { code: error.code as number, message: error.message, data: error.data } }
  }
  if (message.id !== id) {
    throw new McpDriverError(
      'protocol',
      `the server answered another request (id ${String(message.id)})`
    )
  }
  if (!isObject(message.result)) {
    throw new McpDriverError('protocol', 'the server sent a response without a result object')
  }
  return { result: message.result }
}

function serverError(
  error: { code: number; message: string; data?: unknown },
  httpStatus: number
): McpClientError {
  return new McpClientError(error.code, error.message, error.data, httpStatus)
}

function protocolError(message: string, lastResult: JsonObject): McpDriverError {
  return new McpDriverError('protocol', message, { lastResult })
}

/** After an abort the caller's (or the timeout's) reason wins; anything else is a transport failure. */
function transportFailure(error: unknown, signal: AbortSignal, what: string): unknown {
  if (signal.aborted) return signal.reason
  return new McpDriverError('transport', `${what}: ${summarize(error)}`, { cause: error })
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {})
}

/** The params of the next round: the original ones, this round's answers, the server's state. */
function retryParams(
  original: JsonObject,
  inputResponses: JsonObject | undefined,
  requestState: string | undefined
): JsonObject {
  const params: JsonObject = { ...original }
  delete params.inputResponses
  delete params.requestState
  if (inputResponses !== undefined) params.inputResponses = inputResponses
  if (requestState !== undefined) params.requestState = requestState
  return params
}

// ---------------------------------------------------------------------------------------------------
// Small utilities

const HANDLER_OF_CAPABILITY = [
  ['elicitation', 'elicit'],
  ['sampling', 'sample'],
  ['roots', 'roots'],
] as const

function capabilitiesFor(handlers: InputHandlers): ClientCapabilities {
  const capabilities: ClientCapabilities = {}
  if (handlers.elicit) capabilities.elicitation = { form: {} }
  if (handlers.sample) capabilities.sampling = {}
  if (handlers.roots) capabilities.roots = {}
  return capabilities
}

function page(cursor: string | undefined): JsonObject {
  return cursor === undefined ? {} : { cursor }
}

function backoff(retry: number): number {
  return Math.min(RETRY_DELAY_MS * 2 ** retry, MAX_RETRY_DELAY_MS)
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return untilAborted(new Promise((resolve) => setTimeout(resolve, ms)), signal)
}

/** Settles like `promise`, or rejects with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function summarize(value: unknown): string {
  if (value instanceof Error) return value.message
  return value === null ? 'null' : typeof value
}

function endpoint(name: string, value: unknown): string {
  let url: URL
  try {
    url = new URL(value as string | URL)
  } catch {
    throw new TypeError(`${name} is not a valid URL: ${String(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`${name} must be an http(s) URL, got ${url.protocol}`)
  }
  return url.href
}

function integer(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number`)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer from ${min} to ${max}, got ${value}`)
  }
  return value
}

function optionalFunction<T>(name: string, value: T): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new TypeError(`${name} must be a function`)
  }
  return value
}
