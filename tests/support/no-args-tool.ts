/**
 * @module tests/support/no-args-tool
 * A shorthand for the test servers' many tools without arguments: `noArgsTools<Deps>()` answers a
 * `noArgsTool(name, description, run)` that declares one for an app of `Deps` (input `{}`), its `run`
 * given only the context. The conformance fixture and the engine's replay tests declare theirs so.
 */
import * as z from 'zod'
import { definitions, type ToolContext } from '../../src/mcp/definitions.ts'
import type { CallToolResult } from '../../src/mcp/wire.ts'

const noArgs = z.object({})

/** The `noArgsTool` of an app of `Deps`. */
export function noArgsTools<Deps>() {
  const { tool } = definitions<Deps>()
  return (
    name: string,
    description: string,
    run: (ctx: ToolContext<Deps>) => Promise<CallToolResult> | CallToolResult
  ) => tool({ name, description, input: noArgs, run: (_args, ctx) => run(ctx) })
}
