/**
 * @module client/options
 * What a client is built from: the option types, their defaults, and `resolveClientOptions`, which
 * checks every option at construction (`TypeError` for a shape, `RangeError` for a number out of
 * range) and returns the settings the driver runs on, so nothing about them fails later. Capabilities
 * default to what the handlers can answer; declaring one without its handler is refused; `tasks`
 * adds the tasks extension to them (declaring it in `capabilities.extensions` counts the same).
 *
 * Also `endpoint`, the URL check applied to what `urls()` returns at every attempt.
 */
import { TASKS_EXTENSION } from '../mcp/protocol.ts'
import {
  isObject,
  type ClientCapabilities,
  type CreateMessageParams,
  type CreateMessageResult,
  type ElicitAnswer,
  type Implementation,
  type JsonObject,
  type RequestId,
  type Root,
} from '../mcp/wire.ts'

const DEFAULT_MAX_ROUNDS = 10
const DEFAULT_TIMEOUT_MS = 60_000
const DEFAULT_TRANSPORT_RETRIES = 0
const DEFAULT_TASK_TIMEOUT_MS = 300_000
const DEFAULT_CLIENT_INFO: Readonly<Implementation> = { name: 'notes-mcp-client', version: '0.1.0' }
/** Largest delay a timer accepts on every runtime (2^31 − 1 ms); longer ones fire at once on Node. */
const MAX_TIMEOUT_MS = 2_147_483_647

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
  /** The request's method (a task's polls and answers are `tasks/get` and `tasks/update`). */
  method: string
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
  /** Requests per call, first one included. Default 10. */
  maxRounds?: number
  /** Bound on a whole call: every round, pause and handler. Default 60 000 ms. */
  timeoutMs?: number
  /**
   * How many times one round is re-sent after a transport failure (default 0); a request may set
   * its own (`RequestOptions.transportRetries`).
   */
  transportRetries?: number
  /**
   * Declares the tasks extension (`io.modelcontextprotocol/tasks`) on every request, so a
   * `tools/call` may come back as a task (`client/tasks`). Default false.
   */
  tasks?: boolean
  /** Bound on following a task to its end (`McpTask.wait`), polls and answers included. Default 5 min. */
  taskTimeoutMs?: number
  onRound?: (info: RoundInfo) => void
  /** Chooses the endpoint of each attempt (e.g. a different replica per round); defaults to `url`. */
  urls?: () => string | URL
}

/** The checked options, defaults applied: what the driver runs on. */
export interface ClientSettings {
  readonly url: string
  readonly urls: (() => string | URL) | undefined
  readonly fetch: typeof fetch
  readonly clientInfo: Implementation
  readonly capabilities: ClientCapabilities
  readonly headers: HeadersOption | undefined
  /** Picked and bound: handlers may be methods of a class instance (not copied by a spread). */
  readonly handlers: InputHandlers
  readonly maxRounds: number
  readonly timeoutMs: number
  readonly transportRetries: number
  /** Whether the capabilities declare the tasks extension: only then may a call answer a task. */
  readonly tasks: boolean
  readonly taskTimeoutMs: number
  readonly onRound: ((info: RoundInfo) => void) | undefined
}

const HANDLER_OF_CAPABILITY = [
  ['elicitation', 'elicit'],
  ['sampling', 'sample'],
  ['roots', 'roots'],
] as const

/** Checks `options` and applies the defaults; throws `TypeError`/`RangeError`. */
export function resolveClientOptions(options: McpClientOptions): ClientSettings {
  if (!isObject(options)) throw new TypeError('McpClient options must be an object')
  const url = endpoint('url', options.url)
  const urls = optionalFunction('urls', options.urls)
  const fetchOption = optionalFunction('fetch', options.fetch)
  const onRound = optionalFunction('onRound', options.onRound)
  const maxRounds = integer('maxRounds', options.maxRounds ?? DEFAULT_MAX_ROUNDS, 1)
  const timeoutMs = integer('timeoutMs', options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS)
  const taskTimeoutMs = integer(
    'taskTimeoutMs',
    options.taskTimeoutMs ?? DEFAULT_TASK_TIMEOUT_MS,
    1,
    MAX_TIMEOUT_MS
  )
  if (options.tasks !== undefined && typeof options.tasks !== 'boolean') {
    throw new TypeError('tasks must be a boolean')
  }
  const transportRetries = integer(
    'transportRetries',
    options.transportRetries ?? DEFAULT_TRANSPORT_RETRIES,
    0
  )
  const headers = options.headers
  if (headers !== undefined && !isObject(headers) && typeof headers !== 'function') {
    throw new TypeError('headers must be an object or a function returning one')
  }

  if (options.handlers !== undefined && !isObject(options.handlers)) {
    throw new TypeError('handlers must be an object')
  }
  const given: InputHandlers = options.handlers ?? {}
  for (const name of ['elicit', 'sample', 'roots'] as const) {
    optionalFunction(`handlers.${name}`, given[name])
  }
  const handlers: InputHandlers = {
    elicit: given.elicit?.bind(given),
    sample: given.sample?.bind(given),
    roots: given.roots?.bind(given),
  }

  const info = options.clientInfo ?? DEFAULT_CLIENT_INFO
  if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') {
    throw new TypeError('clientInfo must have a string name and version')
  }

  if (options.capabilities !== undefined && !isObject(options.capabilities)) {
    throw new TypeError('capabilities must be an object')
  }
  const capabilities = structuredClone(options.capabilities ?? capabilitiesFor(given))
  const extensions: unknown = capabilities.extensions ?? {}
  if (!isObject(extensions)) throw new TypeError('capabilities.extensions must be an object')
  if (options.tasks) capabilities.extensions = { ...extensions, [TASKS_EXTENSION]: {} }
  for (const [capability, handler] of HANDLER_OF_CAPABILITY) {
    if (capabilities[capability] !== undefined && !given[handler]) {
      throw new TypeError(
        `capabilities.${capability} is declared but handlers.${handler} is missing: ` +
          'the server would ask for input this client cannot give'
      )
    }
  }

  return {
    url,
    urls,
    fetch: fetchOption ?? ((input, init) => fetch(input, init)),
    clientInfo: structuredClone(info),
    capabilities,
    headers,
    handlers,
    maxRounds,
    timeoutMs,
    transportRetries,
    tasks: options.tasks === true || isObject(extensions[TASKS_EXTENSION]),
    taskTimeoutMs,
    onRound,
  }
}

/** `value` as an absolute http(s) URL; `name` says which option or callback gave it. */
export function endpoint(name: string, value: unknown): string {
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

function capabilitiesFor(handlers: InputHandlers): ClientCapabilities {
  const capabilities: ClientCapabilities = {}
  if (handlers.elicit) capabilities.elicitation = { form: {} }
  if (handlers.sample) capabilities.sampling = {}
  if (handlers.roots) capabilities.roots = {}
  return capabilities
}

/** `value` as an integer from `min` to `max`; `TypeError` for a non-number, else `RangeError`. */
export function integer(
  name: string,
  value: unknown,
  min: number,
  max = Number.MAX_SAFE_INTEGER
): number {
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
