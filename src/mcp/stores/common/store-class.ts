/**
 * @module mcp/stores/common/store-class
 * How a SQL store is assembled from one module per port, for the engine's stores (sessions, streams,
 * tasks) and for an application's own store on the same database: a {@link StoreConnection} (the
 * database handle and the lifecycle every adapter shares: usable from `migrate()` until `close()`,
 * {@link StoreNotMigratedError} otherwise) with the methods of the ports put on its prototype by
 * {@link storeClass}. The methods are object literals typed by their port ({@link PortMethods}), so
 * their signatures are the contract's, written once, and they run with the store as `this` (its
 * handle is `this.db`). On the prototype, as a class's own methods would be: a subclass may override
 * one and call `super`. Also what a port method asks of an insert's answer ({@link insertedRow}).
 *
 * A connection may be shared by several stores (the engine's and an application's on one SQLite
 * file or one PostgreSQL pool): a store given a handle it did not open leaves it open at `close()`
 * (`owned: false`), for its opener to close. Runtime-neutral.
 */

/**
 * A store method ran before `migrate()` prepared (or checked) the schema, or after `close()`: the
 * error of every store made with {@link storeClass}, the engine's included. Its message names the
 * fix.
 *
 * @example
 * ```ts
 * import { StoreNotMigratedError } from 'stateless-mcp/compose'
 *
 * try {
 *   await bookmarks.add('https://example.com')
 * } catch (error) {
 *   if (error instanceof StoreNotMigratedError) console.error('call migrate() at startup')
 *   throw error
 * }
 * ```
 */
export class StoreNotMigratedError extends Error {
  override name = 'StoreNotMigratedError'
}

/** What every store of this kind has besides its ports: the schema and the handle's lifecycle. */
export interface StoreLifecycle {
  /** Creates the schema if needed (idempotent). Called once at startup. */
  migrate(): Promise<void>
  /** Releases the connection (when the store opened it); later calls throw. Idempotent. */
  close(): Promise<void>
}

/** What a port's methods see as `this`: the whole store, with its database handle. */
export type StoreThis<Store, Handle> = Store & { readonly db: Handle }

/** The methods of one port (`Port`, a slice of `Store`), as a dialect writes them over `Handle`. */
export type PortMethods<Port, Handle, Store = Port> = Port & ThisType<StoreThis<Store, Handle>>

/**
 * A store's database handle (a driver, a pool) and its lifecycle: `migrate()` prepares (or checks)
 * the schema through {@link prepare}, `close()` releases the handle through {@link release}, once,
 * when the store owns it. Extend it for an application's store, then give it its methods with
 * {@link storeClass}.
 *
 * @example
 * ```ts
 * import type { Sql } from 'postgres'
 * import { StoreConnection } from 'stateless-mcp/compose'
 * import { migratePostgresSchema } from 'stateless-mcp/postgres'
 *
 * class BookmarksConnection extends StoreConnection<Sql> {
 *   protected prepare(sql: Sql): Promise<void> {
 *     return migratePostgresSchema(sql, {
 *       table: 'bookmarks_schema',
 *       steps: [
 *         { version: 1, statements: ['CREATE TABLE bookmarks (id serial PRIMARY KEY, url text)'] },
 *       ],
 *     })
 *   }
 *
 *   protected async release(sql: Sql): Promise<void> {
 *     await sql.end({ timeout: 5 })
 *   }
 * }
 * ```
 */
export abstract class StoreConnection<Handle> implements StoreLifecycle {
  readonly #handle: Handle
  readonly #owned: boolean
  #state: 'new' | 'ready' | 'closed' = 'new'

  /** `owned`: whether `close()` releases the handle (false when it is shared with other stores). */
  constructor(handle: Handle, owned = true) {
    this.#handle = handle
    this.#owned = owned
  }

  /** Makes sure the schema is in place (applying or checking it). */
  protected abstract prepare(handle: Handle): Promise<void>
  /** Releases the handle (ends a pool, closes a file). */
  protected abstract release(handle: Handle): Promise<void>

