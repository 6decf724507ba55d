/**
 * @module mcp/legacy/call-flow
 * Drives one 2025-era request dispatched through the engine, on whichever replica holds it: the
 * replica that received its POST, or one that took the call over from a replica that died
 * (`resume.ts`). The request runs on its answer channel (`call-stream.ts`: JSON, or a resumable SSE
 * stream once it sends something first) and is cancelled only by the session's
 * `notifications/cancelled` for its id (heard on the bus) — never by a dropped connection, which the
 * client resumes.
 *
 * A suspendable request's `input_required` is served by the shim (`input-shim.ts`), this module being
 * its host (`CallFlow`): before a round's server→client requests go out, their answer slots are
 * opened and the checkpoint is stored with the call's stream under this replica's lease
 * (`call-lease.ts`: taken with the stream's record, renewed while the call runs or waits); then
 * the requests are written on the stream (a stream they open is primed only now), and the previous
 * round's slots forgotten. The final response
 * is the stream's last event; the lease is then released with the stream marked ended, and the last
 * slots forgotten. A flow that lost its lease (another replica holds the call now) stops without a
 * word: the other replica answers. From its first `input_required` (before anything is asked) the
 * call counts against the caps of `stream-limits.ts`, on the replica driving it, until it ends. A call
 * whose stream is not kept (its session has `MAX_STREAMS_KEPT_PER_SESSION` calls in progress already,
 * or the store failed: `call-stream.ts`) cannot wait for the client, and is refused before it asks
 * anything; so is every call that would ask where responses reach the client only once they have
 * ended (`InteractiveFlowBounds.unavailable`, its reason the answer).
 * A flow ended early is a tool error for `tools/call`, a JSON-RPC error otherwise. A call waiting
 * for the client when its session ends (`session-end.ts`: deleted, evicted at the session cap, or
 * expired) ends at once with -32001 and `SESSION_ENDED_MESSAGE`, written live on its connection (the
 * session's streams are no longer kept), and gives back its stream slot. JSON-RPC errors
 * answer HTTP 200, as 2025 clients expect, but for a store that cannot be reached (503, `Retry-After`;
 * on a stream already open, its last event).
 */
import { dispatch, dispatchEnv } from '../dispatch.ts'
import type { DispatchEnv, DispatchResult } from '../dispatch-env.ts'
import type { McpRequest } from '../envelope.ts'
import {
  CapExceededError,
  ErrorCode,
  McpError,
  StoreUnavailableError,
  errorMessage,
} from '../errors.ts'
import type { RequestObservation } from '../observer.ts'
import { METHODS, SUSPENDABLE_METHODS } from '../protocol.ts'
import type { OpenedState } from '../sealed-state.ts'
import type { StreamSlot } from '../stream-limits.ts'
import { MAX_STREAMS_KEPT_PER_SESSION } from '../stream-store.ts'
import { Cancellation, type FinalMessage } from '../streaming.ts'
import type { InputRequest, JsonObject, RequestId } from '../wire.ts'
import { CallLease, type StoredCall } from './call-lease.ts'
import { CallStream, type UnkeptStream } from './call-stream.ts'
import { ENDED_STREAM_RETENTION_MS, type StreamLog } from './stream-log.ts'
import {
  FlowEndedError,
  runWithClientInput,
  type FlowCheckpoint,
  type FlowHost,
} from './input-shim.ts'
import { newRequestId, type AskingCall } from './rendezvous.ts'
import type { LegacySession } from './session.ts'
import {
  SESSION_ENDED_MESSAGE,
  sessionEndedResponse,
  watchSessionEnd,
  type SessionEndWatch,
} from './session-end.ts'
import {
  cancelKey,
  type LegacyEraContext,
  type LegacyInput,
  type OpenedSession,
} from './transport.ts'

/** The reason a flow's stop signal aborts with (a plain value: no `DOMException` to build). */
const STOPPED = 'the flow stopped'

/** A call another replica drove until it died, claimed here: its stream, lease and checkpoint. */
export interface TakenCall {
  stream: CallStream
  lease: CallLease
  checkpoint: FlowCheckpoint
}

/**
 * Writes the server→client requests of `waiting` on `log`, each as the event its id names (those
 * numbered after `afterSeq`: the ones a replica taking a call over finds missing).
 */
export function writeAsks(log: StreamLog, waiting: FlowCheckpoint['waiting'], afterSeq = 0): void {
  for (const [id, { ask, seq }] of Object.entries(waiting)) {
    if (seq <= afterSeq) continue
    const message = { jsonrpc: '2.0', id, method: ask.method, params: ask.params ?? {} }
    void log.append(JSON.stringify(message), seq)
  }
}

