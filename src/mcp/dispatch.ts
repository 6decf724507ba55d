/**
 * @module mcp/dispatch
 * The methods of revision 2026-07-28 (except `subscriptions/listen`, which streams: see
 * `subscriptions.ts`). Each takes a request that passed the envelope, validates its params (-32602),
 * finds the tool, resource or prompt, and returns the bare result; `handler.ts` stamps `resultType`,
 * `_meta` and cache hints and chooses JSON or SSE. Suspendable methods run through `runReplayable`,
 * the one place that knows the order: open the sealed state → run the handler → gate capabilities →
 * seal the merged journal (or, for a tool that started its task, create it). The tasks extension's
 * methods are `tasks/engine.ts`'s, reached here when the handler serves tasks; `runTool` is shared
 * with the task runner; `dispatchEnv` builds the env both eras dispatch a caller's request in. The
 * sealed journal carries the round that sealed it (`r`), so the round of
 * every request of a flow is known; with telemetry on, `runReplayable` tells the request's
 * observation that round, a refused state's reason, and runs opening and sealing as its steps.
 */
import type { McpLogger } from './logger.ts'
import type { z } from 'zod'
import { canonicalJson } from './canonical-json.ts'
import {
  HandlerContext,
  ReplayHandlerContext,
  type ContextInput,
  type TaskAvailability,
} from './context.ts'
import type { ReplayContext, ToolContext } from './definitions.ts'
import { readParamHeader, type McpRequest } from './envelope.ts'
import { ErrorCode, InvalidRequestStateError, McpError } from './errors.ts'
import { decodeCursor, encodeCursor, paginate } from './pagination.ts'
import {
  HEADER_PARAM_PREFIX,
  METHODS,
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
} from './protocol.ts'
import { Replay, isSuspension, type Journal } from './replay.ts'
import { StateTooLargeError, type StateBinding, type StateSealer } from './sealed-state.ts'
import {
  matchTemplate,
  type CacheableResult,
  type CompiledTool,
  type CompiledServer,
} from './server.ts'
import { ResponseChannel, type Cancellation } from './streaming.ts'
import { canListen } from './subscriptions.ts'
import type { TaskEngine } from './tasks/engine.ts'
import { declaresTasks, tasksCapabilityMissing } from './tasks/wire.ts'
import type { RequestObservation } from './observer.ts'
import {
  CallToolParamsSchema,
  CompleteParamsSchema,
  GetPromptParamsSchema,
  ListParamsSchema,
  ReadResourceParamsSchema,
  describeIssues,
  type CallToolResult,
  type InputRequiredResult,
  type JsonObject,
  type Resource,
} from './wire.ts'

export interface DispatchEnv<Deps> extends ContextInput<Deps> {
  /** The OAuth client the caller used, if known: sealed states are bound to it too. */
  client?: string
  server: CompiledServer<Deps>
  sealer: StateSealer
  logger: McpLogger
  /** The request's HTTP headers; absent for 2025-era requests, which carry no `Mcp-Param-*` headers. */
  headers?: Headers
  /** Serves the tasks extension (`tasks/*`, and `tools/call` of `task` tools); absent: no tasks. */
  tasks?: TaskEngine<Deps>
  /**
   * The caller's scopes as the HTTP layer reports them (`McpHttpInput`; absent without auth), for the
   * checks that only a record can decide: the scopes of a task's tool (`tasks/engine.ts`).
   */
  grantedScopes?: ReadonlySet<string>
  baseScopes?: readonly string[]
  /** This request's telemetry (`mcp/observer.ts`), when telemetry is on. */
  observation?: RequestObservation
}

/** What a handler dispatches every request with, whoever calls: its server, deps, sealer and logger. */
export type DispatchBase<Deps> = Pick<DispatchEnv<Deps>, 'server' | 'deps' | 'sealer' | 'logger'>

/**
 * The env `request` is dispatched in for the caller `input` describes (its principal, OAuth client
 * and granted scopes): `cancellation`, which the caller keeps to cancel the request, a new response
 * channel on it, and `extra`, what the era adds (headers, tasks, telemetry).
 */
export function dispatchEnv<Deps>(
  base: DispatchBase<Deps>,
  request: McpRequest,
  input: Pick<DispatchEnv<Deps>, 'principal' | 'client' | 'grantedScopes' | 'baseScopes'>,
  cancellation: Cancellation,
  extra: Pick<DispatchEnv<Deps>, 'headers' | 'tasks' | 'observation'> = {}
): DispatchEnv<Deps> {
  const { principal, client, grantedScopes, baseScopes } = input
  return {
    ...base,
    principal,
    client,
    grantedScopes,
    baseScopes,
    request,
    cancellation,
    channel: new ResponseChannel(cancellation),
    ...extra,
  }
}

