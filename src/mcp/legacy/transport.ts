/**
 * @module mcp/legacy/transport
 * What the parts of the 2025-era face share (`handler.ts` builds it, `message.ts`, `request.ts` and
 * `stream.ts` serve with it): the era's context (`LegacyEraContext`: the server, the store, the bus
 * and the bounds, resolved once), the JSON-RPC shape of one POSTed message (`readMessage`), the live
 * session a message names with its store record (`openSession`: read once per message), the
 * transport failures answered 4xx (`TransportError`, `transportFailure`), and how a request id
 * travels in `request_cancelled` (`cancelKey`).
 */
import { sha256Base64url } from '../canonical-json.ts'
import type { DispatchBase } from '../dispatch.ts'
import { callerBinding } from '../dispatch-env.ts'
import { requestIdOf } from '../envelope.ts'
import { ErrorCode, errorResponseText } from '../errors.ts'
import type { EventStreamBounds } from '../event-stream.ts'
import { MAX_EVENT_ID_CHARS, type EventBus } from '../event-bus.ts'
import type { McpHttpInput } from '../http-input.ts'
import type { McpLogger } from '../logger.ts'
import type { ServerTelemetry } from '../observer.ts'
import { HEADER_PROTOCOL_VERSION } from '../protocol.ts'
import type { CompiledServer } from '../server.ts'
import type { SessionRecord, SessionStore } from '../session-store.ts'
import type { StreamLimits } from '../stream-limits.ts'
import { jsonText } from '../streaming.ts'
import { isObject, type JsonObject, type RequestId } from '../wire.ts'
import {
  HEADER_SESSION_ID,
  LEGACY_PROTOCOL_VERSIONS,
  SESSION_NOT_FOUND_CODE,
  isLegacyVersion,
} from './protocol.ts'
import {
  MAX_ANSWER_ID_CHARS,
  askingCall,
  type AskingCall,
  type LocalAnswers,
} from './rendezvous.ts'
import type { CallLeaseContext } from './call-lease.ts'
import type { CallStreamContext } from './call-stream.ts'
import type { LegacySession, SessionCodec } from './session.ts'

/** What the HTTP layer hands over for a 2025-era message (its body is already parsed). */
export type LegacyInput = Omit<McpHttpInput, 'body' | 'method'>

/** Bounds of interactive flows: 2025 calls that ask their client and wait (`input-shim.ts`). */
export interface InteractiveFlowBounds {
  /** How long one question waits for its answer, in milliseconds. Default ten minutes. */
  timeoutMs?: number
  /** Most rounds one call may ask its client something. Default 8. */
  maxRounds?: number
  /** How often a call waiting on a URL page looks whether it was decided. Default a second. */
  urlPollMs?: number
  /** Longest wait between looks in the store for an answer the bus did not bring. Default 2 s. */
  answerPollMs?: number
  /**
   * Set where a response reaches its client only once it has ended (a buffering gateway), so a
   * call cannot ask its client anything mid-call: why, as a call that would ask ends with it (a
   * tool error for `tools/call`) instead of waiting for answers to questions its client never sees.
   */
  unavailable?: string
}

/** What every part of the 2025-era face serves with, resolved once when the era is built. */
export interface LegacyEraContext<Deps> {
  readonly server: CompiledServer<Deps>
  /** What every request of the era is dispatched with (server, deps, `requestState` sealer, logger). */
  readonly base: DispatchBase<Deps>
  readonly codec: SessionCodec
  readonly sessions: SessionStore
  readonly bus: EventBus
  readonly logger: McpLogger
  readonly now: () => number
  readonly streamLimits: StreamLimits
  /** Live sessions one principal may hold (`Infinity`: no cap). */
  readonly maxSessions: number
  /** Subscriptions one principal's sessions may hold together (`Infinity`: no cap). */
  readonly maxSubscriptions: number
  readonly input: InteractiveFlowBounds | undefined
  /** What the resumable streams of calls are written with (`call-stream.ts`). */
  readonly streams: CallStreamContext
  /** What the leases of waiting calls are held with (`call-lease.ts`). */
  readonly leases: CallLeaseContext
  /** The flows waiting on this replica, handed the answers it stores (`rendezvous.ts`). */
  readonly answers: LocalAnswers
  readonly stream: EventStreamBounds | undefined
  readonly shutdown: AbortSignal | undefined
  readonly telemetry: ServerTelemetry | undefined
}

