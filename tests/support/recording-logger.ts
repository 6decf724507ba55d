/**
 * @module tests/support/recording-logger
 * An `McpLogger` that keeps every warning (message and fields) as the JSON logger would print it,
 * for tests that check what the engine logged; errors are ignored.
 */
import type { McpLogger } from '../../src/mcp/logger.ts'

export class RecordingLogger implements McpLogger {
  readonly warnings: Array<{ message: string; fields?: Record<string, unknown> }> = []

  warn(message: string, fields?: Record<string, unknown>): void {
    this.warnings.push({ message, fields })
  }

  error(): void {}

  /** How many warnings said exactly `message`. */
  count(message: string): number {
    return this.warnings.filter((warning) => warning.message === message).length
  }
}
