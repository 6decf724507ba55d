/**
 * The engine's memory store (`src/mcp/stores/memory.ts`): the `EngineStore` contract, plus what only
 * it has: nothing shared between two stores, everything dropped at `close()`, and no index left
 * behind once its rows are gone (the bound on a long-lived process's memory).
 */
import { describe, expect, it } from 'vitest'
import { MemoryEngineStore } from '../../src/mcp/stores/memory.ts'
import { StoreNotMigratedError } from '../../src/mcp/stores/engine-store.ts'
import {
  describeEngineStoreContract,
  newTask,
  storeStream,
  storeTask,
} from '../support/store-contract.ts'

async function openStore() {
  const store = new MemoryEngineStore()
  await store.migrate()
  return store
}

describeEngineStoreContract('memory', openStore)

describe('MemoryEngineStore specifics', () => {
  it('two stores share nothing', async () => {
    const [a, b] = await Promise.all([openStore(), openStore()])
    await a.createSession('sid', 'p', 10, 1, 5)
    expect(await a.getSession('sid')).toStrictEqual({ expiresAt: 10 })
    expect(await b.getSession('sid')).toBeUndefined()
  })

  it('methods before migrate and after close throw StoreNotMigratedError', async () => {
    const store = new MemoryEngineStore()
    await expect(store.getSession('sid')).rejects.toBeInstanceOf(StoreNotMigratedError)
    await store.migrate()
    await store.close()
    await expect(store.getTask('t')).rejects.toBeInstanceOf(StoreNotMigratedError)
    await expect(store.migrate()).rejects.toBeInstanceOf(StoreNotMigratedError)
  })

  it('holds nothing once every row expired and was purged: no index outlives its rows', async () => {
    const store = await openStore()
    for (let i = 0; i < 20; i++) {
      const sid = `sid-${i}`
      await store.createSession(sid, `p-${i % 3}`, 100, 1, 5)
      await store.addSubscription(sid, 'note://1', 1, 50)
      await store.expectInput(sid, 'r1', 100)
      await storeStream(store, { sid, stream: 's', expiresAt: 100 })
      await store.appendEvent(sid, 's', 1, '{}', 100)
      await storeTask(store, newTask(`p-${i % 3}`, 1, { expiresAt: 100 }))
    }
    while ((await store.purgeExpired(100, 7)) > 0);
    const tables = (store as unknown as { db: Record<string, Map<unknown, unknown>> }).db
    expect(
      Object.fromEntries(Object.entries(tables).map(([name, map]) => [name, map.size]))
    ).toEqual({
      sessions: 0,
      sessionsOf: 0,
      subscriptions: 0,
      subscriptionsOf: 0,
      slots: 0,
      streams: 0,
      events: 0,
      tasks: 0,
      tasksOf: 0,
    })
  })
})
