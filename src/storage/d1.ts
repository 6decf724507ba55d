/**
 * @module storage/d1
 * The Cloudflare D1 `NotesStore` adapter, for the Worker: the SQLite-dialect store
 * (`sqlite/store.ts`, which owns statements, search and atomicity) over the engine's D1 driver
 * (`stateless-mcp/d1`), which the engine's own store shares ({@link openD1Stores}).
 *
 * Migrations belong to wrangler: `wrangler d1 migrations apply DB --local|--remote` applies the files
 * under `migrations/` and records them in `d1_migrations` (the workerd tests apply the same files with
 * the vitest plugin's `applyD1Migrations`). `migrate()` does not change the schema: it checks that every
 * migration this code needs ({@link D1_MIGRATIONS}) is recorded and otherwise throws
 * {@link D1SchemaMissingError} naming the command, so a Worker deployed ahead of its migrations fails
 * loudly instead of half-working. Schema changes are a reviewed deploy step, not something each isolate
 * races to do on a cold start. (The files made the engine's tables too, steps 3 to 8: the engine's
 * store adopts them.)
 *
 * Leaves to others: the binding itself (`worker.ts`), everything the SQLite-dialect store owns.
 * Runtime-neutral: it talks to a structural binding and imports nothing from `node:*` or from
 * workers-types.
 */
import { D1Driver, D1EngineStore, type D1Like } from 'stateless-mcp/d1'
import type { SqliteDriver } from 'stateless-mcp/sqlite'
import { storeClass } from 'stateless-mcp/compose'
import type { NotesStore } from '../notes/store.ts'
import { storesOnOneConnection, type DeploymentStores } from './common/stores.ts'
import { SQLITE_NOTES_METHODS, SqliteConnection } from './sqlite/store.ts'

/** The migration files under `migrations/` this code needs, in order (wrangler applies them). */
export const D1_MIGRATIONS: readonly string[] = [
  '0001_init.sql',
  '0002_expiry.sql',
  '0003_sessions.sql',
  '0004_tasks.sql',
  '0005_session_principals.sql',
  '0006_task_cap.sql',
  '0007_streams.sql',
  '0008_stream_cap_index.sql',
  '0009_notes_lookups.sql',
]
/** The bookkeeping table of `wrangler d1 migrations` (wrangler.toml `migrations_table`). */
export const D1_MIGRATIONS_TABLE = 'd1_migrations'

/** The D1 database lacks a migration this code needs; the message names the command to run. */
export class D1SchemaMissingError extends Error {
  override name = 'D1SchemaMissingError'
}

/** The D1 driver's lifecycle for the notes: `migrate` checks wrangler's bookkeeping, changes nothing. */
class D1Connection extends SqliteConnection {
  protected override async prepare(driver: SqliteDriver): Promise<void> {
    let applied: Set<string>
    try {
      const rows = await driver.all(`SELECT name FROM ${D1_MIGRATIONS_TABLE}`, [])
      applied = new Set(rows.map((row) => String(row.name)))
    } catch (error) {
      // No bookkeeping table: nothing was ever applied. Anything else (D1 unreachable) propagates.
      if (!/no such table/i.test(error instanceof Error ? error.message : String(error)))
        throw error
      applied = new Set()
    }
    const missing = D1_MIGRATIONS.filter((name) => !applied.has(name))
    if (missing.length > 0) {
      throw new D1SchemaMissingError(
        `D1 schema is missing migration ${missing.join(', ')}: run \`wrangler d1 migrations apply DB --local\` (or --remote for the deployed database)`
      )
    }
  }
}

const D1DialectStore = storeClass<NotesStore, [driver: SqliteDriver], SqliteDriver>(
  D1Connection,
  SQLITE_NOTES_METHODS
)

export interface D1NotesStoreOptions {
  /** The D1 binding (`env.DB`), or the driver the engine's store shares. */
  db: D1Like | D1Driver
}

export class D1NotesStore extends D1DialectStore {
  constructor(options: D1NotesStoreOptions) {
    super(options?.db instanceof D1Driver ? options.db : new D1Driver(options?.db))
  }
}

/**
 * The notes store and the engine's store over one driver of `db`: `migrate()` checks the notes'
 * migrations, then brings the engine's tables up to date (adopting those wrangler made); closing
 * releases nothing (the binding is the runtime's).
 */
export function openD1Stores(db: D1Like): DeploymentStores {
  const driver = new D1Driver(db)
  return storesOnOneConnection(
    new D1NotesStore({ db: driver }),
    new D1EngineStore({ driver }),
    () => driver.close()
  )
}
