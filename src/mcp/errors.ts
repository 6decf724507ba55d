/**
 * @module mcp/errors
 * The one error type that reaches the wire (`McpError`), the JSON-RPC / MCP error codes of revision
 * 2026-07-28, the single table mapping an error to its HTTP status, and `errorMessage`, which turns
 * any failure into the JSON-RPC error answered for it. Internal failures are plain `Error` subclasses
 * with a `name`; anything that is not an `McpError` is answered -32603 without its message or stack.
 *
 * Every per-caller cap (held-open streams, live tasks, resource subscriptions) refuses with one
 * error, `CapExceededError`: -32602 Invalid params (MCP defines no quota error and reserves the
 * implementation range -32000…-32099, whose -32000 the 2025 SDKs already read as ConnectionClosed;
 * the request cannot be served as it stands), a message saying how many the caller holds, the cap
 * and what frees a place, and one `data` shape, {@link CapExceeded}. Its HTTP status comes from the
 * error, not the code: 429 Too Many Requests when what is refused is opening a stream
 * (`subscriptions/listen`, a 2025 GET stream: nothing opens, and the client, which may retry later,
 * sees a transport refusal), 200 when an operation is refused (a 2025 call that would wait for an
 * answer, creating a task, subscribing), whether that answer is JSON or the last message of an SSE
 * stream already under way. No `Retry-After`: a place frees only when the caller itself closes a
 * stream or lets a call or task end, which the server cannot time (any delay it named would be a
 * guess, inviting a retry into the same refusal), and the SDKs' client transports read none.
 *
 * A request that needs the store while it cannot be reached (the database restarting, failing over,
 * killed) is refused with one error, `StoreUnavailableError`, which the storage adapters throw in
 * place of their drivers' connection failures: -32030 (in the implementation range, clear of -32000
 * ConnectionClosed and -32001 RequestTimeout of the SDKs and of the -3202x header and capability
 * errors), HTTP 503 with `Retry-After` ({@link STORE_RETRY_AFTER_SECONDS}) in both eras, and one
 * frozen message, {@link STORE_UNAVAILABLE_MESSAGE}; the driver's own error goes to the log only.
 */
import { describeError, type McpLogger } from './logger.ts'
import type { FinalMessage } from './streaming.ts'
import type { RequestId } from './wire.ts'

/**
 * The JSON-RPC and MCP error codes the engine answers with, by name: the `code` of an `McpError` a
 * handler throws, and of a refusal an HTTP face writes itself.
 *
 * @example
 * ```ts
 * import { ErrorCode, McpError } from 'stateless-mcp'
 *
 * throw new McpError(ErrorCode.InvalidParams, 'Invalid params: no note with that id.')
 * ```
 */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
  StoreUnavailable: -32030,
} as const

/** One of the codes of the `ErrorCode` object: what an `McpError`'s `code` holds. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

/** Frozen message for every `requestState` failure; the real reason goes to the server log only. */
export const INVALID_REQUEST_STATE_MESSAGE = 'Invalid or expired requestState'

/**
 * Frozen message of every -32603 sent for a failure whose cause went to the server log only; an
 * HTTP face answers its own unexpected failures with it too.
 *
 * @example
 * ```ts
 * import { ErrorCode } from 'stateless-mcp'
 * import { INTERNAL_ERROR_MESSAGE, jsonRpcErrorResponse } from 'stateless-mcp/compose'
 *
 * app.onError((error) => {
 *   console.error(error)
 *   return jsonRpcErrorResponse(null, 500, INTERNAL_ERROR_MESSAGE, {}, ErrorCode.InternalError)
 * })
 * ```
 */
export const INTERNAL_ERROR_MESSAGE =
  'Internal error: the server failed to process the request; the failure was logged.'

/** Frozen message of every refusal of a request that needed the store while it could not be reached. */
export const STORE_UNAVAILABLE_MESSAGE =
  'Service unavailable: the database cannot be reached; retry in a few seconds.'

/** The `Retry-After` of a store refusal: about what a database restart or a failover takes. */
export const STORE_RETRY_AFTER_SECONDS = 5

/**
 * An error answered to the client as it is: its code, message and `data`. Throw it from a handler
 * to refuse the request itself (an unknown id, say) rather than report a tool's failure to the
 * model (`toolError`). Any other error a handler throws is answered without its message: a tool's
 * as an `isError` result, another handler's as -32603.
 *
 * @example
 * ```ts
 * import { ErrorCode, McpError, prompt } from 'stateless-mcp'
 *
 * const review = prompt({
 *   name: 'review',
 *   description: 'Asks for a review of a note.',
 *   arguments: [{ name: 'id', required: true }],
 *   get: ({ id }) => {
 *     if (!/^[0-9]+$/.test(id ?? '')) {
 *       throw new McpError(ErrorCode.InvalidParams, 'Invalid params: id must be a number.')
 *     }
 *     const text = `Review note ${id}.`
 *     return { messages: [{ role: 'user', content: { type: 'text', text } }] }
 *   },
 * })
 * ```
 */
export class McpError extends Error {
  override name = 'McpError'
  readonly code: ErrorCode
  readonly data: unknown

  constructor(code: ErrorCode, message: string, data?: unknown) {
    super(message)
    this.code = code
    this.data = data
  }

  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}

/** The JSON-RPC error object of the wire: a code, a message and, only when there is one, `data`. */
export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
}

