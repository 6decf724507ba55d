/**
 * @module mcp/tasks/runner
 * Runs tasks on this replica, under a lease in the shared store, so that any replica can finish a
 * task whose runner died:
 * - a run holds the record's lease (`leaseOwner`, `leaseExpiresAt`) and renews it every third of
 *   the lease; every write is a compare-and-set on the record's version and renews the lease too.
 *   A miss re-reads the record: if another replica holds the lease, or the task is terminal or gone,
 *   the run has lost it and stops writing (it aborts its handler's signal); if `tasks/cancel` set
 *   the cancel flag, the run aborts its handler and ends the task `cancelled`. A replica that
 *   stalls past its lease and comes back may still finish a step another replica re-runs: task
 *   steps must be idempotent (write under ids chosen in a `ctx.once`), the CAS keeps the record
 *   itself right;
 * - the handler runs from the top with the record's journal and the answers `tasks/update` stored
 *   (`Replay`), in a `TaskHandlerContext`: `ctx.once` results are written into the record before
 *   they are returned, `ctx.progress` sets `statusMessage` (coalesced: at most one write queued);
 * - when it asks for input, the run writes `input_required`, the requests under wire keys new to
 *   the task, the journal, and releases the lease; `tasks/update` makes the task runnable again;
 * - its end is one terminal write: `completed` with the tool's result (an `isError` result
 *   included), `failed` with the JSON-RPC error it threw (a -32021 for an ask the creating request
 *   cannot serve; anything but an `McpError` is a -32603 whose cause is logged), or `cancelled`,
 *   which also brings the record's expiry forward to `resultTtlMs` after the end (never later than
 *   it was): an ended task's outcome is kept only that long. A handler that met an unreachable
 *   store (`StoreUnavailableError`) ends nothing: the lease goes back (or runs out) for a takeover;
 * - `sweep()` is one pass of the takeover loop: it claims (CAS) working tasks whose lease is absent
 *   or expired, up to this replica's room (`maxRunningTasks`), and runs them; `startTakeover` repeats it;
 * - `run(id, slice)` claims one task the same way and runs it in the caller's own time, resolving
 *   once it has ended, parked or stopped: a Durable Object's alarm (`workers/task-runner-object.ts`)
 *   drives its task with it instead of a timer, and ends a slice of the run by aborting `slice`.
 * Once the replica's shutdown began (`stopTakingWork`) it starts no run: it takes nothing over, and a
 * task made runnable through it is left unleased for another replica's sweep. On shutdown, and at
 * the end of a slice, runs stop and release their leases, so another run (on any replica) takes
 * them over at once.
 *
 * The wire methods are `engine.ts`'s; what the record's JSON fields hold is `record.ts`'s.
 */
import { ReplayHandlerContext, type ContextInput } from '../context.ts'
import { type McpLogger } from '../logger.ts'
import { ErrorCode, INTERNAL_ERROR_MESSAGE, McpError, StoreUnavailableError } from '../errors.ts'
import { METHODS, PROTOCOL_VERSION } from '../protocol.ts'
import { Replay } from '../replay.ts'
import type { CompiledServer } from '../server.ts'
import { Cancellation, ResponseChannel } from '../streaming.ts'
import {
  TERMINAL_TASK_STATUSES,
  type TaskPatch,
  type TaskRecord,
  type TaskStore,
} from '../task-store.ts'
import { runTool } from '../tool-call.ts'
import type { CallToolResult } from '../wire.ts'
import {
  cancelledPatch,
  endedPatch,
  issueKeys,
  needsRunner,
  readCall,
  readJournal,
  writeJournal,
  type TaskEnd,
} from './record.ts'

/** Compare-and-set attempts of one write before the run gives up (the record kept changing). */
const MAX_WRITE_ATTEMPTS = 8

export interface TaskRunnerOptions<Deps> {
  server: CompiledServer<Deps>
  deps: Deps
  store: TaskStore
  /** This replica's name in leases; unique per process. */
  owner: string
  logger: McpLogger
  leaseMs: number
  /** Most tasks this replica runs at once. */
  maxRunningTasks: number
  /** Largest journal a task may park with, in characters; past it the task fails. */
  maxJournalChars: number
  /** How long an ended task's record is kept (never past its expiry). */
  resultTtlMs: number
  now: () => number
}

/**
 * Why a run stopped before its handler ended on its own: a cancel, a lost lease, or a release (the
 * replica shuts down, or the run's slice ended), which hands the lease back.
 */
type StopReason = 'cancel' | 'lost' | 'release'

/** The run no longer holds the lease (another replica does, or the task is terminal or gone). */
class LeaseLostError extends Error {
  override name = 'LeaseLostError'
}

const JOURNAL_FULL =
  'Internal error: this task has gathered more input than the server allows; start it again with valid answers.'

