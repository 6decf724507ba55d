/**
 * @module mcp/server
 * `compileServer(definition)` checks an application's definitions once and compiles what every request
 * reuses: the published tool, resource, template and prompt lists (tool input schemas converted to
 * JSON Schema 2020-12 here, never per request), lookup tables, the `x-mcp-header` parameters each tool
 * declares, and the capabilities advertised by `server/discover` (`withExtension` adds an extension a
 * handler serves). A malformed definition throws at
 * startup with a message naming it. The result, a `CompiledServer`, is immutable data holding no
 * per-request state (not a server object in the SDK's sense: `createMcpHandler` serves it).
 */
import * as z from 'zod'
import type {
  PromptDefinition,
  ResourceDefinition,
  ResourceTemplateDefinition,
  ToolDefinition,
} from './definitions.ts'
import { DEFAULT_PAGE_SIZE } from './pagination.ts'
import type {
  CacheHint,
  Implementation,
  JsonObject,
  Resource,
  ResourceTemplate,
  ServerCapabilities,
} from './wire.ts'

/** The results that carry cache hints (`ttlMs`, `cacheScope`). */
export type CacheableResult =
  'discover' | 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'read'

/** What `server/discover` advertises: the core capabilities and the extensions served. */
export type AdvertisedCapabilities = ServerCapabilities & { extensions?: Record<string, object> }

/** Everything an application serves, as handed to `compileServer`. */
export interface ServerDefinition<Deps> {
  info: Implementation
  instructions?: string
  tools?: ToolDefinition<Deps>[]
  resources?: ResourceDefinition<Deps>[]
  resourceTemplates?: ResourceTemplateDefinition<Deps>[]
  prompts?: PromptDefinition<Deps>[]
  /** List-change notifications the server publishes on its event bus (advertised as `listChanged`). */
  listChanged?: { tools?: boolean; prompts?: boolean; resources?: boolean }
  /** Whether `notifications/resources/updated` is published for watched URIs. */
  subscribe?: boolean
  /** Whether handlers may send `notifications/message` (advertises the `logging` capability). */
  logging?: boolean
  pageSize?: number
  cache?: Partial<Record<CacheableResult, CacheHint>>
  /**
   * OAuth scopes a caller needs per method, checked when the HTTP layer reports the caller's granted
   * scopes (bearer auth); `tools/call` takes each tool's own `scopes` instead. Methods not named need
   * none beyond what the HTTP layer requires of every request.
   */
  scopes?: Readonly<Record<string, readonly string[]>>
}

/** A published tool plus what the pipeline needs to check its `Mcp-Param-*` headers. */
export interface CompiledTool<Deps> {
  definition: ToolDefinition<Deps>
  listing: JsonObject
  headerParams: HeaderParam[]
}

/** A tool argument mirrored in an `Mcp-Param-{Name}` header (`x-mcp-header`). */
export interface HeaderParam {
  property: string
  /** The header suffix: the value of `x-mcp-header`. */
  header: string
  type: 'string' | 'integer' | 'boolean'
}

/** A resource template compiled: its definition and the pattern that matches its URIs. */
export interface CompiledTemplate<Deps> {
  definition: ResourceTemplateDefinition<Deps>
  pattern: RegExp
  variables: string[]
}

/** What `compileServer` makes of a `ServerDefinition`: published listings and lookup tables. */
export interface CompiledServer<Deps> {
  readonly info: Implementation
  readonly instructions?: string
  readonly capabilities: AdvertisedCapabilities
  readonly pageSize: number
  readonly cache: Record<CacheableResult, CacheHint>
  readonly tools: ReadonlyMap<string, CompiledTool<Deps>>
  readonly toolListing: readonly JsonObject[]
  readonly resources: ReadonlyMap<string, ResourceDefinition<Deps>>
  readonly resourceListing: readonly Resource[]
  readonly templates: readonly CompiledTemplate<Deps>[]
  readonly templateListing: readonly ResourceTemplate[]
  readonly prompts: ReadonlyMap<string, PromptDefinition<Deps>>
  readonly promptListing: readonly JsonObject[]
  /** Scopes per method (`ServerDefinition.scopes`); see `scopes.ts`. */
  readonly methodScopes: ReadonlyMap<string, readonly string[]>
}

