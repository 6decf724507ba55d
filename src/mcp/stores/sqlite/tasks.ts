/**
 * @module mcp/stores/sqlite/tasks
 * The `TaskStore` methods of the SQLite-dialect store ({@link taskMethods}): task records, created
 * under the cap on live tasks in the one conditional insert that stores them, changed by
 * compare-and-set on their version, and the runnable ones found for a sweep. The statements are
 * built from the column lists of `common/tasks.ts` (`statements.ts`).
 */
import { positiveWholeNumber } from '../../options.ts'
import type { TaskStore } from '../../task-store.ts'
import type { PortMethods } from '../common/store-class.ts'
import { checkSweep } from '../common/sweeps.ts'
import { fieldValues, patchValues } from '../common/columns.ts'
import { NEW_TASK_FIELDS, TASK_PATCH_COLUMNS, toTaskRecord, type TaskRow } from '../common/tasks.ts'
import type { SqliteDriver } from './driver.ts'
import { patchParams, SQL } from './statements.ts'

export const taskMethods: PortMethods<TaskStore, SqliteDriver> = {
  async createTask(task, maxLive) {
    const db = this.db
    positiveWholeNumber('maxLive', maxLive)
    const row = await db.get(SQL.insertTask, [...fieldValues(NEW_TASK_FIELDS, task), maxLive])
    return row === undefined ? undefined : toTaskRecord(row as TaskRow)
  },

  async countLiveTasks(principal, now) {
    const row = await this.db.get(SQL.countLiveTasks, [principal, now])
    return Number(row?.live ?? 0)
  },

  async getTask(id) {
    const row = await this.db.get(SQL.getTask, [id])
    return row === undefined ? undefined : toTaskRecord(row as TaskRow)
  },

  async updateTask(id, expectedVersion, patch) {
    const params = [id, expectedVersion, ...patchParams(patchValues(TASK_PATCH_COLUMNS, patch))]
    const row = await this.db.get(SQL.updateTask, params)
    return row === undefined ? undefined : toTaskRecord(row as TaskRow)
  },

  async findRunnableTasks(now, limit) {
    const db = this.db
    checkSweep(now, limit)
    const rows = await db.all(SQL.findRunnableTasks, [now, limit])
    return rows.map((row) => String(row.id))
  },
}
