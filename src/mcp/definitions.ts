/**
 * @module mcp/definitions
 * How an application declares what it serves: tools (zod input, optional zod output, optionally run
 * as tasks), resources, resource templates, prompts and completions, plus small result builders
 * (`text`, `toolError`, `structured`). Definitions are plain data checked once when the server is
 * built (`server.ts`); the contexts handlers receive are described here (`ToolContext` also says what
 * changes inside a task) and implemented in `context.ts` and `tasks/runner.ts`.
 *
 * @example
 * const { tool } = definitions<MyApp>()
 * export const echo = tool({
 *   name: 'echo',
 *   description: 'Echo the message back.',
 *   input: z.object({ message: z.string() }),
 *   run: ({ message }) => text(message),
 * })
 */
import type * as z from 'zod'
import type { LogLevel } from './protocol.ts'
import type {
  CallToolResult,
  ClientCapabilities,
  ContentBlock,
  CreateMessageParams,
  CreateMessageResult,
  ElicitAnswer,
  GetPromptResult,
  JsonObject,
  ReadResourceResult,
  Resource,
  Root,
} from './wire.ts'

/** Client capabilities a handler can test with `ctx.can` (mode-aware: `elicitation: {}` means form). */
export type ClientCapability =
  'elicitation.form' | 'elicitation.url' | 'sampling' | 'sampling.tools' | 'roots'

/** What every handler receives. */
export interface RequestContext<Deps> {
  readonly deps: Deps
  /** Who is calling: the verified principal, or the single local principal without auth. */
  readonly principal: string
  readonly clientCapabilities: ClientCapabilities
  /** Aborted when the client closes the response stream (cancellation on HTTP). */
  readonly signal: AbortSignal
  can(capability: ClientCapability): boolean
  /** Sends `notifications/progress` if the request carried a progressToken; values must increase. */
  progress(progress: number, total?: number, message?: string): void
  /** Sends `notifications/message` if the request asked for this level via `_meta` logLevel. */
  log(level: LogLevel, data: unknown, logger?: string): void
  /**
   * Ends the connection carrying this request's answer now, with an SSE `retry` hint, while the
   * request goes on: the client resumes the stream (a 2025-era session, with `Last-Event-ID` on any
   * replica) and is sent everything that followed. Nothing happens where the answer cannot be
   * resumed (2026-07-28, a plain JSON answer not yet streaming). For long waits served by polling
   * (SEP-1699), as the SDKs' `closeSSEStream`.
   */
  closeStream(): void
}

/** What every ask (`elicit`, `elicitUrl`, `sample`, `roots`) takes besides its question. */
export interface AskOptions {
  /**
   * Whether an answer the server did not ask for counts: one sent with the first request (no
   * `requestState`), or on a later round for a question the previous round did not ask. Default
   * `false`: only the answer to the very question sealed into the previous round's `requestState`
   * counts; anything else is ignored and the question is asked, so a person always sees what they
   * consent to. Set it only where an answer given in advance can do no harm (never for a
   * confirmation, a choice of what to delete or an approval). Even then an answer never counts for a
   * question that changed since it was asked.
   */
  acceptUnsolicited?: boolean
}

/**
 * The question of a form-mode `ctx.elicit`: the message shown to the person, and the zod object
 * whose fields make the form (flat: strings, numbers, booleans, single and multi selects).
 */
export interface ElicitOptions<S extends z.ZodObject> extends AskOptions {
  message: string
  schema: S
}

/** The question of `ctx.elicitUrl`: the message, and the URL the person is asked to open. */
export interface ElicitUrlOptions extends AskOptions {
  message: string
  url: string
}

/**
 * The context of a handler that may ask the client for input (`tools/call`, `resources/read`,
 * `prompts/get`). The handler re-runs from the top on every round: asks answered in earlier rounds
 * return their recorded answer, new asks suspend the run and are sent to the client together.
 */
export interface ReplayContext<Deps> extends RequestContext<Deps> {
  elicit<S extends z.ZodObject>(
    key: string,
    options: ElicitOptions<S>
  ): Promise<ElicitAnswer<z.output<S>>>
  /** A url-mode elicitation. `accept` only means the person agreed to open the page. */
  elicitUrl(key: string, options: ElicitUrlOptions): Promise<ElicitAnswer<undefined>>
  sample(
    key: string,
    params: CreateMessageParams,
    options?: AskOptions
  ): Promise<CreateMessageResult>
  roots(key: string, options?: AskOptions): Promise<Root[]>
  /**
   * Runs a non-deterministic step once per flow and replays its (JSON) result on later rounds. The
   * value is sealed only when a round suspends, so take values that a duplicated final round must
   * see again (ids, timestamps) before the flow's first ask.
   */
  once<T>(key: string, step: () => T | Promise<T>): Promise<T>
  /** Forgets the answer to `key` and asks the same question again in a new round. */
  askAgain(key: string): Promise<never>
  /**
   * Unique to this round's sealed state (or to this request when it carries none). Record it with the
   * flow's final side effect so a replayed or duplicated final round cannot act twice.
   */
  readonly idempotencyKey: string
}

