/**
 * @module storage/sqlite/driver
 * How the SQLite-dialect store reaches one database: a {@link SqliteDriver}, which the node:sqlite
 * adapter (`storage/sqlite.ts`, a synchronous call in this process) and the D1 adapter
 * (`storage/d1.ts`, an RPC to the binding) implement, and the values and rows that cross it.
 * Types only.
 */

/** A value bound to, or read from, a SQLite-dialect statement. */
export type SqliteValue = string | number | null
export type SqliteRow = Record<string, SqliteValue>
export interface SqliteStatement {
  sql: string
  params: readonly SqliteValue[]
}

/** How the store reaches one SQLite-dialect database. */
export interface SqliteDriver {
  /** Every row the statement returns (none for a statement without `RETURNING`). */
  all(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow[]>
  /** The first row the statement returns, if any. */
  get(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow | undefined>
  /** Runs a write; answers how many rows it changed. */
  run(sql: string, params: readonly SqliteValue[]): Promise<number>
  /** Runs the statements in order as one transaction (all apply or none); the rows of each. */
  batch(statements: readonly SqliteStatement[]): Promise<SqliteRow[][]>
  /** Makes sure the schema of `SQLITE_MIGRATIONS` is in place (applying or checking it). */
  migrate(): Promise<void>
  close(): Promise<void>
}