/** A live session and its record in the store, as read once for the message naming it. */
export interface OpenedSession {
  readonly session: LegacySession
  readonly record: SessionRecord
}

export type Message =
  | { kind: 'request'; id: RequestId; method: string; params: JsonObject }
  | { kind: 'notification'; method: string; params: JsonObject }
  | { kind: 'response'; id: string; raw: JsonObject; call: AskingCall }

/** What a request naming a session that is not live here is told (404 -32001). */
export const SESSION_NOT_FOUND_MESSAGE =
  'Session not found: it ended or is not valid here; send initialize to start a new one.'

/** A failure of the transport (parse, shape, session, headers), answered with its 4xx status. */
export class TransportError extends Error {
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

/** The JSON-RPC error response a transport failure is answered with. */
export function transportFailure({ id, code, message, status }: TransportError): Response {
  return jsonText(errorResponseText(id, { code, message }), status)
}

/**
 * The JSON-RPC shape of one 2025-era message (-32600 for anything else, an array included: a batch
 * is `batch.ts`'s).
 */
export function readMessage(message: unknown): Message {
  if (!isObject(message) || message.jsonrpc !== '2.0') {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Invalid Request: "jsonrpc" must be "2.0".'
    )
  }
  const id = requestIdOf(message)
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
 * The live session a message names, with its record (one store read), or the transport error to
 * answer: 400 without an id, 404 for one that is unknown, tampered with, another principal's,
 * ended or whose record expired (an id past its sealed expiry opens while its record lives), 400
 * for an `MCP-Protocol-Version` that names no 2025 revision (2026-07-28 included: it is never
 * negotiated in a session). Any 2025 revision, or none, is accepted whatever
 * the session negotiated; the session speaks its negotiated one.
 */
export async function openSession(
  era: Pick<LegacyEraContext<unknown>, 'codec' | 'sessions'>,
  input: LegacyInput,
  id: RequestId | null
): Promise<OpenedSession> {
  const token = input.headers.get(HEADER_SESSION_ID)
  if (token === null) {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      'Bad Request: the Mcp-Session-Id header is required; send initialize first.',
      id
    )
  }
  const session = await era.codec.open(token.trim(), callerBinding(input.principal, input.client))
  const record = session && (await era.sessions.getSession(session.sid))
  // The record decides (sessions slide, `renewal.ts`): one expired is no session, purged or not.
  if (!session || record === undefined || record.expiresAt <= era.codec.now()) {
    throw new TransportError(404, SESSION_NOT_FOUND_CODE, SESSION_NOT_FOUND_MESSAGE, id)
  }
  const header = input.headers.get(HEADER_PROTOCOL_VERSION)?.trim()
  if (header !== undefined && !isLegacyVersion(header)) {
    throw new TransportError(
      400,
      ErrorCode.InvalidRequest,
      `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(header.slice(0, 64))} in a 2025-era session; send the version it negotiated (${session.protocolVersion}), another of ${LEGACY_PROTOCOL_VERSIONS.join(', ')}, or none.`,
      id
    )
  }
  return { session, record }
}

/**
 * How a request id travels in `request_cancelled`: its JSON text (so 7 and "7" stay apart), or a
 * digest of it when that is longer than the bus carries.
 */
export async function cancelKey(id: RequestId): Promise<string> {
  const text = JSON.stringify(id)
  return text.length <= MAX_EVENT_ID_CHARS ? text : `#${await sha256Base64url(text)}`
}
