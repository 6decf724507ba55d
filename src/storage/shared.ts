/**
 * @module storage/shared
 * What the three `NotesStore` adapters (`sql-store.ts` under node:sqlite and D1, `postgres.ts`) have in
 * common, written once so that they cannot drift apart: the check of imported note ids, tag
 * normalisation, paging checks, the budget of a purge, page building, which words of a search text
 * reach the query ({@link MAX_SEARCH_WORDS}), the mapping of a share-request row, the columns of the
 * `tasks` table with the mapping of a task record and of a patch onto them, the check of the cap on
 * live tasks, the checks of an import and of a bulk delete, and the outcomes and errors decided the
 * same way everywhere (what `deleteMany` and `delete` answer from the rows deleted,
 * `decideShareRequest`'s explanation of a miss, `publishShare`'s refusal, a session's record and
 * why a subscription was refused, the binding of a cap, {@link notMigrated}). The error classes
 * themselves live with the contract in `notes/store.ts`, so `instanceof` works whichever adapter
 * threw.
 *
 * Runtime-neutral: it is bundled into the Cloudflare Worker with the D1 adapter, so it imports nothing
 * from `node:*`, from a driver or from workers-types, only the store contracts and the note-id
 * pattern of `notes/limits.ts`. The SQLite
 * dialect (schema, statements) is `sql-store.ts`'s; PostgreSQL's is `postgres*.ts`'s.
 */

import type { LogLevel } from '../mcp/protocol.ts'
import {
  MAX_SUBSCRIPTIONS_PER_SESSION,
  type SessionRecord,
  type SubscribeOutcome,
} from '../mcp/session-store.ts'
import type { NewTask, TaskPatch, TaskRecord, TaskStatus } from '../mcp/task-store.ts'
import { NOTE_ID_PATTERN } from '../notes/limits.ts'
import {
  MAX_DELETE_NOTES,
  MAX_IMPORT_NOTES,
  ShareNotApprovedError,
  StoreNotMigratedError,
  type DecideOutcome,
  type NewNote,
  type Note,
  type OnceOutcome,
  type Page,
  type ShareRequest,
  type ShareStatus,
} from '../notes/store.ts'

/** Upper bound on the number of distinct words of a search text that reach the query. */
export const MAX_SEARCH_WORDS = 64

/**
 * `importNotes`'s precondition on every adapter: throws `RangeError` for more than
 * `MAX_IMPORT_NOTES` notes or an id that is not of the form `newNoteId` (`notes/note-id.ts`) mints.
 */
export function checkImport(notes: ReadonlyArray<NewNote & { id: string }>): void {
  if (notes.length > MAX_IMPORT_NOTES) {
    throw new RangeError(`at most ${MAX_IMPORT_NOTES} notes may be imported at once`)
  }
  for (const { id } of notes) {
    if (typeof id !== 'string' || !NOTE_ID_PATTERN.test(id)) {
      throw new RangeError('an imported note id must be n_ followed by 16 base64url characters')
    }
  }
}

/** `deleteMany`'s precondition on every adapter: throws `RangeError` for more than `MAX_DELETE_NOTES` ids. */
export function checkDeleteMany(ids: readonly string[]): void {
  if (ids.length > MAX_DELETE_NOTES) {
    throw new RangeError(`at most ${MAX_DELETE_NOTES} notes may be deleted at once`)
  }
}

/** What `deleteMany` answers: the ids of `ids` the database deleted, in their order, each once. */
export function deletedInOrder(ids: readonly string[], deleted: readonly string[]): string[] {
  const gone = new Set(deleted)
  return [...new Set(ids)].filter((id) => gone.has(id))
}

/** `delete` on every adapter: the `deleteMany` of its one id, answering whether it deleted it. */
export function oneDeleted(outcome: OnceOutcome<string[]>): OnceOutcome<boolean> {
  return outcome.kind === 'done' ? { kind: 'done', value: outcome.value.length > 0 } : outcome
}

/** Tags as stored: each once, sorted by code unit. */
export function sortedTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort()
}

/** Throws `RangeError` unless `offset` is a non-negative and `limit` a positive integer. */
export function checkPaging(offset: number, limit: number): void {
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError('offset must be a non-negative integer')
  }
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
}

/**
 * Throws `RangeError` unless `now` is a finite time and `limit` a positive integer (the arguments of
 * `purgeExpired` and `findRunnableTasks`).
 */
export function checkSweep(now: number, limit: number): void {
  if (!Number.isFinite(now)) throw new RangeError('now must be a finite number of milliseconds')
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
}

/**
 * `purgeExpired` on every adapter: checks its arguments (`RangeError` unless `now` is a finite time
 * and `limit` a positive integer), then runs the adapter's purges in order, each allowed what is left
 * of `limit`, until it is spent; answers how many rows they removed.
 */
