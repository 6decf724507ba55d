/**
 * @module mcp/session-store
 * What the engine keeps in the shared store for 2025-era clients. A 2025 session itself is
 * a sealed token (`Mcp-Session-Id`) that every replica opens without a lookup of its contents; the
 * store keeps, keyed by the session's random id (`sid`, never the token):
 * - the session's record, written by `initialize` with the session's principal, its creation time
 *   and the expiry sealed in its id, and moved later while the session is used (`renewSession`,
 *   which only updates a live record: sessions slide, `legacy/renewal.ts`): a session is live only
 *   while its record is there and unexpired, whatever its id's sealed expiry, so `DELETE` (which
 *   removes it) ends the session on every replica for good;
 * - the log level set by `logging/setLevel`, in that record;
 * - the resource subscriptions of `resources/subscribe`, which live exactly as long as their session
 *   (bounded per session and, across all its sessions, per principal);
 * - the rendezvous for answers to server→client requests: the replica holding a flow's SSE stream
 *   `expectInput`s each request it sends, the replica that receives the client's answer POST
 *   `deliverInput`s it (only into a row that is expected, unanswered and unexpired), and the waiting
 *   replica `readInput`s it once the event bus (or its own polling) says it arrived, and
 *   `forgetInput`s the slot once the round it answered has moved the flow on.
 *
 * Bounds: a principal holds at most a cap of live sessions and a cap of subscriptions across them, so
 * no loop of requests grows the store without bound. A new session is always recorded: at the cap it
 * ends the principal's oldest-created live sessions, with their subscriptions, in the same atomic step
 * as its insert (many hosts open a session per start and never end one; refusing would lock the
 * person out for a session lifetime, while an ended session's client gets 404 and initializes again,
 * as the 2025 transport specifies). A subscription beyond the cap is refused (the client asked for
 * it, and can unsubscribe). Each cap is decided in the database (conditional statements, serialised
 * per principal where the database would otherwise let two replicas both take the last place), so
 * no race exceeds it. Only unexpired rows count. Every row carries an expiry (milliseconds since the
 * epoch) and is removed by the adapter's purge of expired rows. Adapters (node:sqlite, PostgreSQL,
 * D1) pass one contract suite (`tests/support/store-contract.ts`).
 */
import { MAX_CAP, positiveWholeNumber } from './options.ts'
import type { LogLevel } from './protocol.ts'
import type { StreamStore } from './stream-store.ts'

/** Most resource subscriptions one session may hold; `addSubscription` refuses more. */
export const MAX_SUBSCRIPTIONS_PER_SESSION = 100

/**
 * Default most live 2025 sessions of one principal (`maxSessionsPerPrincipal`; the next `initialize`
 * ends the oldest). A host opens one per start and many never end theirs, so a person's hosts may
 * hold dozens over a week's session lifetime; a thousand keeps every session in real use alive far
 * past that, while a loop of `initialize` holds at most a few hundred kilobytes of records.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, {
 *   maxSessionsPerPrincipal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL / 10,
 * })
 * ```
 */
export const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL = 1_000

/**
 * Default most resource subscriptions one principal's sessions hold together
 * (`maxSubscriptionsPerPrincipal`): ten sessions full to {@link MAX_SUBSCRIPTIONS_PER_SESSION}, and
 * at most about 2 MB of URIs (each up to 2,048 characters), where the per-session cap alone
 * multiplied by free sessions had no bound at all.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, {
 *   maxSubscriptionsPerPrincipal: 2 * DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
 * })
 * ```
 */
export const DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL = 1_000

/**
 * What one principal may keep in the store through 2025-era sessions (`createMcpServer`'s options,
 * or `createMcpHandler`'s `legacy`): whole numbers from 1 to `MAX_CAP`, or `Infinity` for no cap.
 *
 * @example
 * const caps: SessionLimitOptions = { maxSessionsPerPrincipal: 100 }
 */
export interface SessionLimitOptions {
  /**
   * Most live sessions of one principal; at the cap a new `initialize` ends its oldest. Default
   * {@link DEFAULT_MAX_SESSIONS_PER_PRINCIPAL}.
   */
  maxSessionsPerPrincipal?: number
  /**
   * Most resource subscriptions one principal's sessions hold together; one past it is refused.
   * Default {@link DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL}.
   */
  maxSubscriptionsPerPrincipal?: number
}

/** `options` with their defaults, checked: throws the `RangeError` naming the first out of bounds. */
export function sessionLimits(options: SessionLimitOptions): Required<SessionLimitOptions> {
  const bounds = { max: MAX_CAP, orInfinity: true }
  return {
    maxSessionsPerPrincipal: positiveWholeNumber(
      'maxSessionsPerPrincipal',
      options.maxSessionsPerPrincipal ?? DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
      bounds
    ),
    maxSubscriptionsPerPrincipal: positiveWholeNumber(
      'maxSubscriptionsPerPrincipal',
      options.maxSubscriptionsPerPrincipal ?? DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
      bounds
    ),
  }
}

