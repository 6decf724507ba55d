/**
 * @module mcp/otel/store-spans
 * The store wrapper of a composition root (`AppTelemetry.instrumentStore`: the front door's engine
 * store, the notes app's two stores): a CLIENT span around each store call made while a request
 * runs, nested under the request's span through its `SpanScope` (none outside one: the task
 * takeover loop's polling stays out of traces), attributed with `db.operation.name` (the method's
 * name) and `db.system.name` when the owner names the database, and the status of every task record
 * written counted in `task.status_changes`. Generic: it wraps any object's methods, and reads only
 * the engine store's task calls (`createTask`, `updateTask`).
 */
import {
  SpanKind,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Tracer,
} from '@opentelemetry/api'
import { ATTR, type OwnNames } from './conventions.ts'
import { markFailed, type SpanScope } from './spans.ts'

export interface StoreTelemetry {
  /** Absent: no spans (the task status is still counted). */
  tracer: Tracer | undefined
  scope: SpanScope
  /** `db.system.name` of the store's spans: `sqlite`, `postgresql`, …; absent: not recorded. */
  database: string | undefined
  taskStatus: Counter
  names: OwnNames
}

/**
 * `store` with its calls observed (see the module header). The store's own methods run on the store
 * itself (private fields stay reachable); each is wrapped once, on first use.
 */
export function instrumentStore<T extends object>(store: T, telemetry: StoreTelemetry): T {
  const wrapped = new Map<PropertyKey, unknown>()
  return new Proxy(store, {
    get: (target, key) => {
      const value: unknown = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      let call = wrapped.get(key)
      if (call === undefined) {
        call = storeCall(telemetry, target, String(key), value as (...args: unknown[]) => unknown)
        wrapped.set(key, call)
      }
      return call
    },
  })
}

function storeCall(
  telemetry: StoreTelemetry,
  target: object,
  name: string,
  method: (...args: unknown[]) => unknown
) {
  const { tracer, scope } = telemetry
  return (...args: unknown[]): unknown => {
    const parent = tracer && scope.current()
    const result =
      tracer && parent
        ? storeSpan(telemetry, tracer, parent, name, () => method.apply(target, args))
        : method.apply(target, args)
    if (name === 'createTask' || name === 'updateTask')
      countTaskStatus(telemetry, name, args, result)
    return result
  }
}

function storeSpan(
  { scope, database }: StoreTelemetry,
  tracer: Tracer,
  parent: Context,
  name: string,
  call: () => unknown
): unknown {
  const attributes: Attributes = { [ATTR.dbOperationName]: name }
  if (database !== undefined) attributes[ATTR.dbSystemName] = database
  const span = tracer.startSpan(`store.${name}`, { kind: SpanKind.CLIENT, attributes }, parent)
  const fail = (error: unknown) => {
    markFailed(span, error)
    span.end()
  }
  try {
    const result = scope.run(trace.setSpan(parent, span), call)
    if (!(result instanceof Promise)) {
      span.end()
      return result
    }
    return result.then(
      (value: unknown) => {
        span.end()
        return value
      },
      (error: unknown) => {
        fail(error)
        throw error
      }
    )
  } catch (error) {
    fail(error)
    throw error
  }
}

/**
 * `createTask(task, maxLive)` enters `task.status`, `updateTask(id, version, patch)` enters
 * `patch.status`, each when it applied (a task over the cap, a missed compare-and-set: nothing).
 */
function countTaskStatus(
  { taskStatus, names }: StoreTelemetry,
  name: 'createTask' | 'updateTask',
  args: unknown[],
  result: unknown
): void {
  const status =
    name === 'createTask'
      ? (args[0] as { status?: unknown })?.status
      : (args[2] as { status?: unknown })?.status
  if (typeof status !== 'string' || !(result instanceof Promise)) return
  result.then(
    (record: unknown) => {
      if (record) taskStatus.add(1, { [names.taskStatus]: status })
    },
    () => {}
  )
}
