/**
 * @module mcp/stores/sqlite/statements
 * Every statement of the engine's SQLite-dialect store (node:sqlite and D1): sessions, their
 * subscriptions and input slots, stream records and events, tasks, and the purge of expired rows.
 * Statements use numbered parameters (`?1`, `?2`…), which both drivers bind positionally; each
 * statement's comment lists them, and a statement that decides a check-and-set returns a row (or
 * changes one) only when it applied. The task and stream statements are built, once, from the column
 * lists of `common/tasks.ts` and `common/streams.ts` (the order `createTask`, `updateTask`,
 * `createStream` and `updateStream` bind their values in); the parameters of a patch are
 * {@link patchParams}'. Runtime-neutral text; the tables are `schema.ts`'s.
 */
import { patchAssignments, type PatchValue } from '../common/columns.ts'
import { NEW_STREAM_FIELDS, STREAM_COLUMNS, STREAM_PATCH_COLUMNS } from '../common/streams.ts'
import { NEW_TASK_FIELDS, TASK_COLUMNS, TASK_PATCH_COLUMNS } from '../common/tasks.ts'
import type { SqliteValue } from './driver.ts'

const TASK_SELECT = Object.values(TASK_COLUMNS).join(', ')
const NEW_TASK_COLUMNS = NEW_TASK_FIELDS.map((field) => TASK_COLUMNS[field])
/** The parameter numbers `insertTask` binds the fields its cap counts by to. */
const NEW_TASK_PARAM = {
  principal: NEW_TASK_FIELDS.indexOf('principal') + 1,
  createdAt: NEW_TASK_FIELDS.indexOf('createdAt') + 1,
}
/** How the patch assignments of this dialect name their parameters: `?n`. */
const numbered = (position: number) => `?${position}`

/**
 * The parameters a patch's assignments (`patchAssignments`, from `patchValues`) bind on this
 * dialect, which has no boolean: each flag and boolean value as 1 or 0.
 */
export function patchParams(
  pairs: ReadonlyArray<[set: boolean, value: PatchValue]>
): SqliteValue[] {
  return pairs.flatMap(([set, value]) => [
    set ? 1 : 0,
    typeof value === 'boolean' ? Number(value) : value,
  ])
}
/** `column = CASE WHEN ?set THEN ?value ELSE column END` for each patchable column, from `?3` on. */
const TASK_ASSIGNMENTS = patchAssignments(Object.values(TASK_PATCH_COLUMNS), 3, numbered)

const STREAM_SELECT = Object.values(STREAM_COLUMNS).join(', ')
const NEW_STREAM_COLUMNS = NEW_STREAM_FIELDS.map((field) => STREAM_COLUMNS[field])
/** The parameter number `insertStream` binds the session id (what its cap counts by) to. */
const NEW_STREAM_SID_PARAM = NEW_STREAM_FIELDS.indexOf('sid') + 1
/** `column = CASE WHEN ?set THEN ?value ELSE column END` for each patchable column, from `?4` on. */
const STREAM_ASSIGNMENTS = patchAssignments(Object.values(STREAM_PATCH_COLUMNS), 4, numbered)

/** The key of the `tasks_runnable` index: 0 for a task without a lease. */
const LEASE_KEY = 'coalesce(lease_expires_at, 0)'

/**
 * ?1 principal, ?2 now, ?3 most live sessions of the principal: the sids of its sessions live at ?2
 * beyond the newest ?3 - 1, which `createSession` ends to make room for one more — the oldest created
 * first (ties by sid). Read newest first from the `sessions_by_principal` index alone.
 */
const SESSIONS_OVER_CAP = `
  SELECT sid FROM sessions WHERE principal = ?1 AND expires_at > ?2
  ORDER BY created_at DESC, sid DESC LIMIT -1 OFFSET ?3 - 1`

/** ?1 sid, ?3 now: the session's records unexpired at ?3. */
const LIVE_SESSION_STREAMS = 'FROM session_streams WHERE sid = ?1 AND expires_at > ?3'

