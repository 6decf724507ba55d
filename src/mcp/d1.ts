/**
 * @module stateless-mcp/d1
 * The engine's state in a Cloudflare D1 database, for Workers: sessions, resumable streams and tasks
 * that every isolate of a deployment shares. The schema travels inside the code: `migrate()` creates
 * the engine's tables, or adopts those an older deployment's migrations made. An application keeping
 * its own tables in the same database hands both stores one {@link D1Driver}. Runtime-neutral (no
 * `node:*`, no workers-types: the binding is structural, {@link D1Like}).
 */
import { D1Driver, type D1Like } from './stores/sqlite/d1-driver.ts'
import { SqliteDialectEngineStore } from './stores/sqlite/store.ts'

export { D1Driver } from './stores/sqlite/d1-driver.ts'
export type { D1Like, D1PreparedLike } from './stores/sqlite/d1-driver.ts'
export type { EngineStore } from './stores/engine-store.ts'

/** The D1 binding (`db`, as `env.DB`), or a driver shared with other stores (`driver`). */
export type D1EngineStoreOptions = { db: D1Like } | { driver: D1Driver }

/**
 * The engine's store in a D1 database.
 *
 * @example
 * ```ts
 * import { D1EngineStore } from 'stateless-mcp/d1'
 *
 * export default {
 *   async fetch(request: Request, env: { DB: D1Database }) {
 *     const store = new D1EngineStore({ db: env.DB })
 *     await store.migrate()
 *     // … serve with it
 *   },
 * }
 * ```
 */
export class D1EngineStore extends SqliteDialectEngineStore {
  constructor(options: D1EngineStoreOptions) {
    const shared = options !== null && typeof options === 'object' && 'driver' in options
    super(
      shared ? options.driver : new D1Driver((options as { db: D1Like } | undefined)?.db as D1Like)
    )
  }
}
