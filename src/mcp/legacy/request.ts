/**
 * @module mcp/legacy/request
 * The POSTed 2025-era requests, each first needing its method's or tool's scopes (`scopes.ts`; the
 * 403 challenge before anything is done or stored):
 * - `initialize` negotiates a 2025 revision (echoes a supported one, else offers the newest; never
 *   2026-07-28), answers with a sealed `Mcp-Session-Id` (`session.ts`) and records the session in
 *   the store until the expiry sealed in it; a principal holding `maxSessions` live sessions has its
 *   oldest-created one ended to make room (logged, and announced to every replica, which ends what it
 *   holds of it: `session-end.ts`; that id then answers 404 like any ended session);
 * - `ping`, `logging/setLevel` and `resources/(un)subscribe` change or read only the store, except
 *   that a subscription is accepted only for a URI the caller can read (the engine's
 *   `resources/read` answers, and its -32602 with `data.uri` is the refusal), and within the caps
 *   per session and per principal (`session-store.ts`; over them the `CapExceededError` of
 *   `errors.ts`); a session found gone by then answers the 404 of any session not found;
 * - everything else goes through the engine's `dispatch`, the one set of handlers, with the
 *   session's version, capabilities and log level, so tools, resources, prompts and completions are
 *   the modern path's; `call-flow.ts` drives it (JSON, or a resumable SSE stream once the request
 *   sends progress, logs or server→client requests first; interactive flows; cancellation).
 * JSON-RPC errors about a request's content answer HTTP 200, as 2025 clients expect.
 */
import { dispatch, dispatchEnv, isAdvertised } from '../dispatch.ts'
import { callerBinding } from '../dispatch-env.ts'
import type { McpRequest } from '../envelope.ts'
import { CapExceededError, ErrorCode, McpError, errorResponseText } from '../errors.ts'
import { MAX_EVENT_URI_CHARS } from '../event-bus.ts'
import type { RequestObservation } from '../observer.ts'
import { parseParams } from '../params.ts'
import { LOG_LEVELS, METHODS } from '../protocol.ts'
import { scopeChallenge } from '../scopes.ts'
import { StateTooLargeError } from '../sealed-state.ts'
import type { CompiledServer } from '../server.ts'
import { MAX_SUBSCRIPTIONS_PER_SESSION, type SubscriptionsFull } from '../session-store.ts'
import { Cancellation, finalResponse, jsonResponse, jsonText } from '../streaming.ts'
import { isObject, isRequestId, type JsonObject, type RequestId } from '../wire.ts'
import * as z from 'zod'
import { dispatchCall, failure } from './call-flow.ts'
import { announceSessionEnded } from './session-end.ts'
import {
  HEADER_SESSION_ID,
  LATEST_LEGACY_VERSION,
  LEGACY_METHODS,
  SESSION_NOT_FOUND_CODE,
  isLegacyVersion,
} from './protocol.ts'
import type { LegacySession } from './session.ts'
import {
  SESSION_NOT_FOUND_MESSAGE,
  TransportError,
  type LegacyEraContext,
  type LegacyInput,
  type Message,
  type OpenedSession,
} from './transport.ts'

type Request = Extract<Message, { kind: 'request' }>

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

/** A JSON-RPC error response to `id` with its HTTP status. */
function errorResponse(id: RequestId, code: number, message: string, status: number): Response {
  return jsonText(errorResponseText(id, { code, message }), status)
}

/** An `initialize` refused for its params: -32602 at 400, its observation settled so. */
function initializeRefused(
  id: RequestId,
  message: string,
  observation: RequestObservation | undefined
): Response {
  observation?.failed({ code: ErrorCode.InvalidParams })
  return errorResponse(id, ErrorCode.InvalidParams, message, 400)
}

