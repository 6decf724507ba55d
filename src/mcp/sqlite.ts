/**
 * @module stateless-mcp/sqlite
 * The engine's state in one SQLite file, on `node:sqlite` (Node 24; Deno and Bun provide the same
 * module): sessions, resumable streams and tasks that every process on the machine opening the file
 * shares. Writes made in one turn of the event loop commit together (group commit), in WAL mode. The
 * schema travels inside the code: `migrate()` creates the tables, or brings an older file up to date.
 * An application keeping its own tables in the same file shares the connection: open a
 * {@link NodeSqliteDriver} and give it to both stores.
 */
import { NodeSqliteDriver, type SqliteFileOptions } from './stores/sqlite/node-sqlite.ts'
import type { SqliteDriver } from './stores/sqlite/driver.ts'
import { SqliteDialectEngineStore } from './stores/sqlite/store.ts'
import { ownedOrShared } from './stores/common/store-class.ts'

export { DEFAULT_BUSY_TIMEOUT_MS, NodeSqliteDriver } from './stores/sqlite/node-sqlite.ts'
export type { SqliteFileOptions } from './stores/sqlite/node-sqlite.ts'
export type {
  SchemaStep,
  SqliteDriver,
  SqliteRow,
  SqliteSchema,
  SqliteStatement,
  SqliteValue,
} from './stores/sqlite/driver.ts'
export type { EngineStore } from './stores/engine-store.ts'

/** A file of its own (`path`), or a connection shared with other stores (`driver`). */
export type SqliteEngineStoreOptions = SqliteFileOptions | { driver: SqliteDriver }

/**
 * The engine's store in a SQLite file. Given a `path`, it opens the file and closes it at `close()`;
 * given a `driver`, it shares that connection and leaves it open for its opener to close.
 *
 * @example
 * ```ts
 * import { SqliteEngineStore } from 'stateless-mcp/sqlite'
 *
 * const store = new SqliteEngineStore({ path: 'data/mcp.db' })
 * await store.migrate()
 * ```
 */
export class SqliteEngineStore extends SqliteDialectEngineStore {
  constructor(options: SqliteEngineStoreOptions) {
    super(...ownedOrShared(options, 'driver', (file) => new NodeSqliteDriver(file)))
  }
}