/** What `ctx.startTask` takes. */
export interface StartTaskOptions {
  /**
   * Answer -32021 (naming the tasks extension) instead of going on synchronously when this request
   * cannot have a task. A `task: 'required'` tool has this for every call, checked before it runs;
   * a `task: 'optional'` tool sets it where running synchronously would not do (a large input).
   */
  required?: boolean
}

/**
 * The context of a tool handler: a `ReplayContext`, plus `startTask` for tools declared with
 * `task` (extension `io.modelcontextprotocol/tasks`). In a task the same methods change meaning:
 * - an ask (`elicit`, `elicitUrl`, `sample`, `roots`) suspends the task into `input_required`; the
 *   client answers with `tasks/update`, and the handler runs again from the top, on any replica, with
 *   the answers (as in a multi round-trip flow, code before an ask runs again);
 * - `signal` aborts on `tasks/cancel` (and when this replica stops running the task);
 * - `progress(done, total?, message?)` sets the task's `statusMessage` (`message`, else "done of
 *   total"); `log` sends nothing (the extension has no log channel for tasks);
 * - `once` stores its result in the task record before it returns, so a replica that takes the task
 *   over after this one died replays it instead of running the step again. What happens between two
 *   `once` steps may run twice (a takeover re-runs from the last one): make it idempotent, e.g. by
 *   writing under ids chosen in a `once`;
 * - `idempotencyKey` is the same for the whole task.
 */
export interface ToolContext<Deps> extends ReplayContext<Deps> {
  /**
   * Where the task of a `task` tool begins. Before it the handler runs in the `tools/call` request
   * (asks are multi round-trip rounds, resolved before any task exists); when the request declared
   * the tasks extension, calling it answers `CreateTaskResult` and the handler runs again from the
   * top as the task, on this replica or, if it dies, another. When the request did not declare it,
   * it resolves at once and the handler goes on synchronously (or, with `required`, the call is
   * answered -32021). Inside the task it resolves at once. A handler that returns without calling it
   * answers synchronously. Throws for a tool declared without `task`.
   */
  startTask(options?: StartTaskOptions): Promise<void>
}

/**
 * Hints about a tool's behaviour, published with it: a client may use them to decide what to
 * confirm with the person. Hints only, never a security boundary.
 */
