/**
 * @module mcp/stream-store
 * What the engine keeps in the shared store so that a 2025-era SSE stream outlives its connection and
 * its replica: every stream of a session that carries stored events has a record, keyed by the
 * session's `sid` and the stream's id, and its events, numbered from 1 within the stream.
 * - An event is one SSE message as its JSON text (a server→client request, a notification, or the
 *   final JSON-RPC response of the call that opened the stream), stored before it is written to any
 *   connection, so a client that resumes with `Last-Event-ID` on any replica is sent what followed it
 *   on that stream, and only that stream (`legacy/resumable.ts`).
 * - A stream whose call is waiting for the client (an interactive `tools/call`, `prompts/get` or
 *   `resources/read`) also holds that call: what a replica needs to re-drive its handler from the top
 *   (the request, the state its last round left, the server→client requests it is waiting for), and
 *   the lease of the replica driving it — the task engine's lease (`task-store.ts`): an owner and an
 *   expiry, renewed while the owner lives, every change a compare-and-set on the record's version, so
 *   that when the owner dies exactly one other replica takes the call over.
 *
 * Bounded: a session holds at most {@link MAX_STREAMS_KEPT_PER_SESSION} live records; at the cap,
 * `createStream` makes room by evicting the session's oldest ended records with their events, down
 * to half the cap ({@link streamsLeftByEviction}), and refuses only when records not ended fill it —
 * eviction, count and insert one atomic step on every adapter, so that creations racing on any
 * number of replicas never exceed it. Events and records carry an expiry (milliseconds since the
 * epoch) and are removed by the adapters' purge of expired rows. Before that, an expired event is
 * never read, though it still holds its seq; an expired record is still answered by `getStream`,
 * for the caller to judge, and counts for nothing against the cap. Ending a session
 * (`SessionStore.endSession`, or a new session at its principal's cap ending it) removes its
 * streams and their events. Adapters (node:sqlite, PostgreSQL, D1) pass one contract suite
 * (`tests/support/store-contract.ts`).
 */

/**
 * Live stream records one session may hold (`createStream`'s cap, passed by `legacy/call-stream.ts`):
 * a record is created for each 2025 call that streams (one that sends anything before its result)
 * and lives until its call has ended and a short retention has passed (`ENDED_STREAM_RETENTION_MS`,
 * so that a client whose connection dropped just before the answer can still fetch it). Only the
 * calls in progress (records not ended) can fill the cap: an ended record is a courtesy, and the
 * oldest ones make room for a new call, so a busy host that makes a call a second, or an agent's
 * burst of streaming calls, is never refused for calls that are over. A host runs a handful of
 * calls at once (a waiting one also holds a stream open on its replica, capped per session there by
 * `stream-limits.ts`), so 64 in progress leaves room for every real host, while a loop of calls
 * left waiting stops here instead of filling the store. This is the one bound across replicas: the
 * in-memory caps count each replica alone. Together with the cap on a principal's sessions
 * (`maxSessionsPerPrincipal`, default 1,000) it bounds what one principal can make the store
 * keep: at most 64 records per session times that many sessions, each record's events bounded by
 * `legacy/stream-log.ts` (`MAX_KEPT_EVENTS_PER_STREAM`) and evicted with it.
 */
export const MAX_STREAMS_KEPT_PER_SESSION = 64

/**
 * How many live records `createStream` leaves a session when it evicts at `maxPerSession`: half the
 * cap, rounded down (or more, when more records are not ended), so that a busy session, which sits
 * at the cap because its ended records are kept a while, pays for an eviction about once per half
 * cap of creations instead of at every one. The adapters bind it to their statements.
 */
export function streamsLeftByEviction(maxPerSession: number): number {
  return Math.floor(maxPerSession / 2)
}

/** One stored event of a stream. */
export interface StoredEvent {
  /** Its number in the stream: 1, 2, … in the order written. */
  readonly seq: number
  /** The SSE message as JSON text. */
  readonly payload: string
}

