/**
 * @module mcp/tasks/options
 * How a handler's tasks extension is configured: `ServerTaskOptions` (this replica's name and room,
 * the lifetimes, the bounds on what one principal can make the store keep, and the `TaskScheduler`
 * port of a runtime that runs tasks elsewhere: what `createMcpServer` takes), `TaskOptions` (those
 * and the store: what `createMcpHandler` takes), their defaults and caps, and
 * `taskSettings`, which resolves them once, when the engine is built: defaults filled in, every
 * number checked (`positiveWholeNumber`: a `RangeError` naming the option).
 */
import { MAX_CAP, positiveWholeNumber } from '../options.ts'
import type { TaskStore } from '../task-store.ts'

/**
 * Lifetime of a task from its creation unless `ttlMs` says otherwise: an hour, after which it is
 * purged whatever its state.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_TASK_TTL_MS } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, { tasks: { ttlMs: 24 * DEFAULT_TASK_TTL_MS } })
 * ```
 */
export const DEFAULT_TASK_TTL_MS = 3_600_000
/**
 * The `pollIntervalMs` suggested to clients unless `pollIntervalMs` says otherwise: a second.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_TASK_POLL_INTERVAL_MS } from 'stateless-mcp'
 *
 * // long tasks: clients poll every five seconds
 * const server = createMcpServer(definition, {
 *   tasks: { pollIntervalMs: 5 * DEFAULT_TASK_POLL_INTERVAL_MS },
 * })
 * ```
 */
export const DEFAULT_TASK_POLL_INTERVAL_MS = 1_000
/**
 * How long a runner's lease on a task holds without renewal unless `leaseMs` says otherwise (10 s):
 * a task whose replica died is taken over by another once it has passed.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_TASK_LEASE_MS } from 'stateless-mcp'
 *
 * // a store whose writes may stall for seconds: leases that outlast them
 * const server = createMcpServer(definition, { tasks: { leaseMs: 3 * DEFAULT_TASK_LEASE_MS } })
 * ```
 */
export const DEFAULT_TASK_LEASE_MS = 10_000
/**
 * How often a replica without a `scheduler` looks for tasks to take over (those whose runner died,
 * and those waiting for room) unless `takeoverIntervalMs` says otherwise: two seconds.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_TASK_TAKEOVER_INTERVAL_MS } from 'stateless-mcp'
 *
 * // many replicas on one store: each looks less often
 * const server = createMcpServer(definition, {
 *   tasks: { takeoverIntervalMs: 5 * DEFAULT_TASK_TAKEOVER_INTERVAL_MS },
 * })
 * ```
 */
export const DEFAULT_TASK_TAKEOVER_INTERVAL_MS = 2_000
/**
 * Most tasks one replica runs at once unless `maxRunningTasks` says otherwise; the others wait in
 * the store for room here or on another replica.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_RUNNING_TASKS } from 'stateless-mcp'
 *
 * // tasks that mostly wait on other services
 * const server = createMcpServer(definition, {
 *   tasks: { maxRunningTasks: 4 * DEFAULT_MAX_RUNNING_TASKS },
 * })
 * ```
 */
export const DEFAULT_MAX_RUNNING_TASKS = 16
/**
 * Largest journal a task may gather (the answers it was given and the keys of every ask it sent), in
 * characters, unless `maxJournalChars` says otherwise: a client answering invalidly without end
 * makes the task ask again without end.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_TASK_JOURNAL_CHARS } from 'stateless-mcp'
 *
 * // tasks that gather long answers
 * const server = createMcpServer(definition, {
 *   tasks: { maxJournalChars: 4 * DEFAULT_MAX_TASK_JOURNAL_CHARS },
 * })
 * ```
 */
export const DEFAULT_MAX_TASK_JOURNAL_CHARS = 256 * 1024
/**
 * Most live tasks one principal may hold, across all its clients, unless `maxLiveTasksPerPrincipal`
 * says otherwise (see `engine.ts`'s header): twice what one replica runs at once
 * (`maxRunningTasks`), so a host can keep a replica busy and still have as
 * many ended tasks' outcomes waiting to be read, while the records a principal can make the store
 * keep stay few.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, {
 *   tasks: { maxLiveTasksPerPrincipal: 2 * DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL },
 * })
 * ```
 */
