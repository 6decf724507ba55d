/**
 * @module mcp/stores/postgres/outage
 * What the PostgreSQL adapter does while its server cannot be reached: which failures of the
 * `postgres` driver mean that ({@link isUnreachable}), the connection settings that make them come
 * fast ({@link OUTAGE_CONNECTION_OPTIONS}), and the wrapping of every port method
 * ({@link withOutages}), which raises them as the engine's `StoreUnavailableError` (-32030, HTTP 503
 * with `Retry-After`; the driver's error kept as its `cause`, for the log only) and, once the server
 * was found unreachable, refuses at once every call made while one probe is out
 * ({@link OutageBreaker}) until the server answers again. Every other failure propagates as it is.
 *
 * Unreachable means: the connection could not be made or was lost (Node's socket errors, the
 * driver's `CONNECT_TIMEOUT`, `CONNECTION_CLOSED`, `CONNECTION_DESTROYED`), the server ended it or
 * refuses it for now (SQLSTATE 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now:
 * starting up, shutting down, in recovery), or any connection exception (class 08). A query that
 * failed so was not committed, or its transaction's outcome is unknown to the driver: either way the
 * transaction is whole or absent, never half applied. The pool reconnects on its own once the server
 * is back.
 *
 * Bounds: a call made while the server is known to be down is refused at once (the probe among them
 * within `CONNECT_TIMEOUT_SECONDS + MAX_RECONNECT_DELAY_SECONDS`); one made before the first failure
 * was seen waits for the driver's own attempt, at once when the server refuses connections (a
 * restart, a kill), within about that bound per round of the pool's connections when it does not
 * answer at all.
 */
import { StoreUnavailableError } from '../../errors.ts'

/** Codes of Node's socket errors that mean the server could not be reached or went away. */
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

/** The `postgres` driver's own codes for a connection that could not be made or was lost. */
const DRIVER_ERRORS = new Set(['CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED'])

/** SQLSTATEs of a server that ended the connection or refuses new ones for now. */
const SERVER_UNAVAILABLE = new Set(['57P01', '57P02', '57P03'])

/**
 * Seconds the driver waits for a connection to be made before failing the queries queued on it
 * (its default is 30): a server that does not answer at all is refused this fast.
 */
const CONNECT_TIMEOUT_SECONDS = 5

/** Longest wait, in seconds, between two attempts to reconnect (the driver's default grows to 20). */
const MAX_RECONNECT_DELAY_SECONDS = 1

/**
 * The pool settings an outage asks for: a bounded connect, and reconnect attempts at most
 * {@link MAX_RECONNECT_DELAY_SECONDS} apart (between two attempts the driver refuses a query at once,
 * with the last attempt's error), so one attempt fails within about `CONNECT_TIMEOUT_SECONDS +
 * MAX_RECONNECT_DELAY_SECONDS` (at once when the server refuses connections), and the pool serves
 * again within about a second of the server's return. {@link connectPostgres} applies them; spread
 * them into the options of a pool made otherwise.
 *
 * @example
 * ```ts
 * import postgres from 'postgres'
 * import { OUTAGE_CONNECTION_OPTIONS } from 'stateless-mcp/postgres'
 *
 * const sql = postgres(process.env.DATABASE_URL!, { max: 20, ...OUTAGE_CONNECTION_OPTIONS })
 * ```
 */
export const OUTAGE_CONNECTION_OPTIONS = {
  connect_timeout: CONNECT_TIMEOUT_SECONDS,
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, MAX_RECONNECT_DELAY_SECONDS),
} as const

type AsyncMethod = (...args: unknown[]) => Promise<unknown>

/**
 * Whether `error`, thrown by the driver, means the server cannot be reached (module header): a
 * socket or connection failure, a server shutting down or starting up, SQLSTATE class 08.
 *
 * @example
 * ```ts
 * import { StoreUnavailableError } from 'stateless-mcp/compose'
 * import { isUnreachable } from 'stateless-mcp/postgres'
 *
 * try {
 *   await sql`SELECT 1`
 * } catch (error) {
 *   throw isUnreachable(error) ? new StoreUnavailableError(error) : error
 * }
 * ```
 */
export function isUnreachable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  // A host name with several addresses fails with each address's error.
  if (error instanceof AggregateError) return error.errors.some(isUnreachable)
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string') return false
  return (
    SOCKET_ERRORS.has(code) ||
    DRIVER_ERRORS.has(code) ||
    SERVER_UNAVAILABLE.has(code) ||
    // Connection exceptions, but not 08P01 (protocol violation): the server answers that to a
    // malformed message too, a fault of the request rather than of the connection.
    (/^08[0-9A-Z]{3}$/.test(code) && code !== '08P01')
  )
}

/** Whether `error` is an answer of the server (it carries an SQLSTATE): the server is there. */
function fromServer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
}

/**
 * One store's view of its server (module header): up until a call fails unreachable; down from then
 * on, when one call at a time (the probe) goes to the driver and every call made meanwhile is
 * refused at once with `StoreUnavailableError` (its cause the last driver failure); up again as
 * soon as a call gets an answer from the server, an error with an SQLSTATE included. So calls made while it is
 * down never queue in the driver behind its connection attempts, however many come, and the first
 * call after the server is back serves.
 */
export class OutageBreaker {
  #lastFailure: unknown
  #down = false
  #probing = false

  async run<T>(call: () => Promise<T>): Promise<T> {
    const probe = this.#down
    if (probe) {
      if (this.#probing) throw new StoreUnavailableError(this.#lastFailure)
      this.#probing = true
    }
    try {
      const result = await call()
      this.#down = false
      return result
    } catch (error) {
      if (!isUnreachable(error)) {
        // Only an answer of the server shows it is back: a failure before any query (a bad page
        // size, say) leaves a down server down.
        if (!probe || fromServer(error)) this.#down = false
        throw error
      }
      this.#down = true
      this.#lastFailure = error
      throw new StoreUnavailableError(error)
    } finally {
      if (probe) this.#probing = false
    }
  }
}

/** The breaker of each store (the `this` of its methods), made on its first call. */
const breakers = new WeakMap<object, OutageBreaker>()

function breakerOf(store: object): OutageBreaker {
  let breaker = breakers.get(store)
  if (breaker === undefined) breakers.set(store, (breaker = new OutageBreaker()))
  return breaker
}

/**
 * `methods` (a port's async methods) each run through their store's {@link OutageBreaker}: a driver
 * error that means unreachable becomes `StoreUnavailableError`, and while the server is down calls
 * are refused at once; `this`, the arguments and every other outcome pass through. Wrap the methods
 * of an application's PostgreSQL store with it, so that an outage is answered 503 as the engine's
 * is.
 *
 * @example
 * ```ts
 * import type { Sql } from 'postgres'
 * import { storeClass } from 'stateless-mcp/compose'
 * import { withOutages } from 'stateless-mcp/postgres'
 *
 * const Bookmarks = storeClass<BookmarksStore, [sql: Sql, owned?: boolean], Sql>(
 *   BookmarksConnection,
 *   withOutages(bookmarkMethods)
 * )
 * ```
 */
export function withOutages<Methods extends object>(methods: Methods): Methods {
  const wrapped: Record<string, unknown> = {}
  for (const [name, method] of Object.entries(methods) as Array<[string, AsyncMethod]>) {
    wrapped[name] = function (this: object, ...args: unknown[]) {
      return breakerOf(this).run(() => method.apply(this, args))
    }
  }
  return wrapped as Methods
}
