/**
 * @module mcp/stores/sqlite/driver
 * How a SQLite-dialect store reaches one database: a {@link SqliteDriver}, which the node:sqlite
 * driver (`node-sqlite.ts`, a synchronous call in this process) and the D1 driver (`../d1.ts`, an RPC
 * to the binding) implement, and the values and rows that cross it. Several stores may share one
 * driver (the engine's and an application's tables in one file). Types only.
 */
import type { SqliteSchema } from './schema.ts'

/** A value bound to, or read from, a SQLite-dialect statement. */
export type SqliteValue = string | number | null
/** A row a statement returns: its columns by name. */
export type SqliteRow = Record<string, SqliteValue>
/** A statement and its parameters, one of the statements of a {@link SqliteDriver.batch}. */
export interface SqliteStatement {
  sql: string
  params: readonly SqliteValue[]
}

/** How a store reaches one SQLite-dialect database. */
export interface SqliteDriver {
  /** Every row the statement returns (none for a statement without `RETURNING`). */
  all(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow[]>
  /** The first row the statement returns, if any. */
  get(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow | undefined>
  /** Runs a write; answers how many rows it changed. */
  run(sql: string, params: readonly SqliteValue[]): Promise<number>
  /** Runs the statements in order as one transaction (all apply or none); the rows of each. */
  batch(statements: readonly SqliteStatement[]): Promise<SqliteRow[][]>
  /** Brings the database up to `schema` (`schema.ts`), every step applied once across processes. */
  migrate(schema: SqliteSchema): Promise<void>
  close(): Promise<void>
}
