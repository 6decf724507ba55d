/**
 * @module mcp/errors
 * The one error type that reaches the wire (`McpError`), the JSON-RPC / MCP error codes of revision
 * 2026-07-28, and the single table mapping an error code to its HTTP status. Internal failures are plain
 * `Error` subclasses with a `name`; the HTTP layer turns anything that is not an `McpError` into -32603
 * without its message or stack.
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
 * checklist recommends: the endpoint never answers 5xx for anything a request carries.
 */
export function httpStatusFor(error: McpError, stage: 'envelope' | 'method'): 400 | 404 | 200 {
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