/** The call a request's server→client requests are asked for (named in their ids). */
function askingCallOf({ method, params }: McpRequest): AskingCall {
  return { method, params: typeof params.name === 'string' ? { name: params.name } : {} }
}

/**
 * In-request failures answer HTTP 200 in this era: the JSON-RPC error is the response (a call
 * refused its stream slot included: it is an operation refused, not a stream's opening). A store
 * that cannot be reached is the exception, 503 with `Retry-After` as in the modern era (`errors.ts`):
 * the client should retry the request, not read it as the answer.
 */
export function failure<Deps>(
  era: LegacyEraContext<Deps>,
  id: RequestId,
  error: unknown
): FinalMessage {
  const message = errorMessage(id, error, era.logger)
  return error instanceof StoreUnavailableError ? message : { ...message, status: 200 }
}

/**
 * Serves `request` of the session `opened` to its end (module header): a new call, or with `taken` one claimed
 * from another replica. Answers its response (for a taken call, its stream's connection, already
 * the resuming GET's).
 */
export async function dispatchCall<Deps>(
  era: LegacyEraContext<Deps>,
  request: McpRequest,
  opened: OpenedSession,
  input: LegacyInput,
  observation: RequestObservation | undefined,
  taken?: TakenCall
): Promise<Response> {
  const { id } = request
  const { session } = opened
  const { sid } = session
  const cancellation = new Cancellation()
  const stream = taken?.stream ?? new CallStream(era.streams, session, request)
  const env = dispatchEnv(era.base, request, input, cancellation, { observation, channel: stream })
  const key = await cancelKey(id)
  const unsubscribe = era.bus.subscribe(
    (event) => {
      if (event.kind === 'request_cancelled' && event.session === sid && event.requestId === key) {
        cancellation.cancel()
      }
    },
    { session: sid }
  )
  const flow = new CallFlow(era, opened, input, request, stream, taken)
  /** Settles into the final message, serialisation included; never rejects. */
  const settle = async (): Promise<FinalMessage> => {
    try {
      const { result } =
        taken || SUSPENDABLE_METHODS.has(request.method)
          ? await flow.run(env)
          : await dispatch(request, env)
      const text = JSON.stringify({ jsonrpc: '2.0', id, result })
      if (typeof text !== 'string') throw new TypeError('The result has no JSON form.')
      observation?.succeeded(result)
      return { text, status: 200 }
    } catch (error) {
      // A flow another replica drives now answers nothing here (`CallFlow.end`).
      if (error instanceof LeaseLostError) return { text: '', status: 200 }
      if (error instanceof SessionEndedError) {
        observation?.failed(error)
        return { text: sessionEndedResponse(id), status: 404 }
      }
      observation?.failed(error)
      return failure(era, id, error)
    } finally {
      unsubscribe()
    }
  }
  const final = (observation ? observation.run(settle) : settle()).then(async (message) => {
    await flow.end(message, cancellation.cancelled)
    return message
  })
  return stream.respond(final)
}

/** The host of one call's flow on this replica (module header). */
class CallFlow<Deps> implements FlowHost {
  readonly #era: LegacyEraContext<Deps>
  readonly #opened: OpenedSession
  readonly #session: LegacySession
  readonly #input: LegacyInput
  readonly #request: McpRequest
  readonly #stream: CallStream
  readonly #resumeFrom: FlowCheckpoint | undefined
  readonly #heldState: { state?: OpenedState }
  #lease: CallLease | undefined
  /** The answer slots of the checkpoint stored last. */
  #waiting: string[]
  /** Aborted when the flow must stop: the request was cancelled, or the lease was lost. */
  #stopper: AbortController | undefined
  /** Set once another replica holds the call: this one writes nothing more. */
  #lost = false
  /** Set once the session ended while the call waited: it ends with `SessionEndedError`. */
  #sessionEnded = false

  constructor(
    era: LegacyEraContext<Deps>,
    opened: OpenedSession,
    input: LegacyInput,
    request: McpRequest,
    stream: CallStream,
    taken: TakenCall | undefined
  ) {
    this.#era = era
    this.#opened = opened
    this.#session = opened.session
    this.#input = input
    this.#request = request
    this.#stream = stream
    this.#resumeFrom = taken?.checkpoint
    this.#heldState = { state: taken?.checkpoint.held }
    this.#waiting = Object.keys(taken?.checkpoint.waiting ?? {})
    if (taken) this.#holdLease(taken.lease)
  }

