/**
 * @module mcp/tasks/wire
 * The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) as the wire sees it: whether a
 * request declared it, the -32021 answered when it did not, the params of `tasks/get`,
 * `tasks/update` and `tasks/cancel`, task ids, and the shapes built from a stored record: the flat
 * `CreateTaskResult` (`resultType: "task"`) and the detailed task of `tasks/get` (its `inputRequests`,
 * `result` or `error` by status; never a `requestState`). Also the one not-found error every
 * unknown, expired or other principal's task answers, so a caller cannot tell them apart.
 *
 * What the engine stores in a record's JSON fields is `record.ts`'s business; this module only reads
 * the ones the wire shows. Runtime-neutral.
 */
import * as z from 'zod'
import { ErrorCode, McpError } from '../errors.ts'
import { TASKS_EXTENSION } from '../protocol.ts'
import { randomBase64url } from '../random.ts'
import type { TaskRecord } from '../task-store.ts'
import type { ClientCapabilities, JsonObject } from '../wire.ts'

/** Random bytes in a task id: 192 bits, 32 base64url characters (header-safe, no sentinel needed). */
const TASK_ID_BYTES = 24
/** Longest `taskId` a request may name; real ids are 32 characters. */
const MAX_TASK_ID_CHARS = 128

/** A fresh, unguessable task id. */
export function newTaskId(): string {
  return randomBase64url(TASK_ID_BYTES)
}

/** Whether this request's own `_meta` client capabilities declare the tasks extension. */
export function declaresTasks(capabilities: ClientCapabilities): boolean {
  const declared = capabilities.extensions?.[TASKS_EXTENSION]
  return typeof declared === 'object' && declared !== null
}

/** The -32021 of a request that needs the tasks extension but did not declare it. */
export function tasksCapabilityMissing(what: string): McpError {
  return new McpError(
    ErrorCode.MissingRequiredClientCapability,
    `Missing required client capability: ${what} needs the ${TASKS_EXTENSION} extension declared in the request's client capabilities.`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } }
  )
}

/** Unknown, expired, purged and other principals' tasks all answer exactly this. */
export function taskNotFound(): McpError {
  return new McpError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found')
}

const taskId = z.string().min(1).max(MAX_TASK_ID_CHARS)

export const TaskIdParamsSchema = z.looseObject({ taskId })

export const UpdateTaskParamsSchema = z.looseObject({
  taskId,
  inputResponses: z.record(z.string(), z.unknown()),
})

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

/** The `Task` fields every task result carries. */
function taskFields(record: TaskRecord): JsonObject {
  const task: JsonObject = {
    taskId: record.id,
    status: record.status,
  }
  if (record.statusMessage !== undefined) task.statusMessage = record.statusMessage
  task.createdAt = iso(record.createdAt)
  task.lastUpdatedAt = iso(record.updatedAt)
  task.ttlMs = record.expiresAt - record.createdAt
  task.pollIntervalMs = record.pollIntervalMs
  return task
}

/** The flat `CreateTaskResult` answered to the `tools/call` that created `record`. */
export function createTaskResult(record: TaskRecord): JsonObject {
  return { resultType: 'task', ...taskFields(record) }
}

/**
 * The detailed task of `tasks/get`: every outstanding input request while `input_required`, the
 * tool's result once `completed` (an `isError` result included), the JSON-RPC error once `failed`.
 */
export function detailedTask(record: TaskRecord): JsonObject {
  const task = taskFields(record)
  if (record.status === 'input_required' && record.inputRequests !== undefined)
    task.inputRequests = JSON.parse(record.inputRequests)
  else if (record.status === 'completed' && record.result !== undefined)
    task.result = JSON.parse(record.result)
  else if (record.status === 'failed' && record.error !== undefined)
    task.error = JSON.parse(record.error)
  return task
}
