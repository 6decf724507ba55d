/**
 * @module mcp/stores/common/sessions
 * What every adapter's `SessionStore` methods (`mcp/session-store.ts`) decide the same way: a
 * session's record from its row, why a subscription was refused, and how a cap is bound. The caps
 * themselves are counted in the database, by each dialect's statements. Runtime-neutral.
 */
import type { LogLevel } from '../../protocol.ts'
import {
  MAX_SUBSCRIPTIONS_PER_SESSION,
  type SessionRecord,
  type SubscribeOutcome,
} from '../../session-store.ts'

/** What `getSession` answers from a session's row as read (`undefined`: no session recorded). */
export function sessionRecord(
  row: { logLevel: unknown; expiresAt: unknown } | undefined
): SessionRecord | undefined {
  if (row === undefined) return undefined
  const expiresAt = Number(row.expiresAt)
  return typeof row.logLevel === 'string'
    ? { expiresAt, logLevel: row.logLevel as LogLevel }
    : { expiresAt }
}

/**
 * Why a conditional `addSubscription` added nothing, from what a read after it found: the number of
 * subscriptions the session holds and its principal's live sessions hold, or `undefined` when the
 * session is not live.
 */
export function subscribeRefusal(
  held: { session: number; principal: number } | undefined
): Exclude<SubscribeOutcome, 'subscribed'> {
  if (held === undefined) return 'no_session'
  return held.session >= MAX_SUBSCRIPTIONS_PER_SESSION
    ? { full: 'session', held: held.session }
    : { full: 'principal', held: held.principal }
}

/** A cap as the session statements bind it: `null` for no cap (`Infinity`). */
export function capParam(max: number): number | null {
  return Number.isFinite(max) ? max : null
}
