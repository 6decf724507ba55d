/**
 * @module mcp/dispatch
 * The method table of revision 2026-07-28 (except `subscriptions/listen`, which streams: see
 * `subscriptions.ts`), which the 2025 era dispatches through too. `routeOf` is the one question the
 * 2026-07-28 face (`modern-era.ts`) asks of it before anything runs: whether the server advertises
 * the method (`isAdvertised`, 404 + -32601 otherwise), whether it streams, and whether its result
 * depends only on the compiled server (discover, a page of a static list: its cursor decoded once
 * and its cache key). `dispatch` takes a request that passed the envelope, validates its params
 * (-32602), finds the tool, resource or prompt, and returns the bare result, which the era stamps.
 * `tools/call` is `tool-call.ts`'s; `resources/read` and `prompts/get` run as replayable rounds
 * (`replayable.ts`); the tasks extension's methods are `tasks/engine.ts`'s, reached through
 * `env.tasks` when the handler serves tasks. `dispatchEnv` builds the env both eras dispatch a
 * caller's request in.
 */
import { HandlerContext } from './context.ts'
import type { ReplayContext } from './definitions.ts'
import type { DispatchEnv, DispatchResult } from './dispatch-env.ts'
import type { McpRequest } from './envelope.ts'
import { ErrorCode, McpError } from './errors.ts'
import { decodeCursor, encodeCursor, paginate } from './pagination.ts'
import { definitionNamed, namedCall, parseParams } from './params.ts'
import { METHODS, SUPPORTED_PROTOCOL_VERSIONS, TASKS_EXTENSION } from './protocol.ts'
import { bindingFor, runReplayable } from './replayable.ts'
import { matchTemplate, type CompiledServer } from './server.ts'
import { ResponseChannel, type Cancellation } from './streaming.ts'
import { canListen } from './subscriptions.ts'
import { callTool } from './tool-call.ts'
import {
  CompleteParamsSchema,
  ListParamsSchema,
  ReadResourceParamsSchema,
  type JsonObject,
  type Resource,
} from './wire.ts'

/** What a handler dispatches every request with, whoever calls: its server, deps, sealer and logger. */
export type DispatchBase<Deps> = Pick<DispatchEnv<Deps>, 'server' | 'deps' | 'sealer' | 'logger'>

/**
 * The env `request` is dispatched in for the caller `input` describes (its principal, OAuth client
 * and granted scopes): `cancellation`, which the caller keeps to cancel the request, a new response
 * channel on it (unless `extra` brings the era's own), and `extra`, what the era adds (headers,
 * tasks, telemetry).
 */
export function dispatchEnv<Deps>(
  base: DispatchBase<Deps>,
  request: McpRequest,
  input: Pick<DispatchEnv<Deps>, 'principal' | 'client' | 'grantedScopes' | 'baseScopes'>,
  cancellation: Cancellation,
  extra: Partial<Pick<DispatchEnv<Deps>, 'headers' | 'tasks' | 'observation' | 'channel'>> = {}
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

const COMPLETION_LIMIT = 100
/** Positions in `resources/list` are section × span + offset (section 0 = static resources). */
const SECTION_SPAN = 2 ** 32

/** A list whose pages depend only on the compiled server: its cursor name and its items. */
interface StaticList {
  kind: 'tools' | 'prompts' | 'resourceTemplates'
  items: <Deps>(server: CompiledServer<Deps>) => readonly unknown[]
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
 * How the 2026-07-28 face answers a request, as the method table decides it before anything runs
 * (`routeOf`): not at all (`unadvertised`: 404 + -32601), with a held-open stream (`listen`:
 * `subscriptions.ts`), with a result that depends only on the compiled server (`static`), with the
 * -32602 of a static list's invalid cursor (`refused`, answered once the caller's scopes are known),
 * or by dispatching it (`dispatch`).
 */
export type MethodRoute =
  | { readonly kind: 'unadvertised' | 'listen' | 'dispatch' }
  | StaticPage
  | { readonly kind: 'refused'; readonly error: unknown }

/**
 * A result that depends only on the compiled server: `server/discover`, or a page of a static list,
 * where the page starts (its cursor decoded once, here, and passed on to `dispatch`) and the key its
 * serialised result may be kept under. Only the pages the server itself cuts have one (the first,
 * and every later page at a multiple of the page size within the list): at most one entry per page
 * the server defines, whatever cursors clients invent; a forged cursor that decodes to another
 * offset is answered, but not kept.
 */
export interface StaticPage {
  readonly kind: 'static'
  readonly key: string | undefined
  readonly offset: number
}

const UNADVERTISED: MethodRoute = Object.freeze({ kind: 'unadvertised' })
const LISTEN: MethodRoute = Object.freeze({ kind: 'listen' })
const DISPATCH: MethodRoute = Object.freeze({ kind: 'dispatch' })
/** The first page of each static result, the same for every request. */
const FIRST_PAGES: Readonly<Record<string, StaticPage>> = Object.fromEntries(
  [METHODS.discover, ...Object.keys(STATIC_LISTS)].map((method) => [
    method,
    Object.freeze({ kind: 'static', key: method, offset: 0 } as const),
  ])
)

/**
 * How `request` is answered, from the method table alone: the one question the 2026-07-28 face asks
 * of it before it dispatches (or answers from its cache, or streams). A static list's cursor is
 * decoded here, its failure kept for after the scopes check; one that is not even a string is left
 * to the params check of `dispatch`.
 */
export function routeOf<Deps>(server: CompiledServer<Deps>, request: McpRequest): MethodRoute {
  const { method } = request
  if (!isAdvertised(server, method)) return UNADVERTISED
  if (method === METHODS.listen) return LISTEN
  if (method === METHODS.discover) return FIRST_PAGES[method]!
  const list = STATIC_LISTS[method]
  if (!list) return DISPATCH
  const { cursor } = request.params
  if (cursor === undefined) return FIRST_PAGES[method]!
  if (typeof cursor !== 'string') return DISPATCH // refused by the params check
  let offset: number
  try {
    offset = decodeCursor(list.kind, cursor)
  } catch (error) {
    return { kind: 'refused', error }
  }
  if (offset === 0) return FIRST_PAGES[method]!
  const kept = offset % server.pageSize === 0 && offset < list.items(server).length
  return { kind: 'static', key: kept ? `${method} ${offset}` : undefined, offset }
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

/**
 * Runs `request`'s method and answers its bare result. `offset`, when the caller decoded a static
 * list's cursor already (`routeOf`), is where its page starts.
 */
export async function dispatch<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>,
  offset?: number
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
      return list(request, STATIC_LISTS[request.method] as StaticList, server, offset)
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
  server: CompiledServer<Deps>,
  offset?: number
): DispatchResult {
  const start = offset ?? decodeCursor(kind, parseParams(ListParamsSchema, request.params).cursor)
  const { page, nextCursor } = paginate(kind, items(server), start, server.pageSize)
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
  const sources = [undefined, ...server.templates.filter((t) => t.definition.list !== undefined)]
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
  const { params, definition: prompt, args } = namedCall('prompt', request, env.server.prompts)
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
    completer = definitionNamed(env.server.prompts, 'prompt', ref.name).complete?.[argument.name]
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
