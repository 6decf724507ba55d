/**
 * @module client/tasks
 * The tasks extension (`io.modelcontextprotocol/tasks`) on the driver's side. A `tools/call` from a
 * client that declares the extension may answer a flat `CreateTaskResult` (`resultType: "task"`)
 * instead of its result; `McpTask` is the handle on that task: its id, and the latest status,
 * status message and poll interval the server sent, and the extension's requests, each sent with
 * `Mcp-Method` and `Mcp-Name: <taskId>` (`client/exchange`):
 * - `refresh`: one `tasks/get`;
 * - `answer`: runs the client's input handlers (the same ones that answer multi round-trip
 *   requests) on the outstanding `inputRequests` and sends their answers with `tasks/update`;
 * - `cancel`: `tasks/cancel` (cooperative: the task may still end otherwise; `wait` tells);
 * - `wait` / `result`: poll until the task is terminal, answering its questions on the way, and
 *   answer the terminal task / the tool's result (a `failed` task rejects with its JSON-RPC error as
 *   an `McpClientError`, a `cancelled` one with an `McpDriverError` of reason `cancelled`).
 *
 * Bounds: polls are `pollIntervalMs` apart as the server last suggested (1 s when it sends none),
 * held between 10 ms and 30 s; `wait` is bounded by `taskTimeoutMs` (option or per wait), `answer`
 * by `timeoutMs`, every request by `timeoutMs`. Keys are answered once: the extension never reuses
 * one, so a key that a late `tasks/get` still lists is not asked again. All three requests are safe
 * to re-send (`tasks/get` reads, `tasks/update` ignores keys no longer outstanding, `tasks/cancel`
 * acknowledges any state), so the client's transport retries apply to them. The shape checks of the
 * tasks the server sends are here too: what the driver acts on must be well formed.
 */
import { METHODS } from '../mcp/protocol.ts'
import { TERMINAL_TASK_STATUSES, type TaskStatus } from '../mcp/task-store.ts'
import { isObject, type CallToolResult, type JsonObject } from '../mcp/wire.ts'
import { bounded, pause } from './abort.ts'
import { McpClientError, McpDriverError, protocolError } from './errors.ts'
import type { InputHandlers } from './options.ts'
import { answerInputs } from './rounds.ts'

/** The pause between polls when the server suggests none. */
export const DEFAULT_TASK_POLL_INTERVAL_MS = 1_000
/** The shortest and longest pause between polls, whatever the server suggests. */
export const MIN_TASK_POLL_INTERVAL_MS = 10
export const MAX_TASK_POLL_INTERVAL_MS = 30_000
/** Largest delay a timer accepts on every runtime. */
const MAX_TIMEOUT_MS = 2_147_483_647

const STATUSES: ReadonlySet<string> = new Set<TaskStatus>([
  'working',
  'input_required',
  'completed',
  'cancelled',
  'failed',
])

/** A task as the server sent it (`CreateTaskResult`, or the detailed task of `tasks/get`). */
export interface TaskInfo extends JsonObject {
  taskId: string
  status: TaskStatus
  statusMessage?: string
  createdAt?: string
  lastUpdatedAt?: string
  ttlMs?: number | null
  pollIntervalMs?: number
  /** `input_required`: every outstanding input request, by key. */
  inputRequests?: JsonObject
  /** `completed`: the tool's result (an `isError` result included). */
  result?: JsonObject
  /** `failed`: the JSON-RPC error the call ended with. */
  error?: { code: number; message: string; data?: unknown }
}

export interface TaskRequestOptions {
  signal?: AbortSignal
}

export interface TaskWaitOptions extends TaskRequestOptions {
  /** Bound on this wait; the client's `taskTimeoutMs` when absent. */
  timeoutMs?: number
  /** Every task a poll brought back, before the wait acts on it. */
  onTask?: (task: TaskInfo) => void
}

