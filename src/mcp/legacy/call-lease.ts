/**
 * @module mcp/legacy/call-lease
 * A 2025-era call kept with its stream's record (`../stream-store.ts`) so that it outlives the
 * replica driving it. What is stored (`StoredCall`): the engine request as it was dispatched, and
 * once the call waits for the client, its checkpoint (`input-shim.ts`'s `FlowCheckpoint`: the state
 * its last round left, the server→client requests it waits for, its round count). The replica
 * driving the call holds the record's lease, the task engine's kind (`tasks/runner.ts`): an owner
 * and an expiry, renewed every third of the lease, every write a compare-and-set on the record's
 * version. The lease is taken with the record itself (`leasePatch`, `CallLease.held`), so no client
 * ever holds an event of a stream nobody holds. A write that misses means another replica claimed
 * the call after the lease ran out (this one stalled, or was thought dead): the lease is lost, its
 * signal aborts, and this replica writes nothing more. A replica finding a call whose lease is
 * absent or expired (`orphaned`) claims it with one compare-and-set: a call that stopped before it
 * waited for anything is ended with an error (run again, it could repeat what it did), and a call
 * that waits (`claimable`) is re-driven from its checkpoint: its handler re-runs from the top with
 * the stored state and the answers in the store, exactly as a 2026-07-28 round does, and the
 * state's nonce, the same on every replica, keeps its final side effects to one
 * (`ctx.idempotencyKey`). Releasing the lease (the call ended, or this replica shuts down) lets the
 * next claim happen at once. A replica whose shutdown began claims nothing (`takesOver`).
 */
import type { McpRequest } from '../envelope.ts'
import type { McpLogger } from '../logger.ts'
import type { StreamPatch, StreamRecord, StreamStore } from '../stream-store.ts'
import { isObject } from '../wire.ts'
import type { FlowCheckpoint } from './input-shim.ts'

/** What the record of a call's stream holds of the call (JSON text in `StreamRecord.call`). */
export interface StoredCall {
  request: McpRequest
  /** Set once the call waits for the client: where another replica continues it from. */
  checkpoint?: FlowCheckpoint
}

/** The call a record holds, or `undefined` for none (or one this server did not write). */
export function storedCall(record: StreamRecord): StoredCall | undefined {
  if (record.call === undefined) return undefined
  try {
    const call: unknown = JSON.parse(record.call)
    if (!isObject(call) || !isObject(call.request)) return undefined
    const { request } = call as { request: Partial<McpRequest> }
    if (typeof request.method !== 'string' || !isObject(request.params)) return undefined
    return call as unknown as StoredCall
  } catch {
    return undefined
  }
}

/**
 * Whether the record's call has lost its driver at `now`: not ended, still kept, and nobody holds
 * its lease (absent or run out). Another replica may then claim it: to re-drive it when it waits
 * for the client (`claimable`), or else to end it with an error (it stopped mid-run).
 */
export function orphaned(record: StreamRecord, now: number): boolean {
  return (
    !record.ended &&
    record.expiresAt > now &&
    !(record.leaseOwner !== undefined && (record.leaseExpiresAt ?? 0) > now)
  )
}

/** Whether another replica may claim the record's call at `now` and re-drive it: it waits, orphaned. */
export function claimable(record: StreamRecord, now: number): boolean {
  return orphaned(record, now) && storedCall(record)?.checkpoint !== undefined
}

/** The lease fields of a record this replica creates or claims now. */
export function leasePatch({ owner, leaseMs, retentionMs, now }: CallLeaseContext): {
  leaseOwner: string
  leaseExpiresAt: number
  expiresAt: number
} {
  const at = now()
  return { leaseOwner: owner, leaseExpiresAt: at + leaseMs, expiresAt: at + retentionMs }
}

/** The reason a lease's signal aborts with (a plain value: no `DOMException` to build each time). */
const LEASE_ENDED = 'the lease ended'