/** Negotiates a revision and opens a new session (module header). */
export async function initialize<Deps>(
  era: LegacyEraContext<Deps>,
  id: RequestId,
  params: JsonObject,
  input: LegacyInput,
  observation: RequestObservation | undefined
): Promise<Response> {
  const { server } = era
  const message = { id, method: LEGACY_METHODS.initialize, params }
  const denied = scopeChallenge(server, message, input, observation)
  if (denied) return denied
  const parsed = InitializeParamsSchema.safeParse(params)
  if (!parsed.success) {
    return initializeRefused(
      id,
      'Invalid params: initialize needs protocolVersion, capabilities and clientInfo {name, version}.',
      observation
    )
  }
  const requested = parsed.data.protocolVersion
  const protocolVersion = isLegacyVersion(requested) ? requested : LATEST_LEGACY_VERSION
  let session: LegacySession
  try {
    session = await era.codec.issue(callerBinding(input.principal, input.client), {
      protocolVersion,
      capabilities: parsed.data.capabilities,
      clientInfo: parsed.data.clientInfo,
    })
  } catch (error) {
    if (!(error instanceof StateTooLargeError)) throw error
    return initializeRefused(
      id,
      'Invalid params: the client capabilities and info are too large for a session.',
      observation
    )
  }
  const { maxSessions } = era
  const evicted = await era.sessions.createSession(
    session.sid,
    input.principal,
    session.expiresAt,
    era.now(),
    maxSessions
  )
  if (evicted.length > 0) {
    era.logger.warn('initialize ended the oldest sessions of a principal at its session cap', {
      session: session.sid.slice(0, 8),
      evicted: evicted.length,
      maxSessions,
    })
    await announceSessionEnded(era, evicted)
  }
  observation?.session(session.sid, protocolVersion)
  observation?.succeeded()
  const result: JsonObject = {
    protocolVersion,
    capabilities: { ...server.capabilities },
    serverInfo: server.info,
  }
  if (server.instructions) result.instructions = server.instructions
  const response = jsonResponse({ jsonrpc: '2.0', id, result })
  response.headers.set(HEADER_SESSION_ID, session.token)
  return response
}

/** Any request but `initialize`, in the session `opened` (module header). */
export async function request<Deps>(
  era: LegacyEraContext<Deps>,
  message: Request,
  opened: OpenedSession,
  input: LegacyInput,
  observation: RequestObservation | undefined
): Promise<Response> {
  const { id, method } = message
  const denied = scopeChallenge(era.server, message, input, observation)
  if (denied) return denied
  try {
    const result = await sessionMethod(era, message, opened.session, input)
    if (result !== undefined) {
      observation?.succeeded()
      return jsonResponse({ jsonrpc: '2.0', id, result })
    }
  } catch (error) {
    // A session found gone is answered as `post` answers every transport failure.
    if (error instanceof TransportError) throw error
    observation?.failed(error)
    return finalResponse(failure(era, id, error))
  }
  if (!isDispatched(era.server, method)) {
    observation?.failed({ code: ErrorCode.MethodNotFound })
    return errorResponse(id, ErrorCode.MethodNotFound, `Method not found: ${method}`, 200)
  }
  const engine = engineRequest(era.server, message, opened)
  return dispatchCall(era, engine, opened, input, observation)
}

/** Methods that only touch the store; `undefined` when the request's method is not one of them. */
async function sessionMethod<Deps>(
  era: LegacyEraContext<Deps>,
  { id, method, params }: Request,
  session: LegacySession,
  input: LegacyInput
): Promise<JsonObject | undefined> {
  const { server, sessions } = era
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
      await assertReadable(era, uri, session, input)
      const outcome = await sessions.addSubscription(
        session.sid,
        uri,
        era.now(),
        era.maxSubscriptions
      )
      if (outcome === 'no_session') {
        throw new TransportError(404, SESSION_NOT_FOUND_CODE, SESSION_NOT_FOUND_MESSAGE, id)
      }
      if (outcome !== 'subscribed') throw subscriptionsFull(outcome, era.maxSubscriptions)
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
async function assertReadable<Deps>(
  era: LegacyEraContext<Deps>,
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
  const env = dispatchEnv(era.base, request, input, new Cancellation(input.signal))
  // A read that would ask first is answered `input_required`, its state held, never sealed.
  await dispatch(request, { ...env, heldState: {} })
}

/** The error a `resources/subscribe` refused at a cap answers: what the caller can do about it. */
function subscriptionsFull(
  { full, held }: SubscriptionsFull,
  maxSubscriptions: number
): CapExceededError {
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
function isDispatched<Deps>(server: CompiledServer<Deps>, method: string): boolean {
  return method !== METHODS.discover && method !== METHODS.listen && isAdvertised(server, method)
}

/** Params as a 2025 client sends them, without the fields only the shim may set. */
function withoutFlowFields({
  inputResponses: _i,
  requestState: _s,
  ...params
}: JsonObject): JsonObject {
  return params
}

/** The engine's request for a 2025 one: the session's version, capabilities and log level. */
function engineRequest<Deps>(
  server: CompiledServer<Deps>,
  { id, method, params }: Request,
  { session, record }: OpenedSession
): McpRequest {
  const bare = withoutFlowFields(params)
  const meta = isObject(bare._meta) ? bare._meta : undefined
  const request: McpRequest = {
    id,
    method,
    params: bare,
    protocolVersion: session.protocolVersion,
    clientCapabilities: session.clientCapabilities,
  }
  if (server.capabilities.logging && record.logLevel) request.logLevel = record.logLevel
  if (isRequestId(meta?.progressToken)) request.progressToken = meta.progressToken
  return request
}
