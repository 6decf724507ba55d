/**
 * @module storage/postgres
 * The `NotesStore` adapter on PostgreSQL (the pure-JS `postgres` driver), for replicas on many machines
 * sharing one database. It holds: the single-use keys that make deletes (of one note, or of a chosen
 * set in one transaction) and share publications happen at most once across every replica, the
 * optimistic concurrency of updates, what 2025-era sessions keep
 * (`SessionStore`: live sessions, their creation times and log levels, subscriptions, input slots,
 * and their resumable streams, `StreamStore`), the records of tasks (`TaskStore`), the idempotent
 * import of notes, and the purge of expired rows.
 * It has the semantics of the SQLite-dialect store (`sqlite/store.ts`). Made of one module per port
 * (`common/store-class.ts`): `postgres/notes.ts`, `postgres/shares.ts`, `postgres/sessions.ts`,
 * `postgres/streams.ts`, `postgres/tasks.ts`, and here the connection, its lifecycle and the purge,
 * which sweeps every table; every method is wrapped by `postgres/outage.ts`. The schema and its
 * migrations are `postgres/schema.ts`'s, the search text builders `postgres/search.ts`'s, the escape
 * of text `postgres/text.ts`'s.
 *
 * Concurrency: every check-and-set (note or task version, share status, single-use key, published
 * link, input slot, imported note) is decided by PostgreSQL — a conditional `UPDATE`, an
 * `INSERT … ON CONFLICT DO NOTHING` on a unique key, a row lock — never in memory; multi-statement
 * writes run in one transaction. The caps on a principal's sessions, subscriptions and live tasks
 * are each counted under a per-principal advisory lock (READ COMMITTED alone would let two replicas
 * both take the last place); a session created at the cap ends the principal's oldest-created ones,
 * with their subscriptions and streams, under that lock and in the same transaction as its insert.
 * A purge takes its rows with `FOR UPDATE SKIP LOCKED`, so replicas sweeping at once never wait on
 * each other.
 *
 * Text: PostgreSQL `text` cannot hold U+0000, so every string crosses the boundary through a
 * reversible, order- and prefix-preserving escape (U+0000 ⇄ U+0001 U+0001, U+0001 ⇄ U+0001 U+0002;
 * `postgres/text.ts`); stored values are escaped, everything returned is exactly what was given. The
 * database must be UTF8-encoded.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, tag normalisation,
 * wording of errors, generation of share-request, link and single-use key ids (the notes application),
 * and the connection URL (configuration, `DATABASE_URL`). It generates note ids itself (imported notes
 * come with theirs), never task ids.
 *
 * Shared with the other adapters (`storage/common/`): the lifecycle, `delete` as the `deleteMany` of
 * one id, note and share-request mapping and outcomes, tag normalisation, paging, the choice of
 * search words, the task columns and the mapping of records and patches onto them (the task
 * statements are built from those lists, once); note ids come from `notes/note-id.ts`.
 *
 * Errors: `ShareNotApprovedError` when `publishShare` is asked to publish a share that is missing,
 * belongs to another principal or is not approved; `StoreNotMigratedError` when a method runs
 * before `migrate()` or after `close()`; `RangeError` for invalid paging, purge or runnable-task
 * limits and refused imports; `StoreUnavailableError` (the engine's, `mcp/errors.ts`) when the
 * server cannot be reached (restarting, failing over, killed: `postgres/outage.ts`, which also bounds
 * the connect and the reconnect delay). Other database failures propagate as the driver's errors.
 * The first two error classes are defined with the store contract (`notes/store.ts`).
 */

import postgres, { type PendingQuery, type Row, type Sql } from 'postgres'
import { REPLAY_RETENTION_MS, type NotesStore } from '../notes/store.ts'
import { StoreConnection, storeClass, type PortMethods } from './common/store-class.ts'
import { purgeWithin } from './common/sweeps.ts'
import { noteMethods } from './postgres/notes.ts'
import { OUTAGE_CONNECTION_OPTIONS, withOutages } from './postgres/outage.ts'
import { migrateSchema } from './postgres/schema.ts'
import { sessionMethods } from './postgres/sessions.ts'
import { shareMethods } from './postgres/shares.ts'
import { streamMethods } from './postgres/streams.ts'
import { taskMethods } from './postgres/tasks.ts'