/** A handler's context inside its task; see `ToolContext` for what changes. */
class TaskHandlerContext<Deps> extends ReplayHandlerContext<Deps> {
  readonly #run: TaskRun<Deps>

  constructor(run: TaskRun<Deps>, input: ContextInput<Deps>, replay: Replay) {
    super(input, replay, `task:${run.id}`, 'running')
    this.#run = run
  }

  override progress(progress: number, total?: number, message?: string): void {
    this.#run.progress(message ?? (total === undefined ? `${progress}` : `${progress} of ${total}`))
  }

  override async once<T>(key: string, step: () => T | Promise<T>): Promise<T> {
    let fresh = false
    const value = await super.once(key, () => {
      fresh = true
      return step()
    })
    if (fresh) await this.#run.checkpoint()
    return value
  }
}

/** One run of one task on this replica, from the lease it was given to its last write. */
class TaskRun<Deps> {
  readonly id: string
  readonly #options: TaskRunnerOptions<Deps>
  /** The record's expiry, which only the run's last write (the end) changes. */
  readonly #expiry: Pick<TaskRecord, 'expiresAt'>
  readonly #abort = new AbortController()
  #version: number
  #stop: StopReason | undefined
  #writes: Promise<unknown> = Promise.resolve()
  #statusMessage: string | undefined
  #progressQueued = false
  #replay: Replay | undefined
  #issued: Record<string, string> = {}
  readonly #ended = Promise.withResolvers<void>()

  /** Settles once the run has ended, its last record written (`end`, by the runner that drove it). */
  get ended(): Promise<void> {
    return this.#ended.promise
  }

  end(): void {
    this.#ended.resolve()
  }

  constructor(options: TaskRunnerOptions<Deps>, record: TaskRecord) {
    this.#options = options
    this.id = record.id
    this.#expiry = { expiresAt: record.expiresAt }
    this.#version = record.version
  }

  /** Stops the handler; a lost lease outranks a cancel, which outranks a release. */
  stop(reason: StopReason): void {
    if (this.#stop === 'lost' || (this.#stop === 'cancel' && reason === 'release')) return
    this.#stop = reason
    this.#abort.abort(reason)
  }

  /** Sets `statusMessage`; one write is queued at most, carrying the latest message. */
  progress(message: string): void {
    this.#statusMessage = message
    if (this.#progressQueued) return
    this.#progressQueued = true
    this.#write(() => {
      this.#progressQueued = false
      return { statusMessage: this.#statusMessage, updatedAt: this.#options.now() }
    }).catch(() => {})
  }

  /** Writes the journal into the record (after a fresh `ctx.once` result). */
  checkpoint(): Promise<void> {
    return this.#write(() => ({
      journal: writeJournal({ replay: this.#replay!.journal(), issued: this.#issued }),
    }))
  }

