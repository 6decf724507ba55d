/**
 * @module mcp/wire
 * Shapes of revision 2026-07-28 that the engine reads or writes: TypeScript types for results and
 * content, the two type guards every reader of raw JSON needs (`isObject`, `isRequestId`), and zod
 * schemas (built once, at module load) for the params of every method a client may send. Envelope
 * checks (JSON-RPC shape, headers, `_meta`) live in `envelope.ts`; this module only describes data.
 */
import * as z from 'zod'
import { MAX_EVENT_URI_CHARS } from './event-bus.ts'

/** A JSON object as the engine reads and writes it: members by name, their values unchecked. */
export type JsonObject = Record<string, unknown>
/** A JSON-RPC request id: a string or a number (the engine accepts only integers). */
export type RequestId = string | number

/**
 * A JSON object: not `null`, not an array. The guard to apply to parsed JSON before reading its
 * members.
 *
 * @example
 * ```ts
 * import { isObject } from 'stateless-mcp/compose'
 *
 * const message: unknown = JSON.parse(body)
 * if (isObject(message) && typeof message.method === 'string') console.log(message.method)
 * ```
 */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A JSON-RPC request id this revision allows: a string or an integer (never `null`). */
export function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value))
}

/** A server's or a client's name and version (`info` of a server definition, `clientInfo`). */
export interface Implementation {
  name: string
  version: string
  title?: string
  description?: string
  websiteUrl?: string
}

/** The optional features a client declares (`ctx.clientCapabilities`). */
export interface ClientCapabilities {
  experimental?: Record<string, object>
  roots?: object
  sampling?: { context?: object; tools?: object }
  elicitation?: { form?: object; url?: object }
  extensions?: Record<string, object>
}

/** The core features a server advertises. */
export interface ServerCapabilities {
  tools?: { listChanged?: boolean }
  resources?: { subscribe?: boolean; listChanged?: boolean }
  prompts?: { listChanged?: boolean }
  completions?: object
  logging?: object
}

/** Hints on a content block or resource: who it is for, how much it matters, when it changed. */
export interface Annotations {
  audience?: Array<'user' | 'assistant'>
  priority?: number
  lastModified?: string
}

/** A resource's contents as text. */
export type TextResourceContents = { uri: string; mimeType?: string; text: string }
/** A resource's contents as base64 bytes. */
export type BlobResourceContents = { uri: string; mimeType?: string; blob: string }
/** One item of what `resources/read` answers: text or bytes at a URI. */
export type ResourceContents = TextResourceContents | BlobResourceContents

/**
 * One block of content in a tool result or a prompt message: text, an image, audio, an embedded
 * resource or a link to one.
 */
export type ContentBlock =
  | { type: 'text'; text: string; annotations?: Annotations }
  | { type: 'image'; data: string; mimeType: string; annotations?: Annotations }
  | { type: 'audio'; data: string; mimeType: string; annotations?: Annotations }
  | { type: 'resource'; resource: ResourceContents; annotations?: Annotations }
  | ({ type: 'resource_link' } & Resource)

/** A resource as listed to clients (`resources/list`): its URI, its name and what describes it. */
export interface Resource {
  uri: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  size?: number
  annotations?: Annotations
}

/** A resource template as `resources/templates/list` lists it. */
export interface ResourceTemplate {
  uriTemplate: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  annotations?: Annotations
}

/**
 * What a tool answers: content for the model, `structuredContent` matching the tool's `output`
 * schema if it declares one, and `isError` for a failure the model should see (`text`,
 * `structured` and `toolError` make them).
 */
export interface CallToolResult {
  content: ContentBlock[]
  structuredContent?: unknown
  isError?: boolean
}

/** One message of a prompt: who says it, and one block of content. */
export interface PromptMessage {
  role: 'user' | 'assistant'
  content: ContentBlock
}

/** What a prompt's `get` answers: its messages, and optionally a description. */
export interface GetPromptResult {
  description?: string
  messages: PromptMessage[]
}

/** What a resource's `read` answers: its contents, each text or a base64 blob, with its URI. */
export interface ReadResourceResult {
  contents: ResourceContents[]
}

/** Who may reuse a cached result: any caller (`public`) or only the one who asked (`private`). */
export type CacheScope = 'public' | 'private'
/** How long a list or read result may be reused (`ttlMs`), and by whom. */
export interface CacheHint {
  ttlMs: number
  cacheScope: CacheScope
}

/** A request the server embeds in an `InputRequiredResult` (no `jsonrpc`, no `id`). */
export type InputRequest =
  | { method: 'elicitation/create'; params: JsonObject }
  | { method: 'sampling/createMessage'; params: JsonObject }
  | { method: 'roots/list'; params?: JsonObject }

