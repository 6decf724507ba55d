/**
 * @module stateless-mcp/compose
 * The engine's parts for an application that composes its own HTTP face and runtime around the
 * engine, as the notes server does (its Hono app, OAuth pages, telemetry set-up, several runtimes),
 * instead of taking `createMcpServer`'s `fetch`: the handler itself (`createMcpHandler`, one
 * `McpHttpInput` in, one `Response` out) and what it is built from — the compiled server, the
 * sealer and key ring, the per-caller stream caps, the task options, the checks and answers before
 * the engine, the logger and error writers — plus the kit the engine's stores are made with, for an
 * application store sharing their database connection, and the sweeps of expired rows. What is
 * exported here is reviewed in the API report like every entry; `createMcpServer` remains the way
 * for everyone else.
 */
export { createMcpHandler, type McpHandlerOptions } from './handler.ts'
export type { McpHandler, McpHttpInput } from './http-input.ts'
export { compileServer, type CompiledServer } from './server.ts'
export { StateSealer, type StateBinding, type StateSealerOptions } from './sealed-state.ts'
export { formatKeyRing, generateKey, importKeyRing, parseKeyRing, type RawKey } from './key-ring.ts'
export type { AesGcm } from './compact-jwe.ts'
export type { Base64urlCodec } from './base64url.ts'
export {
  DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
  DEFAULT_MAX_STREAMS_PER_SESSION,
  MAX_STREAM_CAP,
  StreamLimits,
  type StreamLimitOptions,
} from './stream-limits.ts'
export { DEFAULT_MAX_STREAM_MS } from './event-stream.ts'
export {
  DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
  DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
  MAX_PRINCIPAL_CAP,
  type SessionStore,
} from './session-store.ts'
export {
  DEFAULT_SESSION_TTL_SECONDS,
  LEGACY_NOTIFICATIONS,
  LEGACY_PROTOCOL_VERSIONS,
  MAX_SESSION_TTL_SECONDS,
} from './legacy/protocol.ts'
export {
  HEADER_METHOD,
  META_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './protocol.ts'
export {
  DEFAULT_MAX_LIVE_TASKS,
  DEFAULT_TASK_LEASE_MS,
  DEFAULT_TASK_RESULT_TTL_MS,
  MAX_LIVE_TASKS_CAP,
  MAX_TASK_TTL_MS,
  type TaskOptions,
  type TaskScheduler,
} from './tasks/options.ts'
export { TERMINAL_TASK_STATUSES, type TaskRecord, type TaskStore } from './task-store.ts'
export * from './request-guard.ts'
export {
  errorMessage,
  errorResponseText,
  INTERNAL_ERROR_MESSAGE,
  StoreUnavailableError,
} from './errors.ts'
export { requestIdOf } from './envelope.ts'
export { finalResponse, SSE_KEEPALIVE } from './streaming.ts'
export { decodeUtf8 } from './utf8.ts'
export { consoleLogger, describeError, logError } from './logger.ts'
export { constantTimeEqual } from './constant-time.ts'
export { canonicalJson } from './canonical-json.ts'
export { isObject, type RequestId } from './wire.ts'
export {
  insertedRow,
  StoreConnection,
  storeClass,
  StoreNotMigratedError,
  type PortMethods,
  type StoreThis,
} from './stores/common/store-class.ts'
export { purgeWithin } from './stores/common/sweeps.ts'
export { SqliteSchemaConnection } from './stores/sqlite/schema.ts'
export {
  startExpirySweeps,
  sweepExpired,
  type ExpirySweepsOptions,
  type PurgeableStore,
  type SweepOptions,
} from './stores/expiry-sweeps.ts'
