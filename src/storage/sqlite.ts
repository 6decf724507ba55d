/**
 * @module storage/sqlite
 * The embedded `NotesStore` adapter on `node:sqlite` (Node 24, no native addon): the shared SQLite-
 * dialect store (`sql-store.ts`, which owns statements, search and atomicity) over a driver that calls
 * node:sqlite synchronously. Node-only; the Worker never imports it.
 *
 * The driver owns the file and the schema. It applies the files under `migrations/` that wrangler
 * applies to D1 ({@link SQLITE_MIGRATIONS}), in order, each once, inside one transaction with its row in
 * `schema_migrations` (version = the file's number). Several server processes on one machine may open
 * the same file: the database runs in WAL mode with a busy timeout, and a batch runs in a
 * `BEGIN IMMEDIATE` transaction (the write lock taken up front, so two writers never deadlock on an
 * upgrade). Prepared statements are cached per connection (the store's statements are a fixed set).
 *
 * It leaves to others: where the file lives (configuration), everything the shared store owns.
 */

import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import {
  SqlNotesStore,
  type SqlDriver,
  type SqlRow,
  type SqlStatement,
  type SqlValue,
} from './sql-store.ts'
import { SQLITE_MIGRATIONS } from './sql-statements.ts'

/** Milliseconds a writer waits for another process's lock before failing with SQLITE_BUSY. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/** Where the schema's migration files ({@link SQLITE_MIGRATIONS}) are: `migrations/` of this project. */
const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url)

export interface SqliteNotesStoreOptions {
  /** File path, or `':memory:'` for a private in-memory database. */
  path: string
  /** Defaults to {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  busyTimeoutMs?: number
}

export class SqliteNotesStore extends SqlNotesStore {
  constructor(options: SqliteNotesStoreOptions) {
    super(new NodeSqliteDriver(options))
  }
}

class NodeSqliteDriver implements SqlDriver {
  readonly #db: DatabaseSync
  readonly #statements = new Map<string, StatementSync>()

  constructor(options: SqliteNotesStoreOptions) {
    if (typeof options?.path !== 'string' || options.path === '') {
      throw new TypeError('SqliteNotesStore: options.path must be a file path or ":memory:"')
    }
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw new TypeError('SqliteNotesStore: options.busyTimeoutMs must be a non-negative integer')
    }
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    this.#db = new DatabaseSync(options.path)
    this.#db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
    this.#db.exec('PRAGMA journal_mode = WAL')
    this.#db.exec('PRAGMA synchronous = NORMAL')
    this.#db.exec('PRAGMA foreign_keys = ON')
  }

  async all(sql: string, params: readonly SqlValue[]): Promise<SqlRow[]> {
    return this.#prepare(sql).all(...params) as SqlRow[]
  }

  async get(sql: string, params: readonly SqlValue[]): Promise<SqlRow | undefined> {
    return this.#prepare(sql).get(...params) as SqlRow | undefined
  }

  async run(sql: string, params: readonly SqlValue[]): Promise<number> {
    return Number(this.#prepare(sql).run(...params).changes)
  }

  async batch(statements: readonly SqlStatement[]): Promise<SqlRow[][]> {
    return this.#transaction(() =>
      statements.map(({ sql, params }) => this.#prepare(sql).all(...params) as SqlRow[])
    )
  }

  /** Applies the migration files not yet recorded in `schema_migrations`, in one transaction. */
  async migrate(): Promise<void> {
    this.#transaction(() => {
      this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        applied_at INTEGER NOT NULL
      )`)
      const row = this.#db.prepare('SELECT max(version) AS v FROM schema_migrations').get()
      const current = Number(row?.v ?? 0)
      const record = this.#db.prepare(
        'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)'
      )
      for (const file of SQLITE_MIGRATIONS) {
        const version = migrationVersion(file)
        if (version <= current) continue
        this.#db.exec(readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8'))
        record.run(version, Date.now())
      }
    })
  }

  async close(): Promise<void> {
    this.#statements.clear()
    if (this.#db.isOpen) this.#db.close()
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql)
    if (statement === undefined) this.#statements.set(sql, (statement = this.#db.prepare(sql)))
    return statement
  }

  /** Runs `work` in a `BEGIN IMMEDIATE` transaction: it commits only if `work` returns. */
  #transaction<T>(work: () => T): T {
    this.#db.exec('BEGIN IMMEDIATE')
    try {
      const result = work()
      this.#db.exec('COMMIT')
      return result
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK')
      throw error
    }
  }
}

/** The version of a migration file: the number its name starts with (`0001_init.sql` is 1). */
function migrationVersion(file: string): number {
  const match = /^(\d+)_/.exec(file)
  if (match === null) throw new Error(`migration file ${file} does not start with its number`)
  return Number(match[1])
}
