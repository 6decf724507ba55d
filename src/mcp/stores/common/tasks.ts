/**
 * @module mcp/stores/common/tasks
 * The `tasks` table as both dialects see it, written once so that their statements cannot drift
 * apart: every field of a task record and its column ({@link TASK_COLUMNS}), the columns `updateTask`
 * may change ({@link TASK_PATCH_COLUMNS}, in the order its statement binds them), the fields
 * `createTask` binds ({@link NEW_TASK_FIELDS}), and a record read from its row ({@link toTaskRecord});
 * what a new task and a patch bind is `columns.ts`'s `fieldValues` and `patchValues` over these
 * lists. Each dialect builds its task statements from them, once (`sqlite/statements.ts`,
 * `postgres/tasks.ts`). Runtime-neutral: only the engine's `TaskStore` contract.
 */
import type { NewTask, TaskPatch, TaskRecord, TaskStatus } from '../../task-store.ts'
import {
  columnReaders,
  insertedFields,
  versionedColumns,
  withoutAbsent,
  type ColumnRow,
} from './columns.ts'

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
export const TASK_COLUMNS = versionedColumns(
  TASK_FIXED_COLUMNS,
  TASK_PATCH_COLUMNS
) satisfies Record<keyof TaskRecord, string>

/** A `tasks` row as selected (integers and flags as the driver returns them). */
export type TaskRow = ColumnRow<typeof TASK_COLUMNS>

/** The fields `createTask` binds, in order; a new record starts at version 1, not cancelled. */
export const NEW_TASK_FIELDS: Array<keyof NewTask> = insertedFields(TASK_COLUMNS, [
  'cancelRequested',
])

/**
 * A stored task record; `text` undoes the adapter's escaping of stored strings, if any. NULL columns
 * are absent fields.
 */
export function toTaskRecord(row: TaskRow, text?: (stored: string) => string): TaskRecord {
  const read = columnReaders(text)
  return withoutAbsent<TaskRecord>({
    id: read.text(row.id),
    owner: read.text(row.owner),
    principal: read.text(row.principal),
    tool: read.text(row.tool),
    args: read.text(row.args),
    status: row.status as TaskStatus,
    statusMessage: read.optionalText(row.status_message),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    expiresAt: Number(row.expires_at),
    pollIntervalMs: Number(row.poll_interval_ms),
    journal: read.text(row.journal),
    inputRequests: read.optionalText(row.input_requests),
    inputResponses: read.optionalText(row.input_responses),
    result: read.optionalText(row.result),
    error: read.optionalText(row.error),
    cancelRequested: read.flag(row.cancel_requested),
    leaseOwner: read.optionalText(row.lease_owner),
    leaseExpiresAt: read.optionalNumber(row.lease_expires_at),
    version: Number(row.version),
  })
}
