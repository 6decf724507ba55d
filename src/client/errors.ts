/**
 * @module client/errors
 * How the driver fails. What the server answered as a JSON-RPC error is an `McpClientError` (code,
 * message, data and HTTP status kept); what the driver decides locally is an `McpDriverError` with a
 * `reason`, never confusable with a server error. A caller's abort is neither: it rejects with the
 * caller's own reason (`client/abort`).
 */

/** A JSON-RPC error the server answered with. */
export class McpClientError extends Error {
  override name = 'McpClientError'
  readonly code: number
  readonly data: unknown
  readonly httpStatus: number

  constructor(code: number, message: string, data: unknown, httpStatus: number) {
    super(message)
    this.code = code
    this.data = data
    this.httpStatus = httpStatus
  }
}

/** `cancelled`: a task the driver followed ended `cancelled` (`client/tasks`). */
export type DriverFailure =
  'max_rounds' | 'timeout' | 'no_handler' | 'transport' | 'protocol' | 'cancelled'

/** A failure the driver decided locally; `lastResult` is the last result the server sent, if any. */
export class McpDriverError extends Error {
  override name = 'McpDriverError'
  readonly reason: DriverFailure
  readonly lastResult?: unknown

  constructor(
    reason: DriverFailure,
    message: string,
    options: { lastResult?: unknown; cause?: unknown } = {}
  ) {
    super(message, { cause: options.cause })
    this.reason = reason
    this.lastResult = options.lastResult
  }
}

/** The server broke the protocol; `lastResult` is the result that did (or preceded it). */
export function protocolError(message: string, lastResult?: unknown): McpDriverError {
  return new McpDriverError('protocol', message, { lastResult })
}

/** An error's message, or the type of a thrown non-error (never its content). */
export function summarize(value: unknown): string {
  if (value instanceof Error) return value.message
  return value === null ? 'null' : typeof value
}
