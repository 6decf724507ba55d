/**
 * @module mcp/workers/task-runner-object
 * `defineTaskRunnerObject(setup)` builds `TaskRunnerObject`, the Durable Object that runs one task
 * on Workers (`task-scheduler.ts` explains why one object per task, and owns the wire). A Worker entry
 * builds it with what its handlers need (`setup(env)`: the server, the handlers' deps, the task
 * store), exports it, and binds it as `TASK_RUNNER` with a SQLite-backed migration of its own.
 *
 * An object's life:
 * - `POST /schedule` (the task id) stores the id (another id gets 409: an object runs one task for
 *   life) and sets the alarm to now, both before the 204 answer;
 * - the alarm runs the task with the engine's own runner (`TaskEngine.run`): the same lease,
 *   journal and compare-and-set rules as on Node, under a lease in this object's name (a random
 *   suffix per life of the object). It claims the task if it needs a runner, runs the handler from
 *   its journal, and resolves once the task ended, parked in `input_required`, or the slice ended.
 *   Before it runs, it moves the alarm to just past the lease's end: should the object die mid-run
 *   (evicted, reset, over its CPU limit), that alarm (or the runtime's retry of the failed one)
 *   finds the lease lapsed and takes the task over from its journal. Afterwards the record decides
 *   the next alarm ({@link nextLook}): ended, gone or expired, none (the object deletes its alarm
 *   and storage); parked, the task's expiry, to clean up (the `tasks/update` that makes it
 *   runnable wakes it sooner); held by another runner's live lease (an earlier life of this
 *   object), just past that lease's end; runnable (the slice ended, or an answer arrived meanwhile),
 *   now. A `/schedule` received while the alarm runs makes it look again at once;
 * - `POST /cancel` (the task id) stops this object's run of the task at once, if the record's
 *   cancel flag is set (the object trusts the record, not the message).
 * Nothing a restart would lose is kept in memory: the id and the alarm are in the object's storage,
 * the task in the store.
 *
 * Workers limits, and how a long task is chunked. One alarm invocation may take 15 minutes of wall
 * time, 30 s of CPU by default (up to 5 minutes with `limits.cpu_ms`), and 1 000 D1 queries on
 * Workers Paid (50 on Free). So a run ends its slice after {@link TASK_SLICE_MS}: it releases its
 * lease, as on a shutdown, and the next alarm (set at once) runs the handler again from the top with
 * the journal, `ctx.once` results replayed and answers kept, so a task that journals its steps goes
 * on where it was. A task that journals its plan before it writes (the notes app's `import_notes`:
 * the id of every note), and whose writes skip what a batch already wrote, continues across as many
 * invocations as it needs and does each step once. Every invocation's queries count against the
 * limit (store reads and writes, a lease renewal every few seconds, bus events); a run past the CPU
 * limit is cut off by the runtime, which is the object dying mid-run, above. A handler that
 * journals nothing (a plain long computation) starts again at every slice, so it must finish within
 * one.
 *
 * Runtime-neutral: structural types of the Workers APIs it uses, nothing from `node:*` or from
 * workers-types.
 */
import { consoleLogger, logError, type McpLogger } from '../logger.ts'
import { compileServer, type CompiledServer, type ServerDefinition } from '../server.ts'
import { TERMINAL_TASK_STATUSES, type TaskRecord, type TaskStore } from '../task-store.ts'
import { TaskEngine } from '../tasks/engine.ts'
import { DEFAULT_TASK_LEASE_MS, type TaskOptions } from '../tasks/options.ts'
import { leaseHeld } from '../tasks/record.ts'
import { CANCEL_PATH, SCHEDULE_PATH, isTaskId } from './task-scheduler.ts'

/**
 * Longest slice of a run in one alarm invocation (their wall-time limit is 15 minutes): the
 * default `sliceMs` of {@link defineTaskRunnerObject}; a run that goes on continues in the next.
 *
 * @example
 * ```ts
 * import { defineTaskRunnerObject, TASK_SLICE_MS } from 'stateless-mcp/workers'
 *
 * export const TaskRunnerObject = defineTaskRunnerObject(setup, { sliceMs: TASK_SLICE_MS / 2 })
 * ```
 */
export const TASK_SLICE_MS = 10 * 60_000
/** How long past a lease's end the object looks again, so that it finds the lease lapsed. */
const LEASE_GRACE_MS = 250
/** The storage key of the object's task id. */
const TASK_KEY = 'task'
/** The replica name in this object's leases. */
const RUNNER_NAME = 'task-object'