  /** Made on first use: most 2025 calls never wait, and a controller per request is measurable. */
  get #stop(): AbortController {
    return (this.#stopper ??= new AbortController())
  }

  held(): OpenedState | undefined {
    return this.#heldState.state
  }

  notify(message: JsonObject): void {
    this.#stream.notify(message)
  }

  async ask(
    asks: ReadonlyMap<string, InputRequest>,
    checkpoint: Omit<FlowCheckpoint, 'waiting'>
  ): Promise<FlowCheckpoint['waiting']> {
    const { sessions, input } = this.#era
    if (input?.unavailable) throw new FlowEndedError(input.unavailable)
    const { sid } = this.#session
    // A stream its first questions open is kept (recorded, leased) with their checkpoint, in one
    // write, and primed after it.
    const opening = !this.#stream.streaming
    const log = this.#stream.open({ keepLater: opening })
    // Else the call waits under the lease taken with its stream's record: without one, nothing is
    // asked.
    if (!opening && !this.#lease) await this.#holdStreamLease(this.#stream.lease())
    const asking = askingCallOf(this.#request)
    const waiting: FlowCheckpoint['waiting'] = {}
    for (const [key, ask] of asks) {
      const seq = log.reserve()
      waiting[newRequestId(log.stream, seq, asking)] = { key, ask, seq }
    }
    const ids = Object.keys(waiting)
    try {
      await Promise.all(ids.map((id) => sessions.expectInput(sid, id, checkpoint.answerBy)))
    } catch (error) {
      // Its record will never be kept: the stream is written live only, its answer included.
      if (opening) this.#stream.abandon()
      throw error
    }
    const call: StoredCall = { request: this.#request, checkpoint: { ...checkpoint, waiting } }
    if (opening) {
      await this.#holdStreamLease(this.#stream.keep(call), ids)
      this.#stream.prime()
    } else if (!(await this.#lease?.write({ call: JSON.stringify(call) }))) {
      throw new LeaseLostError()
    }
    this.#forget(this.#waiting)
    this.#waiting = ids
    writeAsks(log, waiting)
    return waiting
  }

  /**
   * Runs the suspendable request to its end, each `input_required` served by server→client
   * requests on its stream, each round's state held for the next (`heldState`: never sealed).
   */
  async run(env: DispatchEnv<Deps>): Promise<DispatchResult> {
    const era = this.#era
    const { principal } = this.#input
    const { sid } = this.#session
    const request = this.#request
    const rounds: DispatchEnv<Deps> = { ...env, heldState: this.#heldState }
    const cancelled = env.cancellation.signal
    cancelled.addEventListener('abort', () => this.#stop.abort(STOPPED), { once: true })
    let slot: StreamSlot | undefined
    let watch: SessionEndWatch | undefined
    /** From here the call may wait for its client: it holds a stream slot and watches its session. */
    const waits = () => {
      slot = era.streamLimits.acquire({ principal, session: sid }, 'interactive')
      watch = watchSessionEnd(era, sid, this.#opened.record.expiresAt)
      watch.ended.addEventListener('abort', () => {
        this.#sessionEnded = true
        this.#stop.abort(STOPPED)
      })
    }
    try {
      // A call taken over waits for the client from the start.
      if (this.#resumeFrom) waits()
      return await runWithClientInput(
        async (inputResponses) => {
          const outcome = await dispatch(
            inputResponses === undefined
              ? request
              : { ...request, params: { ...request.params, inputResponses } },
            rounds
          )
          if (!slot && outcome.result.resultType === 'input_required') waits()
          return outcome
        },
        {
          session: this.#session,
          sessions: era.sessions,
          bus: era.bus,
          answers: era.answers,
          host: this,
          signal: this.#stop.signal,
          now: era.now,
          resumeFrom: this.#resumeFrom,
          inputTimeoutMs: era.input?.timeoutMs,
          maxRounds: era.input?.maxRounds,
          urlPollMs: era.input?.urlPollMs,
          answerPollMs: era.input?.answerPollMs,
        }
      )
    } catch (error) {
      if (this.#sessionEnded) throw new SessionEndedError()
      if (this.#lease?.signal.aborted || error instanceof LeaseLostError) {
        this.#lost = true
        throw new LeaseLostError()
      }
      return endedFlow(request.method, error)
    } finally {
      watch?.stop()
      slot?.release()
    }
  }

  /**
   * After the final message: on a stream, stored as its last event (none for a cancelled request:
   * 2025 cancellation sends no response), the stream marked ended, the lease released and the last
   * slots forgotten. A flow that lost its lease writes nothing and lets go of its connection (the
   * replica holding the call now answers).
   */
  async end(message: FinalMessage, cancelled: boolean): Promise<void> {
    if (!this.#stream.streaming) return
    const log = this.#stream.open()
    if (this.#sessionEnded) return log.endLive(message.text)
    if (this.#lost || this.#lease?.signal.aborted || log.lost) {
      log.connection?.letGo()
      return
    }
    const stored = cancelled || (await log.append(message.text))
    log.connection?.close()
    if (!stored) return
    // Kept a little longer, for a client whose connection dropped just before the answer.
    const ended = { ended: true, expiresAt: this.#era.now() + ENDED_STREAM_RETENTION_MS }
    const lease = this.#lease ?? (await this.#stream.lease())
    if (typeof lease !== 'string') await lease.release(ended).catch(() => {})
    this.#forget(this.#waiting)
  }

  /** Holds the lease of the call's stream; when it is not kept, refuses the call (`ids` forgotten). */
  async #holdStreamLease(
    leased: Promise<CallLease | UnkeptStream>,
    ids: readonly string[] = []
  ): Promise<void> {
    const lease = await leased
    if (typeof lease !== 'string') return this.#holdLease(lease)
    this.#forget(ids)
    throw unkeptFlow(lease)
  }

  #holdLease(lease: CallLease): void {
    this.#lease = lease
    const { shutdown } = this.#era
    const releaseAtShutdown = () => void lease.release().catch(() => {})
    // A call that asks once shutdown began (a request on a connection kept alive through the
    // drain) lets its lease go at once: the replica its client resumes on claims it.
    if (shutdown?.aborted) releaseAtShutdown()
    else shutdown?.addEventListener('abort', releaseAtShutdown, { once: true })
    // The replica's shutdown signal outlives every call: the listener goes with the lease (released
    // or lost, its signal aborts), or it would keep the whole call alive until the process ends.
    lease.signal.addEventListener(
      'abort',
      () => {
        shutdown?.removeEventListener('abort', releaseAtShutdown)
        this.#stop.abort(STOPPED)
      },
      { once: true }
    )
  }

  #forget(ids: readonly string[]): void {
    const { sessions } = this.#era
    for (const id of ids) void sessions.forgetInput(this.#session.sid, id).catch(() => {})
  }
}

/**
 * The error of a call that would wait for the client while its stream is not kept (`UnkeptStream`):
 * nothing could hold the call meanwhile. At its session's cap, what the person can do about it; in a
 * database outage, the outage's own error (retry shortly).
 */
function unkeptFlow(reason: UnkeptStream): McpError {
  if (reason === 'store-unavailable') return new StoreUnavailableError()
  if (reason === 'store-failed') {
    return new McpError(
      ErrorCode.InternalError,
      'Internal error: the server could not keep this flow; try again.'
    )
  }
  const held = MAX_STREAMS_KEPT_PER_SESSION
  return new CapExceededError(
    { cap: 'streams', scope: 'session', limit: held, held },
    `Too many calls of this session are in progress (${held} at once, on any replica); let some finish or cancel them first, then try again.`
  )
}

/** The call's session ended while it waited (`session-end.ts`): it ends with -32001. */
class SessionEndedError extends Error {
  override name = 'SessionEndedError'
  constructor() {
    super(SESSION_ENDED_MESSAGE)
  }
}

/** The flow's lease passed to another replica: it drives the call now, and this one stops. */
class LeaseLostError extends Error {
  override name = 'LeaseLostError'
  constructor() {
    super('Another replica drives this call now.')
  }
}

/**
 * A flow ended early (`FlowEndedError`, or an ask the client's capabilities cannot serve): a tool
 * error `tools/call` answers, else the JSON-RPC error thrown (-32603, and -32600 for a missing
 * capability); anything else is thrown as it is.
 */
function endedFlow(method: string, error: unknown): DispatchResult {
  const missingCapability =
    error instanceof McpError && error.code === ErrorCode.MissingRequiredClientCapability
  if (!(error instanceof FlowEndedError) && !missingCapability) throw error
  if (method === METHODS.toolsCall) {
    return { result: { content: [{ type: 'text', text: error.message }], isError: true } }
  }
  throw new McpError(
    error instanceof FlowEndedError ? ErrorCode.InternalError : ErrorCode.InvalidRequest,
    error.message
  )
}
