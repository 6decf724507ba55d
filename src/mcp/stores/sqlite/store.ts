/**
 * @module mcp/stores/sqlite/store
 * The engine's store of the SQLite dialect ({@link SqliteDialectEngineStore}), shared by the
 * node:sqlite adapter (`../../sqlite.ts`) and the D1 adapter (`../../d1.ts`): both are thin
 * {@link SqliteDriver}s, which differ only in how a statement reaches the database (a synchronous call
 * in this process, grouped into one commit per turn; an RPC to D1). Runtime-neutral: the Worker
 * bundles it, so it imports no `node:*` module and no driver.
 *
 * Made of one module per port (`common/store-class.ts`): `sessions.ts` (`SessionStore`),
 * `streams.ts` (`StreamStore`), `tasks.ts` (`TaskStore`), and here the purge of expired rows (session
 * rows, tasks, stream records and events at their own expiry). The schema is `schema.ts`'s, in code;
 * every statement is `statements.ts`'s.
 *
 * Atomicity is reached the way D1 allows, which is also correct on node:sqlite: D1 has no interactive
 * transaction, only single statements and `batch()` (one transaction, all or nothing, nothing read in
 * between). So every check-and-set (input slot, task or stream version, the caps on live tasks,
 * stream records and subscriptions) is one conditional statement whose outcome is read from
 * `RETURNING` or its change count, and a follow-up read only explains a miss, never decides; a
 * session created at its principal's cap is one batch that ends the oldest and inserts.
 *
 * Errors: `StoreNotMigratedError` before `migrate()` or after `close()`, `RangeError` for invalid
 * caps, purge or runnable-task limits; database failures propagate as the driver throws them.
 */
import { storeClass, type PortMethods } from '../common/store-class.ts'
import { purgeWithin } from '../common/sweeps.ts'
import type { EngineStore } from '../engine-store.ts'
import type { SqliteDriver } from './driver.ts'
import { ENGINE_SQLITE_SCHEMA, SqliteSchemaConnection } from './schema.ts'
import { sessionMethods } from './sessions.ts'
import { PURGES } from './statements.ts'
import { streamMethods } from './streams.ts'
import { taskMethods } from './tasks.ts'

/** The driver's lifecycle: `migrate` brings the engine's tables up to date, `close` releases it. */
class SqliteConnection extends SqliteSchemaConnection {
  protected readonly schema = ENGINE_SQLITE_SCHEMA
}

const sweepMethods: PortMethods<Pick<EngineStore, 'purgeExpired'>, SqliteDriver> = {
  async purgeExpired(now, limit) {
    const db = this.db
    return purgeWithin(now, limit, PURGES, (sql, budget) => db.run(sql, [now, budget]))
  },
}

/**
 * The SQLite-dialect `EngineStore` over a driver: `new SqliteDialectEngineStore(driver, owned)`;
 * `owned` (default true): whether `close()` closes the driver (false when other stores share it).
 */
export const SqliteDialectEngineStore = storeClass<
  EngineStore,
  [driver: SqliteDriver, owned?: boolean],
  SqliteDriver
>(SqliteConnection, {
  ...sessionMethods,
  ...streamMethods,
  ...taskMethods,
  ...sweepMethods,
})
