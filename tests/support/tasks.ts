/**
 * @module tests/support/tasks
 * What the tasks tests share (tests/unit/tasks-*.test.ts in-process, tests/e2e/tasks-*.test.ts over
 * HTTP, tests/workers/ in workerd): the client capabilities that declare the tasks extension, one
 * request to a server process, a task stored for a runner that was never handed it, a task runner
 * driven by hand, and waiting for a task to reach a state by polling `tasks/get` as a
 * client does, bounded without asserting anything about timing.
 */
import { TASKS_EXTENSION } from '../../src/mcp/protocol.ts'
import {
  DEFAULT_MAX_TASK_JOURNAL_CHARS,
  DEFAULT_TASK_RESULT_TTL_MS,
} from '../../src/mcp/tasks/options.ts'
import type { TaskStore } from '../../src/mcp/task-store.ts'
import { writeCall, writeJournal } from '../../src/mcp/tasks/record.ts'
import { TaskRunner, type TaskRunnerOptions } from '../../src/mcp/tasks/runner.ts'
import { newTaskId } from '../../src/mcp/tasks/wire.ts'
import { expectResult, mcpInit, type JsonObject } from './mcp-request.ts'
import { storeTask } from './store-contract.ts'

/** `_meta` client capabilities that declare the tasks extension (and nothing else). */
export const TASKS = { extensions: { [TASKS_EXTENSION]: {} } }
/** The tasks extension and form elicitation. */
export const TASKS_AND_FORMS = { elicitation: {}, ...TASKS }

/**
 * Stores a task of the local principal calling `tool` with `args` that needs a runner and was never
 * handed to one (a minute to live); answers its id.
 */
export async function unscheduledTask(
  store: Pick<TaskStore, 'createTask'>,
  tool: string,
  args: JsonObject
): Promise<string> {
  const now = Date.now()
  const taskId = newTaskId()
  await storeTask(store, {
    id: taskId,
    owner: 'local',
    principal: 'local',
    tool,
    args: writeCall({ arguments: args, principal: 'local', capabilities: TASKS }),
    status: 'working',
    createdAt: now,
    updatedAt: now,
    expiresAt: now + 60_000,
    pollIntervalMs: 1_000,
    journal: writeJournal({ replay: {}, issued: {} }),
  })
  return taskId
}

/** One request to the MCP endpoint at `url` over HTTP; answers its result (asserting success). */
export async function rpcAt(
  url: string,
  method: string,
  params: JsonObject,
  capabilities: object,
  id: number
): Promise<JsonObject> {
  const init = mcpInit(method, { id, params, capabilities })
  const headers = new Headers(init.headers)
  // fetch sets these itself, from the URL and the body.
  headers.delete('host')
  headers.delete('content-length')
  return expectResult(await fetch(url, { ...init, headers }), id)
}

/**
 * The task runner of a lone replica (`solo`, the owner its leases name) over `store`, with the
 * engine's default bounds, for a test that launches or runs stored tasks itself.
 */
export function soloTaskRunner<Deps>(
  options: Pick<TaskRunnerOptions<Deps>, 'server' | 'deps' | 'store' | 'logger'>
): TaskRunner<Deps> {
  return new TaskRunner({
    ...options,
    owner: 'solo',
    leaseMs: 10_000,
    maxRunningTasks: 4,
    maxJournalChars: DEFAULT_MAX_TASK_JOURNAL_CHARS,
    resultTtlMs: DEFAULT_TASK_RESULT_TTL_MS,
    now: Date.now,
  })
}

/** How long a test waits for a task to get where it should before it fails. */
const TASK_WAIT_MS = 30_000

/**
 * Reads the task (`read` answers the `tasks/get` result) until `reached` holds, and answers that
 * read; fails naming `what` and the last status seen after `ms`.
 */
export async function waitForTask(
  read: () => Promise<JsonObject>,
  reached: (task: JsonObject) => boolean,
  what: string,
  { ms = TASK_WAIT_MS, everyMs = 10 }: { ms?: number; everyMs?: number } = {}
): Promise<JsonObject> {
  const deadline = Date.now() + ms
  let task = await read()
  while (!reached(task)) {
    if (Date.now() > deadline)
      throw new Error(`waited ${ms} ms for ${what}; the task is ${JSON.stringify(task)}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
    task = await read()
  }
  return task
}

/** Whether a task has reached a terminal status. */
export function isTerminal(task: JsonObject): boolean {
  return ['completed', 'failed', 'cancelled'].includes(task.status)
}
