/**
 * @module mcp/params
 * A method's params read against its schema (`wire.ts`), in both eras: what does not match is the
 * -32602 every method answers, naming the first issues; so is a tool or prompt the params name that
 * the server does not define ({@link definitionNamed}).
 */
import type * as z from 'zod'
import { ErrorCode, McpError } from './errors.ts'
import { describeIssues, type JsonObject } from './wire.ts'

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
