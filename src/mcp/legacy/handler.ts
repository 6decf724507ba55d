/**
 * @module mcp/legacy/handler
 * The 2025-era face of the engine (revisions 2025-11-25, 2025-06-18, 2025-03-26) on the same endpoint
 * and the same handlers as 2026-07-28. `classify.ts` decides which era a message belongs to; this
 * module serves the 2025 ones:
 * - `initialize` negotiates a 2025 revision (echoes a supported one, else offers the newest; never
 *   2026-07-28), answers with a sealed `Mcp-Session-Id` (`session.ts`) and records the session in
 *   the store until the expiry sealed in it; a principal holding `limits.sessionsPerPrincipal` live
 *   sessions has its oldest-created one ended to make room (logged; that id then answers 404 like
 *   any ended session, and its client initializes again), so `initialize` is never refused for it;
 * - every later request needs that id, recorded (400 without, 404 when unknown, tampered, expired,
 *   another principal's or ended) and a `MCP-Protocol-Version` that is absent or the negotiated one
 *   (400); DELETE removes the record, so an ended id never comes back;
 * - `ping`, `logging/setLevel` and `resources/(un)subscribe` change or read only the store, except
 *   that a subscription is accepted only for a URI the caller can read (the engine's
 *   `resources/read` answers, and its -32602 with `data.uri` is the refusal), and within the caps
 *   per session and per principal (`session-store.ts`; over them the `CapExceededError` of
 *   `errors.ts`, -32602 saying what frees a place); a session found gone by then (ended, or
 *   evicted at its principal's session cap, since the request opened it) answers the 404 of any
 *   session not found;
 * - everything else goes through the engine's `dispatch` with the session's version and capabilities,
 *   so tools, resources, prompts and completions are the modern path's, and interactive flows are
 *   served by server→client requests on the POST's SSE stream (`input-shim.ts`); results carry no
 *   2026-only stamps (`resultType`, `_meta` serverInfo, cache hints);
 * - a posted JSON-RPC response is an answer to one of those requests: its id names the call that
 *   asked (an id that names none is refused, 400), it is stored in its slot for the replica holding
 *   the flow (`rendezvous.ts`) and answered 202; notifications are 202 too, and
 *   `notifications/cancelled` reaches the replica running the request through the bus;
 * - GET opens the session's notification stream (list changes, updates of subscribed resources, from
 *   changes made through any replica; bounded and ended as `event-stream.ts` says, a graceful end
 *   with an SSE `retry` so the client reconnects, as it does after a drop); DELETE ends the session
 *   for every replica;
 * - GET streams and interactive POSTs held open for the client's answer count against the caps of
 *   `stream-limits.ts` (per session and per principal, on this replica): over them, a GET is
 *   refused with 429 before it opens, and a call whose first round asks the client something is
 *   answered the same -32602 at 200 before anything is asked (as its JSON answer, or as the last
 *   message of its SSE stream when it already streams progress);
 * - every message needs the base scopes, `initialize`, notifications and answers included, and its
 *   own: a request its method's or tool's, an answer those of the call that asked (`scopes.ts`);
 *   too few are refused with the 403 challenge before anything is done or stored, as GET and
 *   DELETE are (after the session is known).
 * Batches are refused (-32600) in every revision: send one message per POST.
 *
 * JSON-RPC errors about a request's content answer HTTP 200, as 2025 clients expect; 4xx are the
 * transport failures (parse, shape, session, headers: 400, 404, 405, 406), too few scopes (403) and a
 * GET stream over a cap (429). With telemetry on, each message's observation
 * (started by `handler.ts`) learns its session and is settled where its answer is decided, and GET
 * streams are counted while open.
 */
