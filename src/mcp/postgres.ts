/**
 * @module stateless-mcp/postgres
 * The engine's state in PostgreSQL, for replicas on many machines: sessions, resumable streams and
 * tasks that every replica sharing the database serves, each cap decided by the database. On the
 * pure-JavaScript `postgres` driver (an optional peer dependency: install it to use this entry). The
 * schema travels inside the code: `migrate()` creates the engine's tables, or adopts those an older
 * deployment made. A server that cannot be reached is `StoreUnavailableError` (answered 503 with
 * `Retry-After`), and calls made while it is down are refused at once until it answers again. An
 * application keeping its own tables in the same database shares the pool: open it with
 * {@link connectPostgres} and give it to both stores. Replicas sharing the database hear each
 * other's events on {@link PostgresEventBus} (LISTEN/NOTIFY).
 */
import postgres, { type Sql } from 'postgres'
import { ownedOrShared } from './stores/common/store-class.ts'
import { OUTAGE_CONNECTION_OPTIONS } from './stores/postgres/outage.ts'
import { PostgresDialectEngineStore } from './stores/postgres/store.ts'

export {
  DEFAULT_EVENT_CHANNEL,
  PostgresEventBus,
  type PostgresEventBusOptions,
} from './buses/postgres.ts'
export { isUnreachable, OUTAGE_CONNECTION_OPTIONS, withOutages } from './stores/postgres/outage.ts'
export {
  LEGACY_SCHEMA_VERSION,
  migratePostgresSchema,
  PostgresSchemaConnection,
  type PostgresSchema,
  type PostgresSchemaStep,
} from './stores/postgres/schema.ts'
export { purgePostgres, type PostgresPurge } from './stores/postgres/store.ts'
export { dec as decodePgText, enc as encodePgText } from './stores/postgres/text.ts'
export type { EngineStore } from './stores/engine-store.ts'

/** Where a pool of {@link connectPostgres} (or a store's own) connects, and how large it is. */
export interface PostgresConnectOptions {
  /** `postgres://user:password@host:port/database` (query parameters become connection settings). */
  url: string
  /** Most connections of the pool; the driver's default (10) when absent. */
  max?: number
}

/**
 * A pool on `options.url` with the settings an outage asks for (a bounded connect, reconnects at most
 * a second apart): share it between the engine's store and an application's; end it (`sql.end()`)
 * once they are closed. Throws `TypeError` for options that cannot make one.
 *
 * @example
 * ```ts
 * import { connectPostgres, PostgresEngineStore } from 'stateless-mcp/postgres'
 *
 * const sql = connectPostgres({ url: process.env.DATABASE_URL! })
 * const store = new PostgresEngineStore({ sql })
 * await store.migrate()
 * ```
 */
export function connectPostgres(options: PostgresConnectOptions): Sql {
  if (typeof options?.url !== 'string' || options.url === '') {
    throw new TypeError('PostgreSQL: options.url must be a postgres:// URL')
  }
  if (options.max !== undefined && (!Number.isInteger(options.max) || options.max < 1)) {
    throw new TypeError('PostgreSQL: options.max must be a positive integer')
  }
  return postgres(options.url, {
    ...(options.max === undefined ? {} : { max: options.max }),
    ...OUTAGE_CONNECTION_OPTIONS,
    onnotice: () => {},
  })
}

/** A pool of its own (`url`, `max`), or one shared with other stores (`sql`). */
export type PostgresEngineStoreOptions = PostgresConnectOptions | { sql: Sql }

/**
 * The engine's store in PostgreSQL. Given a `url`, it opens a pool and ends it at `close()`; given
 * `sql`, it shares that pool and leaves it open for its opener to end.
 *
 * @example
 * ```ts
 * import { PostgresEngineStore } from 'stateless-mcp/postgres'
 *
 * const store = new PostgresEngineStore({ url: process.env.DATABASE_URL! })
 * await store.migrate()
 * ```
 */
export class PostgresEngineStore extends PostgresDialectEngineStore {
  constructor(options: PostgresEngineStoreOptions) {
    super(...ownedOrShared(options, 'sql', connectPostgres))
  }
}