const DEFAULT_CACHE: Record<CacheableResult, CacheHint> = {
  discover: { ttlMs: 300_000, cacheScope: 'public' },
  tools: { ttlMs: 300_000, cacheScope: 'public' },
  prompts: { ttlMs: 300_000, cacheScope: 'public' },
  resourceTemplates: { ttlMs: 300_000, cacheScope: 'public' },
  resources: { ttlMs: 0, cacheScope: 'private' },
  read: { ttlMs: 0, cacheScope: 'private' },
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/
const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * Checks a server's definitions once and compiles what every request reuses (module header): the
 * `server` of `createMcpHandler`. Throws `TypeError` or `RangeError` naming what is malformed (a
 * tool name, a name defined twice, a page size). Compile once per process or isolate, not per
 * request.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { text, tool } from 'stateless-mcp'
 * import { compileServer } from 'stateless-mcp/compose'
 *
 * const hello = tool({
 *   name: 'hello',
 *   description: 'Says hello.',
 *   input: z.object({ name: z.string() }),
 *   run: ({ name }) => text(`Hello, ${name}`),
 * })
 * export const server = compileServer({
 *   info: { name: 'hello', version: '1.0.0' },
 *   tools: [hello],
 * })
 * ```
 */
export function compileServer<Deps>(options: ServerDefinition<Deps>): CompiledServer<Deps> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
    throw new RangeError('pageSize must be an integer between 1 and 1000')
  }
  for (const [kind, hint] of Object.entries(options.cache ?? {})) {
    if (!Number.isSafeInteger(hint.ttlMs) || hint.ttlMs < 0)
      throw new RangeError(`cache.${kind}.ttlMs must be a non-negative integer`)
  }

  const tools = new Map<string, CompiledTool<Deps>>()
  for (const definition of options.tools ?? []) {
    if (!TOOL_NAME.test(definition.name))
      throw new TypeError(
        `Tool name '${definition.name}' must be 1–128 characters of A–Z a–z 0–9 _ - .`
      )
    if (tools.has(definition.name))
      throw new TypeError(`Tool '${definition.name}' is defined twice`)
    tools.set(definition.name, compileTool(definition))
  }

  const resources = new Map<string, ResourceDefinition<Deps>>()
  for (const definition of options.resources ?? []) {
    if (resources.has(definition.uri))
      throw new TypeError(`Resource '${definition.uri}' is defined twice`)
    resources.set(definition.uri, definition)
  }
  const templates = (options.resourceTemplates ?? []).map(compileTemplate)

  const prompts = new Map<string, PromptDefinition<Deps>>()
  for (const definition of options.prompts ?? []) {
    if (prompts.has(definition.name))
      throw new TypeError(`Prompt '${definition.name}' is defined twice`)
    prompts.set(definition.name, definition)
  }

  const capabilities: ServerCapabilities = {}
  if (tools.size > 0) capabilities.tools = { listChanged: options.listChanged?.tools ?? false }
  if (resources.size > 0 || templates.length > 0) {
    capabilities.resources = {
      subscribe: options.subscribe ?? false,
      listChanged: options.listChanged?.resources ?? false,
    }
  }
  if (prompts.size > 0)
    capabilities.prompts = { listChanged: options.listChanged?.prompts ?? false }
  const completes = [...prompts.values(), ...templates.map((t) => t.definition)].some(
    (d) => d.complete
  )
  if (completes) capabilities.completions = {}
  if (options.logging) capabilities.logging = {}

  return Object.freeze({
    info: options.info,
    instructions: options.instructions,
    capabilities,
    pageSize,
    cache: { ...DEFAULT_CACHE, ...options.cache },
    tools,
    toolListing: [...tools.values()].map((tool) => tool.listing),
    resources,
    resourceListing: [...resources.values()].map(({ read: _read, ...listing }) => listing),
    templates,
    templateListing: templates.map(
      ({ definition: { list: _l, read: _r, complete: _c, ...listing } }) => listing
    ),
    prompts,
    promptListing: [...prompts.values()].map(
      ({ get: _get, complete: _complete, ...listing }) => listing as JsonObject
    ),
    methodScopes: new Map(Object.entries(options.scopes ?? {})),
  })
}

/**
 * The same server advertising the extension `name` too (`{}`: no settings), for a handler that
 * serves it (the tasks extension needs a task store, which only the handler has).
 */
export function withExtension<Deps>(
  server: CompiledServer<Deps>,
  name: string
): CompiledServer<Deps> {
  const extensions = { ...server.capabilities.extensions, [name]: {} }
  return Object.freeze({ ...server, capabilities: { ...server.capabilities, extensions } })
}

function compileTool<Deps>(definition: ToolDefinition<Deps>): CompiledTool<Deps> {
  if (
    definition.task !== undefined &&
    definition.task !== 'optional' &&
    definition.task !== 'required'
  ) {
    throw new TypeError(`Tool '${definition.name}': task must be 'optional' or 'required'`)
  }
  const inputSchema =
    definition.inputJsonSchema ??
    z.toJSONSchema(definition.input, { target: 'draft-2020-12', io: 'input' })
  if (inputSchema.type !== 'object')
    throw new TypeError(
      `Tool '${definition.name}': inputSchema must have "type": "object" at the root`
    )
  const listing: JsonObject = { name: definition.name }
  if (definition.title) listing.title = definition.title
  listing.description = definition.description
  listing.inputSchema = inputSchema
  if (definition.output)
    listing.outputSchema = z.toJSONSchema(definition.output, {
      target: 'draft-2020-12',
      io: 'output',
    })
  if (definition.annotations) listing.annotations = definition.annotations
  return { definition, listing, headerParams: headerParams(definition.name, inputSchema) }
}

/** Reads the `x-mcp-header` annotations of a tool's top-level properties and checks them (TOOLS x-mcp-header). */
function headerParams(tool: string, inputSchema: JsonObject): HeaderParam[] {
  const properties = (inputSchema.properties ?? {}) as Record<string, JsonObject>
  const params: HeaderParam[] = []
  const seen = new Set<string>()
  for (const [property, schema] of Object.entries(properties)) {
    const header = schema['x-mcp-header']
    if (header === undefined) continue
    if (typeof header !== 'string' || !HEADER_TOKEN.test(header)) {
      throw new TypeError(
        `Tool '${tool}': x-mcp-header of '${property}' must be a non-empty HTTP token`
      )
    }
    if (seen.has(header.toLowerCase()))
      throw new TypeError(`Tool '${tool}': x-mcp-header '${header}' is used twice`)
    seen.add(header.toLowerCase())
    const type = schema.type
    if (type !== 'string' && type !== 'integer' && type !== 'boolean') {
      throw new TypeError(
        `Tool '${tool}': x-mcp-header is allowed only on string, integer or boolean properties ('${property}')`
      )
    }
    params.push({ property, header, type })
  }
  return params
}

const TEMPLATE_VARIABLE = /\{([A-Za-z0-9_]+)\}/g

function compileTemplate<Deps>(
  definition: ResourceTemplateDefinition<Deps>
): CompiledTemplate<Deps> {
  const variables: string[] = []
  let source = ''
  let last = 0
  for (const match of definition.uriTemplate.matchAll(TEMPLATE_VARIABLE)) {
    source += escapeRegExp(definition.uriTemplate.slice(last, match.index)) + '([^/?#]+)'
    variables.push(match[1] as string)
    last = match.index + match[0].length
  }
  source += escapeRegExp(definition.uriTemplate.slice(last))
  if (variables.length === 0)
    throw new TypeError(`Resource template '${definition.uriTemplate}' has no {variable}`)
  return { definition, pattern: new RegExp(`^${source}$`), variables }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** Matches a URI against a compiled template; variables are percent-decoded. */
export function matchTemplate<Deps>(
  template: CompiledTemplate<Deps>,
  uri: string
): Record<string, string> | undefined {
  const match = template.pattern.exec(uri)
  if (!match) return undefined
  const variables: Record<string, string> = {}
  try {
    template.variables.forEach(
      (name, index) => (variables[name] = decodeURIComponent(match[index + 1] as string))
    )
  } catch {
    return undefined
  }
  return variables
}