import { sha256Base64url } from '../canonical-json.ts'
import { dispatch, dispatchEnv, isAdvertised } from '../dispatch.ts'
import { callerBinding, type DispatchResult } from '../dispatch-env.ts'
import { parseParams } from '../params.ts'
import { type McpLogger } from '../logger.ts'
import type { McpRequest } from '../envelope.ts'
import type { McpHttpInput } from '../http-input.ts'
import { scopeChallenge } from '../scopes.ts'
import { CapExceededError, ErrorCode, McpError, errorMessage } from '../errors.ts'
import { eventStream, validateStreamBounds, type EventStreamBounds } from '../event-stream.ts'
import {
  MAX_EVENT_ID_CHARS,
  MAX_EVENT_URI_CHARS,
  type EventBus,
  type ServerEvent,
} from '../event-bus.ts'
import { positiveWholeNumber } from '../options.ts'
import {
  HEADER_PROTOCOL_VERSION,
  LOG_LEVELS,
  METHODS,
  SUSPENDABLE_METHODS,
  type LogLevel,
} from '../protocol.ts'
import { StateTooLargeError, type StateSealer } from '../sealed-state.ts'
import type { CompiledServer } from '../server.ts'
import {
  DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
  DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
  MAX_SUBSCRIPTIONS_PER_SESSION,
  type SessionStore,
  type SubscriptionsFull,
} from '../session-store.ts'
import type { StreamLimits, StreamSlot } from '../stream-limits.ts'
import { Cancellation, jsonResponse, jsonText, type FinalMessage } from '../streaming.ts'
import {
  isObject,
  isRequestId,
  type ClientCapabilities,
  type Implementation,
  type JsonObject,
  type RequestId,
} from '../wire.ts'
import { FlowEndedError, runWithClientInput } from './input-shim.ts'
import {
  HEADER_SESSION_ID,
  LATEST_LEGACY_VERSION,
  LEGACY_METHODS,
  LEGACY_NOTIFICATIONS,
  SESSION_NOT_FOUND_CODE,
  isLegacyVersion,
} from './protocol.ts'
import { MAX_ANSWER_ID_CHARS, askingCall, type AskingCall } from './rendezvous.ts'
import { SessionCodec, type LegacySession } from './session.ts'
import type { RequestObservation, ServerTelemetry } from '../observer.ts'
import { z } from 'zod'

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
  shutdown?: AbortSignal
  now?: () => number
  /** Bounds of interactive flows (`input-shim.ts`). */
  input?: { timeoutMs?: number; maxRounds?: number; urlPollMs?: number; answerPollMs?: number }
  /** The GET notification stream (`event-stream.ts`). */
  stream?: EventStreamBounds
  /** Caps on the GET streams and waiting interactive POSTs a session and a principal hold open. */
  streamLimits: StreamLimits
  /**
   * What one principal may keep in the store (`session-store.ts`): live sessions and subscriptions
   * across them. Defaults `DEFAULT_MAX_SESSIONS_PER_PRINCIPAL` and
   * `DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL`; whole numbers from 1, or `Infinity` for no cap.
   */
  limits?: { sessionsPerPrincipal?: number; subscriptionsPerPrincipal?: number }
  /** Counts GET streams while they are open, when telemetry is on (requests are observed per post). */
  telemetry?: ServerTelemetry
}

/** What the HTTP layer hands over for a 2025-era message (its body is already parsed). */
export type LegacyInput = Omit<McpHttpInput, 'body' | 'method'>

export interface LegacyEra {
  /** One parsed 2025-era message; `observation` is its telemetry (`handler.ts` starts it), if on. */
  post(message: unknown, input: LegacyInput, observation?: RequestObservation): Promise<Response>
  /** A GET naming a session (`handler.ts` answers one naming none). */
  get(input: LegacyInput): Promise<Response>
  /** A DELETE of a session, or of none from a 2025-era client (400: the id is required). */
  delete(input: LegacyInput): Promise<Response>
}

/**
 * The SSE `retry` a GET stream the server ends (shutdown, its maximum duration, a client fallen too
 * far behind) carries last: 2025 clients reconnect a GET stream that closes, and this is the first
 * delay of the v1 SDK's own backoff, so a reconnect comes soon but not at once.
 */
const GET_STREAM_RETRY_MS = 1_000

