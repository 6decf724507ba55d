/**
 * @module mcp/session-store
 * What the engine keeps in the shared store for 2025-era clients (design §9). A 2025 session itself is
 * a sealed token (`Mcp-Session-Id`) that every replica opens without a lookup; only what changes after
 * `initialize` lives here, keyed by the session's random id (`sid`, never the token):
 * - whether the session was ended (`DELETE`), so later requests answer 404 on every replica;
 * - the log level set by `logging/setLevel`;
 * - the resource subscriptions of `resources/subscribe` (bounded per session);
 * - the rendezvous for answers to server→client requests: the replica holding a flow's SSE stream
 *   `expectInput`s each request it sends, the replica that receives the client's answer POST
 *   `deliverInput`s it (only into a row that is expected, unanswered and unexpired), and the waiting
 *   replica `takeInput`s it once the event bus (or its own polling) says it arrived.
 *
 * Every row carries an expiry (milliseconds since the epoch) and is removed by the adapter's purge of
 * expired rows. Adapters (node:sqlite, PostgreSQL, D1) pass one contract suite
 * (`tests/support/store-contract.ts`).
 */
import type { LogLevel } from './protocol.ts'

/** Most resource subscriptions one session may hold; `addSubscription` refuses more. */
export const MAX_SUBSCRIPTIONS_PER_SESSION = 100

export interface SessionRecord {
  /** True once `endSession` was called for this id (until the row expires). */
  ended: boolean
  /** Set by `logging/setLevel`; absent until then. */
  logLevel?: LogLevel
}

export interface SessionStore {
  /** What is recorded for `sid`; `{ ended: false }` when nothing is. */
  getSession(sid: string): Promise<SessionRecord>
  /** Records the session's log level (last write wins). */
  setSessionLogLevel(sid: string, level: LogLevel, expiresAt: number): Promise<void>
  /** Marks the session ended; idempotent. */
  endSession(sid: string, expiresAt: number): Promise<void>

  /**
   * Adds a subscription (idempotent). Answers false, adding nothing, when the session already holds
   * `MAX_SUBSCRIPTIONS_PER_SESSION` other URIs.
   */
  addSubscription(sid: string, uri: string, expiresAt: number): Promise<boolean>
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
  /** The delivered answer, removing the slot; `undefined` (slot kept) while none was delivered. */
  takeInput(sid: string, requestId: string): Promise<string | undefined>
  /** Removes a slot whatever its state (the flow gave up waiting). */
  forgetInput(sid: string, requestId: string): Promise<void>
}
