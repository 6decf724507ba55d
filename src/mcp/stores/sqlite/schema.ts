/**
 * @module mcp/stores/sqlite/schema
 * How a schema that travels inside the code reaches a SQLite-dialect database (node:sqlite and D1
 * alike), for the engine's tables ({@link ENGINE_SQLITE_SCHEMA}) and for an application's own tables
 * on the same database: a {@link SqliteSchema} is numbered steps and the name of the table that
 * records which were applied. {@link migrationPlan} answers, from what the database holds
 * ({@link SchemaFacts}, found by the reads of {@link readSchemaFacts}, which each driver runs its
 * way), the statements that bring it up to date: the steps not recorded, each with its row, run by
 * the driver in one transaction (node:sqlite) or one batch (D1). {@link planMigration} is both in
 * one: the reads to run, then the plan.
 *
 * Adoption: until this package kept its own, one bookkeeping table recorded the steps of the whole
 * shared schema (`schema_migrations` on node:sqlite, wrangler's `d1_migrations` on D1, the files
 * `0001_init.sql` … `0008_stream_cap_index.sql`). The engine's steps keep those steps' numbers (3 to 8
 * are the engine's tables), so a schema whose own table is new starts from the last step the old
 * bookkeeping recorded (at most {@link LEGACY_SCHEMA_VERSION}, the last it ever recorded): a database
 * an older deployment created keeps every session, stream and task, and a new one gets every step.
 * Only a schema that says so adopts (`adoptsSharedBookkeeping`), and only when the database holds
 * that bookkeeping's own mark beside it, the `used_keys` table its first step made: another tool's
 * `schema_migrations` or `d1_migrations` in the same database is not taken for it.
 * A store's connection whose tables are such a schema is a {@link SqliteSchemaConnection}.
 * Runtime-neutral text and pure functions.
 */
import { StoreConnection } from '../common/store-class.ts'
import type { SqliteDriver, SqliteRow, SqliteSchema, SqliteStatement } from './driver.ts'

/** The last step the shared bookkeeping of older deployments ever recorded (module header). */
export const LEGACY_SCHEMA_VERSION = 8

/** The table the older shared bookkeeping's first step made, which marks that bookkeeping as it. */
const SHARED_BOOKKEEPING_MARK = 'used_keys'

/** What {@link migrationPlan} needs to know of a database, as {@link readSchemaFacts} finds it. */
interface SchemaFacts {
  /** The rows (`version`) of the schema's own table; `undefined` when the table does not exist. */
  recorded: readonly SqliteRow[] | undefined
  /**
   * The rows of the older bookkeeping tables that exist (`version`, or a file `name`), when the
   * schema adopts them and the database holds their mark; else none.
   */
  legacy: readonly SqliteRow[]
}

/** The statements that read {@link SchemaFacts}: which tables exist, then the rows of each. */
const SCHEMA_FACTS = {
  /** ?1 the schema's table: which of it and the older bookkeeping tables exist (`name`). */
  tables: `SELECT name FROM sqlite_master
    WHERE type = 'table' AND name IN (?1, 'schema_migrations', 'd1_migrations', 'used_keys')`,
  recorded: (table: string) => `SELECT version FROM ${identifier(table)}`,
  legacy: [
    { table: 'schema_migrations', sql: 'SELECT version FROM schema_migrations' },
    { table: 'd1_migrations', sql: 'SELECT name FROM d1_migrations' },
  ],
} as const

/**
 * The connection of a store whose tables on a {@link SqliteDriver} are {@link schema}: `migrate()`
 * brings them up to date (`driver.migrate`), `close()` closes the driver when the store owns it.
 * The engine's SQLite and D1 stores are made on one; so is an application's store sharing their
 * driver (give it its methods with `storeClass`).
 *
 * @example
 * ```ts
 * import { SqliteSchemaConnection, storeClass } from 'stateless-mcp/compose'
 *
 * class BookmarksConnection extends SqliteSchemaConnection {
 *   protected readonly schema = {
 *     table: 'bookmarks_schema',
 *     steps: [{ version: 1, statements: ['CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, url TEXT)'] }],
 *   }
 * }
 * ```
 */
export abstract class SqliteSchemaConnection extends StoreConnection<SqliteDriver> {
  /** The store's tables, step by step. */
  protected abstract readonly schema: SqliteSchema

  protected prepare(driver: SqliteDriver): Promise<void> {
    return driver.migrate(this.schema)
  }

  protected release(driver: SqliteDriver): Promise<void> {
    return driver.close()
  }
}

/**
 * The reads that find the {@link SchemaFacts} of `schema` in a database, for both drivers: each
 * statement is yielded for the driver to run (in this process or as an RPC) and takes its rows back;
 * which tables exist comes first, then the rows of each. Answers the facts.
 */
