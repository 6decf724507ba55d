/**
 * @module storage/sqlite
 * The embedded `NotesStore` adapter on `node:sqlite` (Node 24, Deno, Bun; no native addon): the
 * SQLite-dialect store (`sqlite/store.ts`, which owns statements, search and atomicity) over the
 * engine's node:sqlite driver (`stateless-mcp/sqlite`: one connection per file, WAL, group commit).
 * The notes and the engine's state live in one file on one connection: {@link openSqliteStores}
 * opens both. Node-only; the Worker never imports it.
 */
import {
  NodeSqliteDriver,
  SqliteEngineStore,
  type SqliteDriver,
  type SqliteFileOptions,
} from 'stateless-mcp/sqlite'
import { storesOnOneConnection, type DeploymentStores } from './common/stores.ts'
import { SqliteDialectStore } from './sqlite/store.ts'

/** A file of its own (`path`), or a connection shared with the engine's store (`driver`). */
export type SqliteNotesStoreOptions = SqliteFileOptions | { driver: SqliteDriver }

export class SqliteNotesStore extends SqliteDialectStore {
  constructor(options: SqliteNotesStoreOptions) {
    if (options !== null && typeof options === 'object' && 'driver' in options) {
      super(options.driver, false)
    } else {
      super(new NodeSqliteDriver(options), true)
    }
  }
}

/** Opens the notes store and the engine's store on one connection to the file `options.path`. */
export function openSqliteStores(options: SqliteFileOptions): DeploymentStores {
  const driver = new NodeSqliteDriver(options)
  return storesOnOneConnection(
    new SqliteNotesStore({ driver }),
    new SqliteEngineStore({ driver }),
    () => driver.close()
  )
}
