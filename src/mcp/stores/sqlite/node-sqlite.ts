/**
 * @module mcp/stores/sqlite/node-sqlite
 * The driver of one SQLite file on `node:sqlite` (Node 24, no native addon; Deno and Bun provide the
 * same module): {@link NodeSqliteDriver}, a {@link SqliteDriver} that calls node:sqlite synchronously
 * and groups writes into one commit per turn of the event loop. The engine's SQLite store and an
 * application's own store on the same file share one driver (one connection, one group commit).
 * The only module of the engine that imports a `node:*` module; the Worker never imports it.
 *
 * Schemas: `migrate(schema)` applies a {@link SqliteSchema}'s steps the file has not recorded, in one
 * transaction (`schema.ts`). Several server processes on one machine may open the same file: the
 * connection has its busy timeout from the moment it opens, the database runs in WAL mode, and a
 * batch or a migration runs in a `BEGIN IMMEDIATE` transaction (the write lock taken up front, so two
 * writers never deadlock on an upgrade, and waiting for it honours the timeout). Prepared statements
 * are cached per connection (the stores' statements are a fixed set).
 *
 * Group commit: a commit costs far more than the statements it commits (the WAL frames of every
 * page touched, and the file locks, whatever the rows: ~100 µs against a few µs per statement), and
 * a busy server writes from many requests in the same turn of the event loop. So a write is not run
 * when it is asked for: it is queued, with every statement asked for after it in the same turn
 * (reads included, so each sees what was asked before it), and when the turn ends
 * (`setImmediate`) the queue runs in one `BEGIN IMMEDIATE` transaction, synchronously, and commits
 * once. The write lock is held only while those statements run, never across a turn, so other
 * processes on the file wait for it no longer than without grouping. No result is handed out before
 * its commit, so a caller learns what it wrote only once it is as durable as it was alone (WAL with
 * `synchronous = NORMAL`: a commit survives the process crashing; a power loss may take the last ones
 * back, as before). A statement that fails is undone alone (SQLite's statement rollback), a batch
 * alone (its savepoint), and only its caller is told. A failure that ends the transaction (a full
 * disk, an I/O error) or a failed commit undoes the whole group: then the statement that failed is
 * answered with its error and every other one of the group is run again in a transaction of its
 * own, so one caller's failure never becomes another's. Reads while nothing is queued run at once,
 * outside any transaction.
 *
 * Replicas starting together on a new file: the switch to WAL (in `migrate()`, before the schema)
 * reads the file's header and then upgrades to a write lock, and SQLite never calls the busy handler
 * for such an upgrade (two readers upgrading could wait on each other forever), so while another
 * connection holds the write lock — another replica switching the same new file, or migrating it —
 * the switch fails at once with SQLITE_BUSY whatever the timeout. The driver retries it, with growing
 * pauses that leave the event loop free, until the busy timeout has passed. Once the file is in WAL
 * mode the switch is a no-op that takes no lock.
 *
 * It leaves to others: where the file lives (configuration), the statements (the stores').
 */

import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { setImmediate } from 'node:timers'
import { setTimeout as sleep } from 'node:timers/promises'
import type {
  SqliteDriver,
  SqliteRow,
  SqliteSchema,
  SqliteStatement,
  SqliteValue,
} from './driver.ts'
import { planMigration } from './schema.ts'

/** A statement that only reads (the store's reads all start so; its writes never do). */
const READ_ONLY = /^\s*SELECT\b/i