const InitializeParamsSchema = z.looseObject({
  protocolVersion: z.string().min(1).max(64),
  capabilities: z.looseObject({
    experimental: z.record(z.string(), z.looseObject({})).optional(),
    roots: z.looseObject({}).optional(),
    sampling: z.looseObject({}).optional(),
    elicitation: z.looseObject({}).optional(),
  }),
  clientInfo: z.looseObject({ name: z.string(), version: z.string() }),
})
const SetLevelParamsSchema = z.looseObject({ level: z.enum(LOG_LEVELS) })
const SubscribeParamsSchema = z.looseObject({
  // Longest URI accepted: what a change event of the resource can carry.
  uri: z.string().min(1).max(MAX_EVENT_URI_CHARS),
})
/** What a request naming a session that is not live here is told (404 -32001). */
const SESSION_NOT_FOUND_MESSAGE =
  'Session not found: it ended or is not valid here; send initialize to start a new one.'

const CancelledParamsSchema = z.looseObject({ requestId: z.union([z.string(), z.number()]) })

type Message =
  | { kind: 'request'; id: RequestId; method: string; params: JsonObject }
  | { kind: 'notification'; method: string; params: JsonObject }
  | { kind: 'response'; id: string; raw: JsonObject; call: AskingCall }

class TransportError extends Error {
  override name = 'TransportError'
  readonly status: 400 | 404 | 405 | 406
  readonly code: number
  readonly id: RequestId | null

  constructor(
    status: 400 | 404 | 405 | 406,
    code: number,
    message: string,
    id: RequestId | null = null
  ) {
    super(message)
    this.status = status
    this.code = code
    this.id = id
  }
}

function errorResponse(
  id: RequestId | null,
  code: number,
  message: string,
  status: number
): Response {
  return jsonResponse({ jsonrpc: '2.0', id, error: { code, message } }, status)
}

/** The JSON-RPC shape of one 2025-era message (-32600 for anything else). */
function readMessage(message: unknown): Message {
  if (Array.isArray(message)) {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Invalid Request: batches are not supported; send one JSON-RPC message per POST.'
    )
  }
  if (!isObject(message) || message.jsonrpc !== '2.0') {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Invalid Request: "jsonrpc" must be "2.0".'
    )
  }
  const id = 'id' in message && isRequestId(message.id) ? message.id : null
  if (typeof message.method !== 'string') {
    if ('result' in message || 'error' in message) {
      const call =
        typeof message.id === 'string' && message.id.length <= MAX_ANSWER_ID_CHARS
          ? askingCall(message.id)
          : undefined
      if (!call) {
        throw new TransportError(
          400,
          ErrorCode.InvalidRequest,
          'Invalid Request: this response answers no request the server sent.'
        )
      }
      return { kind: 'response', id: message.id as string, raw: message, call }
    }
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Invalid Request: "method" must be a string.',
      id
    )
  }
  if ('params' in message && message.params !== undefined && !isObject(message.params)) {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Invalid Request: "params" must be an object.',
      id
    )
  }
  const params = (message.params as JsonObject | undefined) ?? {}
  if (!('id' in message)) return { kind: 'notification', method: message.method, params }
  if (id === null) {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Invalid Request: "id" must be a string or an integer.'
    )
  }
  return { kind: 'request', id, method: message.method, params }
}

/**
 * How a request id travels in `request_cancelled`: its JSON text (so 7 and "7" stay apart), or a
 * digest of it when that is longer than the bus carries.
 */
async function cancelKey(id: RequestId): Promise<string> {
  const text = JSON.stringify(id)
  return text.length <= MAX_EVENT_ID_CHARS ? text : `#${await sha256Base64url(text)}`
}

/** Params as a 2025 client sends them, without the fields only the shim may set. */
function withoutFlowFields({
  inputResponses: _i,
  requestState: _s,
  ...params
}: JsonObject): JsonObject {
  return params
}

