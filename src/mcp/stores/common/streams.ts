/**
 * @module mcp/stores/common/streams
 * The two tables of resumable 2025-era streams (`mcp/stream-store.ts`) as both dialects see them,
 * written once so that their statements cannot drift apart: `session_streams`, one record per stream
 * of a session — every field and its column ({@link STREAM_COLUMNS}), the columns `updateStream` may
 * change ({@link STREAM_PATCH_COLUMNS}, in the order its statement binds them), the fields
 * `createStream` binds ({@link NEW_STREAM_FIELDS}), a record read from its row
 * ({@link toStreamRecord}) — and `stream_events`, the numbered events of each
 * ({@link toStoredEvents}). What a new record and a patch bind is `columns.ts`'s `fieldValues` and
 * `patchValues` over these lists; each dialect builds its statements from them, once
 * (`sqlite/statements.ts`, `postgres/streams.ts`), and checks a read's arguments the same way
 * ({@link checkEventsRead}). Runtime-neutral: only the engine's `StreamStore` contract.
 */
import { positiveWholeNumber } from '../../options.ts'
import type { NewStream, StoredEvent, StreamPatch, StreamRecord } from '../../stream-store.ts'
import {
  columnReaders,
  insertedFields,
  versionedColumns,
  withoutAbsent,
  type ColumnRow,
  type ColumnValue,
} from './columns.ts'

/** The columns of `session_streams` that `createStream` writes and `updateStream` never changes. */
const STREAM_KEY_COLUMNS = {
  sid: 'sid',
  stream: 'stream',
} as const satisfies Record<Exclude<keyof StreamRecord, keyof StreamPatch | 'version'>, string>

/** The columns `updateStream` may change, in the order its statement binds them on every adapter. */
export const STREAM_PATCH_COLUMNS = {
  call: 'call',
  leaseOwner: 'lease_owner',
  leaseExpiresAt: 'lease_expires_at',
  ended: 'ended',
  expiresAt: 'expires_at',
} as const satisfies Record<keyof StreamPatch, string>

/** Every field of a stream record and its column of `session_streams` (the same on every adapter). */
export const STREAM_COLUMNS = versionedColumns(
  STREAM_KEY_COLUMNS,
  STREAM_PATCH_COLUMNS
) satisfies Record<keyof StreamRecord, string>

/** A `session_streams` row as selected (integers and flags as the driver returns them). */
export type StreamRow = ColumnRow<typeof STREAM_COLUMNS>

/** The fields `createStream` binds, in order; a new record starts at version 1, not ended. */
export const NEW_STREAM_FIELDS: Array<keyof NewStream> = insertedFields(STREAM_COLUMNS, ['ended'])

/** A stored stream record; `text` undoes the adapter's escaping of stored strings, if any. */
export function toStreamRecord(row: StreamRow, text?: (stored: string) => string): StreamRecord {
  const read = columnReaders(text)
  return withoutAbsent<StreamRecord>({
    sid: read.text(row.sid),
    stream: read.text(row.stream),
    call: read.optionalText(row.call),
    leaseOwner: read.optionalText(row.lease_owner),
    leaseExpiresAt: read.optionalNumber(row.lease_expires_at),
    ended: read.flag(row.ended),
    expiresAt: Number(row.expires_at),
    version: Number(row.version),
  })
}

/** A `stream_events` row as `readEvents` selects it. */
export type EventRow = Record<'seq' | 'payload', ColumnValue>

/** Events as `readEvents` answers them, from its rows in order. */
export function toStoredEvents(
  rows: readonly EventRow[],
  text?: (stored: string) => string
): StoredEvent[] {
  const read = columnReaders(text)
  return rows.map((row) => ({ seq: Number(row.seq), payload: read.text(row.payload) }))
}

/**
 * Throws `RangeError` unless `readEvents` reads after a whole number (0: from the first event) and
 * at most a positive whole number of events.
 */
export function checkEventsRead(afterSeq: number, limit: number): void {
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
    throw new RangeError(`afterSeq must be a whole number, got ${String(afterSeq)}`)
  }
  positiveWholeNumber('limit', limit)
}