export interface InputRequiredResult {
  resultType: 'input_required'
  inputRequests?: Record<string, InputRequest>
  requestState?: string
}

/**
 * The person's answer to `ctx.elicit` (or `ctx.elicitUrl`): `accept` with the form's content, or
 * `decline` or `cancel` without any.
 */
export type ElicitAnswer<T> =
  { action: 'accept'; content: T } | { action: 'decline' } | { action: 'cancel' }

/** One message of a sampling request's conversation. */
export interface SamplingMessage {
  role: 'user' | 'assistant'
  content: unknown
}

/** What `ctx.sample` asks of the client's model: the messages, a token budget and preferences. */
export interface CreateMessageParams {
  messages: SamplingMessage[]
  maxTokens: number
  systemPrompt?: string
  temperature?: number
  stopSequences?: string[]
  modelPreferences?: JsonObject
  includeContext?: 'none' | 'thisServer' | 'allServers'
  metadata?: JsonObject
  tools?: JsonObject[]
  toolChoice?: { mode?: 'auto' | 'required' | 'none' }
}

/**
 * The client's answer to `ctx.sample`: the model's message (read its text with `sampledText`), the
 * model's name and why it stopped.
 */
export interface CreateMessageResult {
  role: 'user' | 'assistant'
  content: unknown
  model: string
  stopReason?: string
}

/** A root the client exposes (`ctx.roots`): a URI, usually `file://`, and an optional name. */
export interface Root {
  uri: string
  name?: string
}

// ---------------------------------------------------------------------------------------------------
// Params schemas (client → server). `_meta` is checked by the envelope; here it is passed through.

const cursor = z.string().optional()
/** What a round of a multi round-trip request carries besides its own params. */
const roundParams = {
  inputResponses: z.record(z.string(), z.unknown()).nullish(),
  requestState: z.unknown().optional(),
}

export const ListParamsSchema = z.looseObject({ cursor })

export const CallToolParamsSchema = z.looseObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).nullish(),
  ...roundParams,
})

export const ReadResourceParamsSchema = z.looseObject({ uri: z.string().min(1), ...roundParams })

export const GetPromptParamsSchema = z.looseObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.string()).nullish(),
  ...roundParams,
})

export const CompleteParamsSchema = z.looseObject({
  ref: z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('ref/prompt'), name: z.string() }),
    z.looseObject({ type: z.literal('ref/resource'), uri: z.string() }),
  ]),
  argument: z.looseObject({ name: z.string(), value: z.string() }),
  context: z.looseObject({ arguments: z.record(z.string(), z.string()).optional() }).optional(),
})

/** Most resource URIs one `subscriptions/listen` filter may watch. */
const MAX_LISTEN_URIS = 100
/**
 * Most characters all the URIs of one listen filter may have together: a stream keeps its filter
 * (and sends it back in its acknowledgment) for as long as it is open, so its size is bounded like
 * the count; 100 note URIs take under 3,000 characters.
 */
export const MAX_LISTEN_URI_CHARS = 16_384

const totalChars = (uris: readonly string[]) => uris.reduce((sum, uri) => sum + uri.length, 0)

export const ListenParamsSchema = z.looseObject({
  notifications: z.looseObject({
    toolsListChanged: z.boolean().optional(),
    promptsListChanged: z.boolean().optional(),
    resourcesListChanged: z.boolean().optional(),
    resourceSubscriptions: z
      .array(
        z.string().max(MAX_EVENT_URI_CHARS, {
          error: `a URI longer than ${MAX_EVENT_URI_CHARS} characters is never notified; watch a shorter one`,
        })
      )
      .max(MAX_LISTEN_URIS, { error: `watch at most ${MAX_LISTEN_URIS} URIs in one filter` })
      .refine((uris) => totalChars(uris) <= MAX_LISTEN_URI_CHARS, {
        error: (issue) =>
          `the URIs total ${totalChars(issue.input as string[])} characters; at most ${MAX_LISTEN_URI_CHARS} are accepted in one filter — watch fewer or shorter URIs`,
      })
      .optional(),
  }),
})

/** Shapes of the answers a client may put in `inputResponses` (validated on arrival). */
export const CreateMessageResultSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.unknown(),
  model: z.string(),
  stopReason: z.string().optional(),
})

export const ListRootsResultSchema = z.looseObject({
  roots: z.array(z.looseObject({ uri: z.string(), name: z.string().optional() })),
})

/** Summarises zod issues as one line a person can act on (paths and messages, no internals). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) =>
      issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message
    )
    .join('; ')
}
