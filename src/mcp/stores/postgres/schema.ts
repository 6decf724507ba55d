/**
 * @module mcp/stores/postgres/schema
 * How a schema that travels inside the code reaches PostgreSQL, for the engine's tables
 * ({@link ENGINE_POSTGRES_SCHEMA}) and for an application's own tables in the same database: a
 * {@link PostgresSchema} is numbered steps and the name of the table that records which were applied;
 * {@link migratePostgresSchema} applies the steps not recorded, each once, inside one transaction
 * under a transaction-scoped advisory lock, so replicas starting together are safe.
 *
 * Adoption: until this package kept its own, one bookkeeping table (`schema_migrations`) recorded the
 * steps of the whole shared schema, 1 to 8. The engine's steps keep those steps' numbers (3 to 8 made
 * the engine's tables), so a schema whose own table is new starts from the last step the old
 * bookkeeping recorded (at most {@link LEGACY_SCHEMA_VERSION}): a database an older deployment
 * created keeps every session, stream and task. Only a schema that says so adopts
 * (`adoptsSharedBookkeeping`), and only when the database holds that bookkeeping's own mark beside
 * it, the `used_keys` table its first step made: another tool's `schema_migrations` in the same
 * database is not taken for it. Every schema takes the lock the older code took, so none reads the
 * old bookkeeping while an older replica is still writing it.
 *
 * A store's connection whose tables are such a schema is a {@link PostgresSchemaConnection}.
 *
 * Identifiers compare and sort bytewise (`COLLATE "C"`), as in SQLite; times are BIGINT milliseconds.
 */
import type { Sql } from 'postgres'
import { StoreConnection } from '../common/store-class.ts'

/** Key of the advisory lock that serialises migrations across replicas (the older code's key). */
const MIGRATION_LOCK_KEY = 0x6e6f7465736d6370n // "notesmcp"

/** The table the older shared bookkeeping's first step made, which marks that bookkeeping as it. */
const SHARED_BOOKKEEPING_MARK = 'used_keys'

/**
 * The last step the shared bookkeeping of older deployments ever recorded (module header): a
 * schema of an application that shared that bookkeeping numbers its new steps after it.
 *
 * @example
 * ```ts
 * import { LEGACY_SCHEMA_VERSION, migratePostgresSchema } from 'stateless-mcp/postgres'
 *
 * await migratePostgresSchema(sql, {
 *   table: 'app_schema',
 *   steps: [
 *     { version: LEGACY_SCHEMA_VERSION + 1, statements: ['ALTER TABLE things ADD note text'] },
 *   ],
 * })
 * ```
 */
export const LEGACY_SCHEMA_VERSION = 8

/** One step of a schema: its number, and its statements, applied in order. */
export interface PostgresSchemaStep {
  readonly version: number
  readonly statements: readonly string[]
}

/** A schema kept in code: its steps, in order, and the table that records which were applied. */
export interface PostgresSchema {
  /** A plain SQL identifier, the schema's own (`version`, `applied_at`). */
  readonly table: string
  readonly steps: readonly PostgresSchemaStep[]
  /**
   * Whether the schema adopts the step the older shared bookkeeping recorded when its own table is
   * new (module header): set only by the schemas whose first steps that bookkeeping recorded (the
   * engine's, and the notes server's). A schema without it starts from its own table.
   */
  readonly adoptsSharedBookkeeping?: boolean
}

/**
 * Applies the steps of `schema` the database has not recorded, in one transaction under the
 * migration lock (module header), once it has checked that the database is UTF8-encoded (the
 * stores' escape of text, `text.ts`, assumes it).
 *
 * @example
 * ```ts
 * await migratePostgresSchema(sql, {
 *   table: 'app_schema',
 *   steps: [{ version: 1, statements: ['CREATE TABLE things (id text PRIMARY KEY)'] }],
 * })
 * ```
 */
