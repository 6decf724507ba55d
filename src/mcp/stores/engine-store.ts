/**
 * @module mcp/stores/engine-store
 * The one store type of the engine's state ({@link EngineStore}): what 2025-era sessions keep
 * (`session-store.ts`: sessions, subscriptions, the rendezvous of answers), their resumable streams
 * (`stream-store.ts`: records, events, the leases of calls waiting for a client) and the records of
 * tasks (`task-store.ts`), with the lifecycle of its database and the purge of expired rows. Its
 * adapters: memory (`memory.ts`, one process), SQLite (`sqlite/`, node:sqlite on Node, Deno and Bun),
 * PostgreSQL (`postgres/`) and D1 (`d1.ts`), which pass one contract suite
 * (`tests/support/engine-store-contract.ts`) and keep their schema in their code. Types only, and the
 * errors every adapter shares.
 */
import type { SessionStore } from '../session-store.ts'
import type { TaskStore } from '../task-store.ts'
import type { StoreLifecycle } from './common/store-class.ts'

export { StoreNotMigratedError } from './common/store-class.ts'

/** Sessions, their streams and rendezvous slots, and tasks, in one store. */
export interface EngineStore extends SessionStore, TaskStore, StoreLifecycle {
  /**
   * Removes at most `limit` rows whose lifetime ended at or before `now` (milliseconds since the
   * epoch) and answers how many it removed: fewer than `limit` means nothing more had expired. Live
   * rows are never touched; safe to run on several replicas at once. `RangeError` unless `now` is
   * finite and `limit` a positive integer.
   */
  purgeExpired(now: number, limit: number): Promise<number>
}
