/**
 * @module mcp/params
 * A method's params read against its schema (`wire.ts`), in both eras: what does not match is the
 * -32602 every method answers, naming the first issues.
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