  /** Runs the handler and settles the task; never rejects. */
  async execute(record: TaskRecord): Promise<void> {
    const { server, deps, logger, now } = this.#options
    if (record.cancelRequested) this.stop('cancel')
    // Cancelled (or released) between the lease and the start: the handler never runs.
    if (this.#stop) return this.#settleStopped()
    const tool = server.tools.get(record.tool)
    if (!tool) {
      const error = new McpError(ErrorCode.InvalidParams, `Unknown tool: ${record.tool}`)
      return this.#finish(() => this.#failed(error))
    }
    const call = readCall(record.args)
    const journal = readJournal(record.journal)
    this.#issued = journal.issued
    const responses =
      record.inputResponses === undefined
        ? undefined
        : (JSON.parse(record.inputResponses) as Record<string, unknown>)
    const replay = new Replay(journal.replay, responses, call.capabilities)
    this.#replay = replay
    const request = {
      id: record.id,
      method: METHODS.toolsCall,
      params: { name: record.tool, arguments: call.arguments },
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: call.capabilities,
    }
    const cancellation = new Cancellation(this.#abort.signal)
    const input = {
      deps,
      principal: call.principal,
      request,
      cancellation,
      channel: new ResponseChannel(cancellation),
    }
    const ctx = new TaskHandlerContext(this, input, replay)
    const renewal = setInterval(() => this.#renew(), Math.max(1, this.#options.leaseMs / 3))
    let result: CallToolResult | undefined
    let thrown: unknown
    try {
      result = await runTool(tool, call.arguments, ctx, logger)
    } catch (error) {
      thrown = error
    } finally {
      clearInterval(renewal)
    }
    await this.#writes

    if (this.#stop) return this.#settleStopped()
    // The store went away: not the task's failure (module header).
    if (thrown instanceof StoreUnavailableError) return this.#releaseLease()
    const missing = replay.missingCapability
    if (missing) return this.#finish(() => this.#failed(missing))
    if (replay.suspended) {
      const inputRequests = JSON.stringify(issueKeys(replay.inputRequests(), this.#issued))
      const journalText = writeJournal({ replay: replay.journal(), issued: this.#issued })
      if (journalText.length > this.#options.maxJournalChars) {
        return this.#finish(() => this.#failed(new McpError(ErrorCode.InternalError, JOURNAL_FULL)))
      }
      // A cancel seen while writing this (the CAS missed) ends the task: nothing would run it again.
      return this.#finish(() =>
        this.#stop === 'cancel'
          ? cancelledPatch(this.#expiry, this.#end())
          : {
              status: 'input_required',
              statusMessage: 'Waiting for input from the client.',
              inputRequests,
              inputResponses: null,
              journal: journalText,
              updatedAt: now(),
              leaseOwner: null,
              leaseExpiresAt: null,
            }
      )
    }
    if (result !== undefined) {
      const text = JSON.stringify(result)
      return this.#finish(() =>
        endedPatch(this.#expiry, 'completed', { result: text }, this.#end())
      )
    }
    let error: McpError
    if (thrown instanceof McpError) {
      error = thrown
    } else {
      // A suspension without a pending ask, or a failure runTool let through (after an abort).
      logger.error('task failed', { task: this.id, tool: record.tool, error: String(thrown) })
      error = new McpError(ErrorCode.InternalError, INTERNAL_ERROR_MESSAGE)
    }
    return this.#finish(() => this.#failed(error))
  }

  /** Now, as the moment the task ends, and how long its record is kept from then. */
  #end(): TaskEnd {
    return { now: this.#options.now(), resultTtlMs: this.#options.resultTtlMs }
  }

  /** The patch that ends the task `failed` with the JSON-RPC error `error`. */
  #failed(error: McpError): TaskPatch {
    const fields = { statusMessage: error.message, error: JSON.stringify(error) }
    return endedPatch(this.#expiry, 'failed', fields, this.#end())
  }

  /** The end of a stopped run: none after a lost lease, `cancelled`, or the lease released. */
  #settleStopped(): Promise<void> {
    switch (this.#stop) {
      case 'cancel':
        return this.#finish(() => cancelledPatch(this.#expiry, this.#end()))
      case 'release':
        return this.#releaseLease()
      default:
        return Promise.resolve()
    }
  }

  /** Hands the lease back: the task stays `working`, for the next run on any replica. */
  #releaseLease(): Promise<void> {
    return this.#finish(() => ({ leaseOwner: null, leaseExpiresAt: null }))
  }

  #renew(): void {
    this.#write(() => ({})).catch((error: unknown) => {
      if (!(error instanceof LeaseLostError))
        this.#options.logger.warn('task lease renewal failed', {
          task: this.id,
          error: String(error),
        })
    })
  }

  /** The run's last write: failures are logged, a lost lease is not a failure. */
  async #finish(patch: () => TaskPatch): Promise<void> {
    try {
      await this.#write(patch)
    } catch (error) {
      if (!(error instanceof LeaseLostError))
        this.#options.logger.error('task record write failed', {
          task: this.id,
          error: String(error),
        })
    }
  }

  /** Queues a write after the ones before it (each one a CAS on the version the last one left). */
  #write(patch: () => TaskPatch): Promise<void> {
    const write = this.#writes.then(() => this.#apply(patch))
    this.#writes = write.catch(() => {})
    return write
  }

  async #apply(patch: () => TaskPatch): Promise<void> {
    const { store, owner, leaseMs, now } = this.#options
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      if (this.#stop === 'lost') throw new LeaseLostError()
      const updated = await store.updateTask(this.id, this.#version, {
        leaseExpiresAt: now() + leaseMs,
        ...patch(),
      })
      if (updated) {
        this.#version = updated.version
        if (updated.cancelRequested && !TERMINAL_TASK_STATUSES.has(updated.status))
          this.stop('cancel')
        return
      }
      const current = await store.getTask(this.id)
      if (!current || current.leaseOwner !== owner || TERMINAL_TASK_STATUSES.has(current.status)) {
        this.stop('lost')
        throw new LeaseLostError()
      }
      this.#version = current.version
      if (current.cancelRequested) this.stop('cancel')
    }
    throw new Error(`The record of task ${this.id} kept changing under its runner.`)
  }
}

/** The tasks this replica runs, and the takeover of tasks whose runner is gone. */
export class TaskRunner<Deps> {
  readonly #options: TaskRunnerOptions<Deps>
  readonly #runs = new Map<string, TaskRun<Deps>>()
  /** False once this replica's shutdown began: it starts no run from then on. */
  #takesWork = true

  constructor(options: TaskRunnerOptions<Deps>) {
    this.#options = options
  }

  /** This replica's name in leases. */
  get owner(): string {
    return this.#options.owner
  }

