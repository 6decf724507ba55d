/**
 * @module mcp/stores/sqlite/d1-driver
 * The driver of a Cloudflare D1 database ({@link D1Driver}), a {@link SqliteDriver} that sends each
 * statement to the D1 binding. D1 is SQLite behind an RPC: a statement is atomic, `batch()` runs its
 * statements as one transaction, and there is no interactive transaction, which is the model the
 * SQLite-dialect stores are written for. `migrate(schema)` reads what the database records, then
 * applies the missing steps in one batch (`schema.ts`); an isolate racing another to migrate a new
 * database sees its batch fail on a table the other just made, reads again, and is done once the
 * other's batch recorded every step. Runtime-neutral: it talks to a structural {@link D1Like} binding
 * and imports nothing from `node:*` or from workers-types.
 */
import type {
  SqliteDriver,
  SqliteRow,
  SqliteSchema,
  SqliteStatement,
  SqliteValue,
} from './driver.ts'
import { planMigration } from './schema.ts'

/** The statement surface of a D1 binding the driver uses (a real `D1Database` satisfies it). */
export interface D1PreparedLike {
  bind(...values: unknown[]): D1PreparedLike
  first<T = Record<string, unknown>>(): Promise<T | null>
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>
  run(): Promise<{ meta: { changes: number } }>
}

/** The part of a D1 binding (`env.DB`) the driver uses. */
export interface D1Like {
  prepare(sql: string): D1PreparedLike
  batch<T = Record<string, unknown>>(statements: D1PreparedLike[]): Promise<Array<{ results: T[] }>>
}

/**
 * A D1 database as a {@link SqliteDriver}: hand it to every store that keeps its tables there.
 *
 * @example
 * ```ts
 * import { D1Driver, D1EngineStore } from 'stateless-mcp/d1'
 *
 * const driver = new D1Driver(env.DB)
 * const store = new D1EngineStore({ driver })
 * ```
 */
export class D1Driver implements SqliteDriver {
  readonly #db: D1Like

  constructor(db: D1Like) {
    if (typeof db?.prepare !== 'function' || typeof db.batch !== 'function') {
      throw new TypeError('D1: the database must be a D1 binding (env.DB)')
    }
    this.#db = db
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

  /** Applies the steps of `schema` the database has not recorded, in one batch (module header). */
  async migrate(schema: SqliteSchema): Promise<void> {
    const plan = await this.#plan(schema)
    if (plan.length === 0) return
    try {
      await this.batch(plan)
    } catch (error) {
      // Another isolate's batch may have made the tables first: done if it recorded every step.
      if ((await this.#plan(schema)).length > 0) throw error
    }
  }

  /** Nothing to release: the binding belongs to the runtime. */
  async close(): Promise<void> {}

  /** The statements that bring the database up to `schema`, from what it records (`schema.ts`). */
  async #plan(schema: SqliteSchema): Promise<SqliteStatement[]> {
    const migration = planMigration(schema)
    let step = migration.next()
    while (!step.done) step = migration.next(await this.all(step.value.sql, step.value.params))
    return step.value
  }

  #statement(sql: string, params: readonly SqliteValue[]): D1PreparedLike {
    return this.#db.prepare(sql).bind(...params)
  }
}
