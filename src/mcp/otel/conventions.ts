/**
 * @module mcp/otel/conventions
 * Every name the engine's OpenTelemetry observer uses, in one place: the attributes and the metric
 * of the OpenTelemetry semantic conventions for MCP (development status; `gen_ai.*`, `mcp.*`,
 * `jsonrpc.*`, `rpc.*`, `error.type`, `network.*`), the database attributes of store spans, and the
 * few names of our own (`ownNames`: the conventions define nothing for them, and a namespace they own
 * is never borrowed, so they live under one the server's owner names, `stateless_mcp` unless told),
 * the values of client-chosen attributes recorded as they are (the methods and protocol versions the
 * engine speaks: bounded cardinality), and the conventions' rule for which JSON-RPC codes a server
 * counts as failures. Generic: every name comes from the protocol or the engine, none from a server
 * built on it. Constants only; the other `mcp/otel/` modules apply them.
 */
import { ErrorCode } from '../errors.ts'
import {
  LEGACY_METHODS,
  LEGACY_NOTIFICATIONS,
  LEGACY_PROTOCOL_VERSIONS,
} from '../legacy/protocol.ts'
import { METHODS, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol.ts'

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
} as const

/** The conventions' histogram (seconds). */
export const OPERATION_DURATION = 'mcp.server.operation.duration'

/** The namespace of the engine's own names when the server's owner names none. */
export const DEFAULT_NAMESPACE = 'stateless_mcp'

/** Dot-separated lowercase segments, as OpenTelemetry's attribute naming rules advise. */
const NAMESPACE = /^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*$/

/**
 * The engine's own attribute and metric names under `namespace` (`notes_mcp` gives
 * `notes_mcp.result_type`, `notes_mcp.server.open_streams`, …); a `TypeError` naming the rule when
 * `namespace` is not one.
 */
export function ownNames(namespace: string) {
  if (!NAMESPACE.test(namespace)) {
    throw new TypeError(
      `otelTelemetry: namespace must be lowercase dot-separated words (letters, digits, _), like 'my_server', got ${JSON.stringify(namespace)}`
    )
  }
  return {
    /** 2026-07-28 results: `complete`, `input_required` or `task`. */
    resultType: `${namespace}.result_type`,
    /** Why a `requestState` was refused (the sealer's `OpenFailureReason`). */
    requestStateRejection: `${namespace}.request_state.reason`,
    /** `listen` (subscriptions/listen) or `get` (a 2025-era session's GET stream). */
    streamKind: `${namespace}.stream.kind`,
    /** The status a task entered. */
    taskStatus: `${namespace}.task.status`,
    openStreams: `${namespace}.server.open_streams`,
    flowRounds: `${namespace}.server.flow.rounds`,
    stateRejections: `${namespace}.server.request_state.rejections`,
    taskStatusChanges: `${namespace}.server.task.status_changes`,
  } as const
}

/** The engine's own names under one namespace. */
export type OwnNames = ReturnType<typeof ownNames>

/** The conventions' advised bucket boundaries of `mcp.server.operation.duration`, in seconds. */
export const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
/** Buckets of the rounds a completed multi round-trip flow took. */
export const ROUND_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20]

/** `error.type` of a tool result with `isError: true`, as the conventions name it. */
export const TOOL_ERROR = 'tool_error'
/** `mcp.method.name` of a method outside the conventions' and the engine's list (bounded cardinality). */
export const OTHER_METHOD = '_OTHER'
/** Method names recorded as they are; anything else is `OTHER_METHOD`. */
export const KNOWN_METHODS: ReadonlySet<string> = new Set<string>([
  ...Object.values(METHODS),
  ...Object.values(LEGACY_METHODS),
  ...Object.values(LEGACY_NOTIFICATIONS),
  'notifications/progress',
  'notifications/roots/list_changed',
])
/** Protocol versions recorded (`mcp.protocol.version`): only those of either era the engine speaks. */
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
