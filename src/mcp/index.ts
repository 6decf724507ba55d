/**
 * @module stateless-mcp
 * The engine's public entry: define tools, resources and prompts (`tool`, `resource`,
 * `resourceTemplate`, `prompt`, or `definitions<Deps>()` for handlers that use `ctx.deps`), and serve
 * them with `createMcpServer` to clients of both protocol eras. Optional parts are subpaths:
 * `stateless-mcp/hono` (a Hono route), `stateless-mcp/sqlite`, `/postgres` and `/d1` (engine stores
 * replicas share), `stateless-mcp/otel` (OpenTelemetry for the observer port exported here).
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
export { legacyTitledEnum, titledEnum } from './elicitation-schema.ts'
export type { ServerDefinition } from './server.ts'
export type { EngineStore } from './stores/engine-store.ts'
export type {
  AppTelemetry,
  McpTelemetry,
  ObservedServer,
  RequestObservation,
  ServerTelemetry,
  StreamKind,
} from './observer.ts'
export type { StoreLifecycle } from './stores/common/store-class.ts'
export { MemoryEngineStore } from './stores/memory.ts'
export { ErrorCode, McpError } from './errors.ts'
export { METHODS, type LogLevel } from './protocol.ts'
export { LEGACY_METHODS } from './legacy/protocol.ts'
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
  CallToolResult,
  JsonObject,
  PromptMessage,
  ContentBlock,
  CreateMessageParams,
  CreateMessageResult,
  ElicitAnswer,
  GetPromptResult,
  ReadResourceResult,
  Resource,
  Root,
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