/** A result before stamping: the cache hint to attach, if the method's results are cacheable. */
export interface DispatchResult {
  result: JsonObject
  cache?: CacheableResult
  /** Set when the result came from a flow with asks (never cacheable). */
  interactive?: boolean
}

const COMPLETION_LIMIT = 100
/** Integers in `Mcp-Param-*` headers are compared numerically, but only in decimal notation. */
const DECIMAL_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/
/** Positions in `resources/list` are section × span + offset (section 0 = static resources). */
const SECTION_SPAN = 2 ** 32

/** A list whose pages depend only on the compiled server: its cursor name and its items. */
interface StaticList {
  kind: 'tools' | 'prompts' | 'resourceTemplates'
  items<Deps>(server: CompiledServer<Deps>): readonly unknown[]
}

const STATIC_LISTS: Readonly<Record<string, StaticList>> = {
  [METHODS.toolsList]: { kind: 'tools', items: (server) => server.toolListing },
  [METHODS.promptsList]: { kind: 'prompts', items: (server) => server.promptListing },
  [METHODS.resourceTemplatesList]: {
    kind: 'resourceTemplates',
    items: (server) => server.templateListing,
  },
}

/**
 * The key under which the result of `request` may be kept once serialised, when it depends only on
 * the compiled server: `server/discover`, and the pages of the static lists that the server itself
 * cuts (the first page, and every later page at a multiple of the page size within the list). So at
 * most one entry per page the server defines, whatever cursors clients invent: a forged cursor that
 * decodes to another offset is answered, but not kept. Throws the -32602 of an invalid or oversized
 * cursor, before any other work.
 */
export function staticResultKey<Deps>(
  server: CompiledServer<Deps>,
  request: McpRequest
): string | undefined {
  const { method } = request
  if (method === METHODS.discover) return method
  const list = STATIC_LISTS[method]
  if (!list) return undefined
  const { cursor } = request.params
  if (cursor === undefined) return method
  if (typeof cursor !== 'string') return undefined // refused by the params check
  const offset = decodeCursor(list.kind, cursor)
  if (offset === 0) return method
  return offset % server.pageSize === 0 && offset < list.items(server).length
    ? `${method} ${offset}`
    : undefined
}

/** Whether the server implements and advertises `method` (otherwise: 404 + -32601). */
export function isAdvertised<Deps>(server: CompiledServer<Deps>, method: string): boolean {
  const { tools, resources, prompts, completions } = server.capabilities
  switch (method) {
    case METHODS.discover:
      return true
    case METHODS.toolsList:
    case METHODS.toolsCall:
      return tools !== undefined
    case METHODS.resourcesList:
    case METHODS.resourceTemplatesList:
    case METHODS.resourcesRead:
      return resources !== undefined
    case METHODS.promptsList:
    case METHODS.promptsGet:
      return prompts !== undefined
    case METHODS.complete:
      return completions !== undefined
    case METHODS.listen:
      return canListen(server)
    case METHODS.tasksGet:
    case METHODS.tasksUpdate:
    case METHODS.tasksCancel:
      return server.capabilities.extensions?.[TASKS_EXTENSION] !== undefined
    default:
      return false
  }
}

export function parseParams<S extends z.ZodType>(schema: S, params: JsonObject): z.output<S> {
  const parsed = schema.safeParse(params)
  if (!parsed.success)
    throw new McpError(ErrorCode.InvalidParams, `Invalid params: ${describeIssues(parsed.error)}`)
  return parsed.data
}

export async function dispatch<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const { server } = env
  switch (request.method) {
    case METHODS.discover: {
      const result: JsonObject = {
        supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
        capabilities: server.capabilities,
      }
      if (server.instructions) result.instructions = server.instructions
      return { result, cache: 'discover' }
    }
    case METHODS.toolsList:
    case METHODS.promptsList:
    case METHODS.resourceTemplatesList:
      return list(request, STATIC_LISTS[request.method] as StaticList, server)
    case METHODS.resourcesList:
      return listResources(request, env)
    case METHODS.toolsCall:
      return callTool(request, env)
    case METHODS.resourcesRead:
      return readResource(request, env)
    case METHODS.promptsGet:
      return getPrompt(request, env)
    case METHODS.complete:
      return complete(request, env)
    case METHODS.tasksGet:
    case METHODS.tasksUpdate:
    case METHODS.tasksCancel:
      if (env.tasks) return env.tasks.serve(request, env)
      throw new McpError(ErrorCode.MethodNotFound, 'Method not found')
    default:
      throw new McpError(ErrorCode.MethodNotFound, 'Method not found')
  }
}

