/**
 * @module mcp/workers/task-scheduler
 * Tasks on Workers, the isolate's half: the `TaskScheduler` (`mcp/tasks/engine.ts`) of a Worker,
 * which hands every runnable task to its own Durable Object (`TaskRunnerObject`, built by
 * `task-runner-object.ts`, bound as {@link TASK_RUNNER_BINDING}), the wire both halves share, and the
 * cron trigger's backstop.
 *
 * Why an object per task: a Worker's request cannot outlive its response (what `ctx.waitUntil` keeps
 * alive dies with the isolate, 30 s after the response at most, so it could only ever be a hint), and
 * an isolate never gets a timer of its own. A Durable Object can: its alarm is stored with the
 * object and fires, and is retried, whether or not any isolate is alive. One object per task keeps it
 * simple and unbounded: the object holds nothing but the task's id and one alarm, runs only its task
 * (one alarm invocation at a time, so a run never has to share an invocation's CPU or subrequest
 * budget with another task), and deletes its storage once the task has ended; objects are created on
 * first use and cost nothing while idle. Its name is a SHA-256 digest of the task id
 * ({@link taskObjectName}), so a name seen in Cloudflare's tools or a log does not reveal the id.
 *
 * The scheduler's two messages, both POSTs of the bare task id:
 * - {@link SCHEDULE_PATH}: "look at this task now"; the object stores the id and sets its alarm to
 *   now before it answers 204, so once `schedule` resolves the run is as durable as the record. The
 *   engine awaits it before answering `CreateTaskResult`, after `tasks/update` made the task
 *   runnable, and when `tasks/get` finds the task working with no live lease;
 * - {@link CANCEL_PATH}: "`tasks/cancel` flagged this task"; the object stops its run at once (its
 *   run would otherwise see the flag at its next write, a lease renewal at most a third of a lease
 *   away).
 *
 * The cron trigger hands over, in bounded batches, every task the store finds working with no live
 * lease ({@link handOverRunnableTasks}): the last resort for a task whose hand-off was lost and whose
 * client stopped polling, or whose object ran out of alarm retries while the database was down.
 *
 * Runtime-neutral: structural types of the Workers APIs it uses, nothing from `node:*` or from
 * workers-types.
 */
import { canonicalJson, sha256Base64url } from '../canonical-json.ts'
import type { TaskScheduler } from '../tasks/options.ts'
import type { TaskStore } from '../task-store.ts'
import { isDurableNamespace, stubOf, type DurableNamespace } from './durable-objects.ts'

/**
 * The binding name of the `TaskRunnerObject` namespace, in every Worker that serves tasks.
 *
 * @example
 * ```ts
 * import { isTaskRunnerNamespace, TASK_RUNNER_BINDING } from 'stateless-mcp/workers'
 *
 * const namespace = (env as Record<string, unknown>)[TASK_RUNNER_BINDING]
 * if (!isTaskRunnerNamespace(namespace)) {
 *   throw new Error(`bind ${TASK_RUNNER_BINDING} in wrangler.toml`)
 * }
 * ```
 */
export const TASK_RUNNER_BINDING = 'TASK_RUNNER'
/** Paths of the object's two endpoints (the host of a stub's URL is never read). */
export const SCHEDULE_PATH = '/schedule'
export const CANCEL_PATH = '/cancel'
const OBJECT_ORIGIN = 'https://task-runner.internal'
/**
 * Most tasks one cron run hands over: one subrequest each, plus the query that finds them, within
 * the 50 subrequests of a Free-plan invocation beside the purge of expired rows. The default
 * `limit` of {@link handOverRunnableTasks}.
 *
 * @example
 * ```ts
 * import { HAND_OVER_BATCH, handOverRunnableTasks } from 'stateless-mcp/workers'
 *
 * // where the plan allows more subrequests per invocation
 * await handOverRunnableTasks(store, scheduler, event.scheduledTime, 10 * HAND_OVER_BATCH)
 * ```
 */
export const HAND_OVER_BATCH = 25
/** What a task id may be (the engine's are 32 base64url characters; the wire allows up to 128). */
const TASK_ID = /^[A-Za-z0-9_-]{1,128}$/

