/**
 * @module mcp/protocol
 * Wire constants of MCP revision 2026-07-28: the version this engine speaks, the reserved `_meta` keys,
 * the standard HTTP headers and the method names. Nothing here has behaviour; every other engine module
 * names these constants instead of spelling the strings again.
 */

/**
 * The protocol revision this engine speaks on every request: 2026-07-28 (2025-era clients are
 * served through `initialize` and sessions instead).
 *
 * @example
 * ```ts
 * import { PROTOCOL_VERSION } from 'stateless-mcp'
 *
 * const headers = { 'mcp-protocol-version': PROTOCOL_VERSION }
 * ```
 */
export const PROTOCOL_VERSION = '2026-07-28'
/**
 * The revisions a request may name in its `_meta` (the others are answered -32022 listing these).
 *
 * @example
 * ```ts
 * import { SUPPORTED_PROTOCOL_VERSIONS } from 'stateless-mcp'
 *
 * SUPPORTED_PROTOCOL_VERSIONS.includes('2026-07-28') // true
 * ```
 */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [PROTOCOL_VERSION]

/** The `_meta` key of the revision a 2026-07-28 request is written in. */
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion'
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

/**
 * The HTTP header naming the revision a request is written in (`MCP-Protocol-Version`).
 *
 * @example
 * ```ts
 * import { PROTOCOL_VERSION } from 'stateless-mcp'
 * import { HEADER_PROTOCOL_VERSION } from 'stateless-mcp/compose'
 *
 * const modern = request.headers.get(HEADER_PROTOCOL_VERSION) === PROTOCOL_VERSION
 * ```
 */
export const HEADER_PROTOCOL_VERSION = 'mcp-protocol-version'
/**
 * The HTTP header that repeats a request's JSON-RPC method (`Mcp-Method`), so that a proxy or a
 * route can act on it without reading the body.
 *
 * @example
 * ```ts
 * import { ErrorCode, METHODS } from 'stateless-mcp'
 * import { HEADER_METHOD, jsonRpcErrorResponse } from 'stateless-mcp/compose'
 *
 * // a runtime that cannot hold streams open refuses listen before the engine
 * app.post('/mcp', async (c, next) => {
 *   if (c.req.header(HEADER_METHOD) !== METHODS.listen) return next()
 *   const message = 'Method not found: this deployment holds no streams open.'
 *   return jsonRpcErrorResponse(null, 404, message, {}, ErrorCode.MethodNotFound)
 * })
 * ```
 */
export const HEADER_METHOD = 'mcp-method'
/**
 * The HTTP header that repeats what a request acts on (`Mcp-Name`): the tool or prompt name, the
 * resource URI or the task id (`params.name`, `params.uri`, `params.taskId`).
 *
 * @example
 * ```ts
 * import { HEADER_NAME } from 'stateless-mcp/compose'
 *
 * // a route that sends one slow tool's calls to replicas of their own
 * const slow = request.headers.get(HEADER_NAME) === 'export_notes'
 * ```
 */
export const HEADER_NAME = 'mcp-name'
/**
 * The prefix of the `Mcp-Param-{Name}` headers that mirror tool arguments annotated with
 * `x-mcp-header`.
 *
 * @example
 * ```ts
 * import { HEADER_PARAM_PREFIX } from 'stateless-mcp/compose'
 *
 * const region = request.headers.get(`${HEADER_PARAM_PREFIX}Region`)
 * ```
 */
export const HEADER_PARAM_PREFIX = 'Mcp-Param-'

/**
 * Methods a 2026-07-28 server answers (each still gated by the capability it belongs to), by name:
 * for a server's `scopes` per method, or a route that tells methods apart.
 *
 * @example
 * ```ts
 * import { createMcpServer, METHODS } from 'stateless-mcp'
 *
 * const server = createMcpServer(
 *   {
 *     info: { name: 'notes', version: '1.0.0' },
 *     tools: [addNote],
 *     scopes: { [METHODS.resourcesRead]: ['notes:read'], [METHODS.listen]: ['notes:read'] },
 *   },
 *   { authenticate }
 * )
 * ```
 */
export const METHODS = {
  discover: 'server/discover',
  toolsList: 'tools/list',
  toolsCall: 'tools/call',
  resourcesList: 'resources/list',
  resourceTemplatesList: 'resources/templates/list',
  resourcesRead: 'resources/read',
  promptsList: 'prompts/list',
  promptsGet: 'prompts/get',
  complete: 'completion/complete',
  listen: 'subscriptions/listen',
  /** The tasks extension's methods (`tasks/`), served only when the handler has a task store. */
  tasksGet: 'tasks/get',
  tasksUpdate: 'tasks/update',
  tasksCancel: 'tasks/cancel',
} as const

/** The extension of long-running tool calls (SEP-2663), in `capabilities.extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** Methods whose results may be `input_required` (multi round-trip requests). */
export const SUSPENDABLE_METHODS: ReadonlySet<string> = new Set([
  METHODS.toolsCall,
  METHODS.resourcesRead,
  METHODS.promptsGet,
])

/**
 * `Mcp-Name` carries `params.name` for these methods, `params.uri` for `resources/read` and
 * `params.taskId` for the tasks extension's methods.
 */
export const NAMED_METHODS: Readonly<Record<string, 'name' | 'uri' | 'taskId'>> = {
  [METHODS.toolsCall]: 'name',
  [METHODS.promptsGet]: 'name',
  [METHODS.resourcesRead]: 'uri',
  [METHODS.tasksGet]: 'taskId',
  [METHODS.tasksUpdate]: 'taskId',
  [METHODS.tasksCancel]: 'taskId',
}

/**
 * The log levels of `logging/setLevel`, `notifications/message` and `ctx.log`, least severe first.
 *
 * @example
 * ```ts
 * import { LOG_LEVELS, type LogLevel } from 'stateless-mcp'
 *
 * const atLeast = (level: LogLevel, floor: LogLevel) =>
 *   LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(floor)
 * ```
 */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const

/** A log level of `logging/setLevel` and `notifications/message`, least severe first. */
export type LogLevel = (typeof LOG_LEVELS)[number]
