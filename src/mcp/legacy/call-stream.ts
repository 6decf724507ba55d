/**
 * @module mcp/legacy/call-stream
 * How a 2025-era request's answer goes back: the era's `RequestChannel`. Plain JSON when the answer
 * comes before anything else; from the first message the handler or its flow sends, a resumable SSE
 * stream (`stream-log.ts`): a record in the store naming the call (`call-lease.ts`), a priming event
 * for a 2025-11-25 session (an id and empty data, so a client can resume before the first message;
 * clients of older revisions are never sent an empty event), then every message as a stored event
 * with its id, the call's final response last (written by its driver, `call-flow.ts`). A session
 * holds at most `MAX_STREAMS_KEPT_PER_SESSION` records (`../stream-store.ts`), its oldest ended ones
 * evicted to make room: once its calls in progress fill them, a stream is not kept (its events go
 * out live only, without ids, and it cannot be resumed, and its call cannot wait for the client), the warning logged
 * once for the call.
 *
 * The connection is only a view of the stream: its dropping cancels nothing (the client resumes on
 * any replica with `Last-Event-ID`, `resume.ts`, and cancels with `notifications/cancelled`). The
 * server lets go of it, with an SSE `retry`, at the connection's maximum duration, at shutdown, and
 * when the handler calls `ctx.closeStream()` (SEP-1699 polling); the call goes on meanwhile.
 */
import type { McpRequest } from '../envelope.ts'
import { StoreUnavailableError } from '../errors.ts'
import { MAX_STREAMS_KEPT_PER_SESSION } from '../stream-store.ts'
import { finalResponse, type FinalMessage, type RequestChannel } from '../streaming.ts'
import { CallLease, leasePatch, type CallLeaseContext, type StoredCall } from './call-lease.ts'
import type { LegacySession } from './session.ts'
import {
  SseConnection,
  StreamLog,
  newStreamId,
  type ConnectionBounds,
  type StreamLogContext,
} from './stream-log.ts'

/**
 * Why a call's stream has no record: its session already has {@link MAX_STREAMS_KEPT_PER_SESSION}
 * calls in progress, streams not ended (`'session-full'`), the store could not be reached
 * (`'store-unavailable'`: a database outage) or failed otherwise (`'store-failed'`). Such a stream is
 * not kept: its events are written live only, nothing can resume it, and its call cannot wait for the
 * client.
 */
export type UnkeptStream = 'session-full' | 'store-unavailable' | 'store-failed'

/** What a call's stream is written with. */
export interface CallStreamContext extends StreamLogContext {
  connection: ConnectionBounds
  /** What the stream's record is leased with (`call-lease.ts`). */
  leases: CallLeaseContext
}

/** The answer channel of one 2025-era request (see the module header). */
export class CallStream implements RequestChannel {
  readonly #context: CallStreamContext
  readonly #session: LegacySession
  readonly #request: McpRequest
  #log: StreamLog | undefined
  /** The lease taken with the stream's record, or why it has no record. */
  #lease: Promise<CallLease | UnkeptStream> | undefined
  /** Tells the stream's log whether its record was kept, once `keep` knows. */
  #kept: ((kept: boolean) => void) | undefined
  /** Resolves the answer while `respond` waits for its first message or its result. */
  #answer: ((response: Response) => void) | undefined

  constructor(context: CallStreamContext, session: LegacySession, request: McpRequest) {
    this.#context = context
    this.#session = session
    this.#request = request
  }

  /** The channel of a call taken over from another replica: its stream goes on in `log`. */
  static resumed(
    context: CallStreamContext,
    session: LegacySession,
    request: McpRequest,
    log: StreamLog
  ): CallStream {
    const stream = new CallStream(context, session, request)
    stream.#log = log
    return stream
  }

  /** Whether the answer is a stream (a message went before the result). */
  get streaming(): boolean {
    return this.#log !== undefined
  }

