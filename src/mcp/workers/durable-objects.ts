/**
 * @module mcp/workers/durable-objects
 * A Durable Object namespace binding as the Worker's own objects use it — structural, so a real binding
 * satisfies it without workers-types — the check that a binding looks like one (made once, at setup),
 * and the stub of the object of a name. The event bus (`event-bus.ts`) and the task
 * scheduler (`task-scheduler.ts`) each name their namespace with the stub they call.
 */

/** A Durable Object namespace binding, as far as the engine uses it: the stub of the object of a name. */
export interface DurableNamespace<Stub> {
  idFromName(name: string): unknown
  get(id: never): Stub
}

/** Whether a binding looks like a Durable Object namespace. */
export function isDurableNamespace<Stub>(value: unknown): value is DurableNamespace<Stub> {
  const candidate = value as Partial<DurableNamespace<Stub>> | null | undefined
  return typeof candidate?.idFromName === 'function' && typeof candidate.get === 'function'
}

/** The stub of the object named `name` in `namespace`. */
export function stubOf<Stub>(namespace: DurableNamespace<Stub>, name: string): Stub {
  return namespace.get(namespace.idFromName(name) as never)
}
