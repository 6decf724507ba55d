/**
 * @module mcp/task-store
 * What the engine keeps in the shared store for tasks (extension `io.modelcontextprotocol/tasks`):
 * one record per task, readable on every replica before `CreateTaskResult` is sent. The
 * record holds everything a replica needs to answer `tasks/get`, apply `tasks/update` and
 * `tasks/cancel`, and take over a task whose runner died: the owner, the tool and its arguments, the
 * status and its payload, the replay journal (`ctx.once` results and answers, so a re-run repeats no
 * side effect), the outstanding input requests and the answers not yet consumed, the cancel flag, the
 * runner's lease, and a version for compare-and-set.
 *
 * The adapters (node:sqlite, PostgreSQL, D1) store and compare; the engine decides. Every change goes
 * through `updateTask`, which applies a patch only when the stored version is the expected one, so
 * two replicas never both win a transition. JSON-valued fields are stored as the text given.
 * `createTask` enforces the engine's cap on live tasks per principal in the same conditional
 * write that stores the record, so creations racing on any number of replicas never exceed it.
 * A task is live until its `expiresAt`, whatever its status: a finished task counts until its
 * result is no longer kept. Records are removed by the adapters' purge once `expiresAt` has passed
 * (an expired record the purge has not reached yet counts for nothing).
 */

/** Where a task stands: running, waiting for input, or ended one of three ways. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed'

/**
 * Statuses after which a task never changes again.
 *
 * @example
 * ```ts
 * import { TERMINAL_TASK_STATUSES } from 'stateless-mcp/compose'
 *
 * const task = await store.getTask(id)
 * if (task && TERMINAL_TASK_STATUSES.has(task.status)) console.log(`${id} ended: ${task.status}`)
 * ```
 */
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set([
  'completed',
  'cancelled',
  'failed',
])

/**
 * One task as the store keeps it (module header): its owner, tool and arguments, status and
 * outcome, replay journal, the runner's lease and the version every change is compared against.
 */
export interface TaskRecord {
  /** Unguessable id (at least 128 random bits, header-safe base64url). */
  readonly id: string
  /** The principal binding of the caller that created it; only that caller may see it. */
  readonly owner: string
  /**
   * The caller's principal alone (issuer and subject, without the OAuth client `owner` binds): what
   * the cap on live tasks counts by.
   */
  readonly principal: string
  /** The tool and its arguments (JSON text), for runs and takeovers. */
  readonly tool: string
  readonly args: string
  readonly status: TaskStatus
  readonly statusMessage?: string
  /** Milliseconds since the epoch. */
  readonly createdAt: number
  readonly updatedAt: number
  /** When the record may be purged (creation + the task's TTL). */
  readonly expiresAt: number
  readonly pollIntervalMs: number
  /** The replay journal (JSON text). */
  readonly journal: string
  /** Outstanding input requests by key (JSON text), while `input_required`. */
  readonly inputRequests?: string
  /** Answers received by `tasks/update` and not yet consumed by a run (JSON text). */
  readonly inputResponses?: string
  /** The result (`completed`) or JSON-RPC error (`failed`), JSON text. */
  readonly result?: string
  readonly error?: string
  readonly cancelRequested: boolean
  /**
   * The replica running the task and until when its lease holds (ms since the epoch). Always set and
   * cleared together; a lease is held while `leaseExpiresAt` is in the future.
   */
  readonly leaseOwner?: string
  readonly leaseExpiresAt?: number
  /** Starts at 1; every successful `updateTask` adds 1. */
  readonly version: number
}

/** What `createTask` is given: a record without its version and cancellation flag. */
export type NewTask = Omit<TaskRecord, 'version' | 'cancelRequested'>

/**
 * Fields `updateTask` may change; `null` clears an optional field, `undefined` leaves it as it is.
 */
export type TaskPatch = {
  -readonly [
    K in Exclude<
      keyof TaskRecord,
      'id' | 'owner' | 'principal' | 'tool' | 'args' | 'createdAt' | 'version'
    >
  ]?: undefined extends TaskRecord[K] ? TaskRecord[K] | null : TaskRecord[K]
}

/**
 * The port of the store that keeps task records, shared by every replica (each engine store
 * implements it): conditional writes, so that two replicas never both win a transition.
 */
export interface TaskStore {
  /**
   * Stores a new record (version 1, not cancelled), unless its principal already holds `maxLive`
   * live tasks (unexpired at `task.createdAt`, under any owner): then answers `undefined` and stores
   * nothing. The count and the insert are one atomic step, across every replica. Throws if the id
   * exists, and `RangeError` unless `maxLive` is a positive integer.
   */
  createTask(task: NewTask, maxLive: number): Promise<TaskRecord | undefined>
  /** How many live tasks (unexpired at `now`) `principal` holds, under any owner. */
  countLiveTasks(principal: string, now: number): Promise<number>
  /** The record, whoever owns it (the engine checks the owner), or `undefined`. */
  getTask(id: string): Promise<TaskRecord | undefined>
  /**
   * Applies `patch` only if the stored version is `expectedVersion`, adding 1 to it. Answers the
   * record as it is after the update, or `undefined` when the version (or the record) did not match.
   */
  updateTask(id: string, expectedVersion: number, patch: TaskPatch): Promise<TaskRecord | undefined>
  /**
   * Up to `limit` ids of non-terminal, unexpired tasks that need a runner at `now`: status `working`
   * whose lease is absent or has expired (its runner died, or a `tasks/update` left it runnable).
   */
  findRunnableTasks(now: number, limit: number): Promise<string[]>
}
