/**
 * @module storage/sqlite/statements
 * The SQLite dialect of the notes store, shared by node:sqlite and D1: the list of schema migration
 * files under `migrations/` (the one source of truth for the schema) and every statement the port
 * modules of this folder run. Statements use numbered parameters (`?1`, `?2`…), which both drivers
 * bind positionally; each statement's comment lists them, and a statement that decides a
 * check-and-set returns a row (or changes one) only when it applied. The task and stream statements
 * are built, once, from the column lists of `common/tasks.ts` and `common/streams.ts` (the order
 * `createTask`, `updateTask`, `createStream` and `updateStream` bind their values in).
 * Runtime-neutral text, the fresh claim the once-key statements bind ({@link newClaim}) and the
 * parameters of a patch ({@link patchParams}); no imports but the retention rule of the store
 * contract, those lists and random bytes.
 */
import { randomBase64url } from '../../mcp/random.ts'
import { REPLAY_RETENTION_MS } from '../../notes/store.ts'
import { patchAssignments, type PatchValue } from '../common/columns.ts'
import { NEW_STREAM_FIELDS, STREAM_COLUMNS, STREAM_PATCH_COLUMNS } from '../common/streams.ts'
import { NEW_TASK_FIELDS, TASK_COLUMNS, TASK_PATCH_COLUMNS } from '../common/tasks.ts'
import type { SqliteValue } from './driver.ts'

/**
 * The schema's migration files under `migrations/`, in order; the number before `_` is the step's
 * version. wrangler applies them to D1 (recorded in `d1_migrations`), the node:sqlite driver reads and
 * applies them (recorded in `schema_migrations`). Never edit a released file; append a new one here.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  '0001_init.sql',
  '0002_expiry.sql',
  '0003_sessions.sql',
  '0004_tasks.sql',
  '0005_session_principals.sql',
  '0006_task_cap.sql',
  '0007_streams.sql',
  '0008_stream_cap_index.sql',
]

/** Weights of the FTS columns (title, body, tags) in bm25 ranking: title above tags above body. */
const BM25_WEIGHTS = '4.0, 1.0, 2.0'
const NOTE_COLUMNS = 'n.id, n.title, n.body, n.tags, n.created_at, n.updated_at, n.version'
const RETURNING_NOTE = 'RETURNING id, title, body, tags, created_at, updated_at, version'

/** Keeps only notes carrying every tag of the JSON array `?2` (`?3` distinct tags). */
const TAG_FILTER = `(?3 = 0 OR (
  SELECT count(DISTINCT t.value) FROM json_each(n.tags) AS t
  WHERE t.value IN (SELECT value FROM json_each(?2))
) = ?3)`

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

/** The condition that the once-key bound at placeholder `key` carries this call's claim (at `claim`). */
const CLAIMED = (key: string, claim: string) =>
  `EXISTS (SELECT 1 FROM used_keys WHERE once_key = ${key} AND claim = ${claim})`

/** A fresh claim: 128 random bits proving which call spent a once-key (see {@link CLAIMED}). */
export function newClaim(): string {
  return randomBase64url(16)
}

