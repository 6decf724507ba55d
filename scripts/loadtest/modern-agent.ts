/**
 * @module scripts/loadtest/modern-agent
 * The 2026-07-28 user agent of the load test: the project's client driver (`src/client/`), stateless,
 * every round of an interactive call a new POST that any replica may serve. Where each attempt goes
 * is `routing.ts`'s business (the replica that served the call's previous round is avoided); who
 * served it is read from `X-Replica` in the driver's `onRound`, which also feeds the round latencies,
 * the cross-replica share and the re-sent rounds.
 *
 * Retries: rounds of interactive calls and searches are re-sent by the driver after a transport
 * failure (`transportRetries`): the first rounds only read, and the final rounds' side effects are
 * keyed by the sealed state's single-use nonce, so a re-sent final round acts once. `create_note` is
 * never re-sent (see `flows.ts`).
 *
 * Tasks (the tasks scenario's users, built with `tasks`: the extension declared): `runTask` creates
 * a task with `tools/call` and follows it to its end (`McpTask.wait`), every poll and answer to
 * another replica than the request before, the questions answered by the flow's answerer through
 * `tasks/update`. The creating call is re-sent only when the caller says a second task would do no
 * harm; polls, answers and cancels always are (each is safe to repeat). Counted here: tasks
 * created, creating attempts left without an answer, polls, updates and answers, the replica
 * changes between a task's requests, per-request latency and each task's time to its end.
 *
 * The store outage (a database fault): the driver's `fetch` is wrapped to tell a replica's clean
 * refusal (`storeOutageAnswer`: 503, `Retry-After`, -32030) from other answers. The driver reads no
 * `Retry-After`: it takes any 503 for a transport failure and re-sends the round as it would after a
 * gateway's (the re-sends above); a call whose last attempt was so refused, or whose stream carried
 * the -32030 error, fails cleanly as {@link STORE_UNAVAILABLE_KIND}. A task already created is
 * not given up for it: its wait starts again, after {@link OUTAGE_PAUSE_MS}, until the task's bound.
 */
import {
  McpClient,
  McpClientError,
  McpDriverError,
  type McpTask,
  type ElicitRequestParams,
  type ElicitResult,
  type RoundInfo,
  type TaskInfo,
} from '../../src/client/index.ts'
import { METHODS } from '../../src/mcp/protocol.ts'
import type { JsonObject } from '../../src/mcp/wire.ts'
import { CallError, WrongOutcome, questionOf } from './flows.ts'
import type { Agent, Answerer, CallLabel, ToolResult } from './flows.ts'
import type { LatencyLabel } from './metrics.ts'
import {
  CALL_TIMEOUT_MS,
  claimRequest,
  isStoreUnavailableCode,
  Rotation,
  STORE_UNAVAILABLE_KIND,
  storeOutageAnswer,
} from './routing.ts'
import type { AgentSetup, Endpoint } from './routing.ts'
import { TASK_WAIT_MS, type TaskAgent, type TaskCall } from './task-flow.ts'

/**
 * Re-sends of one round after transport failures. With the driver's backoff (50 ms doubling to
 * 250 ms) that is about 4.6 s, longer than a killed replica stays away (direct mode with two replicas
 * waits for the one that did not serve the previous round).
 */
const TRANSPORT_RETRIES = 20
/** A task's poll or answer refused by the store outage: the pause before its wait starts again. */
const OUTAGE_PAUSE_MS = 1_000

/**
 * The driver's errors as the flows see them (a watchdog abort stays what it is); `storeOutage`: the
 * call's last attempt was the store outage's refusal.
 */
function callError(error: unknown, storeOutage: boolean): unknown {
  if (refusedByStoreOutage(error, storeOutage)) {
    return new CallError(STORE_UNAVAILABLE_KIND, (error as Error).message, true)
  }
  if (error instanceof McpDriverError) {
    return new CallError(`driver_${error.reason}`, error.message, error.reason === 'transport')
  }
  if (error instanceof McpClientError) {
    return new CallError(`rpc_${error.code}_http_${error.httpStatus}`, error.message, false)
  }
  return error
}

/** Whether the driver's `error` ended a call the store outage refused (see {@link callError}). */
function refusedByStoreOutage(error: unknown, storeOutage: boolean): boolean {
  if (error instanceof McpClientError) return isStoreUnavailableCode(error.code)
  return error instanceof McpDriverError && error.reason === 'transport' && storeOutage
}

/** The latency label of one request of a task, by its method. */
const TASK_LABELS: Readonly<Record<string, LatencyLabel>> = {
  [METHODS.toolsCall]: 'task_create',
  [METHODS.tasksGet]: 'task_get',
  [METHODS.tasksUpdate]: 'task_update',
}

export class ModernAgent implements Agent, TaskAgent {
  readonly #setup: AgentSetup
  readonly #rotation: Rotation
  readonly #client: McpClient
  /** The replica that served the current call's (or task's) previous request. */
  #previous: string | undefined
  #label: CallLabel | 'task' = 'flow'
  /** Replica of each round of the current call (index 0 is round 1). */
  #served: string[] = []
  #attemptStart = 0
  #attemptUrl = ''
  /** The current attempt was answered with the store outage's refusal. */
  #attemptRefused = false
  #answer: Answerer | undefined
  /** What the current call's answerer threw: the flow's verdict, whatever the driver made of it. */
  #answerError: unknown