export async function migratePostgresSchema(sql: Sql, schema: PostgresSchema): Promise<void> {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema.table)) {
    throw new TypeError(
      `schema table ${JSON.stringify(schema.table)} is not a plain SQL identifier`
    )
  }
  const [encoding] = await sql<Array<{ server_encoding: string }>>`SHOW server_encoding`
  if (encoding?.server_encoding !== 'UTF8') {
    throw new Error(
      `the PostgreSQL stores need a UTF8 database (this one is ${encoding?.server_encoding})`
    )
  }
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`
    const [found] = await tx<Array<{ own: boolean; legacy: boolean }>>`
      SELECT to_regclass(${schema.table}) IS NOT NULL AS own,
        to_regclass('schema_migrations') IS NOT NULL
          AND to_regclass(${SHARED_BOOKKEEPING_MARK}) IS NOT NULL AS legacy`
    if (!found?.own) {
      await tx`CREATE TABLE ${tx(schema.table)} (
        version integer PRIMARY KEY,
        applied_at bigint NOT NULL
      )`
      if (schema.adoptsSharedBookkeeping === true && found?.legacy) {
        await tx`INSERT INTO ${tx(schema.table)} (version, applied_at)
          SELECT least(max(version), ${LEGACY_SCHEMA_VERSION}), ${Date.now()} FROM schema_migrations
          HAVING max(version) IS NOT NULL`
      }
    }
    const [row] = await tx<Array<{ v: number }>>`
      SELECT coalesce(max(version), 0)::integer AS v FROM ${tx(schema.table)}`
    const current = row?.v ?? 0
    for (const step of schema.steps) {
      if (step.version <= current) continue
      for (const statement of step.statements) await tx.unsafe(statement)
      await tx`INSERT INTO ${tx(schema.table)} (version, applied_at)
        VALUES (${step.version}, ${Date.now()})`
    }
  })
}

/**
 * The connection of a store whose tables on a PostgreSQL pool are {@link schema}: `migrate()` brings
 * them up to date ({@link migratePostgresSchema}), `close()` ends the pool when the store owns it.
 * The engine's PostgreSQL store is made on one; so is an application's store sharing its pool (give
 * it its methods with `storeClass`).
 *
 * @example
 * ```ts
 * import { PostgresSchemaConnection } from 'stateless-mcp/postgres'
 *
 * class BookmarksConnection extends PostgresSchemaConnection {
 *   protected readonly schema = {
 *     table: 'bookmarks_schema',
 *     steps: [{ version: 1, statements: ['CREATE TABLE bookmarks (id serial PRIMARY KEY, url text)'] }],
 *   }
 * }
 * ```
 */
export abstract class PostgresSchemaConnection extends StoreConnection<Sql> {
  /** The store's tables, step by step. */
  protected abstract readonly schema: PostgresSchema

  protected prepare(sql: Sql): Promise<void> {
    return migratePostgresSchema(sql, this.schema)
  }

  protected async release(sql: Sql): Promise<void> {
    await sql.end({ timeout: 5 })
  }
}

/**
 * The engine's tables on PostgreSQL, step by step: the numbers and statements of the shared schema's
 * steps that made them (module header). Never edit a released step; append a new one (from 9 on).
 */
export const ENGINE_POSTGRES_SCHEMA: PostgresSchema = {
  table: 'mcp_schema',
  adoptsSharedBookkeeping: true,
  steps: [
    {
      // What 2025-era sessions keep in the store (mcp/session-store.ts), each row with its expiry.
      version: 3,
      statements: [
        `CREATE TABLE sessions (
          sid text COLLATE "C" PRIMARY KEY,
          ended boolean NOT NULL DEFAULT false,
          log_level text CHECK (log_level IN
            ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
          expires_at bigint NOT NULL
        )`,
        `CREATE INDEX sessions_by_expiry ON sessions (expires_at)`,
        `CREATE TABLE session_subscriptions (
          sid text COLLATE "C" NOT NULL,
          uri text COLLATE "C" NOT NULL,
          expires_at bigint NOT NULL,
          PRIMARY KEY (sid, uri)
        )`,
        `CREATE INDEX session_subscriptions_by_expiry ON session_subscriptions (expires_at)`,
        `CREATE TABLE input_slots (
          sid text COLLATE "C" NOT NULL,
          request_id text COLLATE "C" NOT NULL,
          payload text,
          expires_at bigint NOT NULL,
          PRIMARY KEY (sid, request_id)
        )`,
        `CREATE INDEX input_slots_by_expiry ON input_slots (expires_at)`,
      ],
    },
    {
      // The records of tasks (mcp/task-store.ts): every TaskRecord field, JSON-valued fields as the
      // text given, NULL for an absent optional field; purged at expires_at. tasks_runnable serves
      // findRunnableTasks: working tasks only, keyed by the lease's end (0 without a lease), covering
      // the query (hence the included lease_expires_at) so that it never reads a large row.
      version: 4,
      statements: [
        `CREATE TABLE tasks (
          id text COLLATE "C" PRIMARY KEY,
          owner text COLLATE "C" NOT NULL,
          tool text NOT NULL,
          args text NOT NULL,
          created_at bigint NOT NULL,
          status text NOT NULL
            CHECK (status IN ('working', 'input_required', 'completed', 'cancelled', 'failed')),
          status_message text,
          updated_at bigint NOT NULL,
          expires_at bigint NOT NULL,
          poll_interval_ms bigint NOT NULL,
          journal text NOT NULL,
          input_requests text,
          input_responses text,
          result text,
          error text,
          cancel_requested boolean NOT NULL DEFAULT false,
          lease_owner text,
          lease_expires_at bigint,
          version bigint NOT NULL DEFAULT 1
        )`,
        `CREATE INDEX tasks_by_expiry ON tasks (expires_at)`,
        `CREATE INDEX tasks_runnable ON tasks ((coalesce(lease_expires_at, 0)), expires_at, id)
          INCLUDE (lease_expires_at) WHERE status = 'working'`,
      ],
    },
    {
      // 2025-era sessions are recorded by initialize with their principal, creation time and the
      // expiry sealed in their id, and live only while their row exists (mcp/session-store.ts): the
      // caps on a principal's live sessions and subscriptions read its rows through the *_by_principal
      // indexes (sessions newest first, the order in which one created at the cap ends the oldest),
      // and a DELETEd session can never come back. The tables are rebuilt: every row of step 3
      // belongs to a session this step no longer counts as live (its id was never recorded).
      version: 5,
      statements: [
        `DROP TABLE sessions`,
        `DROP TABLE session_subscriptions`,
        `CREATE TABLE sessions (
          sid text COLLATE "C" PRIMARY KEY,
          principal text COLLATE "C" NOT NULL,
          log_level text CHECK (log_level IN
            ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
          created_at bigint NOT NULL,
          expires_at bigint NOT NULL
        )`,
        `CREATE INDEX sessions_by_expiry ON sessions (expires_at)`,
        `CREATE INDEX sessions_by_principal ON sessions (principal, created_at, sid)
          INCLUDE (expires_at)`,
        `CREATE TABLE session_subscriptions (
          sid text COLLATE "C" NOT NULL,
          uri text COLLATE "C" NOT NULL,
          principal text COLLATE "C" NOT NULL,
          expires_at bigint NOT NULL,
          PRIMARY KEY (sid, uri)
        )`,
        `CREATE INDEX session_subscriptions_by_expiry ON session_subscriptions (expires_at)`,
        `CREATE INDEX session_subscriptions_by_principal
          ON session_subscriptions (principal, expires_at)`,
      ],
    },
    {
      // The cap on live tasks per principal (TaskStore.createTask): each task names its principal
      // alone too (its owner binds the OAuth client as well), and tasks_live_by_principal counts a
      // principal's unexpired tasks from the index alone. Rows from before have principal '' and count
      // for no one; they are gone within their TTL.
      version: 6,
      statements: [
        `ALTER TABLE tasks ADD COLUMN principal text COLLATE "C" NOT NULL DEFAULT ''`,
        `CREATE INDEX tasks_live_by_principal ON tasks (principal, expires_at)`,
      ],
    },
    {
      // The resumable SSE streams of 2025-era sessions (mcp/stream-store.ts): a record per stream of a
      // session (its suspended call, NULL for none; the lease of the replica driving it; whether its
      // last event is stored; the version of its compare-and-set) and its events numbered from 1. Both
      // keyed by sid first, so that ending a session removes its streams through the primary keys; a
      // resuming read (sid, stream, seq > n, in order) walks the events' primary key, which also
      // refuses a second writer of one seq. Purged at expires_at.
      version: 7,
      statements: [
        `CREATE TABLE session_streams (
          sid text COLLATE "C" NOT NULL,
          stream text COLLATE "C" NOT NULL,
          call text,
          lease_owner text,
          lease_expires_at bigint,
          ended boolean NOT NULL DEFAULT false,
          expires_at bigint NOT NULL,
          version bigint NOT NULL DEFAULT 1,
          PRIMARY KEY (sid, stream)
        )`,
        `CREATE INDEX session_streams_by_expiry ON session_streams (expires_at)`,
        `CREATE TABLE stream_events (
          sid text COLLATE "C" NOT NULL,
          stream text COLLATE "C" NOT NULL,
          seq bigint NOT NULL,
          payload text NOT NULL,
          expires_at bigint NOT NULL,
          PRIMARY KEY (sid, stream, seq)
        )`,
        `CREATE INDEX stream_events_by_expiry ON stream_events (expires_at)`,
      ],
    },
    {
      // A session's stream records by whether they ended and when they expire: the cap a stream
      // creation checks (its live records counted, its oldest ended ones evicted) read from the index.
      version: 8,
      statements: [
        `CREATE INDEX session_streams_by_session ON session_streams (sid, ended, expires_at, stream)`,
      ],
    },
  ],
}
