/**
 * @module mcp/stores/sqlite/driver
 * How a SQLite-dialect store reaches one database: a {@link SqliteDriver}, which the node:sqlite
 * driver (`node-sqlite.ts`, a synchronous call in this process) and the D1 driver (`../d1.ts`, an RPC
 * to the binding) implement, the values and rows that cross it, and the shape of a schema kept in
 * code. Several stores may share one driver (the engine's and an application's tables in one file).
 * Types only.
 */
/** A value bound to, or read from, a SQLite-dialect statement. */
export type SqliteValue = string | number | null
/** A row a statement returns: its columns by name. */
export type SqliteRow = Record<string, SqliteValue>
/** A statement and its parameters, one of the statements of a {@link SqliteDriver.batch}. */
export interface SqliteStatement {
  sql: string
  params: readonly SqliteValue[]
}

/** One step of a schema: its number, and its statements (one statement each), applied in order. */
export interface SchemaStep {
  readonly version: number
  readonly statements: readonly string[]
}

/**
 * A schema kept in code (`schema.ts` brings a database up to it): its steps, in order, and the table
 * that records which were applied.
 */
export interface SqliteSchema {
  /** A plain SQL identifier, the schema's own (`version`, `applied_at`). */
  readonly table: string
  readonly steps: readonly SchemaStep[]
  /**
   * Whether the schema adopts the step the older shared bookkeeping recorded when its own table is
   * new (`schema.ts`'s module header): set only by the schemas whose first steps that bookkeeping
   * recorded (the engine's, and the notes server's). A schema without it starts from its own table.
   */
  readonly adoptsSharedBookkeeping?: boolean
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