/** Whether `value` can be a task id sent to an object. */
export function isTaskId(value: string): boolean {
  return TASK_ID.test(value)
}

/** A Durable Object stub, as far as the scheduler uses it (a real stub satisfies it). */
export interface TaskRunnerStub {
  fetch(url: string, init?: RequestInit): Promise<Response>
}

/** The `TaskRunnerObject` namespace binding, as far as the scheduler uses it. */
export type TaskRunnerNamespace = DurableNamespace<TaskRunnerStub>

/**
 * Whether a binding looks like the scheduler's namespace (checked once, at setup): a missing or
 * misnamed binding is then reported by name instead of failing at the first task.
 *
 * @example
 * ```ts
 * import { DurableObjectTaskScheduler, isTaskRunnerNamespace } from 'stateless-mcp/workers'
 *
 * if (!isTaskRunnerNamespace(env.TASK_RUNNER)) throw new Error('bind TASK_RUNNER in wrangler.toml')
 * const scheduler = new DurableObjectTaskScheduler({ namespace: env.TASK_RUNNER })
 * ```
 */
export const isTaskRunnerNamespace: (value: unknown) => value is TaskRunnerNamespace =
  isDurableNamespace

/** The name of task `id`'s object: a digest of the id. */
export async function taskObjectName(id: string): Promise<string> {
  // The tag names the digest's purpose; kept from the first deployments, so objects keep their names.
  return `task-${await sha256Base64url(canonicalJson(['notes-mcp/task-runner', id]))}`
}

/** The stub of task `id`'s object in `namespace`. */
export async function taskObject(
  namespace: TaskRunnerNamespace,
  id: string
): Promise<TaskRunnerStub> {
  return stubOf(namespace, await taskObjectName(id))
}

/**
 * The task scheduler of a Worker (see the module header): hands each runnable task to its own
 * `TaskRunnerObject` ({@link TASK_RUNNER_BINDING}, built by `defineTaskRunnerObject`). Throws
 * `TypeError` for a binding that is not a Durable Object namespace.
 *
 * @example
 * ```ts
 * import { DurableObjectTaskScheduler, isTaskRunnerNamespace } from 'stateless-mcp/workers'
 *
 * const namespace = env.TASK_RUNNER
 * if (!isTaskRunnerNamespace(namespace)) throw new Error('bind TASK_RUNNER in wrangler.toml')
 * const scheduler = new DurableObjectTaskScheduler({ namespace })
 * ```
 */
export class DurableObjectTaskScheduler implements TaskScheduler {
  readonly #namespace: TaskRunnerNamespace

  constructor({ namespace }: { namespace: TaskRunnerNamespace }) {
    if (!isTaskRunnerNamespace(namespace)) {
      throw new TypeError('namespace must be the TaskRunnerObject Durable Object namespace binding')
    }
    this.#namespace = namespace
  }

  schedule(id: string): Promise<void> {
    return this.#send(SCHEDULE_PATH, id)
  }

  cancel(id: string): Promise<void> {
    return this.#send(CANCEL_PATH, id)
  }

  async #send(path: string, id: string): Promise<void> {
    const stub = await taskObject(this.#namespace, id)
    const response = await stub.fetch(`${OBJECT_ORIGIN}${path}`, { method: 'POST', body: id })
    if (response.status !== 204) throw new Error(`the task's object answered ${response.status}`)
  }
}

/**
 * One pass of the cron backstop: hands every task the store finds working with no live lease at
 * `now` (up to `limit`) to its object. Answers how many it handed over; a failed hand-off is
 * counted out and left to the next pass.
 *
 * @example
 * ```ts
 * export default {
 *   async scheduled(event: { scheduledTime: number }, env: Env) {
 *     await handOverRunnableTasks(store(env), scheduler(env), event.scheduledTime)
 *   },
 * }
 * ```
 */
export async function handOverRunnableTasks(
  store: TaskStore,
  scheduler: TaskScheduler,
  now: number,
  limit = HAND_OVER_BATCH
): Promise<number> {
  const outcomes = await Promise.allSettled(
    (await store.findRunnableTasks(now, limit)).map((id) => scheduler.schedule(id))
  )
  return outcomes.filter((outcome) => outcome.status === 'fulfilled').length
}
