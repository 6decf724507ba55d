/**
 * @module mcp/legacy/handler
 * The 2025-era face of the engine (revisions 2025-11-25, 2025-06-18, 2025-03-26) on the same endpoint
 * and the same handlers as 2026-07-28. `classify.ts` decides which era a message belongs to; this
 * module builds the era's context once (`transport.ts`: options validated, the session codec) and
 * routes each 2025 message to the module that serves it:
 * - a POSTed request to `request.ts`: `initialize` (the one message without a session: it opens
 *   one), the store-only methods, and everything else through the engine's `dispatch` (`call-flow.ts`),
 *   interactive flows included (server→client requests on the POST's resumable SSE stream,
 *   `input-shim.ts`, `call-stream.ts`);
 * - a POSTed notification or response (an answer to a server→client request) to `message.ts`;
 * - a POSTed batch to `batch.ts`, which serves each of its messages through the same routes (only a
 *   2025-03-26 session's: the one revision with batches; -32600 in every other);
 * - GET (the session's notification stream) and DELETE (ending the session) to `stream.ts`, and a
 *   GET with `Last-Event-ID` (a stream resumed, on any replica) to `resume.ts`.
 * Every message but `initialize` needs its session's id, recorded (400 without, 404 when unknown,
 * tampered, expired, another principal's or ended) and a `MCP-Protocol-Version` that is absent or
 * any 2025 revision (400 otherwise; the session speaks the one it negotiated whatever the header
 * says): `openSession` reads the session's record once per message (live while unexpired), a POST
 * or a GET stream's opening slides it when due, and a POST's answer carries the session's re-sealed
 * id then (`renewal.ts`).
 *
 * Every message needs the base scopes, `initialize`, notifications and answers included, and its
 * own (`scopes.ts`); too few are refused with the 403 challenge before anything is done or stored,
 * as GET and DELETE are (after the session is known). JSON-RPC errors about a request's content
 * answer HTTP 200, as 2025 clients expect; 4xx are the transport failures (parse, shape, session,
 * headers: 400, 404, 405, 406), too few scopes (403) and a GET stream over a cap (429); a store
 * that cannot be reached, from the session lookup on, is 503 with `Retry-After` (-32030). With
 * telemetry on, each message's observation (started by `../handler.ts`, by `batch.ts` for each
 * message of a batch) learns its session and is settled where its answer is decided, and GET
 * streams are counted while open.
 */
import { StoreUnavailableError, errorMessage } from '../errors.ts'
import type { EventBus } from '../event-bus.ts'
import {
  DEFAULT_KEEPALIVE_MS,
  DEFAULT_MAX_STREAM_MS,
  validateStreamBounds,
  type EventStreamBounds,
} from '../event-stream.ts'
import type { McpLogger } from '../logger.ts'
import type { RequestObservation, ServerTelemetry } from '../observer.ts'
import { positiveWholeNumber } from '../options.ts'
import type { StateSealer } from '../sealed-state.ts'
import type { CompiledServer } from '../server.ts'
import { sessionLimits, type SessionLimitOptions, type SessionStore } from '../session-store.ts'
import type { StreamLimits } from '../stream-limits.ts'
import { finalResponse } from '../streaming.ts'
import { randomBase64url } from '../random.ts'
import type { RequestId } from '../wire.ts'
import { DEFAULT_TASK_LEASE_MS } from '../tasks/options.ts'
import { DEFAULT_INPUT_TIMEOUT_MS } from './input-shim.ts'
import { DEFAULT_RESUME_WINDOW_MS, MAX_UNREAD_STREAM_BYTES, STREAM_RETRY_MS } from './stream-log.ts'
import { batch, readBatch, type ServeMessage } from './batch.ts'
import { answer, notification } from './message.ts'
import { LocalAnswers } from './rendezvous.ts'
import { LEGACY_METHODS } from './protocol.ts'
import { keepListenerLive, renewedSessionId, withSessionId } from './renewal.ts'
import { initialize, request } from './request.ts'
import { SessionCodec } from './session.ts'
import { resumeStream } from './resume.ts'
import { endSession, notificationStream } from './stream.ts'
import {
  TransportError,
  openSession,
  readMessage,
  transportFailure,
  type InteractiveFlowBounds,
  type LegacyEraContext,
  type LegacyInput,
  type Message,
  type OpenedSession,
} from './transport.ts'