  /** `tasks`: declare the tasks extension (the tasks scenario's users). */
  constructor(index: number, setup: AgentSetup, tasks = false) {
    this.#setup = setup
    this.#rotation = new Rotation(setup, index)
    this.#client = new McpClient({
      url: setup.balancer?.url ?? (setup.replicas[0] as Endpoint).url,
      urls: () => this.#endpoint(),
      headers: () => this.#rotation.headers(this.#previous),
      onRound: (info: RoundInfo) => this.#onRound(info),
      timeoutMs: CALL_TIMEOUT_MS,
      clientInfo: { name: 'notes-loadtest', version: '0.1.0' },
      transportRetries: TRANSPORT_RETRIES,
      fetch: this.#fetch,
      handlers: { elicit: async (params) => this.#elicit(params) },
      tasks,
    })
  }

  async call(
    label: CallLabel,
    name: string,
    args: JsonObject,
    answer?: Answerer
  ): Promise<ToolResult> {
    this.#begin(label, answer)
    const transportRetries = label === 'create_note' ? 0 : TRANSPORT_RETRIES
    try {
      return await this.#client.callTool(name, args, {
        signal: this.#setup.signal,
        transportRetries,
      })
    } catch (error) {
      throw this.#answerError ?? callError(error, this.#attemptRefused)
    } finally {
      this.#answer = undefined
      if (label === 'flow') this.#countCrossings()
    }
  }

  async runTask(call: TaskCall): Promise<TaskInfo> {
    const { signal } = this.#setup
    const tasks = this.#setup.metrics.tasks
    this.#begin('task', call.answer)
    const started = performance.now()
    try {
      const outcome = await this.#client.startToolCall(call.name, call.args, {
        signal,
        transportRetries: call.resend ? TRANSPORT_RETRIES : 0,
      })
      if (outcome.kind !== 'task') {
        throw new WrongOutcome('no_task', `${call.name} answered at once instead of as a task`)
      }
      tasks.created += 1
      call.onCreated(outcome.task.taskId)
      const task = await this.#waitThroughOutages(outcome.task, performance.now() + TASK_WAIT_MS)
      tasks.ended(performance.now() - started)
      return task
    } catch (error) {
      throw this.#answerError ?? callError(error, this.#attemptRefused)
    } finally {
      this.#answer = undefined
    }
  }

  /** Follows `task` to its end, waiting again after a poll or answer the store outage refused. */
  async #waitThroughOutages(task: McpTask, deadline: number): Promise<TaskInfo> {
    const { signal } = this.#setup
    for (;;) {
      try {
        return await task.wait({
          signal,
          timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())),
        })
      } catch (error) {
        const refused = refusedByStoreOutage(error, this.#attemptRefused)
        if (!refused || this.#answerError || performance.now() >= deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, OUTAGE_PAUSE_MS))
      }
    }
  }

  /** Every attempt the driver sends: notes whether a replica refused it for the store outage. */
  readonly #fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init)
    this.#attemptRefused = await storeOutageAnswer(response)
    return response
  }

  #begin(label: CallLabel | 'task', answer: Answerer | undefined): void {
    this.#label = label
    this.#previous = undefined
    this.#served = []
    this.#answer = answer
    this.#answerError = undefined
  }

  #countCrossings(): void {
    for (let round = 1; round < this.#served.length; round++) {
      const before = this.#served[round - 1]
      const now = this.#served[round]
      if (before !== undefined && now !== undefined) this.#setup.era.laterRound(before !== now)
    }
  }

  #endpoint(): string {
    claimRequest(this.#setup)
    this.#attemptStart = performance.now()
    this.#attemptRefused = false
    return (this.#attemptUrl = this.#rotation.next(this.#previous))
  }

  #onRound(info: RoundInfo): void {
    const now = performance.now()
    const { metrics, era } = this.#setup
    const replica = info.headers.get('x-replica') ?? undefined
    if (info.attempt === 2) metrics.retried(info.round, now)
    this.#rotation.settled(this.#attemptUrl, info.status, replica, this.#attemptRefused)
    if (this.#label === 'task') this.#countTaskRequest(info.method, replica)
    if (!replica) return
    if (this.#label === 'task') {
      const label = TASK_LABELS[info.method]
      if (label) era.latency(label, now - this.#attemptStart)
    } else {
      this.#served[info.round - 1] = replica
      const label: LatencyLabel = this.#label === 'flow' ? `round_${info.round}` : this.#label
      era.latency(label, now - this.#attemptStart)
    }
    this.#previous = replica
  }

  /** One attempt of a task's request: what it was, and whether it changed replicas. */
  #countTaskRequest(method: string, replica: string | undefined): void {
    const tasks = this.#setup.metrics.tasks
    if (method === METHODS.toolsCall) {
      if (!replica) tasks.creationsUnanswered += 1
      return
    }
    if (!replica) return
    if (method === METHODS.tasksGet) tasks.polls += 1
    if (method === METHODS.tasksUpdate) tasks.updates += 1
    if (this.#previous !== undefined) this.#setup.era.laterRound(this.#previous !== replica)
  }

  #elicit(params: ElicitRequestParams): ElicitResult {
    try {
      if (!this.#answer) throw new WrongOutcome('unexpected_question', params.message)
      if (this.#label === 'task') this.#setup.metrics.tasks.answers += 1
      return this.#answer(questionOf(params))
    } catch (error) {
      this.#answerError ??= error
      throw error
    }
  }
}
