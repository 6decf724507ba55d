/**
 * @module mcp/stores/postgres/streams
 * The `StreamStore` methods of the PostgreSQL store ({@link streamMethods}): the records of a
 * session's resumable streams, created under the cap on a session's live records (at the cap, its
 * oldest ended records and their events evicted down to half the cap; evicted, counted and inserted
 * by one statement under a per-session advisory lock, {@link STREAM_CAP_LOCK_CLASS}), changed by
 * compare-and-set on their version, and their numbered events, each seq stored once (`ON CONFLICT
 * DO NOTHING` on the primary key: of two replicas writing one seq, exactly one stores it). The statements are built once from the column lists of
 * `common/streams.ts`; ending a session removes its streams (`sessions.ts`).
 */
import type { Sql } from 'postgres'
import { positiveWholeNumber } from '../../options.ts'
import { streamsLeftByEviction, type StreamStore } from '../../stream-store.ts'
import { fieldValues, patchAssignments, patchValues } from '../common/columns.ts'
import type { PortMethods } from '../common/store-class.ts'
import {
  checkEventsRead,
  NEW_STREAM_FIELDS,
  STREAM_COLUMNS,
  STREAM_PATCH_COLUMNS,
  toStoredEvents,
  toStreamRecord,
  type EventRow,
  type StreamRow,
} from '../common/streams.ts'
import { patchParams, pgPlaceholder } from './patch.ts'
import { dec, enc, encValue } from './text.ts'

/**
 * First key of the transaction-scoped advisory lock that serialises the `createStream`s of one
 * session (the second: a hash of its sid; two sessions of one hash merely wait for each other).
 */
const STREAM_CAP_LOCK_CLASS = 0x6e6d7373 // "nmss"

/**
 * The stream statements, built once from the column lists of `common/streams.ts` (run with
 * `unsafe`: the text is these constants only, every value is a bound parameter). `STREAM_INSERT`
 * binds `NEW_STREAM_FIELDS` as $1, $2…, then the cap, now and the records to leave
 * (`streamsLeftByEviction` of the cap): when the session's live records (unexpired at now) fill the
 * cap and its records not ended do not, it first evicts its ended live records that expire first
 * (they ended first) and their events, as many as leave that many live records, or every ended one
 * when fewer are; then it stores the record only if the live records left are fewer than the cap
 * (all parts of the statement see one snapshot, taken before the evictions: hence the count minus
 * those evicted).
 * `STREAM_GET` binds the sid and stream; `STREAM_UPDATE` the sid ($1), the stream ($2), the
 * expected version ($3), then for each column of `STREAM_PATCH_COLUMNS` whether to set it and the
 * value.
 */
const STREAM_SELECT = Object.values(STREAM_COLUMNS).join(', ')
const [SID, CAP, NOW, LEFT] = [
  NEW_STREAM_FIELDS.indexOf('sid') + 1,
  NEW_STREAM_FIELDS.length + 1,
  NEW_STREAM_FIELDS.length + 2,
  NEW_STREAM_FIELDS.length + 3,
].map((position) => `$${position}`)
const LIVE_STREAMS = `FROM session_streams WHERE sid = ${SID} AND expires_at > ${NOW}`
const STREAM_INSERT = `
  WITH evicted AS (
    DELETE FROM session_streams WHERE sid = ${SID} AND stream IN (
      SELECT stream ${LIVE_STREAMS} AND ended
        AND (SELECT count(*) ${LIVE_STREAMS}) >= ${CAP}
        AND (SELECT count(*) ${LIVE_STREAMS} AND NOT ended) < ${CAP}
      ORDER BY expires_at, stream
      LIMIT GREATEST(0, (SELECT count(*) ${LIVE_STREAMS}) - ${LEFT})
    )
    RETURNING stream
  ), evicted_events AS (
    DELETE FROM stream_events WHERE sid = ${SID} AND stream IN (SELECT stream FROM evicted)
  )
  INSERT INTO session_streams (${NEW_STREAM_FIELDS.map((field) => STREAM_COLUMNS[field]).join(', ')})
  SELECT ${NEW_STREAM_FIELDS.map((_, i) => `$${i + 1}`).join(', ')}
  WHERE (SELECT count(*) ${LIVE_STREAMS}) - (SELECT count(*) FROM evicted) < ${CAP}
  RETURNING ${STREAM_SELECT}`
