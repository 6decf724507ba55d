/**
 * @module mcp/stores/postgres/tasks
 * The `TaskStore` methods of the PostgreSQL store ({@link taskMethods}): task records, created under
 * the cap on live tasks (counted under a per-principal advisory lock, {@link TASK_CAP_LOCK_CLASS}, in
 * the transaction that inserts), changed by compare-and-set on their version, and the runnable ones
 * found for a sweep. The task statements are built once from the column lists of `common/tasks.ts`.
 */
import type { Sql, TransactionSql } from 'postgres'
import { positiveWholeNumber } from '../../options.ts'
import type { TaskStore } from '../../task-store.ts'
import { insertedRow, type PortMethods } from '../common/store-class.ts'
import { checkSweep } from '../common/sweeps.ts'
import { fieldValues, patchAssignments, patchValues } from '../common/columns.ts'
import {
  NEW_TASK_FIELDS,
  TASK_COLUMNS,
  TASK_PATCH_COLUMNS,
  toTaskRecord,
  type TaskRow,
} from '../common/tasks.ts'
import { patchParams, pgPlaceholder } from './patch.ts'
import { dec, enc, encValue } from './text.ts'

/** First key of the lock that serialises `createTask`s of one principal (the second: its hash). */
const TASK_CAP_LOCK_CLASS = 0x6e6d7461 // "nmta"

/**
 * The task statements, built once from the column lists of `common/tasks.ts` (run with `unsafe`: the
 * text is these constants only, every value is a bound parameter). `TASK_GET` binds the id;
 * `TASK_INSERT` binds `NEW_TASK_FIELDS` as $1, $2…; `TASK_UPDATE` binds the id ($1), the expected
 * version ($2), then for each column of `TASK_PATCH_COLUMNS` whether to set it and the value.
 */
const TASK_SELECT = Object.values(TASK_COLUMNS).join(', ')
const TASK_INSERT = `
  INSERT INTO tasks (${NEW_TASK_FIELDS.map((field) => TASK_COLUMNS[field]).join(', ')})
  VALUES (${NEW_TASK_FIELDS.map((_, i) => `$${i + 1}`).join(', ')})
  RETURNING ${TASK_SELECT}`
const TASK_UPDATE = `
  UPDATE tasks SET
    ${patchAssignments(Object.values(TASK_PATCH_COLUMNS), 3, pgPlaceholder)},
    version = version + 1
  WHERE id = $1 AND version = $2
  RETURNING ${TASK_SELECT}`
/** The read behind every `tasks/get` poll. */
const TASK_GET = `SELECT ${TASK_SELECT} FROM tasks WHERE id = $1`

export const taskMethods: PortMethods<TaskStore, Sql> = {
  async createTask(task, maxLive) {
    const sql = this.db
    positiveWholeNumber('maxLive', maxLive)
    const values = fieldValues(NEW_TASK_FIELDS, task).map(encValue)
    const principal = enc(task.principal)
    return sql.begin(async (tx) => {
      // Creations of one principal are serialised, and the count runs after the lock is held (its
      // own snapshot), so it sees every task another replica stored before: none can take the last
      // place twice.
      await tx`SELECT pg_advisory_xact_lock(${TASK_CAP_LOCK_CLASS}, hashtext(${principal}))`
      if ((await countLive(tx, principal, task.createdAt)) >= maxLive) return undefined
      const [row] = await tx.unsafe<TaskRow[]>(TASK_INSERT, values, { prepare: true })
      return toTaskRecord(insertedRow(row), dec)
    })
  },

  async countLiveTasks(principal, now) {
    return countLive(this.db, enc(principal), now)
  },

  async getTask(id) {
    const [row] = await this.db.unsafe<TaskRow[]>(TASK_GET, [enc(id)], { prepare: true })
    return row === undefined ? undefined : toTaskRecord(row, dec)
  },

  async updateTask(id, expectedVersion, patch) {
    const sql = this.db
    // A version that is not an integer matches no stored version; it must not reach the bigint column.
    if (!Number.isSafeInteger(expectedVersion)) return undefined
    const values = patchParams(patchValues(TASK_PATCH_COLUMNS, patch))
    const [row] = await sql.unsafe<TaskRow[]>(TASK_UPDATE, [enc(id), expectedVersion, ...values], {
      prepare: true,
    })
    return row === undefined ? undefined : toTaskRecord(row, dec)
  },

  async findRunnableTasks(now, limit) {
    const sql = this.db
    checkSweep(now, limit)
    // The condition and order of the partial index tasks_runnable, which answers it alone.
    const rows = await sql<Array<{ id: string }>>`
      SELECT id FROM tasks
      WHERE status = 'working' AND coalesce(lease_expires_at, 0) <= ${now} AND expires_at > ${now}
      ORDER BY coalesce(lease_expires_at, 0), expires_at, id LIMIT ${limit}`
    return rows.map((row) => dec(row.id))
  },
}

/** The live tasks (unexpired at `now`) of a principal, given escaped (`enc`). */
async function countLive(
  sql: Sql | TransactionSql,
  principal: string,
  now: number
): Promise<number> {
  const [row] = await sql<Array<{ live: number }>>`
    SELECT count(*)::integer AS live FROM tasks WHERE principal = ${principal} AND expires_at > ${now}`
  return row?.live ?? 0
}
