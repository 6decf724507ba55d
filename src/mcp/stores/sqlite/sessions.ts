/**
 * @module mcp/stores/sqlite/sessions
 * The `SessionStore` methods of the SQLite-dialect store ({@link sessionMethods}): sessions with
 * their principal, creation time and log level, subscriptions and input slots. Each cap is decided by
 * the database, the way D1 allows: `createSession` at the cap is one batch (end the sessions beyond
 * the newest cap - 1, their subscriptions, streams and stream events first, then insert), so no two
 * creations both take the last place; `addSubscription` is one conditional insert, and a read after
 * a miss only explains it. The streams' own methods are `streams.ts`'s.
 */
import { MAX_SUBSCRIPTIONS_PER_SESSION, type SessionStore } from '../../session-store.ts'
import { capParam, sessionRecord, subscribeRefusal } from '../common/sessions.ts'
import type { StreamStore } from '../../stream-store.ts'
import type { PortMethods } from '../common/store-class.ts'
import type { SqliteDriver } from './driver.ts'
import { SQL } from './statements.ts'

export const sessionMethods: PortMethods<Omit<SessionStore, keyof StreamStore>, SqliteDriver> = {
  async createSession(sid, principal, expiresAt, now, maxPerPrincipal) {
    const db = this.db
    const create = { sql: SQL.createSession, params: [sid, principal, now, expiresAt] }
    const cap = capParam(maxPerPrincipal)
    if (cap === null) {
      await db.run(create.sql, create.params)
      return []
    }
    const overCap = [principal, now, cap]
    const evictions = [SQL.evictSubscriptions, SQL.evictStreams, SQL.evictStreamEvents]
    const rows = await db.batch([
      ...evictions.map((sql) => ({ sql, params: overCap })),
      { sql: SQL.evictSessions, params: overCap },
      create,
    ])
    return (rows[evictions.length] ?? []).map((row) => String(row.sid))
  },

  async getSession(sid) {
    const row = await this.db.get(SQL.getSession, [sid])
    return sessionRecord(
      row === undefined ? undefined : { logLevel: row.log_level, expiresAt: row.expires_at }
    )
  },

  async setSessionLogLevel(sid, level) {
    await this.db.run(SQL.setLogLevel, [sid, level])
  },

  async endSession(sid) {
    await this.db.batch([
      { sql: SQL.endSession, params: [sid] },
      { sql: SQL.endSubscriptions, params: [sid] },
      { sql: SQL.endStreams, params: [sid] },
      { sql: SQL.endStreamEvents, params: [sid] },
    ])
  },

  async renewSession(sid, expiresAt, now) {
    const params = [sid, expiresAt, now]
    const [, live] = await this.db.batch([
      { sql: SQL.renewSubscriptions, params },
      { sql: SQL.renewSession, params },
    ])
    return (live?.length ?? 0) > 0
  },

  async addSubscription(sid, uri, now, maxPerPrincipal) {
    const db = this.db
    const params = [sid, uri, now, MAX_SUBSCRIPTIONS_PER_SESSION, capParam(maxPerPrincipal)]
    if ((await db.get(SQL.addSubscription, params)) !== undefined) return 'subscribed'
    const row = await db.get(SQL.explainSubscription, [sid, now])
    return subscribeRefusal(
      row === undefined
        ? undefined
        : { session: Number(row.session), principal: Number(row.principal) }
    )
  },

  async removeSubscription(sid, uri) {
    await this.db.run(SQL.removeSubscription, [sid, uri])
  },

  async isSubscribed(sid, uri) {
    return (await this.db.get(SQL.isSubscribed, [sid, uri])) !== undefined
  },

  async expectInput(sid, requestId, expiresAt) {
    await this.db.run(SQL.expectInput, [sid, requestId, expiresAt])
  },

  async deliverInput(sid, requestId, payload, now) {
    return (await this.db.run(SQL.deliverInput, [sid, requestId, payload, now])) === 1
  },

  async readInput(sid, requestId) {
    const row = await this.db.get(SQL.readInput, [sid, requestId])
    return row === undefined ? undefined : String(row.payload)
  },

  async forgetInput(sid, requestId) {
    await this.db.run(SQL.forgetInput, [sid, requestId])
  },
}
