/**
 * @module storage/common/stores
 * The two stores of one deployment's database ({@link DeploymentStores}): the notes store and the
 * engine's store on one connection (a SQLite file, a PostgreSQL pool, a D1 binding), migrated and
 * closed together ({@link storesOnOneConnection}), as every runtime entry opens them
 * (`storage/sqlite.ts`, `storage/postgres.ts`, `storage/d1.ts`). Runtime-neutral.
 */
import type { EngineStore } from 'stateless-mcp'
import type { NotesStore } from '../../notes/store.ts'

/** The notes and the engine's state in one database, on one connection, and how to close them. */
export interface DeploymentStores {
  notes: NotesStore
  engine: EngineStore
  /** Migrates both (the notes first, then the engine's tables, which it may adopt). */
  migrate(): Promise<void>
  /** Closes both stores, then their connection. */
  close(): Promise<void>
}

/** `notes` and `engine`, which share one connection, closed by `release` once both are. */
export function storesOnOneConnection(
  notes: NotesStore,
  engine: EngineStore,
  release: () => Promise<void>
): DeploymentStores {
  return {
    notes,
    engine,
    async migrate() {
      await notes.migrate()
      await engine.migrate()
    },
    async close() {
      await Promise.allSettled([notes.close(), engine.close()])
      await release()
    },
  }
}