  async migrate(): Promise<void> {
    if (this.#state === 'closed') throw notMigrated(true)
    await this.prepare(this.#handle)
    this.#state = 'ready'
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return
    this.#state = 'closed'
    if (this.#owned) await this.release(this.#handle)
  }

  /** The handle the port methods run their statements on, from `migrate()` until `close()`. */
  get db(): Handle {
    if (this.#state !== 'ready') throw notMigrated(this.#state === 'closed')
    return this.#handle
  }
}

/**
 * The handle a store is made on, and whether it owns it: the one `options[key]` shares (left open
 * for its opener to close), or else one `open(options)` opens for the store alone (released at its
 * `close()`). What the public store classes do with their options (`{ path }` or `{ driver }`,
 * `{ url }` or `{ sql }`).
 */
export function ownedOrShared<Options, Key extends string, Opened>(
  options: Options,
  key: Key,
  open: (options: Exclude<Options, Record<Key, unknown>>) => Opened
): [handle: Opened | Extract<Options, Record<Key, unknown>>[Key], owned: boolean] {
  if (options !== null && typeof options === 'object' && key in options) {
    return [(options as Extract<Options, Record<Key, unknown>>)[key], false]
  }
  return [open(options as Exclude<Options, Record<Key, unknown>>), true]
}

/**
 * `Connection` made a `Store`: every method of `methods` put on its prototype (not enumerable, as a
 * class's methods are). Answers `Connection` itself, typed as the store it now is (its handle stays
 * out of the type: only the port methods reach it).
 *
 * @example
 * ```ts
 * import type { Sql } from 'postgres'
 * import type { StoreLifecycle } from 'stateless-mcp'
 * import { insertedRow, storeClass } from 'stateless-mcp/compose'
 * import { connectPostgres } from 'stateless-mcp/postgres'
 *
 * interface BookmarksStore extends StoreLifecycle {
 *   add(url: string): Promise<number>
 * }
 *
 * const Bookmarks = storeClass<BookmarksStore, [sql: Sql, owned?: boolean], Sql>(
 *   BookmarksConnection, // a StoreConnection<Sql> subclass
 *   {
 *     async add(url) {
 *       const [row] = await this.db<{ id: number }[]>`
 *         INSERT INTO bookmarks (url) VALUES (${url}) RETURNING id`
 *       return insertedRow(row).id
 *     },
 *   }
 * )
 *
 * const bookmarks = new Bookmarks(connectPostgres({ url: process.env.DATABASE_URL! }))
 * await bookmarks.migrate()
 * ```
 */
export function storeClass<Store extends StoreLifecycle, Args extends unknown[], Handle>(
  Connection: new (...args: Args) => StoreConnection<Handle>,
  methods: Omit<Store, keyof StoreLifecycle> & ThisType<StoreThis<Store, Handle>>
): new (...args: Args) => Store {
  for (const [name, method] of Object.entries(methods)) {
    Object.defineProperty(Connection.prototype, name, {
      value: method,
      writable: true,
      configurable: true,
    })
  }
  return Connection as unknown as new (...args: Args) => Store
}

/**
 * The row an `INSERT … RETURNING` answered: a port method's insert always answers one (none is a
 * fault, thrown as an `Error`).
 *
 * @example
 * ```ts
 * import type { SqliteDriver } from 'stateless-mcp/sqlite'
 * import { insertedRow, type PortMethods } from 'stateless-mcp/compose'
 *
 * const bookmarkMethods: PortMethods<{ add(url: string): Promise<number> }, SqliteDriver> = {
 *   async add(url) {
 *     const [row] = await this.db.all('INSERT INTO bookmarks (url) VALUES (?) RETURNING id', [url])
 *     return Number(insertedRow(row).id)
 *   },
 * }
 * ```
 */
export function insertedRow<Row>(row: Row | undefined): Row {
  if (row === undefined) throw new Error('INSERT … RETURNING produced no row')
  return row
}

/** The error of a store method called before `migrate()` or, when `closed`, after `close()`. */
function notMigrated(closed: boolean): StoreNotMigratedError {
  return new StoreNotMigratedError(
    closed ? 'the store is closed' : 'call migrate() before using the store'
  )
}