export const DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL = 32
/**
 * How long an ended task's record (its result, error or cancellation) is kept: ten minutes, what a
 * client is given to come back with the next round of a flow (`stateTtlSeconds`' default). A client
 * polling at `pollIntervalMs` reads it within seconds; one whose connection dropped has time to
 * reconnect and read it.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_TASK_RESULT_TTL_MS } from 'stateless-mcp'
 *
 * // results kept an hour
 * const server = createMcpServer(definition, {
 *   tasks: { resultTtlMs: 6 * DEFAULT_TASK_RESULT_TTL_MS },
 * })
 * ```
 */
export const DEFAULT_TASK_RESULT_TTL_MS = 600_000
/**
 * Longest lifetime a task may be given (`ttlMs`, `resultTtlMs`): a week.
 *
 * @example
 * ```ts
 * import { createMcpServer, MAX_TASK_TTL_MS } from 'stateless-mcp'
 *
 * // tasks that may run for days
 * const server = createMcpServer(definition, { tasks: { ttlMs: MAX_TASK_TTL_MS } })
 * ```
 */
export const MAX_TASK_TTL_MS = 7 * 86_400_000
/** Where an engine with a `scheduler` sends its runnable tasks. */
export interface TaskScheduler {
  /**
   * Makes sure a runner will look at task `id` soon (and again until it has ended), and resolves once
   * that is durable. Called for a task that is working with no live lease; cheap to repeat.
   */
  schedule(id: string): Promise<void>
  /** Tells the runner of task `id` that `tasks/cancel` flagged it, so its run stops at once. */
  cancel(id: string): Promise<void>
}

/**
 * How a server runs the tasks of its `task` tools (`createMcpServer`'s `tasks`): this replica's name
 * and share of running them, their lifetimes, the caps, and a `scheduler` where a runtime runs them
 * elsewhere. Each has a default.
 *
 * @example
 * ```ts
 * import { createMcpServer } from 'stateless-mcp'
 * import { DurableObjectTaskScheduler } from 'stateless-mcp/workers'
 *
 * const tasks: ServerTaskOptions = {
 *   scheduler: new DurableObjectTaskScheduler({ namespace: env.TASK_RUNNER }),
 *   maxLiveTasksPerPrincipal: 8,
 *   resultTtlMs: 3_600_000,
 * }
 * const server = createMcpServer(definition, { store, bus, tasks })
 * ```
 */
export interface ServerTaskOptions {
  /** Names this replica in leases and logs; a random suffix keeps two processes apart. */
  replicaId?: string
  /**
   * Lifetime of a task from its creation (`ttlMs`), after which it is purged. Default
   * {@link DEFAULT_TASK_TTL_MS}, at most {@link MAX_TASK_TTL_MS}.
   */
  ttlMs?: number
  /** The `pollIntervalMs` suggested to clients. Default {@link DEFAULT_TASK_POLL_INTERVAL_MS}. */
  pollIntervalMs?: number
  /**
   * How long a runner's lease holds without renewal (it renews every third). Default
   * {@link DEFAULT_TASK_LEASE_MS}.
   */
  leaseMs?: number
  /**
   * How often this replica looks for tasks to take over (default
   * {@link DEFAULT_TASK_TAKEOVER_INTERVAL_MS}, and 0 with a `scheduler`); 0 runs no loop, for a
   * runtime whose runners are started otherwise (`scheduler`, the Durable Object that calls `run`).
   */
  takeoverIntervalMs?: number
  /** Most tasks this replica runs at once. Default {@link DEFAULT_MAX_RUNNING_TASKS}. */
  maxRunningTasks?: number
  /**
   * Largest journal of one task, in characters (default {@link DEFAULT_MAX_TASK_JOURNAL_CHARS}); a
   * task that would park with more fails with -32603 instead. Also bounds the answers
   * `tasks/update` stores for a task.
   */
  maxJournalChars?: number
  /**
   * Most live tasks (running, waiting for input, or ended and kept) one principal may hold, across
   * all its clients; a creation past it answers -32602. A whole number from 1 to `MAX_CAP`; default
   * {@link DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL}.
   */
  maxLiveTasksPerPrincipal?: number
  /**
   * How long a task's record is kept once it has ended, never past its `ttlMs`. Default
   * {@link DEFAULT_TASK_RESULT_TTL_MS}, at most {@link MAX_TASK_TTL_MS}.
   */
  resultTtlMs?: number
  /**
   * Runs this engine's tasks elsewhere (see `engine.ts`'s header): the engine runs none itself, and
   * runs no takeover loop (a `takeoverIntervalMs` other than 0 is refused). On Workers,
   * `DurableObjectTaskScheduler` of `stateless-mcp/workers`.
   */
  scheduler?: TaskScheduler
}