export interface PostgresNotesStoreOptions {
  /** `postgres://user:password@host:port/database` (query parameters become connection settings). */
  url: string
  /** Most connections of the pool; the driver's default (10) when absent. */
  max?: number
}

/**
 * The tables `purgeExpired` sweeps, in the order it spends its budget, each with the condition its
 * rows meet once their lifetime ended at `now`: once-keys and unpublished shares are kept
 * `REPLAY_RETENTION_MS` past their last use (published shares stay with their links), session rows,
 * tasks, stream records and events go at their own expiry.
 */
const PURGES: ReadonlyArray<{
  table: string
  expired: (sql: Sql, now: number) => PendingQuery<Row[]>
}> = [
  { table: 'used_keys', expired: (sql, now) => sql`used_at <= ${now - REPLAY_RETENTION_MS}` },
  {
    table: 'share_requests',
    expired: (sql, now) => sql`link_id IS NULL AND expires_at <= ${now - REPLAY_RETENTION_MS}`,
  },
  { table: 'sessions', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'session_subscriptions', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'input_slots', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'tasks', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'session_streams', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'stream_events', expired: (sql, now) => sql`expires_at <= ${now}` },
]

/** The pool and its lifecycle: `migrate` checks the encoding and migrates, `close` ends the pool. */
class PostgresConnection extends StoreConnection<Sql> {
  constructor(options: PostgresNotesStoreOptions) {
    super(connect(options))
  }

  protected async prepare(sql: Sql): Promise<void> {
    const [encoding] = await sql<Array<{ server_encoding: string }>>`SHOW server_encoding`
    if (encoding?.server_encoding !== 'UTF8') {
      throw new Error(
        `PostgresNotesStore needs a UTF8 database (this one is ${encoding?.server_encoding})`
      )
    }
    await migrateSchema(sql)
  }

  protected async release(sql: Sql): Promise<void> {
    await sql.end({ timeout: 5 })
  }
}

const sweepMethods: PortMethods<Pick<NotesStore, 'purgeExpired'>, Sql> = {
  async purgeExpired(now, limit) {
    const sql = this.db
    // The rows are chosen and locked once, in a materialised CTE, then deleted by their ctid; rows
    // another replica's purge holds are skipped, so sweeping replicas never wait on each other.
    return purgeWithin(now, limit, PURGES, async ({ table, expired }, budget) => {
      const removed = await sql`
        WITH doomed AS MATERIALIZED (
          SELECT ctid FROM ${sql(table)} WHERE ${expired(sql, now)}
          LIMIT ${budget} FOR UPDATE SKIP LOCKED)
        DELETE FROM ${sql(table)} AS t USING doomed WHERE t.ctid = doomed.ctid`
      return removed.count
    })
  },
}

export class PostgresNotesStore extends storeClass(
  PostgresConnection,
  withOutages({
    ...noteMethods,
    ...shareMethods,
    ...sessionMethods,
    ...streamMethods,
    ...taskMethods,
    ...sweepMethods,
  })
) {}

/** The pool behind `options`; throws `TypeError` for options that cannot make one. */
function connect(options: PostgresNotesStoreOptions): Sql {
  if (typeof options?.url !== 'string' || options.url === '') {
    throw new TypeError('PostgresNotesStore: options.url must be a postgres:// URL')
  }
  if (options.max !== undefined && (!Number.isInteger(options.max) || options.max < 1)) {
    throw new TypeError('PostgresNotesStore: options.max must be a positive integer')
  }
  return postgres(options.url, {
    ...(options.max === undefined ? {} : { max: options.max }),
    ...OUTAGE_CONNECTION_OPTIONS,
    onnotice: () => {},
  })
}
