/**
 * @module mcp/stores/postgres/store
 * The engine's store on PostgreSQL ({@link PostgresDialectEngineStore}), for replicas on many
 * machines sharing one database: what 2025-era sessions keep (`SessionStore`: live sessions, their
 * creation times and log levels, subscriptions, input slots, and their resumable streams,
 * `StreamStore`), the records of tasks (`TaskStore`) and the purge of expired rows. Made of one
 * module per port (`common/store-class.ts`): `sessions.ts`, `streams.ts`, `tasks.ts`, and here the
 * connection's lifecycle and the purge; every method is wrapped by `outage.ts`. The schema is
 * `schema.ts`'s, in code; the escape of text `text.ts`'s.
 *
 * Concurrency: every check-and-set (task or stream version, input slot) is decided by PostgreSQL — a
 * conditional `UPDATE`, an `INSERT … ON CONFLICT DO NOTHING` on a unique key — never in memory;
 * multi-statement writes run in one transaction. The caps on a principal's sessions, subscriptions
 * and live tasks, and on a session's stream records, are each counted under an advisory lock (READ
 * COMMITTED alone would let two replicas both take the last place). A purge takes its rows with
 * `FOR UPDATE SKIP LOCKED`, so replicas sweeping at once never wait on each other.
 *
 * Errors: `StoreNotMigratedError` when a method runs before `migrate()` or after `close()`;
 * `RangeError` for invalid caps, purge or runnable-task limits; `StoreUnavailableError` when the
 * server cannot be reached (`outage.ts`). Other database failures propagate as the driver's errors.
 */
import type { PendingQuery, Row, Sql } from 'postgres'
import { storeClass, type PortMethods } from '../common/store-class.ts'
import { purgeWithin } from '../common/sweeps.ts'
import type { EngineStore } from '../engine-store.ts'
import { withOutages } from './outage.ts'
import { ENGINE_POSTGRES_SCHEMA, PostgresSchemaConnection } from './schema.ts'
import { sessionMethods } from './sessions.ts'
import { streamMethods } from './streams.ts'
import { taskMethods } from './tasks.ts'

/** A table a purge sweeps and the condition its rows meet once their lifetime ended at `now`. */
export interface PostgresPurge {
  table: string
  expired: (sql: Sql, now: number) => PendingQuery<Row[]>
}

/** The engine's tables `purgeExpired` sweeps, in the order it spends its budget. */
const PURGES: readonly PostgresPurge[] = [
  'sessions',
  'session_subscriptions',
  'input_slots',
  'tasks',
  'session_streams',
  'stream_events',
].map((table) => ({ table, expired: (sql, now) => sql`expires_at <= ${now}` }))

/**
 * Removes at most `limit` rows of `purges`' tables expired at `now`, the budget spent in order; the
 * rows are chosen and locked once, in a materialised CTE, then deleted by their ctid; rows another
 * replica's purge holds are skipped, so sweeping replicas never wait on each other. The
 * `purgeExpired` of an application's PostgreSQL store, written in one call.
 *
 * @example
 * ```ts
 * import type { Sql } from 'postgres'
 * import type { PortMethods } from 'stateless-mcp/compose'
 * import { purgePostgres, type PostgresPurge } from 'stateless-mcp/postgres'
 *
 * const PURGES: PostgresPurge[] = [
 *   { table: 'drafts', expired: (sql, now) => sql`expires_at <= ${now}` },
 * ]
 * const sweepMethods: PortMethods<Pick<BookmarksStore, 'purgeExpired'>, Sql> = {
 *   purgeExpired(now, limit) {
 *     return purgePostgres(this.db, now, limit, PURGES)
 *   },
 * }
 * ```
 */
export function purgePostgres(
  sql: Sql,
  now: number,
  limit: number,
  purges: readonly PostgresPurge[]
): Promise<number> {
  return purgeWithin(now, limit, purges, async ({ table, expired }, budget) => {
    const removed = await sql`
      WITH doomed AS MATERIALIZED (
        SELECT ctid FROM ${sql(table)} WHERE ${expired(sql, now)}
        LIMIT ${budget} FOR UPDATE SKIP LOCKED)
      DELETE FROM ${sql(table)} AS t USING doomed WHERE t.ctid = doomed.ctid`
    return removed.count
  })
}

/** The pool and its lifecycle: `migrate` brings the engine's tables up to date, `close` ends it. */
class PostgresConnection extends PostgresSchemaConnection {
  protected readonly schema = ENGINE_POSTGRES_SCHEMA
}

const sweepMethods: PortMethods<Pick<EngineStore, 'purgeExpired'>, Sql> = {
  async purgeExpired(now, limit) {
    return purgePostgres(this.db, now, limit, PURGES)
  },
}

/**
 * The PostgreSQL `EngineStore` over a pool: `new PostgresDialectEngineStore(sql, owned)`; `owned`
 * (default true): whether `close()` ends the pool (false when other stores share it).
 */
export const PostgresDialectEngineStore = storeClass<EngineStore, [sql: Sql, owned?: boolean], Sql>(
  PostgresConnection,
  withOutages({ ...sessionMethods, ...streamMethods, ...taskMethods, ...sweepMethods })
)