/** What a task handle needs from its client. */
export interface TaskClient {
  /** One request with the client's `_meta` and headers (`McpClient.request`). */
  request(method: string, params: JsonObject, options: TaskRequestOptions): Promise<JsonObject>
  readonly handlers: InputHandlers
  readonly timeoutMs: number
  readonly taskTimeoutMs: number
}

/** The fields every task carries, checked; `what` names it in errors. */
function checkTask(value: unknown, what: string): TaskInfo {
  if (!isObject(value)) throw protocolError(`${what} is not an object`, value)
  const { taskId, status, statusMessage, pollIntervalMs } = value
  if (typeof taskId !== 'string' || taskId.length === 0) {
    throw protocolError(`${what} has no taskId string`, value)
  }
  if (typeof status !== 'string' || !STATUSES.has(status)) {
    throw protocolError(`${what} has an unknown status ${JSON.stringify(status)}`, value)
  }
  if (statusMessage !== undefined && typeof statusMessage !== 'string') {
    throw protocolError(`${what} has a statusMessage that is not a string`, value)
  }
  if (
    pollIntervalMs !== undefined &&
    !(Number.isSafeInteger(pollIntervalMs) && (pollIntervalMs as number) >= 0)
  ) {
    throw protocolError(`${what} has a pollIntervalMs that is not a non-negative integer`, value)
  }
  return value as TaskInfo
}

/** The task a `tools/call` answered (`resultType: "task"`). */
export function createdTask(result: JsonObject): TaskInfo {
  return checkTask(result, 'the CreateTaskResult')
}

/** The task `tasks/get` of `taskId` answered: that task, with what its status needs. */
export function polledTask(result: JsonObject, taskId: string): TaskInfo {
  const task = checkTask(result, `tasks/get of ${taskId}`)
  if (task.taskId !== taskId) {
    throw protocolError(`tasks/get of ${taskId} answered task ${task.taskId}`, result)
  }
  const field =
    task.status === 'input_required'
      ? 'inputRequests'
      : task.status === 'completed'
        ? 'result'
        : task.status === 'failed'
          ? 'error'
          : undefined
  if (field !== undefined && !isObject(task[field])) {
    throw protocolError(`an ${task.status} task needs ${field} as an object`, result)
  }
  const { error } = task
  if (error && (!Number.isInteger(error.code) || typeof error.message !== 'string')) {
    throw protocolError('a failed task carries a malformed JSON-RPC error', result)
  }
  return task
}

/** One `tasks/get` of `taskId`. */
export async function getTask(
  client: TaskClient,
  taskId: string,
  options: TaskRequestOptions = {}
): Promise<TaskInfo> {
  return polledTask(await client.request(METHODS.tasksGet, { taskId }, options), taskId)
}

/** The pause before the next poll, as the server suggests within the driver's bounds. */
function pollDelay(task: TaskInfo): number {
  const suggested = task.pollIntervalMs ?? DEFAULT_TASK_POLL_INTERVAL_MS
  return Math.min(Math.max(suggested, MIN_TASK_POLL_INTERVAL_MS), MAX_TASK_POLL_INTERVAL_MS)
}

/** A task of the server's, as this client follows it. */
export class McpTask {
  readonly taskId: string
  readonly #client: TaskClient
  #task: TaskInfo
  /** Keys answered through this handle (never asked again). */
  readonly #answered = new Set<string>()
  /** `input_required` phases answered so far (the handlers' `round`). */
  #phases = 0
  /** Whether `latest` came from `tasks/get` (a `CreateTaskResult` carries no result or error). */
  #polled: boolean

  /** `polled`: `task` came from `tasks/get` rather than from the `CreateTaskResult`. */
  constructor(client: TaskClient, task: TaskInfo, polled: boolean) {
    this.#client = client
    this.#task = task
    this.#polled = polled
    this.taskId = task.taskId
  }

  /** The latest task the server sent: the `CreateTaskResult`, then each `tasks/get`. */
  get latest(): TaskInfo {
    return this.#task
  }

  get status(): TaskStatus {
    return this.#task.status
  }

  get statusMessage(): string | undefined {
    return this.#task.statusMessage
  }