export interface ToolAnnotations {
  title?: string
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

/**
 * A tool as an application defines it (with `tool`, or `definitions<Deps>().tool`): its name,
 * description, zod input (and output) and the handler that runs a call.
 */
export interface ToolDefinition<Deps, S extends z.ZodObject = z.ZodObject> {
  name: string
  title?: string
  description: string
  input: S
  /** Published verbatim instead of the JSON Schema derived from `input` (e.g. 2020-12 keywords). */
  inputJsonSchema?: JsonObject
  output?: z.ZodType
  annotations?: ToolAnnotations
  /** OAuth scopes a caller needs to call this tool, checked when auth is configured (never listed). */
  scopes?: readonly string[]
  /**
   * Whether calls may run as tasks (extension `io.modelcontextprotocol/tasks`; the handler marks
   * where with `ctx.startTask()`): `optional` goes on synchronously for a request that did not
   * declare the extension, `required` answers it -32021 before the handler runs. A handler created
   * without a task store serves no tasks: every request counts as not declaring the extension.
   */
  task?: 'optional' | 'required'
  run(args: z.output<S>, ctx: ToolContext<Deps>): Promise<CallToolResult> | CallToolResult
}

/** A resource at a fixed URI as an application defines it (`resource`): its listing and `read`. */
export interface ResourceDefinition<Deps> extends Resource {
  read: (ctx: ReplayContext<Deps>) => Promise<ReadResourceResult> | ReadResourceResult
}

/**
 * Resources under a URI template as an application defines them (`resourceTemplate`): the
 * template's listing, `read` for a URI it matches, and optionally `list` and completions.
 */
export interface ResourceTemplateDefinition<Deps> {
  /** RFC 6570 level-1 template, e.g. `note://{id}`; each variable matches one path segment. */
  uriTemplate: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  /** Lists the concrete resources of this template (for `resources/list`), page by page. */
  list?: (
    ctx: RequestContext<Deps>,
    offset: number,
    limit: number
  ) => Promise<{ items: Resource[]; nextOffset?: number }>
  read: (
    variables: Record<string, string>,
    uri: string,
    ctx: ReplayContext<Deps>
  ) => Promise<ReadResourceResult | undefined> | ReadResourceResult | undefined
  complete?: Record<string, Completer<Deps>>
}

/** One argument of a prompt, as listed to clients (its value arrives as a string). */
export interface PromptArgument {
  name: string
  title?: string
  description?: string
  required?: boolean
}

/** A prompt as an application defines it (`prompt`): its listing, its arguments and `get`. */
export interface PromptDefinition<Deps> {
  name: string
  title?: string
  description: string
  arguments?: PromptArgument[]
  get: (
    args: Record<string, string>,
    ctx: ReplayContext<Deps>
  ) => Promise<GetPromptResult> | GetPromptResult
  complete?: Record<string, Completer<Deps>>
}

/** Suggests values for one argument; the engine caps the answer at 100 values. */
export type Completer<Deps> = (
  value: string,
  context: { arguments: Record<string, string>; ctx: RequestContext<Deps> }
) => Promise<Completion> | Completion

/**
 * Suggested values, best first. A plain list is taken as complete (its length is the total); a
 * completer that stopped early returns `{ values, total? }` with the total it knows, if any.
 */
export type Completion = string[] | { values: string[]; total?: number }

/**
 * Typed definition helpers bound to one application type: use them instead of `tool`, `resource`,
 * `resourceTemplate` and `prompt` when handlers read `ctx.deps`.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { createMcpServer, definitions, text } from 'stateless-mcp'
 *
 * interface Deps {
 *   greeting: string
 * }
 * const { tool } = definitions<Deps>()
 * const greet = tool({
 *   name: 'greet',
 *   description: 'Greets someone.',
 *   input: z.object({ name: z.string() }),
 *   run: ({ name }, ctx) => text(`${ctx.deps.greeting}, ${name}`),
 * })
 * const server = createMcpServer<Deps>(
 *   { info: { name: 'greeter', version: '1.0.0' }, tools: [greet] },
 *   { deps: { greeting: 'Hello' } }
 * )
 * ```
 */
export function definitions<Deps>() {
  return {
    tool: <S extends z.ZodObject>(definition: ToolDefinition<Deps, S>) =>
      definition as unknown as ToolDefinition<Deps>,
    resource: (definition: ResourceDefinition<Deps>) => definition,
    resourceTemplate: (definition: ResourceTemplateDefinition<Deps>) => definition,
    prompt: (definition: PromptDefinition<Deps>) => definition,
  }
}

/**
 * A tool result of one text block: the usual answer of a tool.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { text, tool } from 'stateless-mcp'
 *
 * const hello = tool({
 *   name: 'hello',
 *   description: 'Says hello.',
 *   input: z.object({ name: z.string() }),
 *   run: ({ name }) => text(`Hello, ${name}`),
 * })
 * ```
 */
export function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] }
}

/**
 * A tool execution failure the model should see (`isError: true`), not a protocol error: for input
 * the tool cannot act on, so that the model may correct itself and call again.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { text, tool, toolError } from 'stateless-mcp'
 *
 * const divide = tool({
 *   name: 'divide',
 *   description: 'Divides a by b.',
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }) => (b === 0 ? toolError('b must not be 0') : text(String(a / b))),
 * })
 * ```
 */
export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

/**
 * A structured result with its JSON text copy, as the spec recommends: the answer of a tool that
 * declares an `output` schema (the value must match it). `extra` blocks follow the text.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { structured, tool } from 'stateless-mcp'
 *
 * const add = tool({
 *   name: 'add',
 *   description: 'Adds two numbers.',
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   output: z.object({ sum: z.number() }),
 *   run: ({ a, b }) => structured({ sum: a + b }),
 * })
 * ```
 */
export function structured(value: unknown, extra: ContentBlock[] = []): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value) }, ...extra],
    structuredContent: value,
  }
}

/**
 * The text of a sampling answer: its text blocks (one block or an array of them), joined and
 * trimmed. Use it on what `ctx.sample` answers.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { sampledText, text, tool } from 'stateless-mcp'
 *
 * const summarize = tool({
 *   name: 'summarize',
 *   description: 'Summarizes a text with the client model.',
 *   input: z.object({ body: z.string() }),
 *   run: async ({ body }, ctx) => {
 *     const answer = await ctx.sample('summary', {
 *       messages: [{ role: 'user', content: { type: 'text', text: `Summarize:\n${body}` } }],
 *       maxTokens: 200,
 *     })
 *     return text(sampledText(answer.content))
 *   },
 * })
 * ```
 */
export function sampledText(content: CreateMessageResult['content']): string {
  const blocks: unknown[] = Array.isArray(content) ? content : [content]
  return blocks
    .flatMap((block) => {
      const { type, text } = (block ?? {}) as { type?: unknown; text?: unknown }
      return type === 'text' && typeof text === 'string' ? [text] : []
    })
    .join('\n')
    .trim()
}
