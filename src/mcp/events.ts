/**
 * @module mcp/events
 * The event bus behind `subscriptions/listen` and the 2025-era GET streams: applications publish list
 * changes and resource updates, and every open stream on this replica hears them. The same bus carries
 * the engine's signals for 2025 sessions: an answer to a server→client request was delivered to the
 * store (`input_delivered`), or the client cancelled a request (`request_cancelled`); the replica
 * holding that request's stream acts on it. `InProcessEventBus` reaches streams of the same process
 * only; a deployment with several replicas plugs in a bus that fans out across them (same interface).
 * Events scoped to a principal reach only that principal's streams. Events are signals, never data a
 * listener trusts: an answer is read back from the store, for the session it was expected in.
 */

export type ServerEvent =
  | { kind: 'tools_list_changed' }
  | { kind: 'prompts_list_changed' }
  | { kind: 'resources_list_changed'; principal?: string }
  | { kind: 'resource_updated'; uri: string; principal?: string }
  | { kind: 'input_delivered'; session: string; requestId: string }
  | { kind: 'request_cancelled'; session: string; requestId: string }

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