function list<Deps>(
  request: McpRequest,
  { kind, items }: StaticList,
  server: CompiledServer<Deps>
): DispatchResult {
  const { cursor } = parseParams(ListParamsSchema, request.params)
  const { page, nextCursor } = paginate(kind, items(server), cursor, server.pageSize)
  const result: JsonObject = { [kind]: page }
  if (nextCursor !== undefined) result.nextCursor = nextCursor
  return { result, cache: kind }
}

async function listResources<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const { server } = env
  const { cursor } = parseParams(ListParamsSchema, request.params)
  const position = decodeCursor('resources', cursor)
  const sources = [undefined, ...server.templates.filter((t) => t.definition.list)]
  let section = Math.floor(position / SECTION_SPAN)
  let offset = position % SECTION_SPAN
  const resources: Resource[] = []
  let next: number | undefined
  const ctx = new HandlerContext(env)
  while (section < sources.length && resources.length < server.pageSize) {
    const room = server.pageSize - resources.length
    const template = sources[section]
    const page = template
      ? await template.definition.list!(ctx, offset, room)
      : {
          items: server.resourceListing.slice(offset, offset + room),
          nextOffset: offset + room < server.resourceListing.length ? offset + room : undefined,
        }
    resources.push(...page.items.slice(0, room))
    if (page.nextOffset !== undefined) {
      next = section * SECTION_SPAN + page.nextOffset
      break
    }
    section += 1
    offset = 0
    next = section < sources.length ? section * SECTION_SPAN : undefined
  }
  const result: JsonObject = { resources }
  if (next !== undefined && section < sources.length)
    result.nextCursor = encodeCursor('resources', next)
  return { result, cache: 'resources' }
}

