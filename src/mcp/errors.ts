/**
 * @module mcp/errors
 * The one error type that reaches the wire (`McpError`), the JSON-RPC / MCP error codes of revision
 * 2026-07-28, the single table mapping an error code to its HTTP status, and `errorMessage`, which turns
 * any failure into the JSON-RPC error answered for it. Internal failures are plain `Error` subclasses
 * with a `name`; anything that is not an `McpError` is answered -32603 without its message or stack.
 */
import type { McpLogger } from './dispatch.ts'
import type { FinalMessage } from './streaming.ts'
import type { RequestId } from './wire.ts'

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
  /**
   * A caller holds as many open streams as this replica allows it (`stream-limits.ts`): HTTP 429.
   * From JSON-RPC's range for implementation-defined server errors; no MCP revision defines one.
   */
  TooManyStreams: -32000,
} as const

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

/** Frozen message for every `requestState` failure; the real reason goes to the server log only. */
export const INVALID_REQUEST_STATE_MESSAGE = 'Invalid or expired requestState'

/** Frozen message of every -32603 sent for a failure whose cause went to the server log only. */
export const INTERNAL_ERROR_MESSAGE =
  'Internal error: the server failed to process the request; the failure was logged.'

export class McpError extends Error {
  override name = 'McpError'
  readonly code: ErrorCode
  readonly data: unknown

  constructor(code: ErrorCode, message: string, data?: unknown) {
    super(message)
    this.code = code
    this.data = data
  }

  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}

/**
 * HTTP status for an error answered on the MCP endpoint. The spec fixes 400 for the header, capability
 * and version errors and 404 for unknown methods; it leaves the rest open, and we answer 400 for
 * envelope-level failures (parse, invalid request, missing `_meta`) and 200 for errors about the
 * request's content (unknown tool, invalid cursor, resource not found) and for internal errors, as the
 * checklist recommends: the endpoint never answers 5xx for anything a request carries. A stream over
 * a caller's cap is 429 Too Many Requests (`stream-limits.ts`).
 */
export function httpStatusFor(
  error: McpError,
  stage: 'envelope' | 'method'
): 400 | 404 | 429 | 200 {
  switch (error.code) {
    case ErrorCode.TooManyStreams:
      return 429
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

/** A failure as the server log shows it: its class and message, never its stack or cause. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/**
 * The final message for a failure of request `id`: an `McpError` as it is, anything else (and an
 * `McpError` whose data JSON cannot express) -32603 without detail, its cause logged. Never throws.
 * The HTTP status comes from the table above; `stage` says whether the envelope failed.
 */
export function errorMessage(
  id: RequestId | null,
  error: unknown,
  logger: McpLogger,
  stage: 'envelope' | 'method' = 'method'
): FinalMessage {
  if (error instanceof McpError) {
    try {
      const text = JSON.stringify({ jsonrpc: '2.0', id, error: error.toJSON() })
      return { text, status: httpStatusFor(error, stage) }
    } catch (unserialisable) {
      error = unserialisable
    }
  }
  logger.error('request failed', { error: describeError(error) })
  const internal = new McpError(ErrorCode.InternalError, INTERNAL_ERROR_MESSAGE)
  return {
    text: JSON.stringify({ jsonrpc: '2.0', id, error: internal.toJSON() }),
    status: httpStatusFor(internal, stage),
  }
}
