/**
 * @module mcp/tasks/engine
 * The tasks extension (`io.modelcontextprotocol/tasks`) served by one handler: `TaskEngine` creates
 * the task of a `tools/call` whose handler called `ctx.startTask()` (the record, readable on every
 * replica, is stored before `CreateTaskResult` is answered), and answers `tasks/get`, `tasks/update`
 * and `tasks/cancel` from the shared store, so any replica answers them. Every method first needs
 * the extension declared in the request's own `_meta` (-32021, before the params are read), then a
 * task of the caller: an unknown, expired, or other principal's id answers the same -32602. Then,
 * with auth, the scopes of the tool that created the task (the base scopes and the tool's own: what
 * it needs to act, so also to answer its questions, read its result or cancel it): too few throw
 * `InsufficientScopeError`, which `modern-era.ts` answers with the 403 challenge, nothing changed.
 * - `tasks/update` keeps the answers to outstanding keys only (others are ignored, values unread),
 *   removes those keys from `inputRequests` before it acknowledges, and once none is left makes the
 *   task runnable, claiming it for this replica when it has room (else any replica's takeover
 *   loop runs it);
 * - `tasks/cancel` ends a task nothing runs (`input_required`, or `working` without a live lease)
 *   as `cancelled` at once; for a running task it sets the cancel flag, which its runner (here, at
 *   once; on another replica, at its next write) turns into `cancelled`. Terminal tasks stay as they
 *   are (the ack is the same).
 * Every change is a compare-and-set on the record's version, retried on a miss from a fresh read,
 * and terminal records are never written. Running tasks is `runner.ts`'s job; the wire shapes are
 * `wire.ts`'s, the options, their defaults and bounds `options.ts`'s. Expired records are purged by
 * the store's sweep.
 *
 * What one principal can make the store keep is bounded. Each record is: its arguments by the
 * request body limit, its journal and the answers `tasks/update` stores by `maxJournalChars` (an
 * update that would store more answers -32602, nothing stored), its result by the tool
 * (`export_notes`: `MAX_EXPORT_BYTES`). And so is their number:
 * - at most `maxLiveTasksPerPrincipal` live tasks per principal, a task being live until its record expires:
 *   while it runs, while it waits for input, and while its outcome is kept. The cap counts the
 *   principal (issuer and subject) across every OAuth client it calls through, not the owner
 *   binding (principal and client) a task is kept for: a client id costs an attacker nothing (a
 *   dynamic registration, or a client ID metadata document at any URL it serves), so a cap per
 *   binding would be multiplied by as many clients as it cares to invent. The price, one runaway
 *   client of a person using up the places of their other clients, is the person's own and ends
 *   with the retention below. The store counts and inserts in one atomic step, so creations racing
 *   on every replica never exceed the cap. Over it, the `tools/call` answers the `CapExceededError`
 *   every per-caller cap answers (`errors.ts`: -32602 at HTTP 200, so a client shows the message to
 *   the person or model instead of taking it for a transport failure), the message saying how many
 *   live tasks the caller holds and what frees a place, `data`
 *   `{ cap: 'tasks', scope: 'principal', limit, held }`; nothing is stored and the handler's task
 *   part never runs;
 * - a task's record is kept `resultTtlMs` after it ends (completed, failed or cancelled), never past
 *   its `ttlMs`, which shrinks to match (the extension lets it change): long enough for a polling
 *   client to read the outcome, and for one that lost its connection to come back, rather than an
 *   hour of a bulky result nobody reads again. Its place under the cap is free from then on.
 *
 * Where runs happen: on this replica (its `TaskRunner`, the takeover loop picking up what others left),
 * or, with a `scheduler`, nowhere here: a runtime whose requests cannot outlive their response (a
 * Worker) hands each runnable task to a runner of its own (`workers/task-scheduler.ts`: the task's
 * Durable Object). The engine then leases nothing to itself: it hands a task over before answering
 * `CreateTaskResult` and when `tasks/update` makes it runnable, tells the runner of a cancel it
 * flagged, and hands over again a task `tasks/get` finds working with no live lease (its hand-off was
 * lost, or its runner died and the lease ran out), so a client's polling resumes it. A failed hand-off
 * is logged, never answered: the record is what counts, and the next poll hands it over again. The
 * runner side is `run(id, slice)`, one task at a time, with no loop (`takeoverIntervalMs: 0`).
 */
