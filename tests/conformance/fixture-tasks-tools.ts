/**
 * @module tests/conformance/fixture-tasks-tools
 * The conformance fixture's tools for the referee's ten `tasks-*` scenarios (extension
 * `io.modelcontextprotocol/tasks`; the contract is ../shared/reference/tasks-extension.md §2.2):
 * - `greet` answers at once, never as a task (even with the legacy `task` param);
 * - `slow_compute` (task optional) sleeps `seconds` as a task, or synchronously for a request
 *   without the extension; `seconds: 0` answers at once either way. Cancelling stops the sleep;
 * - `failing_job` and `protocol_error_job` (task required) end after a pause as `completed` with an
 *   `isError` result and as `failed` with a JSON-RPC error;
 * - `confirm_delete` (one ask) and `multi_input` (two asks at once) park their task in
 *   `input_required` until `tasks/update` answers, all at once or a part at a time;
 * - `test_tool_with_task` (task required) asks the name as a multi round-trip round of the
 *   `tools/call` itself, then greets by that name as a task.
 * Ordinary engine handlers: the engine creates, stores, runs and answers the tasks. Runtime-neutral.
 */
import * as z from 'zod'
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  text,
  toolError,
} from 'stateless-mcp'
import { noArgs, pause, tool } from './fixture-2025-tools.ts'

/** How long the two jobs work before they end. */
const JOB_MS = 1_000

/** A task-only tool that works for {@link JOB_MS}, then ends the way `end` does. */
function job(name: string, description: string, end: () => CallToolResult) {
  return tool({
    name,
    description,
    input: noArgs,
    task: 'required',
    async run(_args, ctx) {
      await ctx.startTask()
      await pause(JOB_MS, ctx.signal)
      return end()
    },
  })
}

const nameForm = z.object({ name: z.string().describe('Your name') })
const confirmForm = z.object({ confirm: z.boolean().describe('Go ahead') })

export const tasksConformanceTools = [
  tool({
    name: 'greet',
    description: 'Greets by name, at once.',
    input: z.object({ name: z.string() }),
    run: ({ name }) => text(`Hello, ${name}!`),
  }),
  tool({
    name: 'slow_compute',
    description: 'Works for the given number of seconds (as a task when the client allows).',
    input: z.object({ seconds: z.number().min(0).max(600), label: z.string() }),
    task: 'optional',
    async run({ seconds, label }, ctx) {
      if (seconds > 0) await ctx.startTask()
      await pause(seconds * 1000, ctx.signal)
      ctx.signal.throwIfAborted()
      return text(`Computed "${label}" in ${seconds} s.`)
    },
  }),
  job('failing_job', 'A task that ends with a tool error.', () =>
    toolError('The job failed: this tool always fails.')
  ),
  job('protocol_error_job', 'A task that ends with a JSON-RPC error.', () => {
    throw new McpError(ErrorCode.InternalError, 'Internal error: the job broke down.')
  }),
  tool({
    name: 'confirm_delete',
    description: 'Deletes a file once the user confirms (as a task).',
    input: z.object({ filename: z.string() }),
    task: 'required',
    async run({ filename }, ctx) {
      await ctx.startTask()
      const answer = await ctx.elicit('confirm', {
        message: `Delete ${filename}?`,
        schema: confirmForm,
      })
      return text(
        answer.action === 'accept' && answer.content.confirm
          ? `Deleted ${filename}.`
          : `Kept ${filename}.`
      )
    },
  }),
  tool({
    name: 'multi_input',
    description: 'Asks two questions at once (as a task).',
    input: noArgs,
    task: 'required',
    async run(_args, ctx) {
      await ctx.startTask()
      const [name, confirm] = await Promise.all([
        ctx.elicit('name', { message: 'What is your name?', schema: nameForm }),
        ctx.elicit('confirm', { message: 'Shall I go ahead?', schema: confirmForm }),
      ])
      const who = name.action === 'accept' ? name.content.name : name.action
      const go = confirm.action === 'accept' && confirm.content.confirm
      return text(`name=${who}; confirmed=${go}`)
    },
  }),
  tool({
    name: 'test_tool_with_task',
    description: 'Asks the name first (multi round-trip), then greets as a task.',
    input: noArgs,
    task: 'required',
    async run(_args, ctx) {
      const answer = await ctx.elicit('user_name', {
        message: 'What is your name?',
        schema: nameForm,
      })
      await ctx.startTask()
      return text(
        answer.action === 'accept'
          ? `Hello, ${answer.content.name}!`
          : `No name (${answer.action}).`
      )
    },
  }),
]
