/**
 * @module mcp/protocol
 * Wire constants of MCP revision 2026-07-28: the version this engine speaks, the reserved `_meta` keys,
 * the standard HTTP headers and the method names. Nothing here has behaviour; every other engine module
 * names these constants instead of spelling the strings again.
 */

export const PROTOCOL_VERSION = '2026-07-28'
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [PROTOCOL_VERSION]

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion'
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

export const HEADER_PROTOCOL_VERSION = 'mcp-protocol-version'
export const HEADER_METHOD = 'mcp-method'
export const HEADER_NAME = 'mcp-name'
/** `Mcp-Param-{Name}` headers mirror tool arguments annotated with `x-mcp-header`. */
export const HEADER_PARAM_PREFIX = 'Mcp-Param-'

/** Methods a 2026-07-28 server answers (each still gated by the capability it belongs to). */
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
} as const

/** Methods whose results may be `input_required` (multi round-trip requests). */
export const SUSPENDABLE_METHODS: ReadonlySet<string> = new Set([
  METHODS.toolsCall,
  METHODS.resourcesRead,
  METHODS.promptsGet,
])

/** `Mcp-Name` carries `params.name` for these methods and `params.uri` for `resources/read`. */
export const NAMED_METHODS: Readonly<Record<string, 'name' | 'uri'>> = {
  [METHODS.toolsCall]: 'name',
  [METHODS.promptsGet]: 'name',
  [METHODS.resourcesRead]: 'uri',
}

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

export type LogLevel = (typeof LOG_LEVELS)[number]