/** What an object needs to run its task's handler: the same parts as the Worker's own server. */
export interface TaskRunnerHost<Deps> {
  /** What the Worker serves (or that compiled): the object runs its tools' task handlers. */
  server: ServerDefinition<Deps> | CompiledServer<Deps>
  /** What the handlers see as `ctx.deps`, built from the object's bindings. */
  deps: Deps
  /** The store the Worker's server keeps its tasks in (the same database). */
  store: TaskStore
  logger?: McpLogger
  /**
   * How long an ended task is kept (the deployment's `TASK_RESULT_TTL_SECONDS`); the engine's
   * default when absent.
   */
  tasks?: Pick<TaskOptions, 'resultTtlMs'>
}

/** Builds the host from the object's bindings (once per life of the object; a failure is retried). */
export type TaskRunnerSetup<Deps, Env> = (
  env: Env
) => TaskRunnerHost<Deps> | Promise<TaskRunnerHost<Deps>>

/** How a `TaskRunnerObject` runs its task: the lease of a run, and the slice per alarm. */
export interface TaskRunnerObjectOptions {
  /** Lease of a run, renewed every third of it. Default the engine's (10 s). */
  leaseMs?: number
  /** Longest slice of a run in one alarm invocation. Default {@link TASK_SLICE_MS}. */
  sliceMs?: number
}

/** The part of `DurableObjectStorage` the object uses. */
export interface TaskObjectStorage {
  get<T>(key: string): Promise<T | undefined>
  put(key: string, value: unknown): Promise<void>
  deleteAll(): Promise<void>
  setAlarm(scheduledTime: number): Promise<void>
  deleteAlarm(): Promise<void>
}

/** The part of `DurableObjectState` the object uses (a real state satisfies it). */
export interface TaskObjectState {
  storage: TaskObjectStorage
}

/** A `TaskRunnerObject`, as the Workers runtime calls it: its requests and its alarm. */
export interface TaskRunnerDurableObject {
  fetch(request: Request): Promise<Response>
  alarm(): Promise<void>
}

/** The class {@link defineTaskRunnerObject} returns, constructed by the runtime. */
export type TaskRunnerObjectClass<Env> = new (
  state: TaskObjectState,
  env: Env
) => TaskRunnerDurableObject

/** A running object: the engine whose runner runs the task, and the store it reads. */
interface Runner<Deps> {
  engine: TaskEngine<Deps>
  store: TaskStore
}

/**
 * When an object should look at its task again, given the record a run left at `now`: `undefined`
 * once nothing will ever need running (ended, gone, expired).
 */
export function nextLook(record: TaskRecord | undefined, now: number): number | undefined {
  if (!record || TERMINAL_TASK_STATUSES.has(record.status) || record.expiresAt <= now)
    return undefined
  if (record.status === 'input_required') return record.expiresAt
  return leaseHeld(record, now) ? record.leaseExpiresAt! + LEASE_GRACE_MS : now
}

/**
 * The `TaskRunnerObject` class of a Worker whose handlers `setup` builds: export it from the Worker
 * entry, bind it as `TASK_RUNNER` (a SQLite-backed class), and hand the server's tasks to it with a
 * `DurableObjectTaskScheduler` on the same binding. Throws `RangeError` for a
 * lease or slice that is not a positive number of milliseconds.
 *
 * @example
 * ```ts
 * import { defineTaskRunnerObject } from 'stateless-mcp/workers'
 * import { D1EngineStore } from 'stateless-mcp/d1'
 *
 * export const TaskRunnerObject = defineTaskRunnerObject(async (env: { DB: D1Database }) => {
 *   const store = new D1EngineStore({ db: env.DB })
 *   await store.migrate()
 *   return { server: definition, deps: {}, store }
 * })
 * ```
 */
export function defineTaskRunnerObject<Deps, Env>(
  setup: TaskRunnerSetup<Deps, Env>,
  options: TaskRunnerObjectOptions = {}
): TaskRunnerObjectClass<Env> {
  for (const [name, value] of Object.entries(options)) {
    if (value !== undefined && !(typeof value === 'number' && value > 0 && value < Infinity)) {
      throw new RangeError(
        `defineTaskRunnerObject: options.${name} must be a positive number of milliseconds`
      )
    }
  }
  const settings: TaskObjectSettings<Deps, Env> = {
    setup,
    leaseMs: options.leaseMs ?? DEFAULT_TASK_LEASE_MS,
    sliceMs: options.sliceMs ?? TASK_SLICE_MS,
  }
  return class TaskRunnerObject extends TaskObject<Deps, Env> {
    constructor(state: TaskObjectState, env: Env) {
      super(state, env, settings)
    }
  }
}