const STREAM_GET = `SELECT ${STREAM_SELECT} FROM session_streams WHERE sid = $1 AND stream = $2`
const STREAM_UPDATE = `
  UPDATE session_streams SET
    ${patchAssignments(Object.values(STREAM_PATCH_COLUMNS), 4, pgPlaceholder)},
    version = version + 1
  WHERE sid = $1 AND stream = $2 AND version = $3
  RETURNING ${STREAM_SELECT}`

export const streamMethods: PortMethods<StreamStore, Sql> = {
  async createStream(stream, maxPerSession, now) {
    positiveWholeNumber('maxPerSession', maxPerSession)
    const values = [
      ...fieldValues(NEW_STREAM_FIELDS, stream).map(encValue),
      maxPerSession,
      now,
      streamsLeftByEviction(maxPerSession),
    ]
    const sid = enc(stream.sid)
    return this.db.begin(async (tx) => {
      // A conditional insert alone is not enough under READ COMMITTED: two racing ones each count
      // from a snapshot without the other's row, and both insert (or both evict for one place).
      // Creations of one session are serialised instead, and the statement, run after the lock is
      // held, counts and evicts from its own snapshot, which holds every record another replica
      // committed before: none can take the last place twice. Other writers of the session's
      // records (updates) create none and never make an ended record unended; a record one ends
      // meanwhile is merely not evicted this time.
      await tx`SELECT pg_advisory_xact_lock(${STREAM_CAP_LOCK_CLASS}, hashtext(${sid}))`
      const [row] = await tx.unsafe<StreamRow[]>(STREAM_INSERT, values, { prepare: true })
      return row === undefined ? undefined : toStreamRecord(row, dec)
    })
  },

  async getStream(sid, stream) {
    const [row] = await this.db.unsafe<StreamRow[]>(STREAM_GET, [enc(sid), enc(stream)], {
      prepare: true,
    })
    return row === undefined ? undefined : toStreamRecord(row, dec)
  },

  async updateStream(sid, stream, expectedVersion, patch) {
    const sql = this.db
    // A version that is not an integer matches no stored version; it must not reach the bigint column.
    if (!Number.isSafeInteger(expectedVersion)) return undefined
    const params = [
      enc(sid),
      enc(stream),
      expectedVersion,
      ...patchParams(patchValues(STREAM_PATCH_COLUMNS, patch)),
    ]
    const [row] = await sql.unsafe<StreamRow[]>(STREAM_UPDATE, params, { prepare: true })
    return row === undefined ? undefined : toStreamRecord(row, dec)
  },

  async appendEvent(sid, stream, seq, payload, expiresAt) {
    const sql = this.db
    positiveWholeNumber('seq', seq)
    const stored = await sql`
      INSERT INTO stream_events (sid, stream, seq, payload, expires_at)
      VALUES (${enc(sid)}, ${enc(stream)}, ${seq}, ${enc(payload)}, ${expiresAt})
      ON CONFLICT (sid, stream, seq) DO NOTHING`
    return stored.count === 1
  },

  async readEvents(sid, stream, afterSeq, limit, now) {
    const sql = this.db
    checkEventsRead(afterSeq, limit)
    const rows = await sql<EventRow[]>`
      SELECT seq, payload FROM stream_events
      WHERE sid = ${enc(sid)} AND stream = ${enc(stream)} AND seq > ${afterSeq}
        AND expires_at > ${now}
      ORDER BY seq LIMIT ${limit}`
    return toStoredEvents(rows, dec)
  },
}