/**
 * ?1 sid, ?2 cap, ?3 now, ?4 records to leave (`streamsLeftByEviction` of ?2): the streams
 * `createStream` evicts to make room under the cap — none while the session's live records are
 * fewer than ?2 (there is room) or while its records not ended already fill ?2 (the creation is
 * refused then, and changes nothing); otherwise its ended records unexpired at ?3 that expire first
 * (they ended first), as many as leave ?4 live records, or every ended one when fewer are. An ended
 * record holds only what a client may still ask for; a call in progress is never evicted.
 */
const ENDED_STREAMS_TO_EVICT = `
  SELECT stream ${LIVE_SESSION_STREAMS} AND ended = 1
    AND (SELECT count(*) ${LIVE_SESSION_STREAMS}) >= ?2
    AND (SELECT count(*) ${LIVE_SESSION_STREAMS} AND ended = 0) < ?2
  ORDER BY expires_at, stream
  LIMIT max(0, (SELECT count(*) ${LIVE_SESSION_STREAMS}) - ?4)`

/** ?1 now, ?2 limit: removes at most ?2 rows of the rowid table `table` expired at ?1. */
function purgeRowidTable(table: string): string {
  return `
    DELETE FROM ${table} WHERE rowid IN (
      SELECT rowid FROM ${table} WHERE expires_at <= ?1 LIMIT ?2
    )`
}

