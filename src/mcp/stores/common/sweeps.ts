/**
 * @module mcp/stores/common/sweeps
 * The arguments of the two sweeps every adapter runs over its tables, checked the same way
 * ({@link checkSweep}: `purgeExpired` and `findRunnableTasks`), and the budget of a purge
 * ({@link purgeWithin}: the adapter's purges in order, each allowed what is left). Runtime-neutral.
 */

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
 * of `limit`, until it is spent; answers how many rows they removed. Use it to write the
 * `purgeExpired` of an application's own store.
 *
 * @example
 * ```ts
 * import type { SqliteDriver } from 'stateless-mcp/sqlite'
 * import { purgeWithin, type PortMethods } from 'stateless-mcp/compose'
 *
 * const PURGES = [
 *   'DELETE FROM drafts WHERE rowid IN (SELECT rowid FROM drafts WHERE expires_at <= ? LIMIT ?)',
 *   'DELETE FROM visits WHERE rowid IN (SELECT rowid FROM visits WHERE expires_at <= ? LIMIT ?)',
 * ]
 *
 * type Sweeps = { purgeExpired(now: number, limit: number): Promise<number> }
 * const sweepMethods: PortMethods<Sweeps, SqliteDriver> = {
 *   async purgeExpired(now, limit) {
 *     const db = this.db
 *     return purgeWithin(now, limit, PURGES, (sql, budget) => db.run(sql, [now, budget]))
 *   },
 * }
 * ```
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
