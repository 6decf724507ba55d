/**
 * @module mcp/stores/postgres/sessions
 * The `SessionStore` methods of the PostgreSQL store ({@link sessionMethods}): sessions with their
 * principal, creation time and log level, subscriptions and input slots. The caps on a principal's
 * sessions and subscriptions are counted under one per-principal advisory lock
 * ({@link PRINCIPAL_SESSIONS_LOCK_CLASS}): a session created at the cap ends the principal's
 * oldest-created ones, with their subscriptions and streams, under that lock and in the same
 * transaction as its insert. The streams' own methods are `streams.ts`'s.
 */
import type { Sql } from 'postgres'
import { MAX_SUBSCRIPTIONS_PER_SESSION, type SessionStore } from '../../session-store.ts'
import { capParam, sessionRecord, subscribeRefusal } from '../common/sessions.ts'
import type { StreamStore } from '../../stream-store.ts'
import type { PortMethods } from '../common/store-class.ts'
import { dec, enc } from './text.ts'

/**
 * First key of the transaction-scoped advisory lock that serialises the `createSession`s and
 * `addSubscription`s of one principal (the second is a hash of the principal): neither cap's count
 * can race another replica's insert, and a subscription added to a session that a creation ends for
 * the cap is either seen and removed with it or refused for a session that is gone. The two-key space
 * never meets the migration lock's bigint key.
 */
const PRINCIPAL_SESSIONS_LOCK_CLASS = 0x6e6d7365 // "nmse"

