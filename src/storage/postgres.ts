/**
 * @module storage/postgres
 * The `NotesStore` adapter on PostgreSQL (the pure-JS `postgres` driver), for replicas on many machines
 * sharing one database. It holds: the single-use keys that make deletes (of one note, or of a chosen
 * set in one transaction) and share publications happen at most once across every replica, the
 * optimistic concurrency of updates, the idempotent import of notes, and the purge of expired rows.
 * The engine's state (sessions, streams, tasks) is the engine's store (`stateless-mcp/postgres`), on
 * the same pool ({@link openPostgresStores}). It has the semantics of the SQLite-dialect store
 * (`sqlite/store.ts`). Made of one module per port (the engine's `common/store-class.ts`):
 * `postgres/notes.ts`, `postgres/shares.ts`, and here the connection, its lifecycle and the purge;
 * every method is wrapped by the engine's outage handling (`withOutages`). The schema is
 * `postgres/schema.ts`'s, applied by the engine's `PostgresSchemaConnection`; the search text builders
 * are `postgres/search.ts`'s.
 *
 * Concurrency: every check-and-set (note version, share status, single-use key, published link,
 * imported note) is decided by PostgreSQL — a conditional `UPDATE`, an `INSERT … ON CONFLICT DO
 * NOTHING` on a unique key, a row lock — never in memory; multi-statement writes run in one
 * transaction. A purge takes its rows with `FOR UPDATE SKIP LOCKED`, so replicas sweeping at once never
 * wait on each other.
 *
 * Text: PostgreSQL `text` cannot hold U+0000, so every string crosses the boundary through the
 * engine's reversible, order- and prefix-preserving escape (`encodePgText`, `decodePgText`); stored
 * values are escaped, everything returned is exactly what was given. The database must be
 * UTF8-encoded.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, tag normalisation,
 * wording of errors, generation of share-request, link and single-use key ids (the notes application),
 * and the connection URL (configuration, `DATABASE_URL`). It generates note ids itself (imported notes
 * come with theirs).
 *
 * Errors: `ShareNotApprovedError` when `publishShare` is asked to publish a share that is missing,
 * belongs to another principal or is not approved; `StoreNotMigratedError` when a method runs
 * before `migrate()` or after `close()`; `RangeError` for invalid paging, purge limits and refused
 * imports; `StoreUnavailableError` (the engine's) when the server cannot be reached. Other database
 * failures propagate as the driver's errors.
 */
import type { Sql } from 'postgres'
import {
  connectPostgres,
  PostgresEngineStore,
  PostgresSchemaConnection,
  purgePostgres,
  withOutages,
  type PostgresConnectOptions,
  type PostgresPurge,
} from 'stateless-mcp/postgres'
import { type PortMethods, storeClass } from 'stateless-mcp/compose'
import { REPLAY_RETENTION_MS, type NotesStore } from '../notes/store.ts'
import { storesOnOneConnection, type DeploymentStores } from './common/stores.ts'
import { noteMethods } from './postgres/notes.ts'
import { NOTES_POSTGRES_SCHEMA } from './postgres/schema.ts'
import { shareMethods } from './postgres/shares.ts'

/** A pool of its own (`url`, `max`), or the pool the engine's store shares (`sql`). */
export type PostgresNotesStoreOptions = PostgresConnectOptions | { sql: Sql }

/**
 * The tables `purgeExpired` sweeps, in the order it spends its budget: once-keys and unpublished
 * shares are kept `REPLAY_RETENTION_MS` past their last use (published shares stay with their links).
 */
const PURGES: readonly PostgresPurge[] = [
  { table: 'used_keys', expired: (sql, now) => sql`used_at <= ${now - REPLAY_RETENTION_MS}` },
  {
    table: 'share_requests',
    expired: (sql, now) => sql`link_id IS NULL AND expires_at <= ${now - REPLAY_RETENTION_MS}`,
  },
]

/** The pool and its lifecycle: `migrate` brings the notes tables up to date, `close` ends the pool. */
class PostgresConnection extends PostgresSchemaConnection {
  protected readonly schema = NOTES_POSTGRES_SCHEMA

  constructor(options: PostgresNotesStoreOptions) {
    const shared = options !== null && typeof options === 'object' && 'sql' in options
    super(shared ? options.sql : connectPostgres(options), !shared)
  }
}

const sweepMethods: PortMethods<Pick<NotesStore, 'purgeExpired'>, Sql> = {
  async purgeExpired(now, limit) {
    return purgePostgres(this.db, now, limit, PURGES)
  },
}

export class PostgresNotesStore extends storeClass<
  NotesStore,
  [options: PostgresNotesStoreOptions],
  Sql
>(PostgresConnection, withOutages({ ...noteMethods, ...shareMethods, ...sweepMethods })) {}

/** Opens the notes store and the engine's store on one pool. */
export function openPostgresStores(options: PostgresConnectOptions): DeploymentStores {
  const sql = connectPostgres(options)
  return storesOnOneConnection(
    new PostgresNotesStore({ sql }),
    new PostgresEngineStore({ sql }),
    () => sql.end({ timeout: 5 })
  )
}
