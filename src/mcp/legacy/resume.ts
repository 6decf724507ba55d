/**
 * @module mcp/legacy/resume
 * A 2025-era `GET` with `Last-Event-ID`: the client resumes a stream it lost (a dropped connection,
 * a replica that died, a connection the server let go of), on whichever replica the load balancer
 * picks. The id names the stream and the last event the client has (`stream-log.ts`):
 * - a POST stream of the session is replayed from the store from the event after it, on that stream
 *   only, and continued live: woken by the bus (`stream_appended`) and checking the store on a slow
 *   timer as the backstop, until the call's final response, which ends it. When the call is waiting
 *   for the client and the replica driving it is gone (its lease absent or run out,
 *   `call-lease.ts`), this replica claims it and drives it on from its checkpoint (`call-flow.ts`):
 *   the resumed connection is then the stream itself; a replica whose shutdown began claims
 *   nothing (`takesOver`): it lets go of the connection (`retry`) so the client resumes on one that
 *   will. A stream that has ended with nothing left to send answers 204 (the v1 SDK then stops
 *   reconnecting);
 * - the session's GET notification stream is opened again with the same stream id, numbered on
 *   (`stream.ts`), first telling the client to re-read what it lists (what changed meanwhile was
 *   not kept).
 * Either ends when its session does (`session-end.ts`): a call's stream then carries the call's
 * error (-32001, the session ended) and closes.
 * Resumption is bound to the session (and so to its principal): an id naming another session's
 * stream, a stream whose events are past their retention, or no id this server sends is refused
 * with 400 -32600, and the client opens a fresh stream. Resuming a call's stream needs the scopes of
 * the call (`scopes.ts`: what reading its answer needs) and an `Accept` of `text/event-stream`
 * (406), and counts against the GET caps of
 * `stream-limits.ts` (429) while open, and as a GET stream in telemetry.
 */
import { ErrorCode, errorMessage, errorResponseText } from '../errors.ts'
import { scopeChallenge } from '../scopes.ts'
import type { StreamSlot } from '../stream-limits.ts'
import type { StoredEvent, StreamRecord } from '../stream-store.ts'
import { jsonText } from '../streaming.ts'
import { dispatchCall, writeAsks } from './call-flow.ts'
import { CallLease, claimable, drivenHere, orphaned, storedCall, takesOver } from './call-lease.ts'
import { CallStream } from './call-stream.ts'
import { FIRST_ANSWER_POLL_MS, streamOfRequestId } from './rendezvous.ts'
import type { LegacySession } from './session.ts'
import { sessionEndedResponse, watchSessionEnd } from './session-end.ts'
import { notAcceptable, notificationStream } from './stream.ts'
import {
  ENDED_STREAM_RETENTION_MS,
  SseConnection,
  StreamLog,
  eventId,
  isFinalEvent,
  parseEventId,
} from './stream-log.ts'
import {
  TransportError,
  type LegacyEraContext,
  type LegacyInput,
  type OpenedSession,
} from './transport.ts'

/** Events read from the store at a time. */
const REPLAY_PAGE = 100
/** The longest pause between two checks of the store while a resumed stream waits. */
const MAX_TAIL_POLL_MS = 2_000

/** The response to a `GET` of the session `opened` with `Last-Event-ID: lastEventId` (module header). */
export async function resumeStream<Deps>(
  era: LegacyEraContext<Deps>,
  opened: OpenedSession,
  input: LegacyInput,
  lastEventId: string
): Promise<Response> {
  const named = parseEventId(lastEventId.trim())
  if (!named) throw unresumable('is not an event id this server sent')
  if (named.kind === 'get') return notificationStream(era, opened, input, named)
  const { session } = opened
  const { sid } = session
  const record = await era.sessions.getStream(sid, named.stream)
  const call = record && record.expiresAt > era.now() ? storedCall(record) : undefined
  if (!record || !call) throw unresumable('names no stream of this session that is still kept')
  const denied = scopeChallenge(
    era.server,
    { id: null, method: call.request.method, params: call.request.params },
    input
  )
  if (denied) return denied
  const unacceptable = notAcceptable(input)
  if (unacceptable) return unacceptable
  const first = await era.sessions.readEvents(sid, named.stream, named.seq, REPLAY_PAGE, era.now())
  if (first.length === 0 && record.ended) return new Response(null, { status: 204 })
  let slot: StreamSlot
  try {
    slot = era.streamLimits.acquire({ principal: input.principal, session: sid }, 'get')
  } catch (error) {
    const { text, status } = errorMessage(null, error, era.logger)
    return jsonText(text, status)
  }
  const connection = new SseConnection(era.streams.connection, () => slot.release())
  void new ResumedStream(era, opened, input, record, connection)
    .run(named.seq, first)
    .catch((error: unknown) => {
      era.logger.error('a resumed stream failed', {
        session: sid.slice(0, 8),
        error: error instanceof Error ? error.message : String(error),
      })
      connection.close()
    })
  const { response } = connection
  return era.telemetry ? era.telemetry.stream('get', session.protocolVersion, response) : response
}