export async function purgeWithin<Purge>(
  now: number,
  limit: number,
  purges: readonly Purge[],
  run: (purge: Purge, budget: number) => Promise<number>
): Promise<number> {
  checkSweep(now, limit)
  let removed = 0
  for (const purge of purges) {
    if (removed >= limit) break
    removed += await run(purge, limit - removed)
  }
  return removed
}

/**
 * One page from rows fetched with `LIMIT limit + 1`: the extra row only tells that another page
 * follows.
 */
export function toPage<Row>(
  rows: readonly Row[],
  offset: number,
  limit: number,
  toNote: (row: Row) => Note
): Page<Note> {
  const items = rows.slice(0, limit).map(toNote)
  return rows.length > limit ? { items, nextOffset: offset + limit } : { items }
}

/** Word tokens: runs of letters, digits and private-use characters (what FTS5's unicode61 indexes). */
const WORD = /[\p{L}\p{N}\p{Co}]+/gu

/** The words of a text, in order (see {@link WORD}). */
export function wordsOf(text: string): string[] {
  return text.match(WORD) ?? []
}

/**
 * The words of a search that reach the query, or `undefined` when there are none. Every word must
 * match and the last one is a prefix, so the last is kept as it is; the earlier ones are made distinct
 * (after `fold`) and only the first {@link MAX_SEARCH_WORDS} − 1 of them are kept, which bounds the cost
 * of a query.
 */
export function searchTerms(
  words: readonly string[],
  fold: (word: string) => string = (word) => word
): { earlier: string[]; last: string } | undefined {
  const last = words.at(-1)
  if (last === undefined) return undefined
  const earlier = [...new Set(words.slice(0, -1).map(fold))].slice(0, MAX_SEARCH_WORDS - 1)
  return { earlier, last }
}

/** A share-request row as every adapter selects it (times as the driver returns them). */
export interface ShareRow {
  id: string
  principal: string
  note_id: string
  status: ShareStatus
  expires_at: number | string
  link_id: string | null
}

/** A stored share request; `text` undoes the adapter's escaping of stored strings, if any. */
export function toShareRequest(
  row: ShareRow,
  text: (stored: string) => string = (stored) => stored
): ShareRequest {
  const request: ShareRequest = {
    id: text(row.id),
    principal: text(row.principal),
    noteId: text(row.note_id),
    status: row.status,
    expiresAt: Number(row.expires_at),
  }
  if (row.link_id !== null) request.linkId = text(row.link_id)
  return request
}

/** What `createShareRequest` answers once the request is stored. */
export function pendingShareRequest(
  request: Omit<ShareRequest, 'status' | 'linkId'>
): ShareRequest {
  return {
    id: request.id,
    principal: request.principal,
    noteId: request.noteId,
    status: 'pending',
    expiresAt: request.expiresAt,
  }
}

/**
 * Why `decideShareRequest`'s conditional update did not apply, from the share's status read after it
 * (`undefined`: no such share). The update was the decision; this only explains a miss.
 */
export function undecidedOutcome(status: ShareStatus | undefined): DecideOutcome {
  if (status === undefined) return 'not_found'
  return status === 'pending' ? 'expired' : 'already_decided'
}

/**
 * Throws {@link ShareNotApprovedError} unless `share` exists, belongs to `principal` and is approved
 * (`publishShare`'s precondition). Compare stored values: an adapter that escapes stored strings passes
 * the escaped principal.
 */
export function assertPublishable<Share extends { principal: string; status: ShareStatus }>(
  share: Share | undefined,
  principal: string
): asserts share is Share {
  if (share === undefined || share.principal !== principal || share.status !== 'approved') {
    throw new ShareNotApprovedError('share request is not an approved share of this principal')
  }
}

/** What `getSession` answers from a session's row as read (`undefined`: no live session). */
export function sessionRecord(row: { logLevel: unknown } | undefined): SessionRecord | undefined {
  if (row === undefined) return undefined
  return typeof row.logLevel === 'string' ? { logLevel: row.logLevel as LogLevel } : {}
}

/**
 * Why a conditional `addSubscription` added nothing, from what a read after it found: the number of
 * subscriptions the session holds and its principal's live sessions hold, or `undefined` when the
 * session is not live.
 */
export function subscribeRefusal(
  held: { session: number; principal: number } | undefined
): Exclude<SubscribeOutcome, 'subscribed'> {
  if (held === undefined) return 'no_session'
  return held.session >= MAX_SUBSCRIPTIONS_PER_SESSION
    ? { full: 'session', held: held.session }
    : { full: 'principal', held: held.principal }
}

/** A cap as the session statements bind it: `null` for no cap (`Infinity`). */
export function capParam(max: number): number | null {
  return Number.isFinite(max) ? max : null
}

/** The error of a store method called before `migrate()` or, when `closed`, after `close()`. */
export function notMigrated(closed: boolean): StoreNotMigratedError {
  return new StoreNotMigratedError(
    closed ? 'the store is closed' : 'call migrate() before using the store'
  )
}

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
