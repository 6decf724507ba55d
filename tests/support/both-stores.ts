/**
 * @module tests/support/both-stores
 * The notes store and the engine's store of one database as one object ({@link bothOf}), for the
 * adapter tests whose races, replicas and file checks cross both stores' tables: each method is the
 * notes store's when it has it, else the engine's; `migrate()` migrates both (the notes first, as a
 * replica does), `purgeExpired` spends one budget on the notes' rows, then the engine's, and
 * `close()` is the opener's (both stores, then their shared connection).
 */
import type { EngineStore } from '../../src/mcp/stores/engine-store.ts'
import type { NotesStore } from '../../src/notes/store.ts'

export type BothStores = NotesStore & EngineStore

/** `notes` and `engine` as one store (module header); `close` closes both and their connection. */
export function bothOf(
  notes: NotesStore,
  engine: EngineStore,
  close: () => Promise<void>
): BothStores {
  const lifecycle = {
    async migrate() {
      await notes.migrate()
      await engine.migrate()
    },
    async purgeExpired(now: number, limit: number) {
      const removed = await notes.purgeExpired(now, limit)
      if (removed >= limit) return removed
      return removed + (await engine.purgeExpired(now, limit - removed))
    },
    close,
  }
  return new Proxy(lifecycle as BothStores, {
    get(target, key) {
      if (key in target) return Reflect.get(target, key)
      const owner = key in notes ? notes : engine
      const value: unknown = Reflect.get(owner, key, owner)
      return typeof value === 'function' ? (value as () => unknown).bind(owner) : value
    },
  })
}