  /** The poll interval the server last suggested, if any. */
  get pollIntervalMs(): number | undefined {
    return this.#task.pollIntervalMs
  }

  get terminal(): boolean {
    return TERMINAL_TASK_STATUSES.has(this.#task.status)
  }

  /** `tasks/get`: the task as it is now (also kept as `latest`). */
  async refresh(options: TaskRequestOptions = {}): Promise<TaskInfo> {
    this.#task = await getTask(this.#client, this.taskId, options)
    this.#polled = true
    return this.#task
  }

  /** `tasks/update` with answers by input-request key; the keys count as answered once it is acked. */
  async update(inputResponses: JsonObject, options: TaskRequestOptions = {}): Promise<void> {
    if (!isObject(inputResponses)) throw new TypeError('inputResponses must be an object')
    await this.#client.request(
      METHODS.tasksUpdate,
      { taskId: this.taskId, inputResponses },
      options
    )
    for (const key of Object.keys(inputResponses)) this.#answered.add(key)
  }

  /** `tasks/cancel`. The server acknowledges at once; the task ends when its runner stops. */
  async cancel(options: TaskRequestOptions = {}): Promise<void> {
    await this.#client.request(METHODS.tasksCancel, { taskId: this.taskId }, options)
  }

  /**
   * When the latest task is `input_required`, answers its input requests not answered yet with the
   * client's handlers (all at once, as in a round) and sends the answers with `tasks/update`.
   * Resolves whether it sent any.
   */
  async answer(options: TaskRequestOptions = {}): Promise<boolean> {
    const { timeoutMs } = this.#client
    return bounded(
      timeoutMs,
      options.signal,
      (signal) => this.#answer(signal),
      () => ({
        message: `answering task ${this.taskId} took longer than ${timeoutMs} ms`,
        lastResult: this.#task,
      })
    )
  }

  /**
   * Polls until the task is terminal, answering its questions with the client's handlers on the
   * way, and answers the terminal task. Rejects with a `timeout` after `timeoutMs`.
   */
  async wait(options: TaskWaitOptions = {}): Promise<TaskInfo> {
    const timeoutMs = options.timeoutMs ?? this.#client.taskTimeoutMs
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
      throw new RangeError(`timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS}`)
    }
    return bounded(
      timeoutMs,
      options.signal,
      async (signal) => {
        while (!(this.terminal && this.#polled)) {
          await this.#answer(signal)
          await pause(pollDelay(this.#task), signal)
          const task = await this.refresh({ signal })
          options.onTask?.(task)
        }
        return this.#task
      },
      () => ({
        message: `task ${this.taskId} was still ${this.#task.status} after ${timeoutMs} ms`,
        lastResult: this.#task,
      })
    )
  }

  /**
   * Waits for the task's end and answers the tool's result; a `failed` task rejects with its
   * JSON-RPC error (`McpClientError`, with the HTTP status of the `tasks/get` that brought it: 200),
   * a `cancelled` one with `McpDriverError` (`cancelled`).
   */
  async result(options: TaskWaitOptions = {}): Promise<CallToolResult & JsonObject> {
    const task = await this.wait(options)
    if (task.status === 'completed') return task.result as unknown as CallToolResult & JsonObject
    if (task.status === 'failed' && task.error) {
      throw new McpClientError(task.error.code, task.error.message, task.error.data, 200)
    }
    throw new McpDriverError('cancelled', `task ${this.taskId} was cancelled`, { lastResult: task })
  }

  async #answer(signal: AbortSignal): Promise<boolean> {
    const { status, inputRequests } = this.#task
    if (status !== 'input_required' || !inputRequests) return false
    const open = Object.entries(inputRequests).filter(([key]) => !this.#answered.has(key))
    if (open.length === 0) return false
    this.#phases += 1
    const responses = await answerInputs(
      this.#client.handlers,
      Object.fromEntries(open),
      this.#phases,
      signal,
      this.#task
    )
    await this.update(responses, { signal })
    return true
  }
}
