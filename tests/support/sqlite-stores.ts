/**
 * @module tests/support/sqlite-stores
 * The two stores of an in-process test server ({@link sqliteStores}): the notes store and the
 * engine's store of one SQLite database (a private in-memory one unless a file is given) on one
 * connection, migrated, as a replica opens them (`storage/sqlite.ts`); and both as one object
 * ({@link bothStores}) for the adapter tests.
 */
import { NodeSqliteDriver, SqliteEngineStore, type EngineStore } from '../../src/mcp/sqlite.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'

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

/** The notes store and the engine's store as one object, for tests that call both on one file. */
export type BothStores = NotesStore & EngineStore

/**
 * Both stores of the database at `path` on one connection, migrated, as one object: each method is
 * the notes store's when it has it, else the engine's; `migrate()` migrates both (the notes first,
 * as a replica does), `purgeExpired` spends one budget on the notes' rows, then the engine's, and
 * `close()` closes both and the connection. For the adapter tests, whose
 * races and file checks cross both stores' tables.
 */
export async function bothStores(path: string): Promise<BothStores> {
  const stores = await sqliteStores(path)
  const lifecycle = {
    async migrate() {
      await stores.store.migrate()
      await stores.engineStore.migrate()
    },
    async purgeExpired(now: number, limit: number) {
      const removed = await stores.store.purgeExpired(now, limit)
      if (removed >= limit) return removed
      return removed + (await stores.engineStore.purgeExpired(now, limit - removed))
    },
    close: stores.close,
  }
  return new Proxy(lifecycle as BothStores, {
    get(target, key) {
      if (key in target) return Reflect.get(target, key)
      const owner = key in stores.store ? stores.store : stores.engineStore
      const value: unknown = Reflect.get(owner, key, owner)
      return typeof value === 'function' ? (value as () => unknown).bind(owner) : value
    },
  })
}
