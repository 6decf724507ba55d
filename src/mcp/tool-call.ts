/**
 * @module mcp/tool-call
 * `tools/call`: finds the tool, checks that the `Mcp-Param-*` headers mirror its `x-mcp-header`
 * arguments (-32020), decides what `ctx.startTask()` may do in this request, and runs the call as a
 * replayable round (`replayable.ts`). `runTool`, running a tool's handler on its arguments, is
 * shared with the task runner (`tasks/runner.ts`), which runs a task's tool the same way.
 */
import type { TaskAvailability } from './context.ts'
import type { ToolContext } from './definitions.ts'
import type { DispatchEnv, DispatchResult } from './dispatch-env.ts'
import { readParamHeader, type McpRequest } from './envelope.ts'
import { ErrorCode, McpError } from './errors.ts'
import type { McpLogger } from './logger.ts'
import { namedCall } from './params.ts'
import { HEADER_PARAM_PREFIX } from './protocol.ts'
import { isSuspension } from './replay.ts'
import { bindingFor, runReplayable } from './replayable.ts'
import type { CompiledTool } from './server.ts'
import { declaresTasks, tasksCapabilityMissing } from './tasks/wire.ts'
import { describeIssues, type CallToolResult } from './wire.ts'

/** Integers in `Mcp-Param-*` headers are compared numerically, but only in decimal notation. */
const DECIMAL_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/

export async function callTool<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>
): Promise<DispatchResult> {
  const { params, definition: tool, args } = namedCall('tool', request, env.server.tools)
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
          ? // eslint-disable-next-line @typescript-eslint/no-base-to-string -- unvalidated JSON, compared as String shows it
            header === String(value)
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