/** A statement asked for in this turn, run with the rest of the group when the turn ends. */
interface Queued {
  work: () => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/** How one queued statement went: its value, or its error. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

/**
 * Milliseconds a writer waits for another process's lock before failing with SQLITE_BUSY: the
 * `busyTimeoutMs` of a {@link NodeSqliteDriver} unless given.
 *
 * @example
 * ```ts
 * import { DEFAULT_BUSY_TIMEOUT_MS, SqliteEngineStore } from 'stateless-mcp/sqlite'
 *
 * // many processes writing one file: let each wait longer for the lock
 * const store = new SqliteEngineStore({
 *   path: 'data/mcp.db',
 *   busyTimeoutMs: 3 * DEFAULT_BUSY_TIMEOUT_MS,
 * })
 * ```
 */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/** First and longest pause between two attempts at the switch to WAL mode (see the module header). */
const WAL_RETRY_FIRST_PAUSE_MS = 2
const WAL_RETRY_MAX_PAUSE_MS = 100
/** SQLite's primary result code for a lock held by another connection (extended codes add high bits). */
const SQLITE_BUSY = 5

/** Which SQLite file a {@link NodeSqliteDriver} opens, and how long it waits for another's lock. */
export interface SqliteFileOptions {
  /** File path, or `':memory:'` for a private in-memory database. */
  path: string
  /** Defaults to {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  busyTimeoutMs?: number
}

/**
 * One connection to a SQLite file on node:sqlite, with its group commit (module header): hand it to
 * every store that keeps its tables in that file, and close it once they are closed.
 *
 * @example
 * ```ts
 * import { NodeSqliteDriver, SqliteEngineStore } from 'stateless-mcp/sqlite'
 *
 * const file = new NodeSqliteDriver({ path: 'data/app.db' })
 * const engine = new SqliteEngineStore({ driver: file })
 * await engine.migrate()
 * // … and an application's own store on `file` too; at shutdown:
 * await engine.close()
 * await file.close()
 * ```
 */
export class NodeSqliteDriver implements SqliteDriver {
  readonly #db: DatabaseSync
  readonly #busyTimeoutMs: number
  readonly #statements = new Map<string, StatementSync>()
  /** The statements asked for in this turn (module header), or none. */
  #queue: Queued[] | undefined

  constructor(options: SqliteFileOptions) {
    if (typeof options?.path !== 'string' || options.path === '') {
      throw new TypeError('SQLite: options.path must be a file path or ":memory:"')
    }
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw new TypeError('SQLite: options.busyTimeoutMs must be a non-negative integer')
    }
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    // The busy timeout is set as the connection opens, before any statement can meet a lock.
    this.#db = new DatabaseSync(options.path, { timeout: busyTimeoutMs })
    this.#busyTimeoutMs = busyTimeoutMs
    this.#db.exec('PRAGMA synchronous = NORMAL')
    this.#db.exec('PRAGMA foreign_keys = ON')
  }

  all(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow[]> {
    return this.#execute(sql, () => this.#prepare(sql).all(...params) as SqliteRow[])
  }

  get(sql: string, params: readonly SqliteValue[]): Promise<SqliteRow | undefined> {
    return this.#execute(sql, () => this.#prepare(sql).get(...params) as SqliteRow | undefined)
  }

  run(sql: string, params: readonly SqliteValue[]): Promise<number> {
    return this.#execute(sql, () => Number(this.#prepare(sql).run(...params).changes))
  }

  batch(statements: readonly SqliteStatement[]): Promise<SqliteRow[][]> {
    return this.#enqueue(() => {
      this.#db.exec('SAVEPOINT batch')
      try {
        const rows = statements.map(({ sql, params }) => this.#prepare(sql).all(...params))
        this.#db.exec('RELEASE batch')
        return rows as SqliteRow[][]
      } catch (error) {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK TO batch; RELEASE batch')
        throw error
      }
    })
  }

  /**
   * Switches the file to WAL mode (once it is, a no-op), then applies the steps of `schema` the file
   * has not recorded, in one transaction (`schema.ts`); without a schema, only the switch.
   */
  async migrate(schema?: SqliteSchema): Promise<void> {
    if (this.#queue) this.#flush(this.#queue)
    await this.#enterWal()
    if (schema === undefined) return
    this.#transaction(() => {
      for (const { sql, params } of this.#plan(schema)) {
        this.#db.prepare(sql).run(...params)
      }
    })
  }