import {
  callerBinding,
  type DispatchEnv,
  type DispatchResult,
  type TaskService,
} from '../dispatch-env.ts'
import { type McpLogger } from '../logger.ts'
import type { McpRequest } from '../envelope.ts'
import { CapExceededError, ErrorCode, McpError } from '../errors.ts'
import { positiveWholeNumber } from '../options.ts'
import { parseParams } from '../params.ts'
import { METHODS } from '../protocol.ts'
import { randomBase64url } from '../random.ts'
import type { Journal } from '../replay.ts'
import type { StateBinding } from '../sealed-state.ts'
import {
  InsufficientScopeError,
  missingScopes,
  requiredScopes,
  type ScopeGrant,
} from '../scopes.ts'
import type { CompiledServer } from '../server.ts'
import {
  TERMINAL_TASK_STATUSES,
  type NewTask,
  type TaskPatch,
  type TaskRecord,
  type TaskStore,
} from '../task-store.ts'
import { isObject } from '../wire.ts'
import {
  cancelledPatch,
  leaseHeld,
  needsRunner,
  readJournal,
  writeCall,
  writeJournal,
} from './record.ts'
import { taskSettings, type TaskOptions, type TaskScheduler, type TaskSettings } from './options.ts'
import { TaskRunner } from './runner.ts'
import {
  TaskIdParamsSchema,
  UpdateTaskParamsSchema,
  createTaskResult,
  declaresTasks,
  detailedTask,
  newTaskId,
  taskNotFound,
  tasksCapabilityMissing,
} from './wire.ts'

/** Compare-and-set attempts of one `tasks/update` or `tasks/cancel` before it answers -32603. */
const MAX_CHANGE_ATTEMPTS = 8

/** The -32602 of a `tasks/update` whose answers would make the task hold more than `max` characters. */
function answersTooLarge(max: number): McpError {
  return new McpError(
    ErrorCode.InvalidParams,
    `Invalid params: with these answers the task would hold more than ${max} characters of answers; nothing was stored, answer with less.`
  )
}

/**
 * The refusal of a task creation over the cap: how many live tasks the caller's principal holds (as
 * counted just after the refusal), and what frees a place.
 */
function tooManyTasks(live: number, maxLive: number, resultTtlMs: number): CapExceededError {
  return new CapExceededError(
    { cap: 'tasks', scope: 'principal', limit: maxLive, held: live },
    `Too many tasks: you hold ${live} live tasks (running, waiting for input, or ended and kept), ` +
      `and at most ${maxLive} are allowed across all your clients. Wait for running tasks to ` +
      'end, cancel those you no longer need (tasks/cancel), or let the outcomes of ended tasks ' +
      `expire (each is kept ${describeDuration(resultTtlMs)} after its task ends), then call again.`
  )
}

/** "10 minutes", "1 minute", "90 seconds": a duration as the error messages state it. */
function describeDuration(ms: number): string {
  const [count, unit] =
    ms % 60_000 === 0 ? [ms / 60_000, 'minute'] : [Math.ceil(ms / 1000), 'second']
  return `${count} ${unit}${count === 1 ? '' : 's'}`
}

/** Who asks about a task: the owner binding tasks are kept for, and the scopes the caller holds. */
interface TaskCaller {
  owner: string
  grant: Pick<ScopeGrant, 'grantedScopes' | 'baseScopes'>
}

export class TaskEngine<Deps> implements TaskService<Deps> {
  readonly #server: CompiledServer<Deps>
  readonly #store: TaskStore
  readonly #runner: TaskRunner<Deps>
  readonly #scheduler: TaskScheduler | undefined
  readonly #logger: McpLogger
  readonly #settings: TaskSettings