function* readSchemaFacts(
  schema: SqliteSchema
): Generator<SqliteStatement, SchemaFacts, SqliteRow[]> {
  const existing = yield { sql: SCHEMA_FACTS.tables, params: [schema.table] }
  const tables = new Set(existing.map((row) => String(row.name)))
  if (tables.has(schema.table)) {
    return { recorded: yield { sql: SCHEMA_FACTS.recorded(schema.table), params: [] }, legacy: [] }
  }
  // Only a schema whose own table is new adopts (module header): the older rows are read then.
  const legacy: SqliteRow[] = []
  const adopts = schema.adoptsSharedBookkeeping === true && tables.has(SHARED_BOOKKEEPING_MARK)
  for (const { table, sql } of SCHEMA_FACTS.legacy) {
    if (adopts && tables.has(table)) legacy.push(...(yield { sql, params: [] }))
  }
  return { recorded: undefined, legacy }
}

/**
 * The migration of `schema`, for both drivers: yields the reads of {@link readSchemaFacts} for the
 * driver to run (in this process or as an RPC) and take their rows back, then answers the
 * statements of {@link migrationPlan} (none when the database is up to date).
 */
export function* planMigration(
  schema: SqliteSchema
): Generator<SqliteStatement, SqliteStatement[], SqliteRow[]> {
  return migrationPlan(schema, yield* readSchemaFacts(schema))
}

/**
 * The statements that bring a database holding `facts` up to `schema`: its table created when new
 * (recording the step it adopts, module header), then every step after the last recorded one, each
 * followed by its row. None when the database is up to date.
 */
function migrationPlan(schema: SqliteSchema, facts: SchemaFacts): SqliteStatement[] {
  const table = identifier(schema.table)
  const plan: SqliteStatement[] = []
  let current: number
  if (facts.recorded === undefined) {
    current = Math.min(LEGACY_SCHEMA_VERSION, Math.max(0, ...facts.legacy.map(legacyVersion)))
    plan.push({
      sql: `CREATE TABLE IF NOT EXISTS ${table} (
        version INTEGER PRIMARY KEY,
        applied_at INTEGER NOT NULL
      )`,
      params: [],
    })
    if (current > 0) plan.push(record(table, current))
  } else {
    current = Math.max(0, ...facts.recorded.map((row) => Number(row.version)))
  }
  for (const step of schema.steps) {
    if (step.version <= current) continue
    for (const sql of step.statements) plan.push({ sql, params: [] })
    plan.push(record(table, step.version))
  }
  return plan
}

/** The row that records step `version` (a step recorded twice is recorded once). */
function record(table: string, version: number): SqliteStatement {
  return {
    sql: `INSERT INTO ${table} (version, applied_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING`,
    params: [version, Date.now()],
  }
}

/** The step an older bookkeeping row records: its `version`, or the number its file `name` starts with. */
function legacyVersion(row: SqliteRow): number {
  if (row.version !== undefined) return Number(row.version)
  const match = /^(\d+)_/.exec(String(row.name))
  return match === null ? 0 : Number(match[1])
}

/** `name`, checked to be a plain SQL identifier (it is put in statements). */
function identifier(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name)) {
    throw new TypeError(`schema table ${JSON.stringify(name)} is not a plain SQL identifier`)
  }
  return name
}

/**
 * The engine's tables on SQLite and D1, step by step: the numbers and statements of the shared
 * schema's steps that made them (module header), so that a database an older deployment migrated is
 * adopted as it is. Never edit a released step; append a new one (from 9 on).
 */
