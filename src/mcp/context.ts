/**
 * @module mcp/context
 * The context object a handler receives: who is calling, what the client declared, the abort signal,
 * and the two opt-in notification channels (progress only with a progressToken and strictly
 * increasing; log messages only at or above the level the request asked for). Handlers that may
 * suspend get the replay methods of `replay.ts` on top, and tool handlers `startTask` (what a task
 * run changes is `tasks/runner.ts`'s subclass). Built per request as a class instance (no closures
 * to allocate on the hot path); holds nothing afterwards.
 */
import type * as z from 'zod'
import type {
  AskOptions,
  ClientCapability,
  ElicitOptions,
  ElicitUrlOptions,
  RequestContext,
  StartTaskOptions,
  ToolContext,
} from './definitions.ts'
import type { McpRequest } from './envelope.ts'
import { LOG_LEVELS, type LogLevel } from './protocol.ts'
import { defineForm, hasCapability, type Replay } from './replay.ts'
import { randomBase64url } from './random.ts'
import type { Cancellation, RequestChannel } from './streaming.ts'
import { tasksCapabilityMissing } from './tasks/wire.ts'
import type { ClientCapabilities, CreateMessageParams } from './wire.ts'

export interface ContextInput<Deps> {
  deps: Deps
  principal: string
  request: McpRequest
  channel: RequestChannel
  cancellation: Cancellation
}

export class HandlerContext<Deps> implements RequestContext<Deps> {
  readonly deps: Deps
  readonly principal: string
  readonly clientCapabilities: ClientCapabilities
  readonly #cancellation: Cancellation
  readonly #request: McpRequest
  readonly #channel: RequestChannel
  #lastProgress = -Infinity

  constructor({ deps, principal, request, channel, cancellation }: ContextInput<Deps>) {
    this.deps = deps
    this.principal = principal
    this.clientCapabilities = request.clientCapabilities
    this.#cancellation = cancellation
    this.#request = request
    this.#channel = channel
  }

  /** Aborted when the client goes away or closes the response stream. */
  get signal(): AbortSignal {
    return this.#cancellation.signal
  }

  can(capability: ClientCapability): boolean {
    return hasCapability(this.clientCapabilities, capability)
  }

  progress(progress: number, total?: number, message?: string): void {
    const { progressToken } = this.#request
    if (progressToken === undefined || !(progress > this.#lastProgress)) return
    this.#lastProgress = progress
    const params: Record<string, unknown> = { progressToken, progress }
    if (total !== undefined) params.total = total
    if (message !== undefined) params.message = message
    this.#channel.notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
  }

  log(level: LogLevel, data: unknown, logger?: string): void {
    const { logLevel } = this.#request
    if (logLevel === undefined || LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(logLevel)) return
    const params: Record<string, unknown> = { level, data }
    if (logger !== undefined) params.logger = logger
    this.#channel.notify({ jsonrpc: '2.0', method: 'notifications/message', params })
  }

  closeStream(): void {
    this.#channel.closeStream?.()
  }
}

/**
 * What `ctx.startTask()` does: nothing to do with tasks (`undefined`: the handler is not a task
 * tool's, and calling it is a programming error), unwind the request into a new task (`available`:
 * the request declared the extension), go on synchronously (`unavailable`), or nothing at all
 * (`running`: this run is the task).
 */
export type TaskAvailability = 'available' | 'unavailable' | 'running'

/**
 * The context of a suspendable handler. `nonce` is the opened requestState's nonce (a task's own key
 * in a task); a round without state gets a random idempotency key, made only if the handler asks for
 * it (most never do).
 */
export class ReplayHandlerContext<Deps> extends HandlerContext<Deps> implements ToolContext<Deps> {
  readonly #replay: Replay
  readonly #tasks: TaskAvailability | undefined
  #idempotencyKey: string | undefined

  constructor(
    input: ContextInput<Deps>,
    replay: Replay,
    nonce: string | undefined,
    tasks?: TaskAvailability
  ) {
    super(input)
    this.#replay = replay
    this.#idempotencyKey = nonce
    this.#tasks = tasks
  }

  startTask(options?: StartTaskOptions): Promise<void> {
    switch (this.#tasks) {
      case 'available':
        return this.#replay.startTask()
      case 'unavailable':
        if (options?.required) throw tasksCapabilityMissing('this call')
        return Promise.resolve()
      case 'running':
        return Promise.resolve()
      case undefined:
        throw new TypeError(
          "ctx.startTask() is only for tools declared with task: 'optional' or 'required'."
        )
    }
  }

  get idempotencyKey(): string {
    return (this.#idempotencyKey ??= randomBase64url(16))
  }

  elicit<S extends z.ZodObject>(
    key: string,
    { message, schema, acceptUnsolicited }: ElicitOptions<S>
  ) {
    return this.#replay.elicit(key, message, defineForm(schema), acceptUnsolicited)
  }

  elicitUrl(key: string, { message, url, acceptUnsolicited }: ElicitUrlOptions) {
    return this.#replay.elicitUrl(key, message, url, acceptUnsolicited)
  }

  sample(key: string, params: CreateMessageParams, options?: AskOptions) {
    return this.#replay.sample(key, params, options?.acceptUnsolicited)
  }

  roots(key: string, options?: AskOptions) {
    return this.#replay.roots(key, options?.acceptUnsolicited)
  }

  once<T>(key: string, step: () => T | Promise<T>): Promise<T> {
    return this.#replay.once(key, step)
  }

  askAgain(key: string): Promise<never> {
    return this.#replay.askAgain(key)
  }
}