export const sessionMethods: PortMethods<Omit<SessionStore, keyof StreamStore>, Sql> = {
  async createSession(sid, principal, expiresAt, now, maxPerPrincipal) {
    const owner = enc(principal)
    const cap = capParam(maxPerPrincipal)
    return this.db.begin(async (tx) => {
      let evicted: string[] = []
      if (cap !== null) {
        await tx`SELECT pg_advisory_xact_lock(${PRINCIPAL_SESSIONS_LOCK_CLASS}, hashtext(${owner}))`
        // The principal's live sessions beyond the newest cap - 1, oldest created first (ties by
        // sid), end with their subscriptions, streams and stream events to make room for this one.
        const ended = await tx<Array<{ sid: string }>>`
          WITH ended AS (
            DELETE FROM sessions WHERE sid IN (
              SELECT sid FROM sessions WHERE principal = ${owner} AND expires_at > ${now}
              ORDER BY created_at DESC, sid DESC OFFSET ${cap - 1}
            )
            RETURNING sid
          ), unsubscribed AS (
            DELETE FROM session_subscriptions WHERE sid IN (SELECT sid FROM ended)
          ), unstreamed AS (
            DELETE FROM session_streams WHERE sid IN (SELECT sid FROM ended)
          ), unevented AS (
            DELETE FROM stream_events WHERE sid IN (SELECT sid FROM ended)
          )
          SELECT sid FROM ended`
        evicted = ended.map((row) => dec(row.sid))
      }
      await tx`
        INSERT INTO sessions (sid, principal, created_at, expires_at)
        VALUES (${enc(sid)}, ${owner}, ${now}, ${expiresAt})`
      return evicted
    })
  },

  async getSession(sid) {
    const [row] = await this.db<Array<{ log_level: string | null; expires_at: number | string }>>`
      SELECT log_level, expires_at FROM sessions WHERE sid = ${enc(sid)}`
    return sessionRecord(
      row === undefined ? undefined : { logLevel: row.log_level, expiresAt: row.expires_at }
    )
  },

  async setSessionLogLevel(sid, level) {
    await this.db`UPDATE sessions SET log_level = ${level} WHERE sid = ${enc(sid)}`
  },

  async endSession(sid) {
    await this.db.begin(async (tx) => {
      await tx`DELETE FROM sessions WHERE sid = ${enc(sid)}`
      await tx`DELETE FROM session_subscriptions WHERE sid = ${enc(sid)}`
      await tx`DELETE FROM session_streams WHERE sid = ${enc(sid)}`
      await tx`DELETE FROM stream_events WHERE sid = ${enc(sid)}`
    })
  },

  async renewSession(sid, expiresAt, now) {
    return this.db.begin(async (tx) => {
      const [session] = await tx<Array<{ principal: string }>>`
        SELECT principal FROM sessions WHERE sid = ${enc(sid)} AND expires_at > ${now}`
      if (session === undefined) return false
      // Serialised with the principal's addSubscriptions, so a subscription added meanwhile is
      // either renewed here or copies the renewed expiry.
      await tx`SELECT pg_advisory_xact_lock(
        ${PRINCIPAL_SESSIONS_LOCK_CLASS}, hashtext(${session.principal}))`
      const renewed = await tx`
        UPDATE sessions SET expires_at = greatest(expires_at, ${expiresAt})
        WHERE sid = ${enc(sid)} AND expires_at > ${now}`
      if (renewed.count === 0) return false
      await tx`
        UPDATE session_subscriptions SET expires_at = ${expiresAt}
        WHERE sid = ${enc(sid)} AND expires_at < ${expiresAt}`
      return true
    })
  },

  async addSubscription(sid, uri, now, maxPerPrincipal) {
    const cap = capParam(maxPerPrincipal)
    return this.db.begin(async (tx) => {
      const [session] = await tx<Array<{ principal: string }>>`
        SELECT principal FROM sessions WHERE sid = ${enc(sid)} AND expires_at > ${now}`
      if (session === undefined) return 'no_session'
      // Adds for one principal (so for each of its sessions) are serialised with each other and with
      // its creations, so neither count below can race another replica's add, and a creation that
      // ends this session for the cap does so before this insert or sees (and removes) its row.
      await tx`SELECT pg_advisory_xact_lock(
        ${PRINCIPAL_SESSIONS_LOCK_CLASS}, hashtext(${session.principal}))`
      const held = await tx`
        INSERT INTO session_subscriptions (sid, uri, principal, expires_at)
        SELECT s.sid, ${enc(uri)}, s.principal, s.expires_at FROM sessions AS s
        WHERE s.sid = ${enc(sid)} AND s.expires_at > ${now} AND (
          EXISTS (
            SELECT 1 FROM session_subscriptions WHERE sid = ${enc(sid)} AND uri = ${enc(uri)})
          OR ((SELECT count(*) FROM session_subscriptions WHERE sid = ${enc(sid)})
              < ${MAX_SUBSCRIPTIONS_PER_SESSION}
            AND (${cap}::bigint IS NULL OR (
              SELECT count(*) FROM session_subscriptions AS other
              WHERE other.principal = s.principal AND other.expires_at > ${now}
            ) < ${cap}::bigint)))
        ON CONFLICT (sid, uri) DO UPDATE SET expires_at = excluded.expires_at`
      if (held.count > 0) return 'subscribed'
      const [after] = await tx<Array<{ session: number; principal: number }>>`
        SELECT (SELECT count(*) FROM session_subscriptions WHERE sid = ${enc(sid)})::int AS session,
          (SELECT count(*) FROM session_subscriptions AS other
            WHERE other.principal = s.principal AND other.expires_at > ${now})::int AS principal
        FROM sessions AS s WHERE s.sid = ${enc(sid)} AND s.expires_at > ${now}`
      return subscribeRefusal(after)
    })
  },

  async removeSubscription(sid, uri) {
    await this.db`
      DELETE FROM session_subscriptions WHERE sid = ${enc(sid)} AND uri = ${enc(uri)}`
  },

  async isSubscribed(sid, uri) {
    const rows = await this.db`
      SELECT 1 FROM session_subscriptions WHERE sid = ${enc(sid)} AND uri = ${enc(uri)}`
    return rows.count > 0
  },

  async expectInput(sid, requestId, expiresAt) {
    await this.db`
      INSERT INTO input_slots (sid, request_id, expires_at)
      VALUES (${enc(sid)}, ${enc(requestId)}, ${expiresAt})
      ON CONFLICT (sid, request_id) DO UPDATE SET
        expires_at = greatest(input_slots.expires_at, excluded.expires_at)`
  },

  async deliverInput(sid, requestId, payload, now) {
    const filled = await this.db`
      UPDATE input_slots SET payload = ${enc(payload)}
      WHERE sid = ${enc(sid)} AND request_id = ${enc(requestId)}
        AND payload IS NULL AND expires_at > ${now}`
    return filled.count === 1
  },

  async readInput(sid, requestId) {
    const [row] = await this.db<Array<{ payload: string }>>`
      SELECT payload FROM input_slots
      WHERE sid = ${enc(sid)} AND request_id = ${enc(requestId)} AND payload IS NOT NULL`
    return row === undefined ? undefined : dec(row.payload)
  },

  async forgetInput(sid, requestId) {
    await this.db`
      DELETE FROM input_slots WHERE sid = ${enc(sid)} AND request_id = ${enc(requestId)}`
  },
}