/** What is recorded for a session. */
export interface SessionRecord {
  /**
   * Milliseconds since the epoch from which the session is no longer live (the engine answers such a
   * record as no session, purged yet or not).
   */
  expiresAt: number
  /** Set by `logging/setLevel`; absent until then. */
  logLevel?: LogLevel
}

/**
 * What `addSubscription` did: `subscribed` (held now, newly or already); or it added nothing, because
 * the session is not live (`no_session`: never created, ended or expired) or a cap is full
 * ({@link SubscriptionsFull}).
 */
export type SubscribeOutcome = 'subscribed' | 'no_session' | SubscriptionsFull

/**
 * A subscription refused at a cap: the session holds {@link MAX_SUBSCRIPTIONS_PER_SESSION} other URIs
 * (`full: 'session'`), or its principal's live sessions hold their cap together (`'principal'`);
 * `held` is what the session, or the principal, holds as counted just after the refusal.
 */
export interface SubscriptionsFull {
  full: 'session' | 'principal'
  held: number
}

/** What a 2025 session keeps; its resumable streams (`StreamStore`) are every session store's too. */
export interface SessionStore extends StreamStore {
  /**
   * Records the new session `sid` of `principal`, created at `now` and live until `expiresAt` (the
   * expiry sealed in its id). When `principal` holds `maxPerPrincipal` or more sessions live at `now`
   * (`Infinity`: no cap), it first ends as many of them as leave room for this one, the oldest created
   * first (ties by sid), with their subscriptions and streams, in one atomic step with the insert:
   * the principal never holds more than the cap, however many creations race. Answers the sids of
   * the sessions it ended (from the same atomic step), so that its caller tells every replica
   * holding them (`legacy/session-end.ts`).
   */
  createSession(
    sid: string,
    principal: string,
    expiresAt: number,
    now: number,
    maxPerPrincipal: number
  ): Promise<string[]>
  /**
   * The record of session `sid`; `undefined` when it was never created, has ended or was purged. An
   * expired record not yet purged is answered with its `expiresAt` (its caller judges it).
   */
  getSession(sid: string): Promise<SessionRecord | undefined>
  /** Records the session's log level (last write wins); nothing for a session not recorded. */
  setSessionLogLevel(sid: string, level: LogLevel): Promise<void>
  /** Ends the session: removes its record, its subscriptions and its streams. Idempotent. */
  endSession(sid: string): Promise<void>
  /**
   * Keeps the session live at `now` until at least `expiresAt` (a session lifetime from `now`: the
   * session slides while it is used), with its subscriptions, in one atomic step: never shortens,
   * and never brings back a session that ended or expired. Answers whether the session is live (so
   * recorded until `expiresAt`) after it. Its input slots and streams keep their own bounds (a
   * flow's, a stream's retention), not its.
   */
  renewSession(sid: string, expiresAt: number, now: number): Promise<boolean>

  /**
   * Subscribes the session live at `now` to `uri` (idempotent), for as long as the session lives;
   * see {@link SubscribeOutcome} for the refusals. `maxPerPrincipal` (`Infinity`: no cap) bounds the
   * subscriptions of all the live sessions of the session's principal together.
   */
  addSubscription(
    sid: string,
    uri: string,
    now: number,
    maxPerPrincipal: number
  ): Promise<SubscribeOutcome>
  /** Removes a subscription; removing one that does not exist is not an error. */
  removeSubscription(sid: string, uri: string): Promise<void>
  /** Whether `sid` is subscribed to `uri`. */
  isSubscribed(sid: string, uri: string): Promise<boolean>

  /** Opens a slot for the answer to the server→client request `requestId` of session `sid`. */
  expectInput(sid: string, requestId: string, expiresAt: number): Promise<void>
  /**
   * Stores the client's answer (a serialised JSON-RPC response) in its slot. Answers true only when
   * the slot exists, is unanswered and has not expired at `now`; otherwise stores nothing.
   */
  deliverInput(sid: string, requestId: string, payload: string, now: number): Promise<boolean>
  /**
   * The delivered answer, the slot kept (a replica taking the flow over reads it again, so an
   * answer is never lost with the replica that read it); `undefined` while none was delivered.
   */
  readInput(sid: string, requestId: string): Promise<string | undefined>
  /** Removes a slot whatever its state (the flow gave up waiting). */
  forgetInput(sid: string, requestId: string): Promise<void>
}
