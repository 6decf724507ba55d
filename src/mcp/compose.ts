/**
 * @module stateless-mcp/compose
 * The engine's parts for an application that composes its own HTTP face and runtime around the
 * engine, as the notes server does (its Hono app, OAuth pages, telemetry set-up, several runtimes),
 * instead of taking `createMcpServer`'s `fetch`: the handler itself (`createMcpHandler`, one
 * `McpHttpInput` in, one `Response` out) and what it is built from — the compiled server, the
 * sealer and key ring, the per-caller stream count, the task options with their store, the bounds
 * of held streams and their defaults, the HTTP header names a face routes on, the checks and
 * answers before the engine, the logger and error writers — plus the kit the engine's stores are
 * made with, for an application store sharing their database connection, and the sweeps of expired
 * rows. The protocol's names and the defaults and caps of the options `createMcpServer` shares with
 * `createMcpHandler` are the main entry's, not repeated here. What is exported here is reviewed in
 * the API report like every entry; `createMcpServer` remains the way for everyone else.
 */
export { createMcpHandler, type McpHandlerOptions } from './handler.ts'
export type { StreamResumeOptions } from './legacy/handler.ts'
export type { InteractiveFlowBounds } from './legacy/transport.ts'
export type { McpHandler, McpHttpInput } from './http-input.ts'
export {
  compileServer,
  type AdvertisedCapabilities,
  type CompiledServer,
  type CompiledTemplate,
  type CompiledTool,
  type HeaderParam,
} from './server.ts'
export type { ResourceTemplate, ServerCapabilities } from './wire.ts'
export {
  StateSealer,
  type OpenedState,
  type OpenOptions,
  type SealedState,
  type StateBinding,
  type StateSealerOptions,
} from './sealed-state.ts'
export {
  formatKeyRing,
  generateKey,
  importKeyRing,
  parseKeyRing,
  type KeyRing,
  type RawKey,
  type RingKey,
} from './key-ring.ts'
export type { AesGcm, AesGcmOutput } from './compact-jwe.ts'
export type { Base64urlCodec } from './base64url.ts'
export { StreamLimits, type StreamHolder, type StreamSlot } from './stream-limits.ts'
export {
  DEFAULT_END_GRACE_MS,
  DEFAULT_KEEPALIVE_MS,
  DEFAULT_MAX_BACKLOG_EVENTS,
  DEFAULT_MAX_QUEUED_BYTES,
  DEFAULT_MAX_STREAM_MS,
  type EventStreamBounds,
} from './event-stream.ts'
export type {
  SessionRecord,
  SessionStore,
  SubscribeOutcome,
  SubscriptionsFull,
} from './session-store.ts'
export type {
  NewStream,
  StoredEvent,
  StreamPatch,
  StreamRecord,
  StreamStore,
} from './stream-store.ts'
export { HEADER_SESSION_ID } from './legacy/protocol.ts'
export {
  HEADER_METHOD,
  HEADER_NAME,
  HEADER_PARAM_PREFIX,
  HEADER_PROTOCOL_VERSION,
} from './protocol.ts'
export type { TaskOptions } from './tasks/options.ts'
export {
  TERMINAL_TASK_STATUSES,
  type NewTask,
  type TaskPatch,
  type TaskRecord,
  type TaskStatus,
  type TaskStore,
} from './task-store.ts'
export {
  declaredTooLarge,
  hostGuard,
  isJsonMediaType,
  jsonRpcErrorResponse,
  NOT_UTF8_MESSAGE,
  readBody,
  tooLargeMessage,
  UNSUPPORTED_MEDIA_TYPE_MESSAGE,
  type HostGuard,
  type HostGuardOptions,
} from './request-guard.ts'
export {
  errorMessage,
  errorResponseText,
  INTERNAL_ERROR_MESSAGE,
  StoreUnavailableError,
} from './errors.ts'
export { requestIdOf } from './envelope.ts'
export { finalResponse, SSE_KEEPALIVE, type FinalMessage } from './streaming.ts'
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
