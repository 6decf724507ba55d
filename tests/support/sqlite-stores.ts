/**
 * @module tests/support/sqlite-stores
 * The two stores of an in-process test server ({@link sqliteStores}): the notes store and the
 * engine's store of one SQLite database (a private in-memory one unless a file is given) on one
 * connection, migrated, as a replica opens them (`storage/sqlite.ts`); and both as one object
 * ({@link bothStores}) for the adapter tests.
 */
import { NodeSqliteDriver, SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { bothOf, type BothStores } from './both-stores.ts'

export type { BothStores } from './both-stores.ts'

export interface TestStores {
  /** The notes store (`AppDeps.store`). */
  store: SqliteNotesStore
  /** The engine's store (`AppDeps.engineStore`). */
  engineStore: SqliteEngineStore
  /** Closes both stores, then the connection. */
  close: () => Promise<void>
}

/** Both stores of the database at `path` (default: a private in-memory one), migrated. */
export async function sqliteStores(path = ':memory:'): Promise<TestStores> {
  const driver = new NodeSqliteDriver({ path })
  const store = new SqliteNotesStore({ driver })
  const engineStore = new SqliteEngineStore({ driver })
  await store.migrate()
  await engineStore.migrate()
  return {
    store,
    engineStore,
    close: async () => {
      await Promise.all([store.close(), engineStore.close()])
      await driver.close()
    },
  }
}

/** Both stores of the database at `path` on one connection, migrated, as one object (`both-stores.ts`). */
export async function bothStores(path: string): Promise<BothStores> {
  const stores = await sqliteStores(path)
  return bothOf(stores.store, stores.engineStore, stores.close)
}
