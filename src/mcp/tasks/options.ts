/**
 * @module mcp/tasks/options
 * How a handler's tasks extension is configured: `TaskOptions` (the store, this replica's name and
 * room, the lifetimes, the bounds on what one principal can make the store keep, and the
 * `TaskScheduler` port of a runtime that runs tasks elsewhere), their defaults and caps, and
 * `taskSettings`, which resolves them once, when the engine is built: defaults filled in, every
 * number checked (`positiveWholeNumber`: a `RangeError` naming the option).
 */
import { positiveWholeNumber } from '../options.ts'
import type { TaskStore } from '../task-store.ts'

export const DEFAULT_TASK_TTL_MS = 3_600_000
export const DEFAULT_TASK_POLL_INTERVAL_MS = 1_000
/**
 * How long a runner's lease on a task holds without renewal unless `leaseMs` says otherwise (10 s):
 * a task whose replica died is taken over by another once it has passed.
 *
 * @example
 * ```ts
 * import { DEFAULT_TASK_LEASE_MS, type TaskOptions } from 'stateless-mcp/compose'
 *
 * // a store whose writes may stall for seconds: leases that outlast them
 * const tasks: TaskOptions = { store, leaseMs: 3 * DEFAULT_TASK_LEASE_MS }
 * ```
 */
export const DEFAULT_TASK_LEASE_MS = 10_000
export const DEFAULT_TASK_TAKEOVER_INTERVAL_MS = 2_000
export const DEFAULT_MAX_RUNNING_TASKS = 16
/**
 * Largest journal a task may gather (the answers it was given and the keys of every ask it sent), in
 * characters: a client answering invalidly without end makes the task ask again without end.
 */
export const DEFAULT_MAX_TASK_JOURNAL_CHARS = 256 * 1024
/**
 * Most live tasks one principal may hold, across all its clients (see `engine.ts`'s header): twice
 * what one replica runs at once (`maxRunning`), so a host can keep a replica busy and still have as
 * many ended tasks' outcomes waiting to be read, while the records a principal can make the store
 * keep stay few.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_LIVE_TASKS, type TaskOptions } from 'stateless-mcp/compose'
 *
 * const tasks: TaskOptions = { store, maxLiveTasks: 2 * DEFAULT_MAX_LIVE_TASKS }
 * ```
 */
export const DEFAULT_MAX_LIVE_TASKS = 32
/**
 * How long an ended task's record (its result, error or cancellation) is kept: ten minutes, what a
 * client is given to come back with the next round of a flow (`STATE_TTL_SECONDS`' default). A client
 * polling at `pollIntervalMs` reads it within seconds; one whose connection dropped has time to
 * reconnect and read it.
 *
 * @example
 * ```ts
 * import { DEFAULT_TASK_RESULT_TTL_MS, type TaskOptions } from 'stateless-mcp/compose'
 *
 * // results kept an hour
 * const tasks: TaskOptions = { store, resultTtlMs: 6 * DEFAULT_TASK_RESULT_TTL_MS }
 * ```
 */
export const DEFAULT_TASK_RESULT_TTL_MS = 600_000
/**
 * Longest lifetime a task may be given (`ttlMs`, `resultTtlMs`): a week.
 *
 * @example
 * ```ts
 * import { MAX_TASK_TTL_MS, type TaskOptions } from 'stateless-mcp/compose'
 *
 * // tasks that may run for days
 * const tasks: TaskOptions = { store, ttlMs: MAX_TASK_TTL_MS }
 * ```
 */
export const MAX_TASK_TTL_MS = 7 * 86_400_000
/**
 * Largest `maxLiveTasks` accepted (a `RangeError` above).
 *
 * @example
 * ```ts
 * import { MAX_LIVE_TASKS_CAP, type TaskOptions } from 'stateless-mcp/compose'
 *
 * const wanted = Number(process.env.MAX_LIVE_TASKS ?? 32)
 * const tasks: TaskOptions = { store, maxLiveTasks: Math.min(wanted, MAX_LIVE_TASKS_CAP) }
 * ```
 */
export const MAX_LIVE_TASKS_CAP = 100_000
/**
 * How a handler serves the tasks extension (`createMcpHandler`'s `tasks`): the store of task
 * records, this replica's share of running them, their lifetimes and the caps per principal.
 */
export interface TaskOptions {
  /** Where task records live; every replica that should answer for a task shares it. */
  store: TaskStore
  /** Names this replica in leases and logs; a random suffix keeps two processes apart. */
  replicaId?: string
  /** Lifetime of a task from its creation (`ttlMs`), after which it is purged. Default 1 h. */
  ttlMs?: number
  /** The `pollIntervalMs` suggested to clients. Default 1 s. */
  pollIntervalMs?: number
  /** How long a runner's lease holds without renewal (it renews every third). Default 10 s. */
  leaseMs?: number
  /**
   * How often this replica looks for tasks to take over (default 2 s); 0 runs no loop, for a
   * runtime whose runners are started otherwise (`scheduler`, the Durable Object that calls `run`).
   */
  takeoverIntervalMs?: number
  /** Most tasks this replica runs at once. Default 16. */
  maxRunning?: number
  /**
   * Told, when the handler's `shutdown` aborts, of the promise that settles once every run of this
   * replica has stopped and released its lease: what a process awaits before it closes the store.
   */
  onStopped?: (stopped: Promise<void>) => void
  /**
   * Largest journal of one task, in characters (default 256 KiB); a task that would park with more
   * fails with -32603 instead. Also bounds the answers `tasks/update` stores for a task.
   */
  maxJournalChars?: number
  /**
   * Most live tasks (running, waiting for input, or ended and kept) one principal may hold, across
   * all its clients; a creation past it answers -32602. Default {@link DEFAULT_MAX_LIVE_TASKS}.
   */
  maxLiveTasks?: number
  /**
   * How long a task's record is kept once it has ended, never past its `ttlMs`. Default
   * {@link DEFAULT_TASK_RESULT_TTL_MS}.
   */
  resultTtlMs?: number
  /**
   * Runs this engine's tasks elsewhere (see `engine.ts`'s header): the engine runs none itself. Needs
   * `takeoverIntervalMs: 0`.
   */
  scheduler?: TaskScheduler
  now?: () => number
}

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

/** `TaskOptions` resolved: every default filled in and every bound checked. */
export interface TaskSettings {
  ttlMs: number
  pollIntervalMs: number
  leaseMs: number
  maxJournalChars: number
  maxLiveTasks: number
  resultTtlMs: number
  maxRunning: number
  now: () => number
}

/**
 * The settings `options` make, checked in the order of their fields; throws the `TypeError` of a
 * scheduler with a takeover loop, or the `RangeError` of the first number out of bounds.
 */
export function taskSettings(options: TaskOptions): TaskSettings {
  if (
    options.scheduler &&
    (options.takeoverIntervalMs ?? DEFAULT_TASK_TAKEOVER_INTERVAL_MS) !== 0
  ) {
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
    maxLiveTasks: positiveWholeNumber(
      'maxLiveTasks',
      options.maxLiveTasks ?? DEFAULT_MAX_LIVE_TASKS,
      { max: MAX_LIVE_TASKS_CAP }
    ),
    resultTtlMs: positiveWholeNumber(
      'resultTtlMs',
      options.resultTtlMs ?? DEFAULT_TASK_RESULT_TTL_MS,
      { max: MAX_TASK_TTL_MS }
    ),
    maxRunning: positiveWholeNumber('maxRunning', options.maxRunning ?? DEFAULT_MAX_RUNNING_TASKS),
    now: options.now ?? Date.now,
  }
}
