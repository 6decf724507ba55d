/**
 * @module storage/postgres/schema
 * The PostgreSQL schema of the notes store: its numbered migrations and the one function that applies
 * them. Replicas starting together are safe: `migrateSchema` runs in one transaction under a
 * transaction-scoped advisory lock, so each step is applied once, with its row in `schema_migrations`.
 * Identifiers and tags compare and sort bytewise (`COLLATE "C"`), as in SQLite; times are BIGINT
 * milliseconds. The `*_tsv` columns hold the `tsvector` literals `search.ts` builds. Node-only (the
 * `postgres` driver); the statements that use the schema are the port modules' (`notes.ts`,
 * `shares.ts`, `sessions.ts`, `streams.ts`, `tasks.ts`) and the purge's (`storage/postgres.ts`).
 */
import type { Sql } from 'postgres'

/** Key of the advisory lock that serialises migrations across replicas (any fixed bigint). */
const MIGRATION_LOCK_KEY = 0x6e6f7465736d6370n // "notesmcp"

/**
 * Numbered migrations, applied in order, each once, inside one transaction with its bookkeeping row.
 * Never edit a released step; append a new one.
 */
const MIGRATIONS: ReadonlyArray<{ version: number; statements: readonly string[] }> = [
  {
    version: 1,
    statements: [
      `CREATE TABLE notes (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL,
        principal text COLLATE "C" NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        tags text[] COLLATE "C" NOT NULL DEFAULT '{}',
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        version bigint NOT NULL DEFAULT 1,
        title_tsv tsvector NOT NULL,
        tags_tsv tsvector NOT NULL,
        body_tsv tsvector NOT NULL,
        search tsvector GENERATED ALWAYS AS (title_tsv || tags_tsv || body_tsv) STORED,
        UNIQUE (principal, id)
      )`,
      `CREATE INDEX notes_by_recency ON notes (principal, updated_at DESC, seq DESC)`,
      `CREATE INDEX notes_search ON notes USING gin (search)`,
      `CREATE TABLE used_keys (
        once_key text PRIMARY KEY,
        used_at bigint NOT NULL
      )`,
      `CREATE TABLE share_requests (
        id text PRIMARY KEY,
        principal text NOT NULL,
        note_id text NOT NULL,
        status text NOT NULL DEFAULT 'pending'
          CHECK (status IN ('pending', 'approved', 'refused')),
        expires_at bigint NOT NULL,
        decided_at bigint,
        link_id text
      )`,
      `CREATE TABLE shared_links (
        id text PRIMARY KEY,
        share_id text NOT NULL UNIQUE REFERENCES share_requests (id),
        principal text NOT NULL,
        note_id text NOT NULL,
        created_at bigint NOT NULL
      )`,
    ],
  },
  {
    // The purge of expired rows (NotesStore.purgeExpired) finds them without a scan.
    version: 2,
    statements: [
      `CREATE INDEX used_keys_by_use ON used_keys (used_at)`,
      `CREATE INDEX share_requests_unpublished_by_expiry ON share_requests (expires_at)
        WHERE link_id IS NULL`,
    ],
  },
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
    // the query (hence the included lease_expires_at) so that it never reads a large row. notes_by_id
    // lets importNotes skip an id that names a note of any principal.
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
      `CREATE INDEX notes_by_id ON notes (id)`,
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
]

/** The version of the newest step: a migrated database records every version from 1 to this one. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length

/** Applies the steps of {@link MIGRATIONS} the database has not recorded yet. */
export async function migrateSchema(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      applied_at bigint NOT NULL
    )`
    const [row] = await tx<Array<{ v: number }>>`
      SELECT coalesce(max(version), 0)::integer AS v FROM schema_migrations`
    const current = row?.v ?? 0
    for (const step of MIGRATIONS) {
      if (step.version <= current) continue
      for (const statement of step.statements) await tx.unsafe(statement)
      await tx`INSERT INTO schema_migrations (version, applied_at)
        VALUES (${step.version}, ${Date.now()})`
    }
  })
}