export interface CallLeaseContext {
  store: StreamStore
  /** This replica's name in leases. */
  owner: string
  leaseMs: number
  /** How long the record is kept after each write. */
  retentionMs: number
  now: () => number
  logger: McpLogger
  /** The streams (`sid stream`) whose calls this replica holds the lease of now. */
  held: Set<string>
  /**
   * Aborted once this replica's shutdown began: it claims no call from then on (`takesOver`), since
   * it would let go of it a moment later; the replica the client resumes on claims it instead.
   */
  draining?: AbortSignal
}

/** Whether this replica may still claim calls whose driver is gone (its shutdown has not begun). */
export function takesOver(context: CallLeaseContext): boolean {
  return !context.draining?.aborted
}

/** Whether this replica holds the lease of `stream`'s call now (no store read needed). */
export function drivenHere(context: CallLeaseContext, sid: string, stream: string): boolean {
  return context.held.has(`${sid} ${stream}`)
}

/** The lease of one call's record, held by this replica (see the module header). */
export class CallLease {
  readonly #context: CallLeaseContext
  #record: StreamRecord
  readonly #lost = new AbortController()
  #renewal: ReturnType<typeof setInterval> | undefined
  /** Every write, in order. */
  #writing: Promise<unknown> = Promise.resolve()
  #released = false

  private constructor(context: CallLeaseContext, record: StreamRecord) {
    this.#context = context
    this.#record = record
    context.held.add(`${record.sid} ${record.stream}`)
    this.#lost.signal.addEventListener(
      'abort',
      () => context.held.delete(`${record.sid} ${record.stream}`),
      { once: true }
    )
    this.#renewal = setInterval(
      () => void this.write({}).catch(() => {}),
      Math.max(1, Math.floor(context.leaseMs / 3))
    )
  }

  /** The lease of a record this replica created with its lease (`leasePatch`). */
  static held(context: CallLeaseContext, record: StreamRecord): CallLease {
    return new CallLease(context, record)
  }

  /**
   * Claims `record` (its call orphaned) for this replica; `undefined` when another replica changed
   * it first (it claimed the call, or wrote it), or when this one no longer {@link takesOver}.
   */
  static async claim(
    context: CallLeaseContext,
    record: StreamRecord
  ): Promise<CallLease | undefined> {
    if (!takesOver(context)) return undefined
    const { sid, stream, version } = record
    const claimed = await context.store.updateStream(sid, stream, version, leasePatch(context))
    return claimed && new CallLease(context, claimed)
  }

  /** Aborted once another replica holds the call. */
  get signal(): AbortSignal {
    return this.#lost.signal
  }

  /** Writes `patch` with a renewed lease; false (and the lease lost) when another replica holds it. */
  write(patch: StreamPatch): Promise<boolean> {
    const written = this.#writing.then(() =>
      this.#write({ ...patch, ...leasePatch(this.#context) })
    )
    this.#writing = written.catch(() => {})
    return written
  }

  /**
   * Ends the lease with `patch` (the call ended: `ended`), letting any replica claim what is left;
   * nothing is written under it afterwards (its signal aborts, as when it is lost), also when the
   * write fails (a database outage): the lease then runs out instead, and nothing of this replica
   * holds on to the call meanwhile.
   */
  async release(patch: StreamPatch = {}): Promise<void> {
    if (this.#released) return
    this.#released = true
    clearInterval(this.#renewal)
    const released = this.#writing.then(() =>
      this.#write({ ...patch, leaseOwner: null, leaseExpiresAt: null }, true)
    )
    this.#writing = released.catch(() => {})
    try {
      await released
    } finally {
      this.#lost.abort(LEASE_ENDED)
    }
  }

  async #write(patch: StreamPatch, releasing = false): Promise<boolean> {
    if (this.#lost.signal.aborted || (this.#released && !releasing)) return false
    const { store } = this.#context
    const { sid, stream, version } = this.#record
    const written = await store.updateStream(sid, stream, version, patch)
    if (written) {
      this.#record = written
      return true
    }
    clearInterval(this.#renewal)
    this.#context.logger.warn('a 2025 call was taken over by another replica', {
      session: sid.slice(0, 8),
      stream,
    })
    this.#lost.abort(LEASE_ENDED)
    return false
  }
}