/** How 2025 streams are resumed and their waiting calls outlive the replica that started them. */
export interface StreamResumeOptions {
  /**
   * How long a stream's events are kept for a client to resume from. Default the answer timeout and
   * {@link DEFAULT_RESUME_WINDOW_MS} more.
   */
  retentionMs?: number
  /** The lease of a waiting call. Default the task engine's, `DEFAULT_TASK_LEASE_MS`. */
  leaseMs?: number
  /** This replica's name in leases. Default a random one. */
  replica?: string
}

export interface LegacyEraOptions<Deps> {
  server: CompiledServer<Deps>
  deps: Deps
  /** Seals `requestState` (the journal of interactive flows). */
  sealer: StateSealer
  /** Seals session ids: the same key ring with the session lifetime. */
  sessionSealer: StateSealer
  sessions: SessionStore
  bus: EventBus
  logger: McpLogger
  /** Aborted once this replica's shutdown began: it claims no waiting call from then on. */
  draining?: AbortSignal
  shutdown?: AbortSignal
  now?: () => number
  /** Bounds of interactive flows (`input-shim.ts`). */
  input?: InteractiveFlowBounds
  /** The GET notification stream (`event-stream.ts`). */
  stream?: EventStreamBounds
  /** Caps on the GET streams and waiting interactive POSTs a session and a principal hold open. */
  streamLimits: StreamLimits
  /** What one principal may keep in the store (`session-store.ts`'s `sessionLimits`). */
  limits?: SessionLimitOptions
  /** Counts GET streams while they are open, when telemetry is on (requests are observed per post). */
  telemetry?: ServerTelemetry
  /** Resumable streams and calls that outlive their replica. */
  resume?: StreamResumeOptions
}

export interface LegacyEra {
  /** One parsed 2025-era message; `observation` is its telemetry (`handler.ts` starts it), if on. */
  post(message: unknown, input: LegacyInput, observation?: RequestObservation): Promise<Response>
  /** A GET naming a session (`handler.ts` answers one naming none). */
  get(input: LegacyInput): Promise<Response>
  /** A DELETE of a session, or of none from a 2025-era client (400: the id is required). */
  delete(input: LegacyInput): Promise<Response>
}

/** The era's context from its options, validated (`RangeError` naming a bad bound or cap). */
function legacyEraContext<Deps>(options: LegacyEraOptions<Deps>): LegacyEraContext<Deps> {
  const { server, deps, sealer, logger } = options
  validateStreamBounds(options.stream, 'stream')
  const caps = sessionLimits(options.limits ?? {})
  return {
    server,
    base: { server, deps, sealer, logger },
    codec: new SessionCodec(options.sessionSealer),
    sessions: options.sessions,
    bus: options.bus,
    logger,
    now: options.now ?? Date.now,
    streamLimits: options.streamLimits,
    maxSessions: caps.maxSessionsPerPrincipal,
    maxSubscriptions: caps.maxSubscriptionsPerPrincipal,
    input: options.input,
    stream: options.stream,
    shutdown: options.shutdown,
    telemetry: options.telemetry,
    answers: new LocalAnswers(),
    ...resumableStreams(options, logger),
  }
}