  /** Whether this replica may start one more run now. */
  hasRoom(): boolean {
    return this.#takesWork && this.#runs.size < this.#options.maxRunningTasks
  }

  /**
   * Starts no run from now on (this replica's shutdown began): no takeover, no task leased here;
   * the runs going on go on until {@link shutdown}.
   */
  stopTakingWork(): void {
    this.#takesWork = false
  }

  /**
   * Runs a task whose lease this replica was just given (the record as that write left it), in the
   * background: it starts after the current request has been answered.
   */
  launch(record: TaskRecord): void {
    if (this.#runs.has(record.id)) return
    const run = this.#register(record)
    setTimeout(() => void this.#drive(run, record), 0)
  }

  /**
   * Claims task `id` when it needs a runner (working, unexpired, no live lease) and this replica has
   * room, and runs it now; resolves, never rejecting for the handler's sake, once the run has ended,
   * parked the task in `input_required`, or stopped. Aborting `slice` ends the run early: it releases
   * the lease, and the next run continues from the journal. Answers the record as it is afterwards
   * (`undefined` once it is gone), read fresh, so the caller decides when to look again.
   */
  async run(id: string, slice?: AbortSignal): Promise<TaskRecord | undefined> {
    const claimed = this.#runs.has(id) || !this.hasRoom() ? undefined : await this.#claim(id)
    if (claimed) {
      const run = this.#register(claimed)
      const release = () => run.stop('release')
      if (slice?.aborted) release()
      slice?.addEventListener('abort', release, { once: true })
      try {
        await this.#drive(run, claimed)
      } finally {
        slice?.removeEventListener('abort', release)
      }
    }
    return this.#options.store.getTask(id)
  }

  /** Aborts this replica's run of a task cancelled through it (other replicas see the flag). */
  cancel(id: string): void {
    this.#runs.get(id)?.stop('cancel')
  }

  /**
   * One takeover pass: claims working tasks that no live lease holds (their runner died, stopped,
   * or never had room), up to this replica's room, and runs them. Answers how many it started.
   */
  async sweep(): Promise<number> {
    const { store, maxRunningTasks, now } = this.#options
    const room = maxRunningTasks - this.#runs.size
    if (!this.#takesWork || room <= 0) return 0
    let started = 0
    for (const id of await store.findRunnableTasks(now(), room)) {
      if (this.#runs.has(id) || !this.hasRoom()) continue
      const claimed = await this.#claim(id)
      if (!claimed) continue
      this.launch(claimed)
      started++
    }
    return started
  }

  /** Sweeps every `intervalMs` until `signal` aborts (the timer never keeps a process alive). */
  startTakeover(intervalMs: number, signal?: AbortSignal): void {
    let sweeping = false
    const timer = setInterval(() => {
      if (sweeping) return
      sweeping = true
      this.sweep()
        .catch((error: unknown) => {
          this.#options.logger.warn('task takeover sweep failed; the next one retries', {
            error: String(error),
          })
        })
        .finally(() => {
          sweeping = false
        })
    }, intervalMs)
    ;(timer as { unref?: () => void }).unref?.()
    signal?.addEventListener('abort', () => clearInterval(timer), { once: true })
  }

  /**
   * Stops every run of this replica; each releases its lease for another replica to take over.
   * Resolves once every one has ended and written its last record (never rejects).
   */
  shutdown(): Promise<void> {
    this.stopTakingWork()
    const runs = [...this.#runs.values()]
    for (const run of runs) run.stop('release')
    return Promise.all(runs.map((run) => run.ended)).then(() => undefined)
  }

  /** A run of `record` (whose lease this replica holds), known to this replica until it ends. */
  #register(record: TaskRecord): TaskRun<Deps> {
    const run = new TaskRun(this.#options, record)
    this.#runs.set(record.id, run)
    return run
  }

  /** Runs the handler of a registered run to the run's end; never rejects. */
  async #drive(run: TaskRun<Deps>, record: TaskRecord): Promise<void> {
    try {
      await run.execute(record)
    } catch (error) {
      this.#options.logger.error('task run failed', { task: record.id, error: String(error) })
    } finally {
      this.#runs.delete(record.id)
      run.end()
    }
  }

  /**
   * Leases task `id` to this replica (CAS) when it needs a runner: working, unexpired, and no live
   * lease. Answers the record as the claim left it, or `undefined` when there was nothing to claim.
   */
  async #claim(id: string): Promise<TaskRecord | undefined> {
    const { store, owner, leaseMs, now } = this.#options
    const record = await store.getTask(id)
    const at = now()
    if (!record || !needsRunner(record, at)) return undefined
    return store.updateTask(id, record.version, { leaseOwner: owner, leaseExpiresAt: at + leaseMs })
  }
}
