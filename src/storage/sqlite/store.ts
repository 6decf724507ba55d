/**
 * @module storage/sqlite/store
 * The one `NotesStore` of the SQLite dialect ({@link SqliteDialectStore}), shared by the node:sqlite
 * adapter (`storage/sqlite.ts`) and the D1 adapter (`storage/d1.ts`): both reach the database through
 * the engine's SQLite drivers (`stateless-mcp/sqlite`, `stateless-mcp/d1`), which differ only in how
 * a statement reaches it (a synchronous call in this process, an RPC to D1). The engine's own tables
 * (sessions, streams, tasks) are the engine store's, on the same driver. Runtime-neutral: the Worker
 * bundles it, so it imports no `node:*` module and no driver.
 *
 * Made of one module per port (the engine's `common/store-class.ts`): `notes.ts`, `shares.ts`, and
 * here the purge of expired rows (spent once-keys and unpublished share requests
 * `REPLAY_RETENTION_MS` after their last use). Schema: `schema.ts`'s, in code, on node:sqlite; on D1
 * the files under `migrations/`, which wrangler applies (`storage/d1.ts` checks). Every statement is
 * `statements.ts`'s.
 *
 * Atomicity is reached the way D1 allows, which is also correct on node:sqlite: D1 has no
 * interactive transaction, only single statements and `batch()` (one transaction, all or nothing,
 * nothing read in between). So every check-and-set (note version, share status) is one conditional
 * statement whose outcome is read from `RETURNING` or its change count, and a follow-up read only
 * explains a miss, never decides. A single-use key is spent in a batch that inserts
 * `(once_key, claim)` with a fresh random claim (`ON CONFLICT DO NOTHING`); the later statements of
 * the same batch act only where that claim is found, i.e. only when this call spent the key.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, wording of errors,
 * generation of share-request, link and single-use key ids (the notes application). It generates note
 * ids itself (imported notes come with theirs). Errors: `ShareNotApprovedError` from `publishShare`,
 * `StoreNotMigratedError` before `migrate()` or after `close()`, `RangeError` for invalid paging,
 * purge limits and refused imports; database failures propagate as the driver throws them.
 */
import type { SqliteDriver } from 'stateless-mcp/sqlite'
import {
  type PortMethods,
  purgeWithin,
  SqliteSchemaConnection,
  storeClass,
} from 'stateless-mcp/compose'
import type { NotesStore } from '../../notes/store.ts'
import { noteMethods } from './notes.ts'
import { NOTES_SQLITE_SCHEMA } from './schema.ts'
import { shareMethods } from './shares.ts'
import { PURGES } from './statements.ts'

/** The driver's lifecycle: `migrate` brings the notes tables up to date, `close` releases it. */
export class SqliteConnection extends SqliteSchemaConnection {
  protected readonly schema = NOTES_SQLITE_SCHEMA
}

const sweepMethods: PortMethods<Pick<NotesStore, 'purgeExpired'>, SqliteDriver> = {
  async purgeExpired(now, limit) {
    const db = this.db
    return purgeWithin(now, limit, PURGES, ({ sql, cutoff }, budget) =>
      db.run(sql, [cutoff(now), budget])
    )
  },
}

/** The SQLite-dialect port methods of `NotesStore`, for a connection class to carry. */
export const SQLITE_NOTES_METHODS = { ...noteMethods, ...shareMethods, ...sweepMethods }

/**
 * The SQLite-dialect `NotesStore` over a driver: `new SqliteDialectStore(driver, owned)`; `owned`
 * (default true): whether `close()` closes the driver (false when the engine's store shares it).
 */
export const SqliteDialectStore = storeClass<
  NotesStore,
  [driver: SqliteDriver, owned?: boolean],
  SqliteDriver
>(SqliteConnection, SQLITE_NOTES_METHODS)