  /** The statements that bring the file up to `schema`, from what it records (`schema.ts`). */
  #plan(schema: SqliteSchema): SqliteStatement[] {
    const migration = planMigration(schema)
    let step = migration.next()
    while (!step.done) {
      step = migration.next(
        this.#db.prepare(step.value.sql).all(...step.value.params) as SqliteRow[]
      )
    }
    return step.value
  }

  async close(): Promise<void> {
    if (this.#queue) this.#flush(this.#queue)
    this.#statements.clear()
    if (this.#db.isOpen) this.#db.close()
  }

  /**
   * `PRAGMA journal_mode = WAL`, attempted again after a pause while another connection holds the
   * write lock it needs (SQLite fails it at once then; see the module header), until the busy timeout
   * has passed. The first attempt runs before this returns; a private in-memory database stays in its
   * own mode.
   */
  async #enterWal(): Promise<void> {
    const deadline = Date.now() + this.#busyTimeoutMs
    for (
      let pause = WAL_RETRY_FIRST_PAUSE_MS;
      ;
      pause = Math.min(2 * pause, WAL_RETRY_MAX_PAUSE_MS)
    ) {
      try {
        this.#db.exec('PRAGMA journal_mode = WAL')
        return
      } catch (error) {
        const left = deadline - Date.now()
        if (!isBusy(error) || left <= 0) throw error
        await sleep(Math.min(pause, left))
      }
    }
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql)
    if (statement === undefined) this.#statements.set(sql, (statement = this.#db.prepare(sql)))
    return statement
  }

  /** Runs `sql` through `work`: at once when it only reads and nothing is queued, else queued. */
  #execute<T>(sql: string, work: () => T): Promise<T> {
    if (this.#queue || !READ_ONLY.test(sql)) return this.#enqueue(work)
    return new Promise<T>((resolve) => resolve(work()))
  }

  /** Queues `work` for the group of this turn (started now if none is); settles once it commits. */
  #enqueue<T>(work: () => T): Promise<T> {
    let queue = this.#queue
    if (!queue) {
      const started: Queued[] = (queue = this.#queue = [])
      setImmediate(() => this.#flush(started))
    }
    return new Promise<T>((resolve, reject) =>
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject })
    )
  }

  /** Runs `queue`, if it is still this turn's, as one transaction, and settles every statement. */
  #flush(queue: Queued[]): void {
    if (this.#queue !== queue) return
    this.#queue = undefined
    const outcomes = this.#runGroup(queue)
    queue.forEach(({ resolve, reject }, index) => {
      const outcome = outcomes[index] as Outcome
      if (outcome.ok) resolve(outcome.value)
      else reject(outcome.error)
    })
  }

  /**
   * The outcome of each queued statement: all run in one transaction; if that transaction ends
   * early or its commit fails, the statement that ended it keeps its error and every other one is
   * run again alone (module header).
   */
  #runGroup(queue: Queued[]): Outcome[] {
    try {
      this.#rollback()
      this.#db.exec('BEGIN IMMEDIATE')
    } catch (error) {
      return queue.map(() => ({ ok: false, error }))
    }
    const outcomes: Outcome[] = []
    let ended: number | undefined
    for (const [index, { work }] of queue.entries()) {
      try {
        outcomes.push({ ok: true, value: work() })
      } catch (error) {
        outcomes.push({ ok: false, error })
        if (!this.#db.isTransaction) {
          ended = index
          break
        }
      }
    }
    if (ended === undefined) {
      try {
        this.#db.exec('COMMIT')
        return outcomes
      } catch {
        this.#rollback()
      }
    }
    return queue.map(({ work }, index) =>
      index === ended ? (outcomes[index] as Outcome) : this.#alone(work)
    )
  }

  /** One statement in a transaction of its own (a group that failed as a whole, run again). */
  #alone(work: () => unknown): Outcome {
    try {
      return { ok: true, value: this.#transaction(work) }
    } catch (error) {
      return { ok: false, error }
    }
  }

  /** Undoes the open transaction, if any (one whose ROLLBACK failed is tried again by the next group). */
  #rollback(): void {
    try {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK')
    } catch {
      // Still open: the next group's #rollback tries again before it begins.
    }
  }

  /** Runs `work` in a `BEGIN IMMEDIATE` transaction: it commits only if `work` returns. */
  #transaction<T>(work: () => T): T {
    this.#db.exec('BEGIN IMMEDIATE')
    try {
      const result = work()
      this.#db.exec('COMMIT')
      return result
    } catch (error) {
      this.#rollback()
      throw error
    }
  }
}

/** Whether node:sqlite failed with SQLITE_BUSY (any of its extended codes). */
function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode
  return typeof code === 'number' && (code & 0xff) === SQLITE_BUSY
}
