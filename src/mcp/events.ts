/**
 * @module mcp/events
 * The event bus behind `subscriptions/listen`: applications publish list changes and resource updates,
 * and every open listen stream on this replica hears them. `InProcessEventBus` reaches streams of the
 * same process only; a deployment with several replicas plugs in a bus that fans out across them
 * (same interface). Events scoped to a principal reach only that principal's streams.
 */

export type ServerEvent =
  | { kind: 'tools_list_changed' }
  | { kind: 'prompts_list_changed' }
  | { kind: 'resources_list_changed'; principal?: string }
  | { kind: 'resource_updated'; uri: string; principal?: string }

export type EventListener = (event: ServerEvent) => void

export interface EventBus {
  publish(event: ServerEvent): void | Promise<void>
  /** Returns the function that removes the listener. */
  subscribe(listener: EventListener): () => void
}

export class InProcessEventBus implements EventBus {
  readonly #listeners = new Set<EventListener>()

  publish(event: ServerEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event)
      } catch {
        // One broken stream must not keep the event from the others.
      }
    }
  }

  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  get listenerCount(): number {
    return this.#listeners.size
  }
}