  constructor(
    { server, deps, logger }: { server: CompiledServer<Deps>; deps: Deps; logger: McpLogger },
    options: TaskOptions
  ) {
    const settings = taskSettings(options)
    this.#server = server
    this.#store = options.store
    this.#scheduler = options.scheduler
    this.#logger = logger
    this.#settings = settings
    const replica = options.replicaId ?? 'replica'
    this.#runner = new TaskRunner({
      server,
      deps,
      store: options.store,
      owner: `${replica}-${randomBase64url(6)}`,
      logger,
      leaseMs: settings.leaseMs,
      maxRunningTasks: settings.maxRunningTasks,
      maxJournalChars: settings.maxJournalChars,
      resultTtlMs: settings.resultTtlMs,
      now: settings.now,
    })
  }

  /** Sweeps for tasks to take over every `intervalMs` until `signal` aborts, then stops runs. */
  startTakeover(intervalMs: number, signal?: AbortSignal): void {
    positiveWholeNumber('takeoverIntervalMs', intervalMs)
    this.#runner.startTakeover(intervalMs, signal)
  }

  /**
   * Runs task `id` here if it needs a runner, until it ends, parks or `slice` aborts
   * (`TaskRunner.run`); answers the record as it is afterwards. The entry of a scheduler's runner.
   */
  run(id: string, slice?: AbortSignal): Promise<TaskRecord | undefined> {
    return this.#runner.run(id, slice)
  }

  /** Stops this replica's run of task `id` at once, for a cancel flagged through another replica. */
  stopCancelled(id: string): void {
    this.#runner.cancel(id)
  }

  /**
   * Starts no run from now on, this replica's shutdown having begun (`TaskRunner.stopTakingWork`):
   * tasks created or answered through it are left for another replica to run.
   */
  stopTakingWork(): void {
    this.#runner.stopTakingWork()
  }

  /** Stops this replica's runs; resolves once each has released its lease for another replica. */
  shutdown(): Promise<void> {
    return this.#runner.shutdown()
  }

  /**
   * Creates the task of a `tools/call` whose handler started it, with the journal of the request
   * phase (its answers and `ctx.once` results), leased to this replica when it has room, and answers
   * `CreateTaskResult` once the record is stored; a caller whose principal holds `maxLiveTasksPerPrincipal` live
   * tasks already gets the -32602 of {@link tooManyTasks} instead, and nothing is stored or run.
   */
  async create(
    env: DispatchEnv<Deps>,
    binding: StateBinding,
    journal: Journal
  ): Promise<DispatchResult> {
    const now = this.#settings.now()
    const leased = this.#leasesHere()
    const task: NewTask = {
      id: newTaskId(),
      owner: binding.principal,
      principal: env.principal,
      tool: binding.target,
      args: writeCall({
        arguments: binding.args as Record<string, unknown>,
        principal: env.principal,
        capabilities: env.request.clientCapabilities,
      }),
      status: 'working',
      createdAt: now,
      updatedAt: now,
      expiresAt: now + this.#settings.ttlMs,
      pollIntervalMs: this.#settings.pollIntervalMs,
      journal: writeJournal({ replay: journal, issued: {} }),
      leaseOwner: leased ? this.#runner.owner : undefined,
      leaseExpiresAt: leased ? now + this.#settings.leaseMs : undefined,
    }
    const record = await this.#store.createTask(task, this.#settings.maxLiveTasksPerPrincipal)
    if (!record) {
      const live = await this.#store.countLiveTasks(env.principal, now)
      throw tooManyTasks(live, this.#settings.maxLiveTasksPerPrincipal, this.#settings.resultTtlMs)
    }
    if (leased) this.#runner.launch(record)
    else await this.#handOver(record.id)
    return { result: createTaskResult(record), interactive: true }
  }

  /** `tasks/get`, `tasks/update` and `tasks/cancel`. */
  async serve(request: McpRequest, env: DispatchEnv<Deps>): Promise<DispatchResult> {
    if (!declaresTasks(request.clientCapabilities)) throw tasksCapabilityMissing(request.method)
    const caller = { owner: callerBinding(env.principal, env.client), grant: env }
    switch (request.method) {
      case METHODS.tasksGet: {
        const { taskId } = parseParams(TaskIdParamsSchema, request.params)
        const record = await this.#find(taskId, caller)
        if (this.#scheduler && needsRunner(record, this.#settings.now()))
          await this.#handOver(taskId)
        return { result: detailedTask(record) }
      }
      case METHODS.tasksUpdate: {
        const { taskId, inputResponses } = parseParams(UpdateTaskParamsSchema, request.params)
        await this.#change(taskId, caller, (record) => this.#update(record, inputResponses))
        return { result: {} }
      }
      case METHODS.tasksCancel: {
        const { taskId } = parseParams(TaskIdParamsSchema, request.params)
        const record = await this.#change(taskId, caller, (record) => this.#cancel(record))
        this.#runner.cancel(taskId)
        const scheduler = this.#scheduler
        if (scheduler && record.cancelRequested && !TERMINAL_TASK_STATUSES.has(record.status))
          await this.#tell('cancel', taskId, () => scheduler.cancel(taskId))
        return { result: {} }
      }
      default:
        throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`)
    }
  }

  /**
   * The caller's live task `id`; anything else answers the one not-found error. Only then, a caller
   * lacking the scopes of the task's tool gets `InsufficientScopeError` (its existence is no news).
   */
  async #find(id: string, caller: TaskCaller): Promise<TaskRecord> {
    const record = await this.#store.getTask(id)
    if (!record || record.owner !== caller.owner || record.expiresAt <= this.#settings.now())
      throw taskNotFound()
    const own = requiredScopes(this.#server, METHODS.toolsCall, { name: record.tool })
    const required = missingScopes(own, caller.grant)
    if (required) throw new InsufficientScopeError(required)
    return record
  }

  /**
   * Applies the change `decide` makes of the caller's task, as a compare-and-set, deciding again
   * from a fresh read on every miss; `decide` answers no patch when there is nothing to change.
   * Terminal tasks are never changed. Resolves once the change is stored (and a task it made
   * runnable is launched or handed over), with the record as it then is.
   */
  async #change(
    id: string,
    caller: TaskCaller,
    decide: (record: TaskRecord) => TaskPatch | undefined
  ): Promise<TaskRecord> {
    for (let attempt = 0; attempt < MAX_CHANGE_ATTEMPTS; attempt++) {
      const record = await this.#find(id, caller)
      if (TERMINAL_TASK_STATUSES.has(record.status)) return record
      const patch = decide(record)
      if (!patch) return record
      const updated = await this.#store.updateTask(id, record.version, patch)
      if (!updated) continue
      if (patch.leaseOwner === this.#runner.owner) this.#runner.launch(updated)
      else if (this.#scheduler && needsRunner(updated, this.#settings.now()))
        await this.#handOver(id)
      return updated
    }
    throw new McpError(
      ErrorCode.InternalError,
      'Internal error: the task kept changing while this request tried to change it; try again.'
    )
  }

  /**
   * The answers of `tasks/update` to the task's outstanding keys (all others ignored, their values
   * never read); when none is left outstanding, the task is runnable again, claimed for this replica
   * when it has room.
   */
  #update(record: TaskRecord, inputResponses: Record<string, unknown>): TaskPatch | undefined {
    if (record.status !== 'input_required' || record.inputRequests === undefined) return undefined
    const outstanding = JSON.parse(record.inputRequests) as Record<string, unknown>
    const answered = Object.keys(inputResponses).filter((key) => Object.hasOwn(outstanding, key))
    if (answered.length === 0) return undefined
    const { issued } = readJournal(record.journal)
    const stored: unknown =
      record.inputResponses === undefined ? {} : JSON.parse(record.inputResponses)
    const responses = isObject(stored) ? stored : {}
    for (const key of answered) {
      responses[issued[key] ?? key] = inputResponses[key]
      delete outstanding[key]
    }
    const answers = JSON.stringify(responses)
    if (answers.length > this.#settings.maxJournalChars)
      throw answersTooLarge(this.#settings.maxJournalChars)
    const now = this.#settings.now()
    if (Object.keys(outstanding).length > 0) {
      return {
        inputRequests: JSON.stringify(outstanding),
        inputResponses: answers,
        updatedAt: now,
      }
    }
    const leased = this.#leasesHere()
    return {
      status: 'working',
      statusMessage: 'Resuming with the answers received.',
      inputRequests: null,
      inputResponses: answers,
      updatedAt: now,
      leaseOwner: leased ? this.#runner.owner : null,
      leaseExpiresAt: leased ? now + this.#settings.leaseMs : null,
    }
  }

  /** Whether a task made runnable here is leased to this replica's runner (never with a scheduler). */
  #leasesHere(): boolean {
    return !this.#scheduler && this.#runner.hasRoom()
  }

  /** Hands task `id` to the scheduler, when there is one. */
  async #handOver(id: string): Promise<void> {
    const scheduler = this.#scheduler
    if (scheduler) await this.#tell('hand-off', id, () => scheduler.schedule(id))
  }

  /**
   * A message to the scheduler. Its failure is logged, never answered: the record decides, and
   * what the message would have hastened still happens (a hand-off, at the next `tasks/get`; a
   * cancel, when the run next writes and sees the flag).
   */
  async #tell(what: 'hand-off' | 'cancel', id: string, send: () => Promise<void>): Promise<void> {
    try {
      await send()
    } catch (error) {
      this.#logger.warn(`task ${what} could not reach its runner`, {
        task: id,
        error: String(error),
      })
    }
  }

  /** Ends a task nothing runs at once; flags a running one for its runner. */
  #cancel(record: TaskRecord): TaskPatch | undefined {
    const now = this.#settings.now()
    if (record.status === 'working' && leaseHeld(record, now))
      return record.cancelRequested ? undefined : { cancelRequested: true }
    return cancelledPatch(record, { now, resultTtlMs: this.#settings.resultTtlMs })
  }
}