function unresumable(why: string): TransportError {
  return new TransportError(
    400,
    ErrorCode.InvalidRequest,
    `Bad Request: the Last-Event-ID ${why}; open the stream again without it.`
  )
}

/** One resumed connection of a call's stream, on this replica (module header). */
class ResumedStream<Deps> {
  readonly #era: LegacyEraContext<Deps>
  readonly #opened: OpenedSession
  readonly #session: LegacySession
  readonly #input: LegacyInput
  readonly #stream: string
  readonly #connection: SseConnection
  #record: StreamRecord
  /** The number of the last event written to the connection. */
  #seq = 0
  /** The number of the event the client resumed after. */
  #resumedAfter = 0

  constructor(
    era: LegacyEraContext<Deps>,
    opened: OpenedSession,
    input: LegacyInput,
    record: StreamRecord,
    connection: SseConnection
  ) {
    this.#era = era
    this.#opened = opened
    this.#session = opened.session
    this.#input = input
    this.#record = record
    this.#stream = record.stream
    this.#connection = connection
  }

  /** Replays from after `seq` (`first`: the first page, already read), then follows the stream. */
  async run(seq: number, first: StoredEvent[]): Promise<void> {
    const { sessions, bus, now } = this.#era
    const { sid } = this.#session
    this.#seq = seq
    this.#resumedAfter = seq
    this.#connection.letGoThrough((letGo) => this.#letGo(letGo))
    let wake = () => {}
    const unsubscribe = bus.subscribe(
      (event) => {
        if (event.kind === 'stream_appended' && event.session === sid) wake()
      },
      { session: sid }
    )
    const watch = watchSessionEnd(this.#era, sid, this.#opened.record.expiresAt)
    const sessionEnded = () => {
      this.#connection.event(
        undefined,
        sessionEndedResponse(storedCall(this.#record)?.request.id ?? null)
      )
      this.#connection.close()
      wake()
    }
    watch.ended.addEventListener('abort', sessionEnded)
    try {
      let events = first
      let pollMs = FIRST_ANSWER_POLL_MS
      while (this.#connection.open) {
        if (this.#write(events)) return this.#connection.close()
        if (events.length === REPLAY_PAGE) {
          events = await sessions.readEvents(sid, this.#stream, this.#seq, REPLAY_PAGE, now())
          continue
        }
        const record = await sessions.getStream(sid, this.#stream)
        if (!record || record.expiresAt <= now()) return this.#connection.close()
        this.#record = record
        if (orphaned(record, now())) {
          // Shutting down, this replica claims nothing: the client resumes where it is claimed.
          if (!takesOver(this.#era.leases)) return this.#letGo(this.#connection.letGo)
          if (await this.#takeOver()) return
        }
        if (record.ended) {
          // Ended since the last read: what it wrote last may still be to read.
          this.#write(await sessions.readEvents(sid, this.#stream, this.#seq, REPLAY_PAGE, now()))
          return this.#connection.close()
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, pollMs)
          wake = done
          function done() {
            clearTimeout(timer)
            resolve()
          }
        })
        pollMs = Math.min(pollMs * 2, MAX_TAIL_POLL_MS)
        events = await sessions.readEvents(sid, this.#stream, this.#seq, REPLAY_PAGE, now())
        if (events.length > 0) pollMs = FIRST_ANSWER_POLL_MS
      }
    } finally {
      unsubscribe()
      watch.stop()
      watch.ended.removeEventListener('abort', sessionEnded)
    }
  }

  /**
   * Lets go of the connection (`retry`), first telling the client again where it is when nothing
   * was written since it resumed: the v1 SDK resumes from the last id it read on the connection
   * that ended, and after one that carried none it reconnects without `Last-Event-ID`, which opens
   * the session's GET stream instead of this one. An empty event (as a priming event) for the
   * revisions that have them.
   */
  #letGo(letGo: () => void): void {
    if (this.#seq === this.#resumedAfter && this.#session.protocolVersion === '2025-11-25') {
      this.#connection.event(eventId(this.#stream, this.#seq), '')
    }
    letGo()
  }

  /** Writes `events` in order; true once the final response is among them (the stream is over). */
  #write(events: readonly StoredEvent[]): boolean {
    for (const { seq, payload } of events) {
      if (seq <= this.#seq) continue
      this.#connection.event(eventId(this.#stream, seq), payload)
      this.#seq = seq
      if (isFinalEvent(payload)) return true
    }
    return false
  }

  /**
   * Claims the call of a replica that is gone and drives it here from its checkpoint (or ends it,
   * `driveClaimed`), this connection carrying its stream; false when another replica claimed it
   * first.
   */
  async #takeOver(): Promise<boolean> {
    const lease = await CallLease.claim(this.#era.leases, this.#record)
    if (!lease) return false
    // What the old driver wrote before it went (its last requests, even its answer) is read first.
    const { sid } = this.#session
    const rest = await this.#era.sessions.readEvents(
      sid,
      this.#stream,
      this.#seq,
      REPLAY_PAGE,
      this.#era.now()
    )
    if (this.#write(rest)) {
      await lease.release({ ended: true })
      this.#connection.close()
      return true
    }
    driveClaimed(
      this.#era,
      this.#opened,
      this.#input,
      this.#record,
      lease,
      this.#seq,
      this.#connection
    )
    return true
  }
}

/**
 * After an answer was stored for `requestId`: when the call that asked waits with its driver gone
 * (lease absent or run out), claims it here and drives it on with no connection (its events go to
 * the store for the client's resumed stream). Nothing when the call is driven, ended or unknown,
 * or when this replica's shutdown began.
 */
export async function adoptWaitingCall<Deps>(
  era: LegacyEraContext<Deps>,
  opened: OpenedSession,
  input: LegacyInput,
  requestId: string
): Promise<void> {
  const { session } = opened
  const stream = streamOfRequestId(requestId)
  // Driven here: this replica's own flow takes the answer (the common case costs no read). Shutting
  // down: the answer is stored, and the replica the client's resumed stream reaches claims the call.
  if (!stream || drivenHere(era.leases, session.sid, stream) || !takesOver(era.leases)) return
  const record = await era.sessions.getStream(session.sid, stream)
  if (!record || !claimable(record, era.now())) return
  const lease = await CallLease.claim(era.leases, record)
  if (!lease) return
  let lastSeq = 0
  for (;;) {
    const events = await era.sessions.readEvents(
      session.sid,
      stream,
      lastSeq,
      REPLAY_PAGE,
      era.now()
    )
    lastSeq = events.at(-1)?.seq ?? lastSeq
    if (events.some(({ payload }) => isFinalEvent(payload))) return lease.release({ ended: true })
    if (events.length < REPLAY_PAGE) break
  }
  driveClaimed(era, opened, input, record, lease, lastSeq)
}

/** What a call that stopped before it waited for the client is ended with, on its stream. */
const STOPPED_MESSAGE =
  'Internal error: the server handling this request stopped before it finished, and it cannot be run again safely; send it again.'

/**
 * Drives a call claimed from a replica that is gone (`lease`), on from its checkpoint, its stream
 * going on after event `lastSeq` (on `connection`, when a client is resuming it here). A call with
 * no checkpoint stopped before it waited for anything: running it again could repeat what it did,
 * so its stream ends with a JSON-RPC error instead (-32603, saying so).
 */
function driveClaimed<Deps>(
  era: LegacyEraContext<Deps>,
  opened: OpenedSession,
  input: LegacyInput,
  record: StreamRecord,
  lease: CallLease,
  lastSeq: number,
  connection?: SseConnection
): void {
  const { session } = opened
  const call = storedCall(record)
  const checkpoint = call?.checkpoint
  if (!call || !checkpoint) {
    const log = new StreamLog(era.streams, session.sid, record.stream, lastSeq)
    if (connection) log.attach(connection)
    const error = { code: ErrorCode.InternalError, message: STOPPED_MESSAGE }
    void log
      .append(errorResponseText(call?.request.id ?? null, error))
      .then(() => lease.release({ ended: true, expiresAt: era.now() + ENDED_STREAM_RETENTION_MS }))
      .finally(() => connection?.close())
      .catch(() => {})
    return
  }
  era.logger.warn('a 2025 call taken over from a replica that is gone', {
    session: session.sid.slice(0, 8),
    stream: record.stream,
  })
  const named = Object.values(checkpoint.waiting).map(({ seq }) => seq)
  const log = new StreamLog(era.streams, session.sid, record.stream, Math.max(lastSeq, ...named))
  if (connection) log.attach(connection)
  // Requests the old driver named in its checkpoint but did not live to write go out now.
  writeAsks(log, checkpoint.waiting, lastSeq)
  const stream = CallStream.resumed(era.streams, session, call.request, log)
  void dispatchCall(era, call.request, opened, input, undefined, { stream, lease, checkpoint })
}
