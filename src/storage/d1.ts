/**
 * @module storage/d1
 * The Cloudflare D1 `NotesStore` adapter, for the Worker: the SQLite-dialect store
 * (`sqlite/store.ts`, which owns statements, search and atomicity) over a driver that sends each
 * statement to the D1 binding. D1 is SQLite behind an RPC: a statement is atomic, `batch()` runs its
 * statements as one transaction, and there is no interactive transaction, which is the model the
 * SQLite-dialect store is written for.
 *
 * Migrations belong to wrangler: `wrangler d1 migrations apply DB --local|--remote` applies the files
 * under `migrations/` and records them in `d1_migrations` (the workerd tests apply the same files with
 * the vitest plugin's `applyD1Migrations`). `migrate()` does not change the schema: it checks that every
 * migration this code needs ({@link D1_MIGRATIONS}) is recorded and otherwise throws
 * {@link D1SchemaMissingError} naming the command, so a Worker deployed ahead of its migrations fails
 * loudly instead of half-working. Schema changes are a reviewed deploy step, not something each isolate
 * races to do on a cold start.
 *
 * Leaves to others: the binding itself (`worker.ts`), everything the SQLite-dialect store owns.
 * Runtime-neutral: it talks to a structural {@link D1Like} binding and imports nothing from `node:*`
 * or from workers-types.
 */

import type { SqliteDriver, SqliteRow, SqliteStatement, SqliteValue } from './sqlite/driver.ts'
import { SQLITE_MIGRATIONS } from './sqlite/statements.ts'
import { SqliteDialectStore } from './sqlite/store.ts'

/** Migration files (under `migrations/`) this code needs, in order: the shared SQLite schema's. */
export const D1_MIGRATIONS: readonly string[] = SQLITE_MIGRATIONS
/** The bookkeeping table of `wrangler d1 migrations` (wrangler.toml `migrations_table`). */
export const D1_MIGRATIONS_TABLE = 'd1_migrations'

/** The statement surface of a D1 binding this adapter uses (a real `D1Database` satisfies it). */
export interface D1PreparedLike {
  bind(...values: unknown[]): D1PreparedLike
  first<T = Record<string, unknown>>(): Promise<T | null>
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>
  run(): Promise<{ meta: { changes: number } }>
}

export interface D1Like {
  prepare(sql: string): D1PreparedLike
  batch<T = Record<string, unknown>>(statements: D1PreparedLike[]): Promise<Array<{ results: T[] }>>
}

export interface D1NotesStoreOptions {
  /** The D1 binding (`env.DB`). */
  db: D1Like
  /** Bookkeeping table name; defaults to {@link D1_MIGRATIONS_TABLE}. */
  migrationsTable?: string
}

/** The D1 database lacks a migration this code needs; the message names the command to run. */
export class D1SchemaMissingError extends Error {
  override name = 'D1SchemaMissingError'
}

export class D1NotesStore extends SqliteDialectStore {
  constructor(options: D1NotesStoreOptions) {
    super(new D1Driver(options))
  }
}

class D1Driver implements SqliteDriver {
  readonly #db: D1Like
  readonly #migrationsTable: string

  constructor(options: D1NotesStoreOptions) {
    if (typeof options?.db?.prepare !== 'function' || typeof options.db.batch !== 'function') {
      throw new TypeError('D1NotesStore: options.db must be a D1 database binding')
    }
    const table = options.migrationsTable ?? D1_MIGRATIONS_TABLE
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(table)) {
      throw new TypeError('D1NotesStore: options.migrationsTable must be a plain SQL identifier')
    }
    this.#db = options.db
    this.#migrationsTable = table
  }

  async all(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow[]> {
    return (await this.#statement(sql, params).all<SqliteRow>()).results
  }

  async get(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow | undefined> {
    return (await this.#statement(sql, params).first<SqliteRow>()) ?? undefined
  }

  async run(sql: string, params: readonly SqliteValue[]): Promise<number> {
    return (await this.#statement(sql, params).run()).meta.changes
  }

  async batch(statements: readonly SqliteStatement[]): Promise<SqliteRow[][]> {
    const results = await this.#db.batch<SqliteRow>(
      statements.map(({ sql, params }) => this.#statement(sql, params))
    )
    return results.map((result) => result.results)
  }

  /** Checks that every migration in {@link D1_MIGRATIONS} is recorded; changes nothing. */
  async migrate(): Promise<void> {
    let applied: Set<string>
    try {
      const { results } = await this.#db
        .prepare(`SELECT name FROM ${this.#migrationsTable}`)
        .all<{ name: string }>()
      applied = new Set(results.map((row) => row.name))
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

  /** Nothing to release: the binding belongs to the runtime. */
  async close(): Promise<void> {}

  #statement(sql: string, params: readonly SqliteValue[]): D1PreparedLike {
    return this.#db.prepare(sql).bind(...params)
  }
}