async function callTool<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const params = parseParams(CallToolParamsSchema, request.params)
  const tool = env.server.tools.get(params.name)
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`)
  const args = params.arguments ?? {}
  if (env.headers) checkHeaderParams(request, env.headers, tool, args)
  const tasks = tool.definition.task && taskAvailability(tool, request, env)
  const binding = bindingFor(env, request, params.name, args)
  return runReplayable(
    request,
    env,
    binding,
    params,
    (ctx) => runTool(tool, args, ctx, env.logger),
    tasks
  )
}

/**
 * What `ctx.startTask()` does in this request: start a task when the request declared the extension
 * and the handler serves tasks; otherwise go on synchronously, or, for a `task: 'required'` tool,
 * answer -32021 before the handler runs.
 */
function taskAvailability<Deps>(
  tool: CompiledTool<Deps>,
  request: McpRequest,
  env: DispatchEnv<Deps>
): TaskAvailability {
  if (env.tasks && declaresTasks(request.clientCapabilities)) return 'available'
  if (tool.definition.task === 'required')
    throw tasksCapabilityMissing(`the tool ${tool.definition.name}`)
  return 'unavailable'
}

/**
 * Runs a tool's handler on its arguments, in a request or as a task: invalid arguments and
 * unexpected failures become `isError` results the model sees (the failure logged); an `McpError`, a
 * suspension, or a failure after the call was aborted propagates; a result that does not match the
 * tool's `outputSchema` is a -32603.
 */
export async function runTool<Deps>(
  tool: CompiledTool<Deps>,
  args: Record<string, unknown>,
  ctx: ToolContext<Deps>,
  logger: McpLogger
): Promise<CallToolResult> {
  const { name } = tool.definition
  const input = tool.definition.input.safeParse(args)
  if (!input.success) {
    return {
      content: [
        {
          type: 'text',
          text: `Invalid arguments for tool ${name}: ${describeIssues(input.error)}`,
        },
      ],
      isError: true,
    }
  }
  let result: CallToolResult
  try {
    result = await tool.definition.run(input.data, ctx)
  } catch (error) {
    if (error instanceof McpError || isSuspension(error) || ctx.signal.aborted) throw error
    logger.error('tool failed', { tool: name, error: String(error) })
    return {
      content: [
        {
          type: 'text',
          text: `The tool ${name} failed unexpectedly; the failure was logged.`,
        },
      ],
      isError: true,
    }
  }
  if (
    tool.definition.output &&
    !result.isError &&
    !tool.definition.output.safeParse(result.structuredContent).success
  ) {
    logger.error('tool output does not match its outputSchema', { tool: name })
    throw new McpError(
      ErrorCode.InternalError,
      `Internal error: the tool ${name} produced output that does not match its outputSchema.`
    )
  }
  return result
}

/** `Mcp-Param-*` headers must mirror every `x-mcp-header` argument present in the body (-32020). */
function checkHeaderParams<Deps>(
  request: McpRequest,
  headers: Headers,
  tool: CompiledTool<Deps>,
  args: Record<string, unknown>
) {
  for (const param of tool.headerParams) {
    const value = args[param.property]
    const header = readParamHeader(request.id, headers, param.header)
    if (value === undefined || value === null) continue
    const display = `${HEADER_PARAM_PREFIX}${param.header}`
    if (header === undefined) {
      throw new McpError(
        ErrorCode.HeaderMismatch,
        `Bad Request: the ${display} header is required because arguments.${param.property} is set.`,
        { header: display }
      )
    }
    const equal =
      param.type === 'integer'
        ? DECIMAL_NUMBER.test(header) && Number(header) === value
        : param.type === 'boolean'
          ? header === String(value)
          : header === value
    if (!equal) {
      throw new McpError(
        ErrorCode.HeaderMismatch,
        `Bad Request: the ${display} header and the body disagree: it does not equal arguments.${param.property}.`,
        { header: display }
      )
    }
  }
}

async function readResource<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const params = parseParams(ReadResourceParamsSchema, request.params)
  const { uri } = params
  const notFound = () =>
    new McpError(ErrorCode.InvalidParams, `Resource not found: ${uri}`, { uri })
  const resource = env.server.resources.get(uri)
  let read: ((ctx: ReplayContext<Deps>) => Promise<JsonObject | undefined>) | undefined
  if (resource) {
    read = async (ctx) => ({ ...(await resource.read(ctx)) })
  } else {
    for (const template of env.server.templates) {
      const variables = matchTemplate(template, uri)
      if (!variables) continue
      read = async (ctx) => {
        const result = await template.definition.read(variables, uri, ctx)
        return result ? { ...result } : undefined
      }
      break
    }
  }
  if (!read) throw notFound()
  const binding = bindingFor(env, request, uri, {})
  const outcome = await runReplayable(request, env, binding, params, async (ctx) => {
    const result = await read(ctx)
    if (!result || !Array.isArray(result.contents) || result.contents.length === 0) throw notFound()
    return result
  })
  return outcome.result.resultType === 'input_required' ? outcome : { ...outcome, cache: 'read' }
}

async function getPrompt<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const params = parseParams(GetPromptParamsSchema, request.params)
  const prompt = env.server.prompts.get(params.name)
  if (!prompt) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${params.name}`)
  const args = params.arguments ?? {}
  const missing = (prompt.arguments ?? [])
    .filter((a) => a.required && args[a.name] === undefined)
    .map((a) => a.name)
  if (missing.length > 0) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `Invalid params: prompt ${params.name} requires the argument(s) ${missing.join(', ')}.`,
      { missing }
    )
  }
  const binding = bindingFor(env, request, params.name, args)
  return runReplayable(request, env, binding, params, async (ctx) => ({
    ...(await prompt.get(args, ctx)),
  }))
}