/**
 * How a handler serves the tasks extension (`createMcpHandler`'s `tasks`): a server's task options,
 * the store of task records, and what a process that owns its shutdown needs.
 *
 * @example
 * ```ts
 * import { createMcpHandler, type TaskOptions } from 'stateless-mcp/compose'
 *
 * let stopped: Promise<void> | undefined
 * const tasks: TaskOptions = { store, onStopped: (runs) => (stopped = runs) }
 * const handler = createMcpHandler({ server, deps: undefined, sealer, bus, shutdown, tasks })
 * ```
 */
export interface TaskOptions extends ServerTaskOptions {
  /** Where task records live; every replica that should answer for a task shares it. */
  store: TaskStore
  /**
   * Told, when the handler's `shutdown` aborts, of the promise that settles once every run of this
   * replica has stopped and released its lease: what a process awaits before it closes the store.
   */
  onStopped?: (stopped: Promise<void>) => void
  now?: () => number
}

/**
 * How often the replica `options` configure looks for tasks to take over, in milliseconds (0 for
 * never): `takeoverIntervalMs`, else none with a `scheduler` (its runners take tasks over) and
 * {@link DEFAULT_TASK_TAKEOVER_INTERVAL_MS} without.
 */
export function takeoverInterval(options: ServerTaskOptions): number {
  return options.takeoverIntervalMs ?? (options.scheduler ? 0 : DEFAULT_TASK_TAKEOVER_INTERVAL_MS)
}

/** `TaskOptions` resolved: every default filled in and every bound checked. */
export interface TaskSettings {
  ttlMs: number
  pollIntervalMs: number
  leaseMs: number
  maxJournalChars: number
  maxLiveTasksPerPrincipal: number
  resultTtlMs: number
  maxRunningTasks: number
  now: () => number
}

/**
 * The settings `options` make, checked in the order of their fields; throws the `TypeError` of a
 * scheduler with a takeover loop, or the `RangeError` of the first number out of bounds.
 */
export function taskSettings(options: ServerTaskOptions & Pick<TaskOptions, 'now'>): TaskSettings {
  if (options.scheduler && takeoverInterval(options) !== 0) {
    throw new TypeError(
      'takeoverIntervalMs must be 0 with a scheduler: its runners take tasks over'
    )
  }
  return {
    ttlMs: positiveWholeNumber('ttlMs', options.ttlMs ?? DEFAULT_TASK_TTL_MS, {
      max: MAX_TASK_TTL_MS,
    }),
    pollIntervalMs: positiveWholeNumber(
      'pollIntervalMs',
      options.pollIntervalMs ?? DEFAULT_TASK_POLL_INTERVAL_MS
    ),
    leaseMs: positiveWholeNumber('leaseMs', options.leaseMs ?? DEFAULT_TASK_LEASE_MS),
    maxJournalChars: positiveWholeNumber(
      'maxJournalChars',
      options.maxJournalChars ?? DEFAULT_MAX_TASK_JOURNAL_CHARS
    ),
    maxLiveTasksPerPrincipal: positiveWholeNumber(
      'maxLiveTasksPerPrincipal',
      options.maxLiveTasksPerPrincipal ?? DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL,
      { max: MAX_CAP }
    ),
    resultTtlMs: positiveWholeNumber(
      'resultTtlMs',
      options.resultTtlMs ?? DEFAULT_TASK_RESULT_TTL_MS,
      { max: MAX_TASK_TTL_MS }
    ),
    maxRunningTasks: positiveWholeNumber(
      'maxRunningTasks',
      options.maxRunningTasks ?? DEFAULT_MAX_RUNNING_TASKS
    ),
    now: options.now ?? Date.now,
  }
}