/** What every object of one Worker's class shares: how it builds its host, its lease and slice. */
interface TaskObjectSettings<Deps, Env> {
  setup: TaskRunnerSetup<Deps, Env>
  leaseMs: number
  sliceMs: number
}

/** One object's life (see the module header); `defineTaskRunnerObject` binds its settings. */
class TaskObject<Deps, Env> {
  readonly #storage: TaskObjectStorage
  readonly #env: Env
  readonly #settings: TaskObjectSettings<Deps, Env>
  #runner: Promise<Runner<Deps>> | undefined
  /** Whether the alarm is running the task. */
  #running = false
  /** Whether a `/schedule` arrived since the running alarm started. */
  #woken = false

  constructor(state: TaskObjectState, env: Env, settings: TaskObjectSettings<Deps, Env>) {
    this.#storage = state.storage
    this.#env = env
    this.#settings = settings
  }

  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (request.method !== 'POST' || (pathname !== SCHEDULE_PATH && pathname !== CANCEL_PATH))
      return new Response(null, { status: 404 })
    const id = await request.text()
    if (!isTaskId(id)) return new Response('not a task id', { status: 400 })
    const stored = await this.#storage.get<string>(TASK_KEY)
    if (pathname === CANCEL_PATH) {
      if (stored === id && this.#running) await this.#stopIfCancelled(id)
      return new Response(null, { status: 204 })
    }
    if (stored === undefined) await this.#storage.put(TASK_KEY, id)
    else if (stored !== id) return new Response('this object runs another task', { status: 409 })
    this.#woken = true
    await this.#storage.setAlarm(Date.now())
    return new Response(null, { status: 204 })
  }

  async alarm(): Promise<void> {
    // The running alarm decides the next one when it ends.
    if (this.#running) return
    this.#running = true
    this.#woken = false
    try {
      const id = await this.#storage.get<string>(TASK_KEY)
      if (id === undefined) return
      const record = await this.#runSlice(id)
      const now = Date.now()
      const next = this.#woken ? now : nextLook(record, now)
      if (next !== undefined) {
        await this.#storage.setAlarm(next)
      } else {
        await this.#storage.deleteAlarm()
        await this.#storage.deleteAll()
      }
    } catch (error) {
      // Thrown on: the runtime retries the alarm (and the one set by #runSlice still stands).
      logError('task object alarm failed', error)
      throw error
    } finally {
      this.#running = false
    }
  }

  /** Runs the task for at most one slice, under an alarm that takes it over should the object die. */
  async #runSlice(id: string): Promise<TaskRecord | undefined> {
    const { leaseMs, sliceMs } = this.#settings
    const { engine } = await this.#ready()
    // Should this object die mid-run, this alarm takes the task over once the lease lapses.
    await this.#storage.setAlarm(Date.now() + leaseMs + LEASE_GRACE_MS)
    const slice = new AbortController()
    const timer = setTimeout(() => slice.abort(), sliceMs)
    try {
      return await engine.run(id, slice.signal)
    } finally {
      clearTimeout(timer)
    }
  }

  async #stopIfCancelled(id: string): Promise<void> {
    const { engine, store } = await this.#ready()
    if ((await store.getTask(id))?.cancelRequested) engine.stopCancelled(id)
  }

  /** The runner, built on first use; a failed build is not kept, so the next event tries again. */
  #ready(): Promise<Runner<Deps>> {
    this.#runner ??= (async () => {
      const {
        server,
        deps,
        store,
        logger = consoleLogger,
        tasks,
      } = await this.#settings.setup(this.#env)
      const compiled = 'toolListing' in server ? server : compileServer(server)
      const engine = new TaskEngine(
        { server: compiled, deps, logger },
        {
          resultTtlMs: tasks?.resultTtlMs,
          store,
          replicaId: RUNNER_NAME,
          leaseMs: this.#settings.leaseMs,
          maxRunningTasks: 1,
          takeoverIntervalMs: 0,
        }
      )
      return { engine, store }
    })().catch((error: unknown) => {
      this.#runner = undefined
      throw error
    })
    return this.#runner
  }
}