async function complete<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const { ref, argument, context } = parseParams(CompleteParamsSchema, request.params)
  let completer
  if (ref.type === 'ref/prompt') {
    const prompt = env.server.prompts.get(ref.name)
    if (!prompt) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${ref.name}`)
    completer = prompt.complete?.[argument.name]
  } else {
    const template = env.server.templates.find((t) => t.definition.uriTemplate === ref.uri)
    if (!template && !env.server.resources.has(ref.uri))
      throw new McpError(ErrorCode.InvalidParams, `Resource not found: ${ref.uri}`, {
        uri: ref.uri,
      })
    completer = template?.definition.complete?.[argument.name]
  }
  const found = completer
    ? await completer(argument.value, {
        arguments: context?.arguments ?? {},
        ctx: new HandlerContext(env),
      })
    : []
  const { values, total } = Array.isArray(found) ? { values: found, total: found.length } : found
  const completion: JsonObject = {
    values: values.slice(0, COMPLETION_LIMIT),
    hasMore: values.length > COMPLETION_LIMIT || (total !== undefined && total > COMPLETION_LIMIT),
  }
  if (total !== undefined) completion.total = total
  return { result: { completion } }
}

/**
 * Who the caller is, for binding what is kept for it (sealed states, tasks): the principal, and the
 * OAuth client it came through, if known.
 */
export function callerBinding(principal: string, client: string | undefined): string {
  return client === undefined ? principal : canonicalJson([principal, client])
}

/** What a sealed state is bound to: the caller (and its client), the method, the target and the arguments. */
function bindingFor<Deps>(
  env: DispatchEnv<Deps>,
  request: McpRequest,
  target: string,
  args: unknown
): StateBinding {
  return {
    principal: callerBinding(env.principal, env.client),
    method: request.method,
    target,
    args,
  }
}

/** The names of the child spans around opening and sealing `requestState`. */
const OPEN_STATE_SPAN = 'open requestState'
const SEAL_STATE_SPAN = 'seal requestState'

/** A journal as sealed: the replay's entries and the round that sealed it. */
interface RoundJournal extends Journal {
  r: number
}

/** The round that sealed an opened journal (1 for states sealed before rounds were counted). */
function sealedRound(journal: unknown): number {
  const round = (journal as Partial<RoundJournal> | undefined)?.r
  return typeof round === 'number' && Number.isSafeInteger(round) && round > 0 ? round : 1
}

interface ReplayableParams {
  inputResponses?: Record<string, unknown> | null
  requestState?: unknown
}

/**
 * Runs a suspendable handler for one round: opens the sealed state (any failure → the frozen -32602,
 * before the handler runs), re-runs the handler with the journal and this round's answers, then either
 * returns its result, throws the -32021 of an ask the client cannot serve, seals the merged journal
 * into a new `requestState` and answers `input_required`, or, when the handler started its task (and
 * no ask is pending: rounds resolve first), creates the task with that journal and answers it.
 */
async function runReplayable<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>,
  binding: StateBinding,
  params: ReplayableParams,
  run: (ctx: ToolContext<Deps>) => Promise<JsonObject | CallToolResult>,
  tasks?: TaskAvailability
): Promise<DispatchResult> {
  const { observation } = env
  let journal: Journal | undefined
  let nonce: string | undefined
  let round = 1
  if (params.requestState !== undefined) {
    try {
      const opened = await (observation
        ? observation.step(OPEN_STATE_SPAN, () => env.sealer.open(params.requestState, binding))
        : env.sealer.open(params.requestState, binding))
      journal = opened.journal as Journal
      nonce = opened.nonce
      round = sealedRound(opened.journal) + 1
    } catch (error) {
      if (!(error instanceof InvalidRequestStateError)) throw error
      env.logger.warn('requestState rejected', {
        reason: error.reason,
        method: request.method,
        target: binding.target,
      })
      observation?.stateRejected(error.reason)
      throw new McpError(ErrorCode.InvalidParams, error.message)
    }
  }
  observation?.round(round)

  const replay = new Replay(journal, params.inputResponses, request.clientCapabilities)
  const ctx = new ReplayHandlerContext(env, replay, nonce, tasks)
  let result: JsonObject | CallToolResult | undefined
  try {
    result = await run(ctx)
  } catch (error) {
    if (!isSuspension(error)) {
      if (replay.missingCapability) throw replay.missingCapability
      throw error
    }
  }
  if (replay.missingCapability) throw replay.missingCapability
  const interactive = journal !== undefined || Object.keys(params.inputResponses ?? {}).length > 0
  if (!replay.suspended) {
    if (replay.taskStarted && env.tasks) return env.tasks.create(env, binding, replay.journal())
    if (!result)
      throw new McpError(
        ErrorCode.InternalError,
        'Internal error: the handler suspended without asking anything.'
      )
    return { result: result as JsonObject, interactive }
  }
  let token: string
  try {
    // The round travels with the journal (`r`), so the round that completes the flow knows its count.
    const sealed = replay.journal() as RoundJournal
    sealed.r = round
    token = (
      await (observation
        ? observation.step(SEAL_STATE_SPAN, () => env.sealer.seal(binding, sealed))
        : env.sealer.seal(binding, sealed))
    ).token
  } catch (error) {
    if (!(error instanceof StateTooLargeError)) throw error
    env.logger.error('requestState too large', { method: request.method, target: binding.target })
    throw new McpError(
      ErrorCode.InternalError,
      'Internal error: this flow has gathered more state than the server allows; start it again with less input.'
    )
  }
  const inputRequired: InputRequiredResult = {
    resultType: 'input_required',
    inputRequests: replay.inputRequests(),
    requestState: token,
  }
  return { result: inputRequired as unknown as JsonObject, interactive: true }
}
