/**
 * @module storage/common/store-class
 * How each SQL dialect assembles its `NotesStore` class from one module per port: a
 * {@link StoreConnection} (the database handle and the lifecycle every adapter shares: usable from
 * `migrate()` until `close()`, {@link StoreNotMigratedError} otherwise) with the methods of the ports
 * (notes, shares, sessions, tasks, the purge) put on its prototype by {@link storeClass}. The methods
 * are object literals typed by their port ({@link PortMethods}), so their signatures are the
 * contract's, written once, and they run with the store as `this` (its handle is `this.db`). On the
 * prototype, as a class's own methods would be: a subclass may override one and call `super`. Also
 * what a port method asks of an insert's answer ({@link insertedRow}).
 *
 * Runtime-neutral (the Worker bundles it with the D1 adapter): it imports only the store contract.
 */
import { StoreNotMigratedError, type NotesStore } from '../../notes/store.ts'

/** The methods of `NotesStore` the ports implement: all but the lifecycle. */
export type StoreMethods = Omit<NotesStore, 'migrate' | 'close'>

/** What a port's methods see as `this`: the whole store, with its database handle. */
export type StoreThis<Handle> = NotesStore & { readonly db: Handle }

/** The methods of one port (`Port`, a slice of `NotesStore`), as a dialect writes them over `Handle`. */
export type PortMethods<Port extends Partial<StoreMethods>, Handle> = Port &
  ThisType<StoreThis<Handle>>

/**
 * A store's database handle (a driver, a pool) and its lifecycle: `migrate()` prepares (or checks)
 * the schema through {@link prepare}, `close()` releases the handle through {@link release}, once.
 */
export abstract class StoreConnection<Handle> {
  readonly #handle: Handle
  #state: 'new' | 'ready' | 'closed' = 'new'

  constructor(handle: Handle) {
    this.#handle = handle
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
    await this.release(this.#handle)
  }

  /** The handle the port methods run their statements on, from `migrate()` until `close()`. */
  get db(): Handle {
    if (this.#state !== 'ready') throw notMigrated(this.#state === 'closed')
    return this.#handle
  }
}

/**
 * `Connection` made a `NotesStore`: every method of `methods` put on its prototype (not enumerable,
 * as a class's methods are). Answers `Connection` itself, typed as the store it now is (its handle
 * stays out of the type: only the port methods reach it).
 */
export function storeClass<Args extends unknown[], Handle>(
  Connection: new (...args: Args) => StoreConnection<Handle>,
  methods: StoreMethods & ThisType<StoreThis<Handle>>
): new (...args: Args) => NotesStore {
  for (const [name, method] of Object.entries(methods)) {
    Object.defineProperty(Connection.prototype, name, {
      value: method,
      writable: true,
      configurable: true,
    })
  }
  return Connection as new (...args: Args) => StoreConnection<Handle> & StoreMethods
}

/** The row an `INSERT … RETURNING` answered: a port method's insert always answers one (none is a fault). */
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