/** A resumable 2025 stream as stored: its session, id, call, lease, end and version. */
export interface StreamRecord {
  readonly sid: string
  readonly stream: string
  /** What a replica needs to re-drive the stream's suspended call (JSON text); absent for none. */
  readonly call?: string
  /**
   * The replica driving the call and until when its lease holds (ms since the epoch). Always set and
   * cleared together; a lease is held while `leaseExpiresAt` is in the future.
   */
  readonly leaseOwner?: string
  readonly leaseExpiresAt?: number
  /** Whether the stream's last event (the call's final response) is stored: nothing follows it. */
  readonly ended: boolean
  /** When the record may be purged. */
  readonly expiresAt: number
  /** Starts at 1; every successful `updateStream` adds 1. */
  readonly version: number
}

/** What `createStream` is given: the record's keys and expiry, and its call and lease if any. */
export type NewStream = Pick<StreamRecord, 'sid' | 'stream' | 'expiresAt'> &
  Partial<Pick<StreamRecord, 'call' | 'leaseOwner' | 'leaseExpiresAt'>>

/** Fields `updateStream` may change; `null` clears an optional field, `undefined` leaves it. */
export interface StreamPatch {
  call?: string | null
  leaseOwner?: string | null
  leaseExpiresAt?: number | null
  ended?: boolean
  expiresAt?: number
}

/** The store port of resumable 2025 streams and their events (part of `SessionStore`). */
export interface StreamStore {
  /**
   * Stores a new stream record (version 1, not ended) while session `stream.sid` holds fewer than
   * `maxPerSession` live records (unexpired at `now`; an expired record the purge has not reached yet
   * counts for nothing). At the cap it first evicts the session's oldest ended live records (those
   * that expire first) with their events until `floor(maxPerSession / 2)` live records are left
   * ({@link streamsLeftByEviction}), or, when records not ended outnumber that, every ended one;
   * below the cap it evicts nothing. It answers `undefined`, storing and evicting nothing, only when
   * the session's live records not ended already fill the cap. Eviction, count and insert are one atomic step, across every replica, so
   * a session never holds more than `maxPerSession` live records. Throws if `(sid, stream)` exists
   * (evicting nothing), and `RangeError` unless `maxPerSession` is a positive integer.
   */
  createStream(
    stream: NewStream,
    maxPerSession: number,
    now: number
  ): Promise<StreamRecord | undefined>
  /** The record of `stream` in session `sid`, expired or not (the caller checks), or `undefined`. */
  getStream(sid: string, stream: string): Promise<StreamRecord | undefined>
  /**
   * Applies `patch` only if the stored version is `expectedVersion`, adding 1 to it. Answers the
   * record as it is after the update, or `undefined` when the version (or the record) did not match.
   */
  updateStream(
    sid: string,
    stream: string,
    expectedVersion: number,
    patch: StreamPatch
  ): Promise<StreamRecord | undefined>
  /**
   * Stores event `seq` (a positive whole number) of the stream, kept until `expiresAt`. Answers
   * false, storing nothing and changing nothing, when the stream already holds an event `seq`, expired
   * or not until it is purged (two writers raced: the loser learns it lost). Needs no record of the
   * stream. `RangeError` for a `seq` that is not a positive whole number.
   */
  appendEvent(
    sid: string,
    stream: string,
    seq: number,
    payload: string,
    expiresAt: number
  ): Promise<boolean>
  /**
   * Events of the stream numbered after `afterSeq` (0: from the first) and unexpired at `now`, in
   * order, at most `limit`; never another session's or stream's. `RangeError` unless `afterSeq` is a
   * whole number and `limit` a positive one.
   */
  readEvents(
    sid: string,
    stream: string,
    afterSeq: number,
    limit: number,
    now: number
  ): Promise<StoredEvent[]>
}