/** The contexts of resumable streams and of the leases of waiting calls, validated. */
function resumableStreams<Deps>(
  options: LegacyEraOptions<Deps>,
  logger: McpLogger
): Pick<LegacyEraContext<Deps>, 'streams' | 'leases'> {
  const { sessions, bus, draining, shutdown, resume } = options
  const now = options.now ?? Date.now
  const answerMs = options.input?.timeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS
  const retentionMs = positiveWholeNumber(
    'resume.retentionMs',
    resume?.retentionMs ?? answerMs + DEFAULT_RESUME_WINDOW_MS
  )
  const leaseMs = positiveWholeNumber('resume.leaseMs', resume?.leaseMs ?? DEFAULT_TASK_LEASE_MS)
  const { keepAliveMs = DEFAULT_KEEPALIVE_MS, maxDurationMs = DEFAULT_MAX_STREAM_MS } =
    options.stream ?? {}
  const leases = {
    store: sessions,
    owner: resume?.replica ?? `replica-${randomBase64url(6)}`,
    leaseMs,
    retentionMs,
    now,
    logger,
    held: new Set<string>(),
    draining,
  }
  return {
    streams: {
      store: sessions,
      bus,
      logger,
      now,
      retentionMs,
      connection: {
        keepAliveMs,
        maxDurationMs,
        retryMs: STREAM_RETRY_MS,
        maxQueuedBytes: MAX_UNREAD_STREAM_BYTES,
        shutdown,
      },
      leases,
    },
    leases,
  }
}

/** One message of a session (alone, or one of a batch) to the module that serves it. */
function served<Deps>(
  era: LegacyEraContext<Deps>,
  message: Message,
  opened: OpenedSession,
  input: LegacyInput,
  observation: RequestObservation | undefined
): Promise<Response> {
  if (message.kind === 'notification')
    return notification(era, message, opened.session, input, observation)
  if (message.kind === 'response') return answer(era, message, opened, input, observation)
  return request(era, message, opened, input, observation)
}

/**
 * The answer to a message whose route failed: a transport failure's 4xx, and a store that cannot be
 * reached (the session lookup included) 503 with `Retry-After` and -32030 (`../errors.ts`); anything
 * else is thrown on, for the HTTP layer's 500.
 */
function failed<Deps>(era: LegacyEraContext<Deps>, error: unknown, id: RequestId | null): Response {
  if (error instanceof TransportError) return transportFailure(error)
  if (error instanceof StoreUnavailableError)
    return finalResponse(errorMessage(id, error, era.logger))
  throw error
}

export function createLegacyEra<Deps>(options: LegacyEraOptions<Deps>): LegacyEra {
  const era = legacyEraContext(options)
  return {
    async post(raw, input, observation) {
      // The id a failure answers: a lone request's (none for a batch, a notification or an answer).
      let id: RequestId | null = null
      try {
        const message = Array.isArray(raw) ? readBatch(raw) : readMessage(raw)
        if (message.kind === 'request') id = message.id
        if (message.kind === 'request' && message.method === LEGACY_METHODS.initialize) {
          return await initialize(era, message.id, message.params, input, observation)
        }
        const opened = await openSession(era, input, id)
        const { session } = opened
        observation?.session(session.sid, session.protocolVersion)
        const renewal = renewedSessionId(era, opened, input)
        const serve: ServeMessage = (one, observed) => served(era, one, opened, input, observed)
        const response =
          message.kind === 'batch'
            ? await batch(era, message, opened, input, serve)
            : await serve(message, observation)
        return withSessionId(response, await renewal)
      } catch (error) {
        observation?.failed(error)
        return failed(era, error, id)
      }
    },

    async get(input) {
      try {
        const opened = await openSession(era, input, null)
        await keepListenerLive(era, opened)
        const lastEventId = input.headers.get('last-event-id')
        return lastEventId === null
          ? notificationStream(era, opened, input)
          : await resumeStream(era, opened, input, lastEventId)
      } catch (error) {
        return failed(era, error, null)
      }
    },

    async delete(input) {
      try {
        const { session } = await openSession(era, input, null)
        return await endSession(era, session, input)
      } catch (error) {
        return failed(era, error, null)
      }
    },
  }
}