  /**
   * The stream's log, the stream opened first if it is not yet (the answer becomes SSE): its record
   * created with this replica's lease (`keep`; with `keepLater`, the caller keeps it, with what the
   * record must hold from the start), then, once it is stored, the priming event (unless
   * `keepLater`: the caller primes it, `prime()`, once it kept the record).
   */
  open(options: { keepLater?: boolean } = {}): StreamLog {
    if (this.#log) return this.#log
    const { sid } = this.#session
    const stream = newStreamId('post')
    const kept = new Promise<boolean>((resolve) => (this.#kept = resolve))
    const log = new StreamLog(this.#context, sid, stream, 0, kept)
    const connection = new SseConnection(this.#context.connection)
    log.attach(connection)
    this.#log = log
    if (!options.keepLater) {
      void this.keep({ request: this.#request })
      this.prime()
    }
    this.#answer?.(connection.response)
    this.#answer = undefined
    return log
  }

  /**
   * Creates the stream's record holding `call`, under this replica's lease; answers the lease, or
   * why the stream is not kept. Its events wait for it: none is stored or written before.
   */
  keep(call: StoredCall): Promise<CallLease | UnkeptStream> {
    if (this.#lease) return this.#lease
    const { store, now, retentionMs, logger, leases } = this.#context
    const { sid } = this.#session
    const created = now()
    const record = {
      sid,
      stream: this.open({ keepLater: true }).stream,
      call: JSON.stringify(call),
      ...leasePatch(leases),
      expiresAt: created + retentionMs,
    }
    this.#lease = store.createStream(record, MAX_STREAMS_KEPT_PER_SESSION, created).then(
      (stored): CallLease | UnkeptStream => {
        if (stored) return CallLease.held(leases, stored)
        logger.warn('a session has as many calls in progress as it may; this stream is not kept', {
          session: sid.slice(0, 8),
          cap: MAX_STREAMS_KEPT_PER_SESSION,
        })
        return 'session-full'
      },
      (error: unknown) => {
        logger.error('a stream could not be recorded; it cannot be resumed', {
          session: sid.slice(0, 8),
          error: error instanceof Error ? error.message : String(error),
        })
        return error instanceof StoreUnavailableError ? 'store-unavailable' : 'store-failed'
      }
    )
    void this.#lease.then((lease) => this.#kept?.(typeof lease !== 'string'))
    return this.#lease
  }

  /**
   * Gives up keeping a stream opened with `keepLater` before its record was created (what the
   * record needed could not be had): it is not kept, and what it writes goes out live only.
   */
  abandon(): void {
    if (!this.#lease) this.#lease = Promise.resolve('store-failed')
    this.#kept?.(false)
  }

  /**
   * Writes the priming event (an id and empty data) of a 2025-11-25 session's stream once its record
   * is stored; older revisions' clients are never sent an empty event.
   */
  prime(): void {
    if (this.#session.protocolVersion === '2025-11-25') this.open().prime()
  }

  /**
   * The lease taken with the stream's record, or why it has none. A stream taken over from another
   * replica has none here (its driver was given the lease it claimed): `'store-failed'`.
   */
  lease(): Promise<CallLease | UnkeptStream> {
    this.open()
    return this.#lease ?? Promise.resolve('store-failed')
  }

  notify(message: unknown): void {
    const text = JSON.stringify(message)
    if (typeof text !== 'string') throw new TypeError('The notification has no JSON form.')
    void this.open().append(text)
  }

  /** The connection keeps itself alive (`SseConnection`). */
  keepAlive(): void {}

  closeStream(): void {
    this.open().letGo()
  }

  /**
   * The answer: plain JSON when `final` comes before any message (`final` must never reject), else
   * the stream, as soon as its first message is sent (its driver writes the final response into it).
   */
  respond(final: Promise<FinalMessage>): Promise<Response> {
    return new Promise<Response>((resolve) => {
      const connection = this.#log?.connection
      if (connection) return resolve(connection.response)
      this.#answer = resolve
      void final.then((message) => {
        if (this.#answer !== resolve) return // streaming: the stream carries it
        this.#answer = undefined
        resolve(finalResponse(message))
      })
    })
  }
}