/**
 * The JSON text of the JSON-RPC error response to request `id` (`null` when it could not be read): the
 * one writer of error responses, for the engine of both eras, the HTTP layer and the runtime entries.
 *
 * @example
 * ```ts
 * import { ErrorCode } from 'stateless-mcp'
 * import { errorResponseText } from 'stateless-mcp/compose'
 *
 * // a refusal written where no Response can be made (Node's `clientError`, on the raw socket)
 * const body = errorResponseText(null, {
 *   code: ErrorCode.InvalidRequest,
 *   message: 'Bad Request: the HTTP request is malformed.',
 * })
 * socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\r\n${body}`)
 * ```
 */
export function errorResponseText(id: RequestId | null, error: JsonRpcErrorObject): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error })
}

/** What a cap refusal's `data` says: which cap, counted over what, its limit and what is held now. */
export interface CapExceeded {
  cap: 'streams' | 'tasks' | 'subscriptions'
  scope: 'session' | 'principal'
  limit: number
  held: number
}

/**
 * A caller holds what one of its caps allows (see the module header): -32602 with
 * {@link CapExceeded} as `data`; `opensStream` when what it refuses is a stream about to open (429).
 */
export class CapExceededError extends McpError {
  override name = 'CapExceededError'
  declare readonly data: CapExceeded
  readonly opensStream: boolean

  constructor(exceeded: CapExceeded, message: string, { opensStream = false } = {}) {
    super(ErrorCode.InvalidParams, message, exceeded)
    this.opensStream = opensStream
  }
}

/**
 * The store could not be reached (module header): -32030, HTTP 503 with `Retry-After`. `cause` is the
 * driver's failure, for the log only. Throw it from an application's own store when its backend
 * cannot be reached, so that the request is answered as the engine's stores answer it.
 *
 * @example
 * ```ts
 * import { StoreUnavailableError } from 'stateless-mcp/compose'
 *
 * const response = await fetch(`${notesApi}/notes/${id}`).catch((error: unknown) => {
 *   throw new StoreUnavailableError(error)
 * })
 * ```
 */
export class StoreUnavailableError extends McpError {
  override name = 'StoreUnavailableError'

  constructor(cause?: unknown) {
    super(ErrorCode.StoreUnavailable, STORE_UNAVAILABLE_MESSAGE)
    this.cause = cause
  }
}

/** The headers of a store refusal answered as plain JSON. */
function storeUnavailableHeaders(): Headers {
  return new Headers({
    'content-type': 'application/json',
    'retry-after': String(STORE_RETRY_AFTER_SECONDS),
  })
}

/**
 * HTTP status for an error answered on the MCP endpoint. The spec fixes 400 for the header, capability
 * and version errors and 404 for unknown methods; it leaves the rest open, and we answer 400 for
 * envelope-level failures (parse, invalid request, missing `_meta`) and 200 for errors about the
 * request's content (unknown tool, invalid cursor, resource not found) and for internal errors, as the
 * checklist recommends: the endpoint never answers 5xx for anything a request carries. A cap
 * refusal is 429 Too Many Requests when it refuses a stream's opening, else 200; a store that
 * cannot be reached is 503 (module header).
 */
export function httpStatusFor(
  error: McpError,
  stage: 'envelope' | 'method'
): 400 | 404 | 429 | 503 | 200 {
  if (error instanceof CapExceededError) return error.opensStream ? 429 : 200
  switch (error.code) {
    case ErrorCode.MethodNotFound:
      return 404
    case ErrorCode.HeaderMismatch:
    case ErrorCode.MissingRequiredClientCapability:
    case ErrorCode.UnsupportedProtocolVersion:
    case ErrorCode.ParseError:
    case ErrorCode.InvalidRequest:
      return 400
    case ErrorCode.InvalidParams:
      return stage === 'envelope' ? 400 : 200
    case ErrorCode.InternalError:
      return 200
    case ErrorCode.StoreUnavailable:
      return 503
  }
}

/** The requestState could not be opened or did not match this request. `reason` is for the log only. */
export class InvalidRequestStateError extends Error {
  override name = 'InvalidRequestStateError'
  readonly reason: string

  constructor(reason: string) {
    super(INVALID_REQUEST_STATE_MESSAGE)
    this.reason = reason
  }
}

/**
 * The final message for a failure of request `id`: an `McpError` as it is, anything else (and an
 * `McpError` whose data JSON cannot express) -32603 without detail, its cause logged. Never throws.
 * The HTTP status comes from the table above; `stage` says whether the envelope failed. A store
 * refusal carries its `Retry-After`, and its cause is logged as a warning. Use it, with
 * `finalResponse`, to answer what escapes an HTTP face of one's own as the engine would.
 *
 * @example
 * ```ts
 * import { consoleLogger, errorMessage, finalResponse } from 'stateless-mcp/compose'
 *
 * app.onError((error) => finalResponse(errorMessage(null, error, consoleLogger)))
 * ```
 */
export function errorMessage(
  id: RequestId | null,
  error: unknown,
  logger: McpLogger,
  stage: 'envelope' | 'method' = 'method'
): FinalMessage {
  if (error instanceof StoreUnavailableError) {
    logger.warn('request refused: the store cannot be reached', {
      error: describeError(error.cause),
    })
    return {
      text: errorResponseText(id, error.toJSON()),
      status: httpStatusFor(error, stage),
      headers: storeUnavailableHeaders(),
    }
  }
  if (error instanceof McpError) {
    try {
      const text = errorResponseText(id, error.toJSON())
      return { text, status: httpStatusFor(error, stage) }
    } catch (unserialisable) {
      error = unserialisable
    }
  }
  logger.error('request failed', { error: describeError(error) })
  const internal = new McpError(ErrorCode.InternalError, INTERNAL_ERROR_MESSAGE)
  return {
    text: errorResponseText(id, internal.toJSON()),
    status: httpStatusFor(internal, stage),
  }
}
