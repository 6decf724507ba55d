/**
 * @module mcp/logger
 * Where the server reports what no client is told (the real reason of a rejected state, a handler's
 * crash, a relay or an alarm that failed): the `McpLogger` port every layer logs through, the default
 * that writes one JSON line per event on stderr, and the one way a failure is described in a log line.
 */

/** Where a failure is reported (never to the client): the real reason of a rejected state, handler crashes. */
export interface McpLogger {
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

/**
 * Logs as one JSON line per event on stderr; never includes request bodies or credentials. The
 * default `logger` of `createMcpServer` and `createMcpHandler`.
 *
 * @example
 * ```ts
 * import { consoleLogger } from 'stateless-mcp/compose'
 *
 * consoleLogger.warn('cache disabled', { reason: 'no REDIS_URL' })
 * // stderr: {"level":"warn","message":"cache disabled","reason":"no REDIS_URL"}
 * ```
 */
export const consoleLogger: McpLogger = {
  warn: (message, fields) => console.warn(JSON.stringify({ level: 'warn', message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ level: 'error', message, ...fields })),
}

/**
 * A failure as the server log shows it: its class and message, never its stack or cause.
 *
 * @example
 * ```ts
 * import { consoleLogger, describeError } from 'stateless-mcp/compose'
 *
 * describeError(new RangeError('limit must be a positive integer'))
 * // 'RangeError: limit must be a positive integer'
 * consoleLogger.error('sweep failed', { error: describeError(error) })
 * ```
 */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/**
 * Logs a failure no request answers for (a relay, an alarm, setup) by its description alone, on
 * {@link consoleLogger}.
 *
 * @example
 * ```ts
 * import { logError } from 'stateless-mcp/compose'
 *
 * server.close().catch((error: unknown) => logError('closing at shutdown failed', error))
 * ```
 */
export function logError(message: string, error: unknown): void {
  consoleLogger.error(message, { reason: describeError(error) })
}