export const ENGINE_SQLITE_SCHEMA: SqliteSchema = {
  table: 'mcp_schema',
  adoptsSharedBookkeeping: true,
  steps: [
    {
      // What 2025-era sessions keep; rebuilt by step 5.
      version: 3,
      statements: [
        `CREATE TABLE sessions (
          sid TEXT PRIMARY KEY,
          ended INTEGER NOT NULL DEFAULT 0 CHECK (ended IN (0, 1)),
          log_level TEXT CHECK (log_level IN
            ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
          expires_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        `CREATE INDEX sessions_by_expiry ON sessions (expires_at)`,
        `CREATE TABLE session_subscriptions (
          sid TEXT NOT NULL,
          uri TEXT NOT NULL,
          expires_at INTEGER NOT NULL,
          PRIMARY KEY (sid, uri)
        ) WITHOUT ROWID`,
        `CREATE INDEX session_subscriptions_by_expiry ON session_subscriptions (expires_at)`,
        // The slot of one server→client request's answer: NULL payload until the answer arrives. A
        // rowid table: an answer may be large, which WITHOUT ROWID tables store poorly.
        `CREATE TABLE input_slots (
          sid TEXT NOT NULL,
          request_id TEXT NOT NULL,
          payload TEXT,
          expires_at INTEGER NOT NULL,
          PRIMARY KEY (sid, request_id)
        )`,
        `CREATE INDEX input_slots_by_expiry ON input_slots (expires_at)`,
      ],
    },
    {
      // The records of tasks: every TaskRecord field, JSON-valued fields as the text given, NULL for
      // an absent optional field. tasks_runnable serves findRunnableTasks: working tasks only,
      // covering the query (the trailing lease_expires_at) so that it never reads a large row.
      version: 4,
      statements: [
        `CREATE TABLE tasks (
          id TEXT PRIMARY KEY,
          owner TEXT NOT NULL,
          tool TEXT NOT NULL,
          args TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          status TEXT NOT NULL
            CHECK (status IN ('working', 'input_required', 'completed', 'cancelled', 'failed')),
          status_message TEXT,
          updated_at INTEGER NOT NULL,
          expires_at INTEGER NOT NULL,
          poll_interval_ms INTEGER NOT NULL,
          journal TEXT NOT NULL,
          input_requests TEXT,
          input_responses TEXT,
          result TEXT,
          error TEXT,
          cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
          lease_owner TEXT,
          lease_expires_at INTEGER,
          version INTEGER NOT NULL DEFAULT 1
        )`,
        `CREATE INDEX tasks_by_expiry ON tasks (expires_at)`,
        `CREATE INDEX tasks_runnable
          ON tasks (coalesce(lease_expires_at, 0), expires_at, id, lease_expires_at)
          WHERE status = 'working'`,
      ],
    },
    {
      // Sessions recorded by initialize with their principal and creation time, live only while
      // their row exists; the caps on a principal's sessions and subscriptions read the
      // *_by_principal indexes. The rows of step 3 belonged to sessions this step no longer counts.
      version: 5,
      statements: [
        `DROP TABLE sessions`,
        `DROP TABLE session_subscriptions`,
        `CREATE TABLE sessions (
          sid TEXT PRIMARY KEY,
          principal TEXT NOT NULL,
          log_level TEXT CHECK (log_level IN
            ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
          created_at INTEGER NOT NULL,
          expires_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        `CREATE INDEX sessions_by_expiry ON sessions (expires_at)`,
        `CREATE INDEX sessions_by_principal ON sessions (principal, created_at, sid, expires_at)`,
        `CREATE TABLE session_subscriptions (
          sid TEXT NOT NULL,
          uri TEXT NOT NULL,
          principal TEXT NOT NULL,
          expires_at INTEGER NOT NULL,
          PRIMARY KEY (sid, uri)
        ) WITHOUT ROWID`,
        `CREATE INDEX session_subscriptions_by_expiry ON session_subscriptions (expires_at)`,
        `CREATE INDEX session_subscriptions_by_principal
          ON session_subscriptions (principal, expires_at)`,
      ],
    },
    {
      // The cap on live tasks per principal, counted from tasks_live_by_principal alone. Rows from
      // before have principal '' and count for no one.
      version: 6,
      statements: [
        `ALTER TABLE tasks ADD COLUMN principal TEXT NOT NULL DEFAULT ''`,
        `CREATE INDEX tasks_live_by_principal ON tasks (principal, expires_at)`,
      ],
    },
    {
      // Resumable 2025-era streams: a record per stream of a session and its events numbered from 1,
      // both keyed by sid first (ending a session removes them through the primary keys). Rowid
      // tables: a call and an event may be large.
      version: 7,
      statements: [
        `CREATE TABLE session_streams (
          sid TEXT NOT NULL,
          stream TEXT NOT NULL,
          call TEXT,
          lease_owner TEXT,
          lease_expires_at INTEGER,
          ended INTEGER NOT NULL DEFAULT 0 CHECK (ended IN (0, 1)),
          expires_at INTEGER NOT NULL,
          version INTEGER NOT NULL DEFAULT 1,
          PRIMARY KEY (sid, stream)
        )`,
        `CREATE INDEX session_streams_by_expiry ON session_streams (expires_at)`,
        `CREATE TABLE stream_events (
          sid TEXT NOT NULL,
          stream TEXT NOT NULL,
          seq INTEGER NOT NULL,
          payload TEXT NOT NULL,
          expires_at INTEGER NOT NULL,
          PRIMARY KEY (sid, stream, seq)
        )`,
        `CREATE INDEX stream_events_by_expiry ON stream_events (expires_at)`,
      ],
    },
    {
      // The cap a stream creation checks, read from this index alone.
      version: 8,
      statements: [
        `CREATE INDEX session_streams_by_session ON session_streams (sid, ended, expires_at, stream)`,
      ],
    },
  ],
}
