/**
 * @module mcp/stores/sqlite/streams
 * The `StreamStore` methods of the SQLite-dialect store ({@link streamMethods}): the records of a
 * session's resumable streams, created under the cap on a session's live records (the conditional
 * insert alone below it; at it, one batch: the session's oldest ended records and their events
 * evicted down to half the cap, then the conditional insert, so that a session kept at the cap runs
 * the batch about once per half cap of creations), changed by compare-and-set on their version, and
 * their numbered events, each seq stored once (the primary key refuses a second writer). The
 * statements are built from the column lists of `common/streams.ts` (`statements.ts`); ending a
 * session removes its streams (`sessions.ts`).
 */
import { positiveWholeNumber } from '../../options.ts'
import { streamsLeftByEviction, type StreamStore } from '../../stream-store.ts'
import { fieldValues, patchValues } from '../common/columns.ts'
import type { PortMethods } from '../common/store-class.ts'
import {
  checkEventsRead,
  NEW_STREAM_FIELDS,
  STREAM_PATCH_COLUMNS,
  toStoredEvents,
  toStreamRecord,
  type EventRow,
  type StreamRow,
} from '../common/streams.ts'
import type { SqliteDriver } from './driver.ts'
import { patchParams, SQL } from './statements.ts'

export const streamMethods: PortMethods<StreamStore, SqliteDriver> = {
  async createStream(stream, maxPerSession, now) {
    const db = this.db
    positiveWholeNumber('maxPerSession', maxPerSession)
    const insert = {
      sql: SQL.insertStream,
      params: [...fieldValues(NEW_STREAM_FIELDS, stream), maxPerSession, now],
    }
    // Below the cap, the conditional insert alone: one statement counts and inserts atomically.
    const below = await db.get(insert.sql, insert.params)
    if (below !== undefined) return toStreamRecord(below as StreamRow)
    const eviction = [stream.sid, maxPerSession, now, streamsLeftByEviction(maxPerSession)]
    // At the cap, one batch, one transaction: writes are serialised (node:sqlite takes the write lock
    // before the first statement, D1 runs a batch alone), so no other writer comes between the
    // evictions' counts, the evictions, the insert's count and the insert (a writer that made room
    // since the insert above failed leaves the evictions nothing to do); a creation that throws
    // (its stream exists) evicts nothing.
    const [, , inserted] = await db.batch([
      { sql: SQL.evictEndedStreamEvents, params: eviction },
      { sql: SQL.evictEndedStreams, params: eviction },
      insert,
    ])
    const row = inserted?.[0]
    return row === undefined ? undefined : toStreamRecord(row as StreamRow)
  },

  async getStream(sid, stream) {
    const row = await this.db.get(SQL.getStream, [sid, stream])
    return row === undefined ? undefined : toStreamRecord(row as StreamRow)
  },

  async updateStream(sid, stream, expectedVersion, patch) {
    const values = patchParams(patchValues(STREAM_PATCH_COLUMNS, patch))
    const row = await this.db.get(SQL.updateStream, [sid, stream, expectedVersion, ...values])
    return row === undefined ? undefined : toStreamRecord(row as StreamRow)
  },

  async appendEvent(sid, stream, seq, payload, expiresAt) {
    const db = this.db
    positiveWholeNumber('seq', seq)
    return (await db.run(SQL.appendEvent, [sid, stream, seq, payload, expiresAt])) === 1
  },

  async readEvents(sid, stream, afterSeq, limit, now) {
    const db = this.db
    checkEventsRead(afterSeq, limit)
    const rows = await db.all(SQL.readEvents, [sid, stream, afterSeq, now, limit])
    return toStoredEvents(rows as EventRow[])
  },
}
