/**
 * @module stateless-mcp
 * The engine's public entry: define tools, resources and prompts (`tool`, `resource`,
 * `resourceTemplate`, `prompt`, or `definitions<Deps>()` for handlers that use `ctx.deps`), and serve
 * them with `createMcpServer` to clients of both protocol eras. Besides, two families of constants,
 * each whole: the protocol's names a server uses (the revisions served, the methods of both eras for
 * `scopes`, the log levels, the JSON-RPC error codes), and the default and highest accepted value
 * of every number `createMcpServer` takes (with the loopback hosts it answers by default). Optional
 * parts are subpaths: `stateless-mcp/hono` (a Hono route), `stateless-mcp/sqlite`, `/postgres` and
 * `/d1` (engine stores replicas share), `/redis` and `/workers` (buses and task runners),
 * `/bearer` (OAuth tokens), `stateless-mcp/otel` (OpenTelemetry for the observer port exported
 * here), and `stateless-mcp/compose` (the engine's parts, for an HTTP face of one's own).
 */
import { definitions } from './definitions.ts'

export {
  createMcpServer,
  generateStateKeys,
  LOCAL_PRINCIPAL,
  type Authenticate,
  type Caller,
  type McpServer,
  type McpServerOptions,
} from './front-door.ts'
export {
  definitions,
  sampledText,
  structured,
  text,
  toolError,
  type AskOptions,
  type ClientCapability,
  type Completer,
  type Completion,
  type ElicitOptions,
  type ElicitUrlOptions,
  type PromptArgument,
  type PromptDefinition,
  type ReplayContext,
  type RequestContext,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  type StartTaskOptions,
  type ToolAnnotations,
  type ToolContext,
  type ToolDefinition,
} from './definitions.ts'
export { defineForm, type ElicitationForm } from './replay.ts'
export {
  legacyTitledEnum,
  titledEnum,
  type BooleanSchema,
  type ElicitationSchema,
  type LegacyTitledEnumSchema,
  type NumberSchema,
  type PrimitiveSchema,
  type StringFormat,
  type StringSchema,
  type TitledMultiSelectEnumSchema,
  type TitledOption,
  type TitledSingleSelectEnumSchema,
  type UntitledMultiSelectEnumSchema,
  type UntitledSingleSelectEnumSchema,
} from './elicitation-schema.ts'
export type { CacheableResult, ServerDefinition } from './server.ts'
export type { EngineStore } from './stores/engine-store.ts'
export type {
  AppTelemetry,
  McpTelemetry,
  ObservedServer,
  RequestObservation,
  ServerTelemetry,
} from './observer.ts'
export type { StoreLifecycle } from './stores/common/store-class.ts'
export { MemoryEngineStore } from './stores/memory.ts'
export { ErrorCode, McpError, type JsonRpcErrorObject } from './errors.ts'
export {
  LOG_LEVELS,
  METHODS,
  PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type LogLevel,
} from './protocol.ts'
export {
  DEFAULT_SESSION_TTL_SECONDS,
  LEGACY_METHODS,
  LEGACY_PROTOCOL_VERSIONS,
  MAX_SESSION_TTL_SECONDS,
} from './legacy/protocol.ts'
export { DEFAULT_MAX_BODY_BYTES, LOOPBACK_HOSTS } from './request-guard.ts'
export { DEFAULT_STATE_TTL_SECONDS, MAX_STATE_TTL_SECONDS } from './sealed-state.ts'
export { MAX_CAP } from './options.ts'
export {
  DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
  DEFAULT_MAX_STREAMS_PER_SESSION,
  type StreamKind,
  type StreamLimitOptions,
} from './stream-limits.ts'
export {
  DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
  DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
  type SessionLimitOptions,
} from './session-store.ts'
export {
  DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL,
  DEFAULT_MAX_RUNNING_TASKS,
  DEFAULT_MAX_TASK_JOURNAL_CHARS,
  DEFAULT_TASK_LEASE_MS,
  DEFAULT_TASK_POLL_INTERVAL_MS,
  DEFAULT_TASK_RESULT_TTL_MS,
  DEFAULT_TASK_TAKEOVER_INTERVAL_MS,
  DEFAULT_TASK_TTL_MS,
  MAX_TASK_TTL_MS,
  type ServerTaskOptions,
  type TaskScheduler,
} from './tasks/options.ts'
export { decodeCursor, encodeCursor } from './pagination.ts'
export { randomBase64url } from './random.ts'
export { sha256Base64url } from './canonical-json.ts'
export {
  InProcessEventBus,
  type EventBus,
  type EventInterest,
  type EventListener,
  type ServerEvent,
  type Unsubscribe,
} from './event-bus.ts'
export type { McpLogger } from './logger.ts'
export type {
  Annotations,
  BlobResourceContents,
  CacheHint,
  CacheScope,
  CallToolResult,
  ClientCapabilities,
  ContentBlock,
  CreateMessageParams,
  CreateMessageResult,
  ElicitAnswer,
  GetPromptResult,
  Implementation,
  JsonObject,
  PromptMessage,
  ReadResourceResult,
  Resource,
  ResourceContents,
  Root,
  SamplingMessage,
  TextResourceContents,
} from './wire.ts'

const unbound = definitions<undefined>()

/**
 * A tool of a server whose handlers need no `ctx.deps` (else `definitions<Deps>().tool`).
 *
 * @example
 * const greet = tool({
 *   name: 'greet',
 *   description: 'Greets someone.',
 *   input: z.object({ name: z.string() }),
 *   run: ({ name }) => text(`Hello, ${name}`),
 * })
 */
export const tool = unbound.tool

/**
 * A resource at a fixed URI (handlers with no `ctx.deps`).
 *
 * @example
 * const readme = resource({
 *   uri: 'docs://readme',
 *   name: 'readme',
 *   read: () => ({ contents: [{ uri: 'docs://readme', text: 'Read me.' }] }),
 * })
 */
export const resource = unbound.resource

/**
 * Resources under a URI template (handlers with no `ctx.deps`).
 *
 * @example
 * const page = resourceTemplate({
 *   uriTemplate: 'docs://pages/{name}',
 *   name: 'page',
 *   read: ({ name }, uri) => ({ contents: [{ uri, text: `Page ${name}` }] }),
 * })
 */
export const resourceTemplate = unbound.resourceTemplate

/**
 * A prompt (handlers with no `ctx.deps`).
 *
 * @example
 * const review = prompt({
 *   name: 'review',
 *   description: 'Ask for a review.',
 *   get: () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'Review this.' } }] }),
 * })
 */
export const prompt = unbound.prompt
