/**
 * @module telemetry/conventions
 * Every name this server's telemetry uses, in one place: the attributes and the metric of the
 * OpenTelemetry semantic conventions for MCP (development status; `gen_ai.*`, `mcp.*`, `jsonrpc.*`,
 * `rpc.*`, `error.type`, `network.*`), the database attributes of store spans, and the few names of
 * our own under `notes_mcp.` (the conventions define nothing for them; a namespace they own is never
 * borrowed), the values of client-chosen attributes recorded as they are (known methods and protocol
 * versions: bounded cardinality), and the conventions' rule for which JSON-RPC codes a server counts
 * as failures. Constants only; the other `telemetry/` modules apply them. README "Observability" lists
 * them for operators.
 */
import { ErrorCode } from '../mcp/errors.ts'
import {
  LEGACY_METHODS,
  LEGACY_NOTIFICATIONS,
  LEGACY_PROTOCOL_VERSIONS,
} from '../mcp/legacy/protocol.ts'
import { METHODS, SUPPORTED_PROTOCOL_VERSIONS } from '../mcp/protocol.ts'

export const ATTR = {
  mcpMethodName: 'mcp.method.name',
  mcpProtocolVersion: 'mcp.protocol.version',
  mcpSessionId: 'mcp.session.id',
  mcpResourceUri: 'mcp.resource.uri',
  genAiToolName: 'gen_ai.tool.name',
  genAiPromptName: 'gen_ai.prompt.name',
  genAiOperationName: 'gen_ai.operation.name',
  jsonrpcRequestId: 'jsonrpc.request.id',
  rpcResponseStatusCode: 'rpc.response.status_code',
  errorType: 'error.type',
  networkTransport: 'network.transport',
  networkProtocolName: 'network.protocol.name',
  dbSystemName: 'db.system.name',
  dbOperationName: 'db.operation.name',
  serviceName: 'service.name',
  serviceInstanceId: 'service.instance.id',
  /** 2026-07-28 results: `complete`, `input_required` or `task`. */
  resultType: 'notes_mcp.result_type',
  /** Why a `requestState` was refused (the sealer's `OpenFailureReason`). */
  requestStateRejection: 'notes_mcp.request_state.reason',
  /** `listen` (subscriptions/listen) or `get` (a 2025-era session's GET stream). */
  streamKind: 'notes_mcp.stream.kind',
  /** The status a task entered. */
  taskStatus: 'notes_mcp.task.status',
} as const

export const METRIC = {
  /** The conventions' histogram (seconds). */
  operationDuration: 'mcp.server.operation.duration',
  openStreams: 'notes_mcp.server.open_streams',
  flowRounds: 'notes_mcp.server.flow.rounds',
  stateRejections: 'notes_mcp.server.request_state.rejections',
  taskStatusChanges: 'notes_mcp.server.task.status_changes',
} as const

/** The conventions' advised bucket boundaries of `mcp.server.operation.duration`, in seconds. */
export const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
/** Buckets of the rounds a completed multi round-trip flow took. */
export const ROUND_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20]

/** `error.type` of a tool result with `isError: true`, as the conventions name it. */
export const TOOL_ERROR = 'tool_error'
/** `mcp.method.name` of a method outside the conventions' and this server's list (bounded cardinality). */
export const OTHER_METHOD = '_OTHER'
/** Method names recorded as they are; anything else is `OTHER_METHOD`. */
export const KNOWN_METHODS: ReadonlySet<string> = new Set<string>([
  ...Object.values(METHODS),
  ...Object.values(LEGACY_METHODS),
  ...Object.values(LEGACY_NOTIFICATIONS),
  'notifications/progress',
  'notifications/roots/list_changed',
])
/** Protocol versions recorded (`mcp.protocol.version`): only those of either era this server speaks. */
export const KNOWN_VERSIONS: ReadonlySet<string> = new Set([
  ...SUPPORTED_PROTOCOL_VERSIONS,
  ...LEGACY_PROTOCOL_VERSIONS,
])
export const GEN_AI_EXECUTE_TOOL = 'execute_tool'

/** The MCP "resource not found" code of 2025-era servers, named in the conventions' list below. */
const RESOURCE_NOT_FOUND = -32002

/**
 * Codes that mean the caller sent a request the server could not serve: on the server side the
 * conventions record them in `rpc.response.status_code` but not as a failure (`error.type`, span
 * status). Every other code is one.
 */
const CALLER_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.ParseError,
  ErrorCode.InvalidRequest,
  ErrorCode.MethodNotFound,
  ErrorCode.InvalidParams,
  RESOURCE_NOT_FOUND,
])

export function isServerFailure(code: number): boolean {
  return !CALLER_ERRORS.has(code)
}