export function createLegacyEra<Deps>(options: LegacyEraOptions<Deps>): LegacyEra {
  const { server, deps, sealer, sessions, bus, logger, shutdown, streamLimits } = options
  const base = { server, deps, sealer, logger }
  const now = options.now ?? Date.now
  validateStreamBounds(options.stream, 'stream')
  const maxSessions = positiveWholeNumber(
    'limits.sessionsPerPrincipal',
    options.limits?.sessionsPerPrincipal ?? DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    { orInfinity: true }
  )
  const maxSubscriptions = positiveWholeNumber(
    'limits.subscriptionsPerPrincipal',
    options.limits?.subscriptionsPerPrincipal ?? DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
    { orInfinity: true }
  )
  const codec = new SessionCodec(options.sessionSealer)

  /** The session a request names, or the transport error to answer. */
  async function openSession(input: LegacyInput, id: RequestId | null): Promise<LegacySession> {
    const token = input.headers.get(HEADER_SESSION_ID)
    if (token === null) {
      throw new TransportError(
        400,
        ErrorCode.InvalidRequest,
        'Bad Request: the Mcp-Session-Id header is required; send initialize first.',
        id
      )
    }
    const session = await codec.open(token.trim(), callerBinding(input.principal, input.client))
    if (!session || (await sessions.getSession(session.sid)) === undefined) {
      throw new TransportError(404, SESSION_NOT_FOUND_CODE, SESSION_NOT_FOUND_MESSAGE, id)
    }
    const header = input.headers.get(HEADER_PROTOCOL_VERSION)?.trim()
    if (header !== undefined && header !== session.protocolVersion) {
      throw new TransportError(
        400,
        ErrorCode.InvalidRequest,
        isLegacyVersion(header)
          ? `Bad Request: MCP-Protocol-Version ${header} is not the version this session negotiated (${session.protocolVersion}).`
          : `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(header.slice(0, 64))}; this session uses ${session.protocolVersion}.`,
        id
      )
    }
    return session
  }

  function legacyCapabilities(): JsonObject {
    return { ...server.capabilities }
  }

  async function initialize(
    id: RequestId,
    params: JsonObject,
    input: LegacyInput,
    observation: RequestObservation | undefined
  ): Promise<Response> {
    const message = { id, method: LEGACY_METHODS.initialize, params }
    const denied = scopeChallenge(server, message, input, observation)
    if (denied) return denied
    const parsed = InitializeParamsSchema.safeParse(params)
    if (!parsed.success) {
      observation?.failed({ code: ErrorCode.InvalidParams })
      return errorResponse(
        id,
        ErrorCode.InvalidParams,
        'Invalid params: initialize needs protocolVersion, capabilities and clientInfo {name, version}.',
        400
      )
    }
    const requested = parsed.data.protocolVersion
    const protocolVersion = isLegacyVersion(requested) ? requested : LATEST_LEGACY_VERSION
    let session: LegacySession
    try {
      session = await codec.issue(callerBinding(input.principal, input.client), {
        protocolVersion,
        capabilities: parsed.data.capabilities as ClientCapabilities,
        clientInfo: parsed.data.clientInfo as Implementation,
      })
    } catch (error) {
      if (!(error instanceof StateTooLargeError)) throw error
      observation?.failed({ code: ErrorCode.InvalidParams })
      return errorResponse(
        id,
        ErrorCode.InvalidParams,
        'Invalid params: the client capabilities and info are too large for a session.',
        400
      )
    }
    const evicted = await sessions.createSession(
      session.sid,
      input.principal,
      session.expiresAt,
      now(),
      maxSessions
    )
    if (evicted > 0) {
      logger.warn('initialize ended the oldest sessions of a principal at its session cap', {
        session: session.sid.slice(0, 8),
        evicted,
        maxSessions,
      })
    }
    observation?.session(session.sid, protocolVersion)
    observation?.succeeded()
    const result: JsonObject = {
      protocolVersion,
      capabilities: legacyCapabilities(),
      serverInfo: server.info,
    }
    if (server.instructions) result.instructions = server.instructions
    const response = jsonResponse({ jsonrpc: '2.0', id, result })
    response.headers.set(HEADER_SESSION_ID, session.token)
    return response
  }

  async function notification(
    message: Extract<Message, { kind: 'notification' }>,
    session: LegacySession,
    input: LegacyInput,
    observation: RequestObservation | undefined
  ): Promise<Response> {
    const denied = scopeChallenge(server, { id: null, ...message }, input, observation)
    if (denied) return denied
    if (message.method === LEGACY_NOTIFICATIONS.cancelled) {
      const parsed = CancelledParamsSchema.safeParse(message.params)
      if (parsed.success) {
        await bus.publish({
          kind: 'request_cancelled',
          session: session.sid,
          requestId: await cancelKey(parsed.data.requestId),
        })
      }
    }
    observation?.succeeded()
    return new Response(null, { status: 202 })
  }

  /**
   * Stores an answer in its slot for the replica holding the flow. It needs the scopes of the call
   * that asked (named in its id); refused, it stores nothing.
   */
  async function answer(
    message: Extract<Message, { kind: 'response' }>,
    session: LegacySession,
    input: LegacyInput,
    observation: RequestObservation | undefined
  ): Promise<Response> {
    const denied = scopeChallenge(server, { id: null, ...message.call }, input, observation)
    if (denied) return denied
    const delivered = await sessions.deliverInput(
      session.sid,
      message.id,
      JSON.stringify(message.raw),
      now()
    )
    if (delivered)
      await bus.publish({ kind: 'input_delivered', session: session.sid, requestId: message.id })
    else logger.warn('answer for no pending request', { session: session.sid.slice(0, 8) })
    return new Response(null, { status: 202 })
  }

  /** Methods that only touch the store; `undefined` when the request's method is not one of them. */
  async function sessionMethod(
    { id, method, params }: Extract<Message, { kind: 'request' }>,
    session: LegacySession,
    input: LegacyInput
  ): Promise<JsonObject | undefined> {
    switch (method) {
      case LEGACY_METHODS.ping:
        return {}
      case LEGACY_METHODS.setLogLevel: {
        if (!server.capabilities.logging)
          throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`)
        const { level } = parseParams(SetLevelParamsSchema, params)
        await sessions.setSessionLogLevel(session.sid, level)
        return {}
      }
      case LEGACY_METHODS.subscribe:
      case LEGACY_METHODS.unsubscribe: {
        if (!server.capabilities.resources?.subscribe)
          throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`)
        const { uri } = parseParams(SubscribeParamsSchema, params)
        if (method === LEGACY_METHODS.unsubscribe) {
          await sessions.removeSubscription(session.sid, uri)
          return {}
        }
        await assertReadable(uri, session, input)
        const outcome = await sessions.addSubscription(session.sid, uri, now(), maxSubscriptions)
        if (outcome === 'no_session') {
          throw new TransportError(404, SESSION_NOT_FOUND_CODE, SESSION_NOT_FOUND_MESSAGE, id)
        }
        if (outcome !== 'subscribed') throw subscriptionsFull(outcome)
        return {}
      }
      default:
        return undefined
    }
  }

  /**
   * Returns when the caller can read `uri`: the engine's `resources/read` finds it through the
   * server's resources and templates and the app's read answers (a read that would first ask the
   * user counts). Otherwise throws what that read answers, -32602 with `data.uri` for a resource
   * the server does not have or the app does not find (a note that does not exist, or another's).
   */
  async function assertReadable(
    uri: string,
    session: LegacySession,
    input: LegacyInput
  ): Promise<void> {
    const request: McpRequest = {
      id: 0,
      method: METHODS.resourcesRead,
      params: { uri },
      protocolVersion: session.protocolVersion,
      clientCapabilities: session.clientCapabilities,
    }
    await dispatch(request, dispatchEnv(base, request, input, new Cancellation(input.signal)))
  }

  /** The error a `resources/subscribe` refused at a cap answers: what the caller can do about it. */
  function subscriptionsFull({ full, held }: SubscriptionsFull): CapExceededError {
    if (full === 'session') {
      return new CapExceededError(
        { cap: 'subscriptions', scope: 'session', limit: MAX_SUBSCRIPTIONS_PER_SESSION, held },
        `Too many subscriptions: this session holds ${held} resource subscriptions, and at most ${MAX_SUBSCRIPTIONS_PER_SESSION} are allowed per session; unsubscribe from some first.`
      )
    }
    return new CapExceededError(
      { cap: 'subscriptions', scope: 'principal', limit: maxSubscriptions, held },
      `Too many subscriptions: your sessions hold ${held} resource subscriptions together, and at most ${maxSubscriptions} are allowed; unsubscribe from some, or end sessions you no longer use (DELETE /mcp with their Mcp-Session-Id).`
    )
  }

  /** Whether `method` is served in the 2025 era through the engine's dispatch. */
  function isDispatched(method: string): boolean {
    return method !== METHODS.discover && method !== METHODS.listen && isAdvertised(server, method)
  }

  /**
   * In-request failures answer HTTP 200 in this era: the JSON-RPC error is the response (a call
   * refused its stream slot included: it is an operation refused, not a stream's opening).
   */
  function failure(id: RequestId, error: unknown): FinalMessage {
    return { ...errorMessage(id, error, logger), status: 200 }
  }

  async function request(
    message: Extract<Message, { kind: 'request' }>,
    session: LegacySession,
    input: LegacyInput,
    observation: RequestObservation | undefined
  ): Promise<Response> {
    const { id, method } = message
    const denied = scopeChallenge(server, message, input, observation)
    if (denied) return denied
    try {
      const result = await sessionMethod(message, session, input)
      if (result !== undefined) {
        observation?.succeeded()
        return jsonResponse({ jsonrpc: '2.0', id, result })
      }
    } catch (error) {
      // A session found gone is answered as `post` answers every transport failure.
      if (error instanceof TransportError) throw error
      observation?.failed(error)
      const { text, status } = failure(id, error)
      return jsonText(text, status)
    }
    if (!isDispatched(method)) {
      observation?.failed({ code: ErrorCode.MethodNotFound })
      return errorResponse(id, ErrorCode.MethodNotFound, `Method not found: ${method}`, 200)
    }

    const params = withoutFlowFields(message.params)
    const meta = isObject(params._meta) ? params._meta : undefined
    const record = server.capabilities.logging ? await sessions.getSession(session.sid) : undefined
    const mcpRequest: McpRequest = {
      id,
      method,
      params,
      protocolVersion: session.protocolVersion,
      clientCapabilities: session.clientCapabilities,
    }
    if (record?.logLevel) mcpRequest.logLevel = record.logLevel as LogLevel
    if (isRequestId(meta?.progressToken)) mcpRequest.progressToken = meta.progressToken

    const cancellation = new Cancellation(input.signal)
    const env = dispatchEnv(base, mcpRequest, input, cancellation, { observation })
    const { channel } = env
    const key = await cancelKey(id)
    const unsubscribe = bus.subscribe(
      (event: ServerEvent) => {
        if (
          event.kind === 'request_cancelled' &&
          event.session === session.sid &&
          event.requestId === key
        ) {
          cancellation.cancel()
        }
      },
      { session: session.sid }
    )
    /**
     * Taken when the flow first has to wait for the client (its first `input_required`, before any
     * question is sent): from then on this POST is held open, and counts against the caps.
     */
    let slot: StreamSlot | undefined
    const run = async (): Promise<DispatchResult> => {
      if (!SUSPENDABLE_METHODS.has(method)) return dispatch(mcpRequest, env)
      try {
        return await runWithClientInput(
          async (inputResponses, requestState) => {
            const outcome = await dispatch(
              inputResponses === undefined
                ? mcpRequest
                : { ...mcpRequest, params: { ...params, inputResponses, requestState } },
              env
            )
            if (!slot && outcome.result.resultType === 'input_required') {
              slot = streamLimits.acquire(
                { principal: input.principal, session: session.sid },
                'interactive'
              )
            }
            return outcome
          },
          {
            session,
            call: message,
            sessions,
            bus,
            send: (outgoing) => channel.notify(outgoing),
            signal: cancellation.signal,
            now,
            inputTimeoutMs: options.input?.timeoutMs,
            maxRounds: options.input?.maxRounds,
            urlPollMs: options.input?.urlPollMs,
            answerPollMs: options.input?.answerPollMs,
            keepAlive: () => channel.keepAlive(),
            keepAliveMs: options.stream?.keepAliveMs,
          }
        )
      } catch (error) {
        if (method !== METHODS.toolsCall) {
          if (error instanceof FlowEndedError)
            throw new McpError(ErrorCode.InternalError, error.message)
          if (error instanceof McpError && error.code === ErrorCode.MissingRequiredClientCapability)
            throw new McpError(ErrorCode.InvalidRequest, error.message)
          throw error
        }
        if (
          error instanceof FlowEndedError ||
          (error instanceof McpError && error.code === ErrorCode.MissingRequiredClientCapability)
        ) {
          return { result: { content: [{ type: 'text', text: error.message }], isError: true } }
        }
        throw error
      }
    }
    /** Settles into the final message, serialisation included; never rejects. */
    const settle = async (): Promise<FinalMessage> => {
      try {
        const { result } = await run()
        const text = JSON.stringify({ jsonrpc: '2.0', id, result })
        if (typeof text !== 'string') throw new TypeError('The result has no JSON form.')
        observation?.succeeded(result)
        return { text, status: 200 }
      } catch (error) {
        observation?.failed(error)
        return failure(id, error)
      } finally {
        unsubscribe()
        slot?.release()
      }
    }
    return channel.respond(observation ? observation.run(settle) : settle())
  }

  return {
    async post(raw, input, observation) {
      let message: Message
      try {
        message = readMessage(raw)
        if (message.kind === 'request' && message.method === LEGACY_METHODS.initialize) {
          return await initialize(message.id, message.params, input, observation)
        }
        const session = await openSession(input, message.kind === 'request' ? message.id : null)
        observation?.session(session.sid, session.protocolVersion)
        if (message.kind === 'notification')
          return await notification(message, session, input, observation)
        if (message.kind === 'response') return await answer(message, session, input, observation)
        return await request(message, session, input, observation)
      } catch (error) {
        observation?.failed(error)
        if (!(error instanceof TransportError)) throw error
        return errorResponse(error.id, error.code, error.message, error.status)
      }
    },

    async get(input) {
      let session: LegacySession
      try {
        session = await openSession(input, null)
      } catch (error) {
        if (!(error instanceof TransportError)) throw error
        return errorResponse(null, error.code, error.message, error.status)
      }
      // The stream is the 2025 counterpart of subscriptions/listen and needs what it needs.
      const denied = scopeChallenge(server, { id: null, method: METHODS.listen, params: {} }, input)
      if (denied) return denied
      if (!/text\/event-stream|\*\/\*/i.test(input.headers.get('accept') ?? '')) {
        return errorResponse(
          null,
          ErrorCode.InvalidRequest,
          'Not Acceptable: the GET stream is text/event-stream.',
          406
        )
      }
      const { tools, prompts, resources } = server.capabilities
      const principal = input.principal
      let slot: StreamSlot
      try {
        slot = streamLimits.acquire({ principal, session: session.sid }, 'get')
      } catch (error) {
        const { text, status } = errorMessage(null, error, logger)
        return jsonText(text, status)
      }
      try {
        const stream = eventStream({
          ...options.stream,
          bus,
          interest: { principal },
          signal: input.signal ?? new AbortController().signal,
          shutdown,
          retryMs: GET_STREAM_RETRY_MS,
          logger,
          logFields: { stream: 'get', session: session.sid.slice(0, 8) },
          onEnd: slot.release,
          map(event) {
            switch (event.kind) {
              case 'tools_list_changed':
                return tools?.listChanged
                  ? { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }
                  : undefined
              case 'prompts_list_changed':
                return prompts?.listChanged
                  ? { jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }
                  : undefined
              case 'resources_list_changed':
                if (event.principal !== undefined && event.principal !== principal) return undefined
                return resources?.listChanged
                  ? { jsonrpc: '2.0', method: 'notifications/resources/list_changed' }
                  : undefined
              case 'resource_updated': {
                if (event.principal !== undefined && event.principal !== principal) return undefined
                if (!resources?.subscribe) return undefined
                const { uri } = event
                return sessions.isSubscribed(session.sid, uri).then((subscribed) =>
                  subscribed
                    ? {
                        jsonrpc: '2.0',
                        method: 'notifications/resources/updated',
                        params: { uri },
                      }
                    : undefined
                )
              }
              default:
                return undefined
            }
          },
        })
        return options.telemetry
          ? options.telemetry.stream('get', session.protocolVersion, stream)
          : stream
      } catch (error) {
        slot.release() // nothing holds a stream that failed to open
        throw error
      }
    },

    async delete(input) {
      try {
        const session = await openSession(input, null)
        const denied = scopeChallenge(server, { id: null, method: 'DELETE', params: {} }, input)
        if (denied) return denied
        await sessions.endSession(session.sid)
        return new Response(null, { status: 204 })
      } catch (error) {
        if (!(error instanceof TransportError)) throw error
        return errorResponse(null, error.code, error.message, error.status)
      }
    },
  }
}
