/**
 * @module stateless-mcp/workers
 * The engine's fleet parts for Cloudflare Workers, where every isolate is a replica: the event bus
 * on Durable Objects (`DurableObjectEventBus` in each isolate, `EventBusObject` the class to export
 * and bind as `EVENT_BUS`), and tasks that outlive a request, each run by a Durable Object of its
 * own on its alarm (`DurableObjectTaskScheduler` in each isolate, the class `defineTaskRunnerObject`
 * builds to export and bind as `TASK_RUNNER`, and `handOverRunnableTasks` for the cron trigger).
 * Web standards only: nothing to install beyond the engine, and no Workers types needed at run
 * time or in the declarations (the bindings are typed by what the code calls on them).
 *
 * @example
 * ```ts
 * import { createMcpServer } from 'stateless-mcp'
 * import { D1EngineStore, type D1Like } from 'stateless-mcp/d1'
 * import { DurableObjectEventBus, type BusNamespace } from 'stateless-mcp/workers'
 *
 * export { EventBusObject } from 'stateless-mcp/workers'
 *
 * interface Env {
 *   DB: D1Like
 *   EVENT_BUS: BusNamespace
 *   STATE_KEYS: string
 * }
 *
 * let server: ReturnType<typeof createMcpServer> | undefined
 * export default {
 *   fetch(request: Request, env: Env) {
 *     server ??= createMcpServer(definition, {
 *       stateKeys: env.STATE_KEYS,
 *       allowedHosts: ['greeter.example.workers.dev'],
 *       store: new D1EngineStore({ db: env.DB }),
 *       bus: new DurableObjectEventBus({ namespace: env.EVENT_BUS }),
 *     })
 *     return server.fetch(request)
 *   },
 * }
 * ```
 */

export {
  DEFAULT_SHARDS,
  DurableObjectEventBus,
  EVENT_BUS_BINDING,
  MAX_SHARDS,
  isBusNamespace,
  type BusNamespace,
  type BusSocket,
  type BusStub,
  type DurableObjectEventBusOptions,
} from './workers/event-bus.ts'
export { EventBusObject, type BusObjectState } from './workers/event-bus-object.ts'
export {
  DurableObjectTaskScheduler,
  HAND_OVER_BATCH,
  TASK_RUNNER_BINDING,
  handOverRunnableTasks,
  isTaskRunnerNamespace,
  type TaskRunnerNamespace,
  type TaskRunnerStub,
} from './workers/task-scheduler.ts'
export type { DurableNamespace } from './workers/durable-objects.ts'
export {
  TASK_SLICE_MS,
  defineTaskRunnerObject,
  type TaskObjectState,
  type TaskObjectStorage,
  type TaskRunnerDurableObject,
  type TaskRunnerHost,
  type TaskRunnerObjectClass,
  type TaskRunnerObjectOptions,
  type TaskRunnerSetup,
} from './workers/task-runner-object.ts'
