/**
 * @module storage/sqlite/store
 * The one `NotesStore` of the SQLite dialect ({@link SqliteDialectStore}), shared by the node:sqlite
 * adapter (`storage/sqlite.ts`) and the D1 adapter (`storage/d1.ts`): both are thin
 * {@link SqliteDriver}s, which differ only in how a statement reaches the database (a synchronous call
 * in this process, an RPC to D1) and in who owns the schema (node:sqlite applies the migration files
 * itself; on D1 wrangler applies them and the driver only checks). Runtime-neutral: the Worker bundles
 * it, so it imports no `node:*` module and no driver.
 *
 * Made of one module per port (`storage/common/store-class.ts`): `notes.ts`, `shares.ts`,
 * `sessions.ts` (what 2025-era sessions need, `SessionStore`), `streams.ts` (their resumable streams,
 * `StreamStore`), `tasks.ts` (`TaskStore`), and here the purge of expired rows, which sweeps every
 * table (spent once-keys and unpublished share requests `REPLAY_RETENTION_MS` after their last use,
 * session rows, tasks, stream records and events at their own expiry). Schema, one
 * source of truth: the SQL files under `migrations/` (`SQLITE_MIGRATIONS`), which wrangler applies to
 * D1 and the node:sqlite driver reads and applies (files, not a TypeScript module, because wrangler
 * needs them on disk anyway); every statement is `statements.ts`'s.
 *
 * Atomicity is reached the way D1 allows, which is also correct on node:sqlite: D1 has no
 * interactive transaction, only single statements and `batch()` (one transaction, all or nothing,
 * nothing read in between). So every check-and-set (note version, share status, input slot, task
 * version, the live-task cap, the cap on subscriptions) is one conditional statement whose outcome
 * is read from `RETURNING` or its change count, and a follow-up read only explains a miss, never
 * decides. A single-use key is spent in a batch that inserts `(once_key, claim)` with a fresh random
 * claim (`ON CONFLICT DO NOTHING`); the later statements of the same batch act only where that claim
 * is found, i.e. only when this call spent the key.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, wording of errors,
 * generation of share-request, link and single-use key ids (the notes application) and of task ids
 * (the engine). It generates note ids itself (imported notes come with theirs). Errors:
 * `ShareNotApprovedError` from `publishShare`, `StoreNotMigratedError` before `migrate()` or after
 * `close()`, `RangeError` for invalid paging, purge or runnable-task limits and refused imports;
 * database failures propagate as the driver throws them.
 */
import type { NotesStore } from '../../notes/store.ts'
import { StoreConnection, storeClass, type PortMethods } from '../common/store-class.ts'
import { purgeWithin } from '../common/sweeps.ts'
import type { SqliteDriver } from './driver.ts'
import { noteMethods } from './notes.ts'
import { sessionMethods } from './sessions.ts'
import { shareMethods } from './shares.ts'
import { streamMethods } from './streams.ts'
import { PURGES } from './statements.ts'
import { taskMethods } from './tasks.ts'

/** The driver's lifecycle: its `migrate` prepares the schema, its `close` releases the database. */
class SqliteConnection extends StoreConnection<SqliteDriver> {
  protected prepare(driver: SqliteDriver): Promise<void> {
    return driver.migrate()
  }

  protected release(driver: SqliteDriver): Promise<void> {
    return driver.close()
  }
}

const sweepMethods: PortMethods<Pick<NotesStore, 'purgeExpired'>, SqliteDriver> = {
  async purgeExpired(now, limit) {
    const db = this.db
    return purgeWithin(now, limit, PURGES, ({ sql, cutoff }, budget) =>
      db.run(sql, [cutoff(now), budget])
    )
  },
}

/** The SQLite-dialect `NotesStore` over a driver: `new SqliteDialectStore(driver)`. */
export const SqliteDialectStore = storeClass(SqliteConnection, {
  ...noteMethods,
  ...shareMethods,
  ...sessionMethods,
  ...streamMethods,
  ...taskMethods,
  ...sweepMethods,
})
