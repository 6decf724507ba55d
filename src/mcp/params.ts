/**
 * @module mcp/params
 * A method's params read against its schema (`wire.ts`), in both eras: what does not match is the
 * -32602 every method answers, naming the first issues; so is a tool or prompt the params name that
 * the server does not define ({@link definitionNamed}). A call of one (`tools/call`, `prompts/get`)
 * is read whole by {@link namedCall}.
 */
import type * as z from 'zod'
import type { McpRequest } from './envelope.ts'
import { ErrorCode, McpError } from './errors.ts'
import {
  CallToolParamsSchema,
  describeIssues,
  GetPromptParamsSchema,
  type JsonObject,
} from './wire.ts'

export function parseParams<S extends z.ZodType>(schema: S, params: JsonObject): z.output<S> {
  const parsed = schema.safeParse(params)
  if (!parsed.success)
    throw new McpError(ErrorCode.InvalidParams, `Invalid params: ${describeIssues(parsed.error)}`)
  return parsed.data
}

/** The tool or prompt `definitions` holds under `name`; none is the -32602 `Unknown <kind>: <name>`. */
export function definitionNamed<Definition>(
  definitions: ReadonlyMap<string, Definition>,
  kind: 'tool' | 'prompt',
  name: string
): Definition {
  const definition = definitions.get(name)
  if (definition === undefined) {
    throw new McpError(ErrorCode.InvalidParams, `Unknown ${kind}: ${name}`)
  }
  return definition
}

/** A `tools/call` or `prompts/get` as read: its params, the definition they name, and its arguments. */
export interface NamedCall<Params extends { arguments?: object | null }, Definition> {
  params: Params
  definition: Definition
  /** The params' arguments; none: `{}`. */
  args: NonNullable<Params['arguments']>
}

/**
 * A `tools/call` (`kind` tool) or `prompts/get` (`kind` prompt) request: its params read against
 * its schema, and the definition they name ({@link definitionNamed}) among `definitions`.
 */
export function namedCall<Definition>(
  kind: 'tool',
  request: McpRequest,
  definitions: ReadonlyMap<string, Definition>
): NamedCall<z.output<typeof CallToolParamsSchema>, Definition>
export function namedCall<Definition>(
  kind: 'prompt',
  request: McpRequest,
  definitions: ReadonlyMap<string, Definition>
): NamedCall<z.output<typeof GetPromptParamsSchema>, Definition>
export function namedCall<Definition>(
  kind: 'tool' | 'prompt',
  request: McpRequest,
  definitions: ReadonlyMap<string, Definition>
): NamedCall<z.output<typeof CallToolParamsSchema | typeof GetPromptParamsSchema>, Definition> {
  const schema = kind === 'tool' ? CallToolParamsSchema : GetPromptParamsSchema
  const params = parseParams(schema, request.params)
  const definition = definitionNamed(definitions, kind, params.name)
  return { params, definition, args: params.arguments ?? {} }
}
