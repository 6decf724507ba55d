/**
 * @module telemetry/store-spans
 * The store wrapper of the composition root (`AppTelemetry.instrumentStore`): a CLIENT span around
 * each store call made while a request runs, nested under the request's span through its
 * `SpanScope` (none outside one: the task takeover loop's polling stays out of traces), attributed
 * with `db.system.name` and `db.operation.name`, and the status of every task record written
 * counted in `task.status_changes`.
 */
import { SpanKind, trace, type Context, type Counter, type Tracer } from '@opentelemetry/api'
import { ATTR } from './conventions.ts'
import { markFailed, type SpanScope } from './spans.ts'

export interface StoreTelemetry {
  /** Absent: no spans (the task status is still counted). */
  tracer: Tracer | undefined
  scope: SpanScope
  /** `db.system.name` of the store's spans: `sqlite`, `postgresql`, … */
  database: string
  taskStatus: Counter
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
      countTaskStatus(telemetry.taskStatus, name, args, result)
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
  const span = tracer.startSpan(
    `store.${name}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { [ATTR.dbSystemName]: database, [ATTR.dbOperationName]: name },
    },
    parent
  )
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
  taskStatus: Counter,
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
      if (record) taskStatus.add(1, { [ATTR.taskStatus]: status })
    },
    () => {}
  )
}
