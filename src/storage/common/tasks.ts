/**
 * @module storage/common/tasks
 * The `tasks` table as both dialects see it, written once so that their statements cannot drift
 * apart: every field of a task record and its column ({@link TASK_COLUMNS}), the columns `updateTask`
 * may change ({@link TASK_PATCH_COLUMNS}, in the order its statement binds them), the fields
 * `createTask` binds ({@link NEW_TASK_FIELDS}), and the mapping of a record, a new task and a patch
 * onto them. Each dialect builds its task statements from these lists, once (`sqlite/statements.ts`,
 * `postgres/tasks.ts`). Runtime-neutral: only the engine's `TaskStore` contract.
 */
import type { NewTask, TaskPatch, TaskRecord, TaskStatus } from '../../mcp/task-store.ts'

/** The columns of `tasks` that `createTask` writes and `updateTask` never changes. */
const TASK_FIXED_COLUMNS = {
  id: 'id',
  owner: 'owner',
  principal: 'principal',
  tool: 'tool',
  args: 'args',
  createdAt: 'created_at',
} as const satisfies Record<Exclude<keyof NewTask, keyof TaskPatch>, string>

/** The columns `updateTask` may change, in the order its statement binds them on every adapter. */
export const TASK_PATCH_COLUMNS = {
  status: 'status',
  statusMessage: 'status_message',
  updatedAt: 'updated_at',
  expiresAt: 'expires_at',
  pollIntervalMs: 'poll_interval_ms',
  journal: 'journal',
  inputRequests: 'input_requests',
  inputResponses: 'input_responses',
  result: 'result',
  error: 'error',
  cancelRequested: 'cancel_requested',
  leaseOwner: 'lease_owner',
  leaseExpiresAt: 'lease_expires_at',
} as const satisfies Record<keyof TaskPatch, string>

/** Every field of a task record and its column of `tasks` (the same names on every adapter). */
export const TASK_COLUMNS = {
  ...TASK_FIXED_COLUMNS,
  ...TASK_PATCH_COLUMNS,
  version: 'version',
} as const satisfies Record<keyof TaskRecord, string>

export type TaskColumn = (typeof TASK_COLUMNS)[keyof TaskRecord]

/** A `tasks` row as selected (integers and flags as the driver returns them). */
export type TaskRow = Record<TaskColumn, string | number | boolean | null>

/** The fields `createTask` binds, in order; a new record starts at version 1, not cancelled. */
export const NEW_TASK_FIELDS = (Object.keys(TASK_COLUMNS) as Array<keyof TaskRecord>).filter(
  (field): field is keyof NewTask => field !== 'version' && field !== 'cancelRequested'
)

/** What `createTask` binds for {@link NEW_TASK_FIELDS}: an absent optional field is NULL. */
export function newTaskValues(task: NewTask): Array<string | number | null> {
  return NEW_TASK_FIELDS.map((field) => task[field] ?? null)
}

/**
 * What `updateTask` binds for each of {@link TASK_PATCH_COLUMNS}, in order: whether the patch sets
 * the column (a field left `undefined` keeps it), and the value (`null` clears an optional field).
 */
export function taskPatchValues(
  patch: TaskPatch
): Array<[set: boolean, value: string | number | boolean | null]> {
  return (Object.keys(TASK_PATCH_COLUMNS) as Array<keyof TaskPatch>).map((field) => {
    const value = patch[field]
    return [value !== undefined, value ?? null]
  })
}

/**
 * A stored task record; `text` undoes the adapter's escaping of stored strings, if any. NULL columns
 * are absent fields.
 */
export function toTaskRecord(
  row: TaskRow,
  text: (stored: string) => string = (stored) => stored
): TaskRecord {
  const str = (value: TaskRow[TaskColumn]) => text(String(value))
  const optionalStr = (value: TaskRow[TaskColumn]) => (value === null ? undefined : str(value))
  const record: TaskRecord = {
    id: str(row.id),
    owner: str(row.owner),
    principal: str(row.principal),
    tool: str(row.tool),
    args: str(row.args),
    status: row.status as TaskStatus,
    statusMessage: optionalStr(row.status_message),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    expiresAt: Number(row.expires_at),
    pollIntervalMs: Number(row.poll_interval_ms),
    journal: str(row.journal),
    inputRequests: optionalStr(row.input_requests),
    inputResponses: optionalStr(row.input_responses),
    result: optionalStr(row.result),
    error: optionalStr(row.error),
    cancelRequested: row.cancel_requested === true || row.cancel_requested === 1,
    leaseOwner: optionalStr(row.lease_owner),
    leaseExpiresAt: row.lease_expires_at === null ? undefined : Number(row.lease_expires_at),
    version: Number(row.version),
  }
  // Absent, not present as `undefined`: the record compares equal to the one the engine built.
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined)
  ) as TaskRecord
}