/** Every statement. A statement that decides a check-and-set returns a row only when it applied. */
export const SQL = {
  /**
   * ?1 principal, ?2 now, ?3 most live sessions of the principal (these four, then `createSession`,
   * run as one batch, so that the principal never holds more than ?3): end the
   * principal's sessions beyond the newest ?3 - 1, their subscriptions, streams and stream events
   * first; `evictSessions` returns a row per session it ended.
   */
  evictSubscriptions: `DELETE FROM session_subscriptions WHERE sid IN (${SESSIONS_OVER_CAP})`,
  evictStreams: `DELETE FROM session_streams WHERE sid IN (${SESSIONS_OVER_CAP})`,
  evictStreamEvents: `DELETE FROM stream_events WHERE sid IN (${SESSIONS_OVER_CAP})`,
  evictSessions: `DELETE FROM sessions WHERE sid IN (${SESSIONS_OVER_CAP}) RETURNING sid`,
  /** ?1 sid, ?2 principal, ?3 now (its creation), ?4 expires at. */
  createSession: `
    INSERT INTO sessions (sid, principal, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)`,
  /** ?1 sid. */
  getSession: `SELECT log_level, expires_at FROM sessions WHERE sid = ?1`,
  /** ?1 sid, ?2 level. */
  setLogLevel: `UPDATE sessions SET log_level = ?2 WHERE sid = ?1`,
  /** ?1 sid (this and the next three, run as one batch). */
  endSession: `DELETE FROM sessions WHERE sid = ?1`,
  endSubscriptions: `DELETE FROM session_subscriptions WHERE sid = ?1`,
  endStreams: `DELETE FROM session_streams WHERE sid = ?1`,
  endStreamEvents: `DELETE FROM stream_events WHERE sid = ?1`,
  /**
   * ?1 sid, ?2 expires at, ?3 now (this and the next, run as one batch): a session live at ?3, and its
   * subscriptions, kept until at least ?2; `renewSession` returns a row when the session is live.
   */
  renewSubscriptions: `
    UPDATE session_subscriptions SET expires_at = ?2
    WHERE sid = ?1 AND expires_at < ?2
      AND EXISTS (SELECT 1 FROM sessions WHERE sid = ?1 AND expires_at > ?3)`,
  renewSession: `
    UPDATE sessions SET expires_at = max(expires_at, ?2) WHERE sid = ?1 AND expires_at > ?3
    RETURNING 1 AS live`,
  /**
   * ?1 sid, ?2 uri, ?3 now, ?4 most subscriptions per session, ?5 most subscriptions of the
   * principal's live sessions (NULL: no cap). Returns a row when the session is live and holds the
   * subscription afterwards: it did already, or it held fewer than ?4 and its principal fewer than
   * ?5, and now holds it too, with the session's principal and expiry.
   */
  addSubscription: `
    INSERT INTO session_subscriptions (sid, uri, principal, expires_at)
    SELECT s.sid, ?2, s.principal, s.expires_at FROM sessions AS s
    WHERE s.sid = ?1 AND s.expires_at > ?3 AND (
      EXISTS (SELECT 1 FROM session_subscriptions WHERE sid = ?1 AND uri = ?2)
      OR ((SELECT count(*) FROM session_subscriptions WHERE sid = ?1) < ?4
        AND (?5 IS NULL OR (
          SELECT count(*) FROM session_subscriptions AS held
          WHERE held.principal = s.principal AND held.expires_at > ?3
        ) < ?5)))
    ON CONFLICT (sid, uri) DO UPDATE SET expires_at = excluded.expires_at
    RETURNING 1 AS held`,
  /** ?1 sid, ?2 now: why `addSubscription` added nothing (see `subscribeRefusal`, common/sessions.ts). */
  explainSubscription: `
    SELECT (SELECT count(*) FROM session_subscriptions WHERE sid = ?1) AS session,
      (SELECT count(*) FROM session_subscriptions AS held
        WHERE held.principal = s.principal AND held.expires_at > ?2) AS principal
    FROM sessions AS s WHERE s.sid = ?1 AND s.expires_at > ?2`,
  /** ?1 sid, ?2 uri. */
  removeSubscription: `DELETE FROM session_subscriptions WHERE sid = ?1 AND uri = ?2`,
  /** ?1 sid, ?2 uri. */
  isSubscribed: `SELECT 1 AS held FROM session_subscriptions WHERE sid = ?1 AND uri = ?2`,
  /** ?1 sid, ?2 request id, ?3 expires at. Re-opening a slot keeps its answer, if any. */
  expectInput: `
    INSERT INTO input_slots (sid, request_id, expires_at) VALUES (?1, ?2, ?3)
    ON CONFLICT (sid, request_id) DO UPDATE SET
      expires_at = max(expires_at, excluded.expires_at)`,
  /** ?1 sid, ?2 request id, ?3 payload, ?4 now. Changes one row only in an open, unanswered slot. */
  deliverInput: `
    UPDATE input_slots SET payload = ?3
    WHERE sid = ?1 AND request_id = ?2 AND payload IS NULL AND expires_at > ?4`,
  /** ?1 sid, ?2 request id. The slot's answer, if it holds one (the slot stays). */
  readInput: `
    SELECT payload FROM input_slots WHERE sid = ?1 AND request_id = ?2 AND payload IS NOT NULL`,
  /** ?1 sid, ?2 request id. */
  forgetInput: `DELETE FROM input_slots WHERE sid = ?1 AND request_id = ?2`,
  /**
   * The fields of {@link NEW_TASK_FIELDS}, in order, as ?1, ?2…, then the cap. Returns the row only
   * when it stored the task: its principal held fewer live tasks than the cap at its `createdAt`
   * (writes are serialised, so the count and the insert cannot be split by another writer).
   */
  insertTask: `
    INSERT INTO tasks (${NEW_TASK_COLUMNS.join(', ')})
    SELECT ${NEW_TASK_COLUMNS.map((_, i) => `?${i + 1}`).join(', ')}
    WHERE (
      SELECT count(*) FROM tasks
      WHERE principal = ?${NEW_TASK_PARAM.principal} AND expires_at > ?${NEW_TASK_PARAM.createdAt}
    ) < ?${NEW_TASK_COLUMNS.length + 1}
    RETURNING ${TASK_SELECT}`,
  /** ?1 principal, ?2 now. Answered from the `tasks_live_by_principal` index alone. */
  countLiveTasks: `SELECT count(*) AS live FROM tasks WHERE principal = ?1 AND expires_at > ?2`,
  /** ?1 id. */
  getTask: `SELECT ${TASK_SELECT} FROM tasks WHERE id = ?1`,
  /**
   * ?1 id, ?2 expected version, then for each column of `TASK_PATCH_COLUMNS` in order a flag (1: set
   * it) and the value. Returns the row only when the version matched.
   */
  updateTask: `
    UPDATE tasks SET
      ${TASK_ASSIGNMENTS},
      version = version + 1
    WHERE id = ?1 AND version = ?2
    RETURNING ${TASK_SELECT}`,
  /** ?1 now, ?2 limit. Answered from the `tasks_runnable` index alone. */
  findRunnableTasks: `
    SELECT id FROM tasks
    WHERE status = 'working' AND ${LEASE_KEY} <= ?1 AND expires_at > ?1
    ORDER BY ${LEASE_KEY}, expires_at, id LIMIT ?2`,
  /**
   * ?1 sid, ?2 cap, ?3 now, ?4 records to leave (this, the next, then `insertStream`, run as one
   * batch): the events, then the records, of {@link ENDED_STREAMS_TO_EVICT}.
   */
  evictEndedStreamEvents: `
    DELETE FROM stream_events WHERE sid = ?1 AND stream IN (${ENDED_STREAMS_TO_EVICT})`,
  evictEndedStreams: `
    DELETE FROM session_streams WHERE sid = ?1 AND stream IN (${ENDED_STREAMS_TO_EVICT})`,
  /**
   * The fields of {@link NEW_STREAM_FIELDS}, in order, as ?1, ?2…, then the cap, then now; fails if
   * (sid, stream) exists. Returns the row only when it stored the record: its session held fewer
   * records unexpired at now than the cap once the evictions before it ran (writes are serialised,
   * so no other writer comes between the evictions, the count and the insert). The counts walk the
   * primary key's sid prefix.
   */
  insertStream: `
    INSERT INTO session_streams (${NEW_STREAM_COLUMNS.join(', ')})
    SELECT ${NEW_STREAM_COLUMNS.map((_, i) => `?${i + 1}`).join(', ')}
    WHERE (
      SELECT count(*) FROM session_streams
      WHERE sid = ?${NEW_STREAM_SID_PARAM} AND expires_at > ?${NEW_STREAM_COLUMNS.length + 2}
    ) < ?${NEW_STREAM_COLUMNS.length + 1}
    RETURNING ${STREAM_SELECT}`,
  /** ?1 sid, ?2 stream. */
  getStream: `SELECT ${STREAM_SELECT} FROM session_streams WHERE sid = ?1 AND stream = ?2`,
  /**
   * ?1 sid, ?2 stream, ?3 expected version, then for each column of `STREAM_PATCH_COLUMNS` in order
   * a flag (1: set it) and the value. Returns the row only when the version matched.
   */
  updateStream: `
    UPDATE session_streams SET
      ${STREAM_ASSIGNMENTS},
      version = version + 1
    WHERE sid = ?1 AND stream = ?2 AND version = ?3
    RETURNING ${STREAM_SELECT}`,
  /** ?1 sid, ?2 stream, ?3 seq, ?4 payload, ?5 expires at. Changes no row when the seq is held. */
  appendEvent: `
    INSERT INTO stream_events (sid, stream, seq, payload, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
    ON CONFLICT (sid, stream, seq) DO NOTHING`,
  /** ?1 sid, ?2 stream, ?3 after seq, ?4 now, ?5 limit. Walks the primary key in order. */
  readEvents: `
    SELECT seq, payload FROM stream_events
    WHERE sid = ?1 AND stream = ?2 AND seq > ?3 AND expires_at > ?4
    ORDER BY seq LIMIT ?5`,
  /** ?1 now, ?2 limit (this and the next five). */
  purgeSessions: `
    DELETE FROM sessions WHERE sid IN (
      SELECT sid FROM sessions WHERE expires_at <= ?1 LIMIT ?2
    )`,
  purgeSubscriptions: `
    DELETE FROM session_subscriptions WHERE (sid, uri) IN (
      SELECT sid, uri FROM session_subscriptions WHERE expires_at <= ?1 LIMIT ?2
    )`,
  purgeInputSlots: purgeRowidTable('input_slots'),
  purgeTasks: purgeRowidTable('tasks'),
  purgeStreams: purgeRowidTable('session_streams'),
  purgeStreamEvents: purgeRowidTable('stream_events'),
} as const

/**
 * Purge statements, in the order a purge spends its budget (`?1` now, `?2` what is left of it):
 * session rows, tasks, stream records and events go at their own expiry.
 */
export const PURGES: readonly string[] = [
  SQL.purgeSessions,
  SQL.purgeSubscriptions,
  SQL.purgeInputSlots,
  SQL.purgeTasks,
  SQL.purgeStreams,
  SQL.purgeStreamEvents,
]