/** Every statement. A statement that decides a check-and-set returns a row only when it applied. */
export const SQL = {
  /** ?1 id, ?2 principal, ?3 title, ?4 body, ?5 tags JSON, ?6 now. */
  insertNote: `
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)
    ${RETURNING_NOTE}`,
  /** ?1 principal, ?2 id. */
  getNote: `SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND n.id = ?2`,
  /** ?1 principal, ?2 id, ?3 expected version, ?4 title, ?5 body, ?6 tags JSON (null: keep), ?7 now. */
  updateNote: `
    UPDATE notes SET
      title = coalesce(?4, title),
      body = coalesce(?5, body),
      tags = coalesce(?6, tags),
      updated_at = ?7,
      version = version + 1
    WHERE principal = ?1 AND id = ?2 AND version = ?3
    ${RETURNING_NOTE}`,
  /**
   * ?1 id, ?2 principal, ?3 title, ?4 body, ?5 tags JSON, ?6 now. Returns a row only when it created
   * the note: an id naming a note of any principal is skipped (writes are serialised, so the check
   * and the insert cannot be split by another writer).
   */
  importNote: `
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6, 1
    WHERE NOT EXISTS (SELECT 1 FROM notes WHERE id = ?1)
    RETURNING id`,
  /** ?1 key, ?2 now, ?3 claim. Returns a row only when this statement spent the key. */
  spendKey: `
    INSERT INTO used_keys (once_key, used_at, claim) VALUES (?1, ?2, ?3)
    ON CONFLICT DO NOTHING RETURNING once_key`,
  /**
   * ?1 principal, ?2 ids (a JSON array of strings); deletes only when the key ?3 carries this call's
   * claim ?4. The FTS5 delete trigger keeps the search index in step.
   */
  deleteNotes: `
    DELETE FROM notes
    WHERE principal = ?1 AND id IN (SELECT value FROM json_each(?2)) AND ${CLAIMED('?3', '?4')}
    RETURNING id`,
  /** ?1 key. */
  keyUsed: `SELECT 1 AS used FROM used_keys WHERE once_key = ?1`,
  /** ?1 principal, ?2 limit, ?3 offset. */
  listNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?2 OFFSET ?3`,
  /** ?1 principal, ?2 tags JSON, ?3 tag count, ?4 limit, ?5 offset. */
  filterNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?4 OFFSET ?5`,
  /** As `filterNotes`, plus ?6 the FTS5 match expression (`ftsMatch` of notes.ts). */
  searchNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes_fts JOIN notes AS n ON n.seq = notes_fts.rowid
    WHERE notes_fts MATCH ?6 AND n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY bm25(notes_fts, ${BM25_WEIGHTS}), n.updated_at DESC, n.seq DESC
    LIMIT ?4 OFFSET ?5`,
  /** ?1 principal. */
  listTags: `
    SELECT t.value AS tag, count(*) AS count FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 GROUP BY t.value ORDER BY t.value`,
  /**
   * ?1 principal, ?2 prefix, ?3 limit. Exact, case-sensitive prefix comparison: no wildcard of the
   * prefix can take effect.
   */
  completeIds: `
    SELECT n.id FROM notes AS n
    WHERE n.principal = ?1 AND substr(n.id, 1, length(?2)) = ?2
    ORDER BY n.id LIMIT ?3`,
  /** ?1 principal, ?2 `likePrefix` pattern (notes.ts), ?3 limit. */
  completeTags: `
    SELECT DISTINCT t.value AS tag FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 AND t.value LIKE ?2 ESCAPE '\\'
    ORDER BY t.value LIMIT ?3`,
  /** ?1 id, ?2 principal, ?3 note id, ?4 expires at. */
  insertShare: `
    INSERT INTO share_requests (id, principal, note_id, status, expires_at)
    VALUES (?1, ?2, ?3, 'pending', ?4)`,
  /** ?1 id. */
  getShare: `
    SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests WHERE id = ?1`,
  /** ?1 id, ?2 decision, ?3 now. */
  decideShare: `
    UPDATE share_requests SET status = ?2, decided_at = ?3
    WHERE id = ?1 AND status = 'pending' AND expires_at > ?3
    RETURNING id`,
  /** ?1 key, ?2 now, ?3 claim, ?4 share, ?5 principal: spends the key only for a publishable share. */
  spendKeyForShare: `
    INSERT INTO used_keys (once_key, used_at, claim)
    SELECT ?1, ?2, ?3 WHERE EXISTS (
      SELECT 1 FROM share_requests
      WHERE id = ?4 AND principal = ?5 AND status = 'approved' AND link_id IS NULL
    )
    ON CONFLICT DO NOTHING RETURNING once_key`,
  /** ?1 link, ?2 now, ?3 share, ?4 key, ?5 claim. */
  insertLink: `
    INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
    SELECT ?1, s.id, s.principal, s.note_id, ?2 FROM share_requests AS s
    WHERE s.id = ?3 AND ${CLAIMED('?4', '?5')}`,
  /** ?1 link, ?2 share, ?3 key, ?4 claim. */
  setShareLink: `
    UPDATE share_requests SET link_id = ?1 WHERE id = ?2 AND ${CLAIMED('?3', '?4')}`,
  /** ?1 link id. */
  getSharedNote: `
    SELECT ${NOTE_COLUMNS} FROM shared_links AS l
    JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
    WHERE l.id = ?1`,
  /** ?1 cutoff (spent at or before it), ?2 limit. */
  purgeUsedKeys: `
    DELETE FROM used_keys WHERE once_key IN (
      SELECT once_key FROM used_keys WHERE used_at <= ?1 LIMIT ?2
    )`,
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
  /** ?1 cutoff (expired at or before it), ?2 limit. Published shares stay with their links. */
  purgeShares: `
    DELETE FROM share_requests WHERE id IN (
      SELECT id FROM share_requests WHERE link_id IS NULL AND expires_at <= ?1 LIMIT ?2
    )`,
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
 * Purge statements, in the order a purge spends its budget, each with the cutoff it compares with
 * (`?1`) for a given `now`: once-keys and unpublished shares are kept {@link REPLAY_RETENTION_MS}
 * past their last use, session rows, tasks, stream records and events go at their own expiry.
 */
export const PURGES: ReadonlyArray<{ sql: string; cutoff: (now: number) => number }> = [
  { sql: SQL.purgeUsedKeys, cutoff: (now) => now - REPLAY_RETENTION_MS },
  { sql: SQL.purgeShares, cutoff: (now) => now - REPLAY_RETENTION_MS },
  { sql: SQL.purgeSessions, cutoff: (now) => now },
  { sql: SQL.purgeSubscriptions, cutoff: (now) => now },
  { sql: SQL.purgeInputSlots, cutoff: (now) => now },
  { sql: SQL.purgeTasks, cutoff: (now) => now },
  { sql: SQL.purgeStreams, cutoff: (now) => now },
  { sql: SQL.purgeStreamEvents, cutoff: (now) => now },
]
