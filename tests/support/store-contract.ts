/**
 * @module tests/support/store-contract
 * The contract every `EngineStore` adapter passes (memory, node:sqlite, PostgreSQL, D1): one vitest
 * `describe` block exercising the engine's state through its interface only: the `SessionStore` of
 * 2025-era sessions (the caps per principal: a new session at the cap ends the oldest-created ones
 * with their subscriptions, also under creations issued together; the adversarial cases of the
 * answer rendezvous), the `StreamStore` of resumable 2025-era streams (compare-and-set records, the
 * cap on a session's live records, also under creations issued together, each event stored once,
 * reads bound to their session and stream, removed with their session), the `TaskStore` of tasks
 * (compare-and-set, clearing fields, large payloads, which tasks are runnable, the cap on a
 * principal's live tasks, also under creations issued together), and the purge of expired rows. Each
 * test takes a store from `makeStore` (already migrated) and invents its own principals, session ids
 * and task ids with random suffixes, so adapters may hand out a fresh database per test or one shared
 * database. The notes application's own store has its contract in `notes-store-contract.ts`.
 *
 * Calls "issued together" are started without awaiting each other: they race where the adapter lets
 * them (a PostgreSQL pool), and are serialised by an in-process driver (node:sqlite answers each call
 * synchronously, the memory store runs each call at once), so there they pin the outcome whichever
 * runs first. Real races between connections are the adapter tests' (threads on one SQLite file,
 * several PostgreSQL stores).
 *
 * It leaves to the adapter tests: engine specifics (journal mode, several connections, error names)
 * and how the store is created and torn down.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { MAX_SUBSCRIPTIONS_PER_SESSION } from '../../src/mcp/session-store.ts'
import type { EngineStore } from '../../src/mcp/stores/engine-store.ts'
import type { NewStream, StreamRecord, StreamStore } from '../../src/mcp/stream-store.ts'
import type { NewTask, TaskRecord, TaskStore } from '../../src/mcp/task-store.ts'

export interface StoreContractOptions {
  /**
   * Close each store after its test (default `true`). Set `false` when `makeStore` hands out one
   * shared store, and close it in the adapter's own `afterAll`.
   */
  closeAfterEach?: boolean
}

/** A fixed clock origin; tests pass explicit `now` values so ordering never depends on timing. */
export const T0 = 1_750_000_000_000
export const HOUR = 3_600_000

/** `label` with a random suffix: every test's principals and ids are its own. */
export function unique(label: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(9))
  return `${label}-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/** A contract test's store and principals: `alice` under test, `bob` who must stay apart from her. */
export interface ContractFixture<Store> {
  store: Store
  alice: string
  bob: string
}

/**
 * Inside a contract's `describe`, for each of its tests: a store from `makeStore` and two principals
 * of the test's own, handed to `use` before it; the store closed after it unless
 * `options.closeAfterEach` is false.
 */
export function freshStoreEachTest<Store extends { close(): Promise<void> }>(
  makeStore: () => Promise<Store>,
  options: StoreContractOptions,
  use: (fixture: ContractFixture<Store>) => void
): void {
  const closeAfterEach = options.closeAfterEach ?? true
  let store: Store
  beforeEach(async () => {
    store = await makeStore()
    use({ store, alice: unique('alice'), bob: unique('bob') })
  })
  afterEach(async () => {
    if (closeAfterEach) await store.close()
  })
}

/** The test of both contracts that `purgeExpired` refuses a limit, or a time, it cannot sweep by. */
export function itRefusesInvalidPurgeLimits(
  storeOfTest: () => { purgeExpired(now: number, limit: number): Promise<number> }
): void {
  it('rejects a limit that is not a positive integer', async () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) {
      await expect(storeOfTest().purgeExpired(T0, limit)).rejects.toBeInstanceOf(RangeError)
    }
    await expect(storeOfTest().purgeExpired(Number.NaN, 10)).rejects.toBeInstanceOf(RangeError)
  })
}

const MIB = 1024 * 1024

function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).byteLength
}

/**
 * A JSON text of exactly `bytes` of UTF-8: `shape` wraps a string that starts with non-ASCII and
 * control characters and is padded to size.
 */
function jsonOfSize(bytes: number, shape: (text: string) => unknown): string {
  const frame = (text: string) => JSON.stringify(shape(text))
  const head = 'é🎉日本語 \u0000 \u0001 '
  return frame(head + 'x'.repeat(bytes - utf8Bytes(frame(head))))
}

/**
 * Clocks of the task tests, one per test, a day apart: every task a test creates has expired by the
 * next test's clock, so `findRunnableTasks` in a database several tests share finds only the tasks
 * of the test that asks.
 */
let taskClocks = 0
function taskClock(): number {
  taskClocks += 1
  return T0 + taskClocks * 24 * HOUR
}

/**
 * A new working task of `owner` (its principal too, unless given) created at `at`, without any
 * optional field unless given.
 */
export function newTask(owner: string, at: number, fields: Partial<NewTask> = {}): NewTask {
  return {
    id: unique('task'),
    owner,
    principal: owner,
    tool: 'import_notes',
    args: '{"markdown":"# One\\n\\nbody"}',
    status: 'working',
    createdAt: at,
    updatedAt: at,
    expiresAt: at + HOUR,
    pollIntervalMs: 1000,
    journal: '[]',
    ...fields,
  }
}

/** A cap on live tasks that no test of the records themselves reaches. */
const ROOMY_TASK_CAP = 1_000

/** Stores `task` well inside the cap on live tasks; answers the record as stored. */
export async function storeTask(
  store: Pick<TaskStore, 'createTask'>,
  task: NewTask
): Promise<TaskRecord> {
  const created = await store.createTask(task, ROOMY_TASK_CAP)
  if (created === undefined) throw new Error(`the cap on live tasks refused ${task.id}`)
  return created
}

/** A cap on a session's live stream records that no test of the records themselves reaches. */
const ROOMY_STREAM_CAP = 1_000

/** Stores `stream` well inside the cap on its session's live records; answers the record as stored. */
export async function storeStream(
  store: Pick<StreamStore, 'createStream'>,
  stream: NewStream
): Promise<StreamRecord> {
  const created = await store.createStream(stream, ROOMY_STREAM_CAP, T0)
  if (created === undefined) throw new Error(`the cap on live streams refused ${stream.stream}`)
  return created
}

export function describeEngineStoreContract(
  name: string,
  makeStore: () => Promise<EngineStore>,
  options: StoreContractOptions = {}
): void {
  describe(`EngineStore contract: ${name}`, () => {
    // The principal under test, alice, and bob, whose sessions and tasks must stay apart from hers.
    let store: EngineStore, alice: string, bob: string
    freshStoreEachTest(makeStore, options, (fixture) => ({ store, alice, bob } = fixture))

    const createTask = (task: NewTask) => storeTask(store, task)

    describe('schema', () => {
      it('migrate is idempotent and keeps existing sessions and tasks', async () => {
        const sid = unique('sid')
        await store.createSession(sid, alice, T0 + HOUR, T0, 1_000)
        const task = await createTask(newTask(alice, T0))
        await store.migrate()
        await store.migrate()
        expect(await store.getSession(sid)).toStrictEqual({ expiresAt: T0 + HOUR })
        expect(await store.getTask(task.id)).toEqual(task)
      })
    })

    describe('sessions (2025 era)', () => {
      let sid: string
      let other: string
      const LIVE = T0 + HOUR
      /** A cap on a principal's sessions and subscriptions that no test of the records reaches. */
      const ROOMY = 1_000

      beforeEach(() => {
        sid = unique('sid')
        other = unique('sid')
      })

      /** Records session `id` of `principal`, created at T0 and live until `expiresAt`. */
      async function open(id: string, principal = alice, expiresAt = LIVE): Promise<void> {
        expect(await store.createSession(id, principal, expiresAt, T0, ROOMY)).toStrictEqual([])
      }

      /** Which of `ids` the store holds the record of a session of (expired or not). */
      async function recordedOf(ids: readonly string[]): Promise<string[]> {
        const records = await Promise.all(ids.map((id) => store.getSession(id)))
        return ids.filter((_, i) => records[i] !== undefined)
      }

      const subscribe = (id: string, uri: string, now = T0, cap = ROOMY) =>
        store.addSubscription(id, uri, now, cap)
      /** A refusal at the session's cap, or at the principal's, holding `held`. */
      const sessionFull = { full: 'session', held: MAX_SUBSCRIPTIONS_PER_SESSION }
      const principalFull = (held: number) => ({ full: 'principal', held })

      it('a session never created is unknown', async () => {
        expect(await store.getSession(sid)).toBeUndefined()
      })

      it('createSession records a live session without a log level; endSession removes it, idempotently, and no other', async () => {
        await open(sid)
        await open(other)
        expect(await store.getSession(sid)).toStrictEqual({ expiresAt: LIVE })
        await store.endSession(sid)
        await store.endSession(sid)
        expect(await store.getSession(sid)).toBeUndefined()
        expect(await store.getSession(other)).toStrictEqual({ expiresAt: LIVE })
      })

      it('an ended session stays unknown: a later purge, log level or subscription brings nothing back', async () => {
        await open(sid)
        await store.setSessionLogLevel(sid, 'debug')
        expect(await subscribe(sid, 'note://n_1')).toBe('subscribed')
        await store.endSession(sid)
        await store.purgeExpired(LIVE + HOUR, 1000)
        await store.setSessionLogLevel(sid, 'info')
        expect(await subscribe(sid, 'note://n_2')).toBe('no_session')
        expect(await store.getSession(sid)).toBeUndefined()
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(false)
        expect(await store.isSubscribed(sid, 'note://n_2')).toBe(false)
      })

      it('the last log level set wins, for its session only', async () => {
        await open(sid)
        await open(other)
        await store.setSessionLogLevel(sid, 'debug')
        await store.setSessionLogLevel(sid, 'error')
        expect(await store.getSession(sid)).toStrictEqual({ expiresAt: LIVE, logLevel: 'error' })
        expect(await store.getSession(other)).toStrictEqual({ expiresAt: LIVE })
        // A level for a session never created records nothing.
        await store.setSessionLogLevel(unique('sid'), 'info')
      })

      it('refuses a log level the protocol does not define', async () => {
        await open(sid)
        await expect(store.setSessionLogLevel(sid, 'verbose' as never)).rejects.toThrow()
        expect(await store.getSession(sid)).toStrictEqual({ expiresAt: LIVE })
      })

      it('a subscription is held once added, idempotently, until removed, by its session only', async () => {
        await open(sid)
        await open(other)
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(false)
        expect(await subscribe(sid, 'note://n_1')).toBe('subscribed')
        expect(await subscribe(sid, 'note://n_1')).toBe('subscribed')
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(true)
        expect(await store.isSubscribed(sid, 'note://n_2')).toBe(false)
        expect(await store.isSubscribed(other, 'note://n_1')).toBe(false)
        await store.removeSubscription(sid, 'note://n_1')
        await store.removeSubscription(sid, 'note://n_1')
        await store.removeSubscription(other, 'note://never')
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(false)
      })

      it('a subscription of a session never created, or expired, is refused and stored nowhere', async () => {
        expect(await subscribe(sid, 'note://n_1')).toBe('no_session')
        await open(other, alice, T0 + 10)
        expect(await subscribe(other, 'note://n_1', T0 + 10)).toBe('no_session')
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(false)
        expect(await store.isSubscribed(other, 'note://n_1')).toBe(false)
      })

      it('a session holds at most MAX_SUBSCRIPTIONS_PER_SESSION subscriptions', async () => {
        await open(sid)
        await open(other)
        const uri = (i: number) => `note://n_${i}`
        for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) {
          expect(await subscribe(sid, uri(i))).toBe('subscribed')
        }
        expect(await subscribe(sid, uri(-1))).toStrictEqual(sessionFull)
        expect(await store.isSubscribed(sid, uri(-1))).toBe(false)
        // One it holds is still idempotent at the cap, and another session has its own room.
        expect(await subscribe(sid, uri(7))).toBe('subscribed')
        expect(await subscribe(other, uri(-1))).toBe('subscribed')
        await store.removeSubscription(sid, uri(0))
        expect(await subscribe(sid, uri(-1))).toBe('subscribed')
        expect(await subscribe(sid, uri(0))).toStrictEqual(sessionFull)
      })

      it("the sessions of one principal hold at most the principal's cap of subscriptions together", async () => {
        const cap = MAX_SUBSCRIPTIONS_PER_SESSION + 50
        const uri = (i: number) => `note://n_${i}`
        await open(sid)
        await open(other)
        for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) {
          expect(await subscribe(sid, uri(i), T0, cap)).toBe('subscribed')
        }
        for (let i = MAX_SUBSCRIPTIONS_PER_SESSION; i < cap; i++) {
          expect(await subscribe(other, uri(i), T0, cap)).toBe('subscribed')
        }
        expect(await subscribe(other, uri(-1), T0, cap)).toStrictEqual(principalFull(cap))
        expect(await store.isSubscribed(other, uri(-1))).toBe(false)
        // A new session of the principal has no room either; another principal has its own.
        const third = unique('sid')
        await open(third)
        expect(await subscribe(third, uri(-1), T0, cap)).toStrictEqual(principalFull(cap))
        const bobs = unique('sid')
        await open(bobs, bob)
        expect(await subscribe(bobs, uri(-1), T0, cap)).toBe('subscribed')
        // A URI held is still idempotent at the cap; removing one makes room for one.
        expect(await subscribe(other, uri(cap - 1), T0, cap)).toBe('subscribed')
        await store.removeSubscription(sid, uri(0))
        expect(await subscribe(third, uri(-1), T0, cap)).toBe('subscribed')
        expect(await subscribe(third, uri(-2), T0, cap)).toStrictEqual(principalFull(cap))
        // Ending a session frees every place it held.
        await store.endSession(sid)
        for (let i = 2; i <= MAX_SUBSCRIPTIONS_PER_SESSION; i++) {
          expect(await subscribe(third, uri(-i), T0, cap)).toBe('subscribed')
        }
      })

      it("subscriptions of expired sessions do not count against the principal's cap", async () => {
        const cap = MAX_SUBSCRIPTIONS_PER_SESSION
        const uri = (i: number) => `note://n_${i}`
        await open(sid, alice, T0 + HOUR)
        for (let i = 0; i < cap; i++) {
          expect(await subscribe(sid, uri(i), T0, cap)).toBe('subscribed')
        }
        await open(other, alice, T0 + 3 * HOUR)
        expect(await subscribe(other, uri(0), T0 + HOUR - 1, cap)).toStrictEqual(principalFull(cap))
        // Once the first session has expired (purged or not), its rows leave the count.
        for (let i = 0; i < cap; i++) {
          expect(await subscribe(other, uri(i), T0 + HOUR, cap)).toBe('subscribed')
        }
      })

      it("at its cap, a principal's new session ends its oldest-created live one, with that one's subscriptions, and names it", async () => {
        const cap = 3
        const sids = Array.from({ length: cap + 2 }, () => unique('sid'))
        const [first, second] = sids as [string, string]
        // Created one millisecond apart; the oldest lives longest, so expiry decides nothing.
        for (const [i, id] of sids.slice(0, cap).entries()) {
          expect(
            await store.createSession(id, alice, LIVE + (cap - i) * HOUR, T0 + i, cap)
          ).toStrictEqual([])
        }
        expect(await subscribe(first, 'note://n_1')).toBe('subscribed')
        const bobs = unique('sid')
        await open(bobs, bob)
        expect(await subscribe(bobs, 'note://n_1')).toBe('subscribed')

        expect(await store.createSession(sids[cap]!, alice, LIVE, T0 + cap, cap)).toStrictEqual([
          first,
        ])
        expect(await recordedOf(sids)).toStrictEqual(sids.slice(1, cap + 1))
        expect(await store.isSubscribed(first, 'note://n_1')).toBe(false)
        expect(await subscribe(first, 'note://n_2')).toBe('no_session')
        // The next one ends the next oldest; another principal's sessions are not touched.
        expect(
          await store.createSession(sids[cap + 1]!, alice, LIVE, T0 + cap + 1, cap)
        ).toStrictEqual([second])
        expect(await store.getSession(second)).toBeUndefined()
        expect(await recordedOf(sids)).toStrictEqual(sids.slice(2))
        expect(await store.getSession(bobs)).toStrictEqual({ expiresAt: LIVE })
        expect(await store.isSubscribed(bobs, 'note://n_1')).toBe(true)
      })

      it("an ended session's subscriptions free their places in the principal's cap of subscriptions", async () => {
        const cap = MAX_SUBSCRIPTIONS_PER_SESSION
        const uri = (i: number) => `note://n_${i}`
        expect(await store.createSession(sid, alice, LIVE, T0, 2)).toStrictEqual([])
        for (let i = 0; i < cap; i++)
          expect(await subscribe(sid, uri(i), T0, cap)).toBe('subscribed')
        expect(await store.createSession(other, alice, LIVE, T0 + 1, 2)).toStrictEqual([])
        expect(await subscribe(other, uri(0), T0 + 1, cap)).toStrictEqual(principalFull(cap))
        // A third session at the cap of two ends the first and every place it held.
        const third = unique('sid')
        expect(await store.createSession(third, alice, LIVE, T0 + 2, 2)).toStrictEqual([sid])
        for (let i = 0; i < cap; i++) {
          expect(await subscribe(i % 2 ? other : third, uri(i), T0 + 2, cap)).toBe('subscribed')
        }
        expect(await subscribe(third, uri(-1), T0 + 2, cap)).toStrictEqual(principalFull(cap))
      })

      it('a principal over its cap (a lower cap than before) keeps only its newest sessions and the new one', async () => {
        const sids = Array.from({ length: 5 }, () => unique('sid'))
        for (const [i, id] of sids.entries()) {
          expect(await store.createSession(id, alice, LIVE, T0 + i, ROOMY)).toStrictEqual([])
        }
        const late = unique('sid')
        const ended = await store.createSession(late, alice, LIVE, T0 + 10, 2)
        expect(ended.toSorted()).toStrictEqual(sids.slice(0, 4).toSorted())
        expect(await recordedOf([...sids, late])).toStrictEqual([sids[4], late])
      })

      it('sessions that have expired are neither counted against the cap nor ended for it, purged or not', async () => {
        const cap = 2
        const old = [unique('sid'), unique('sid')]
        for (const [i, id] of old.entries()) {
          expect(await store.createSession(id, alice, T0 + HOUR, T0 + i, cap)).toStrictEqual([])
        }
        const [kept, late] = [unique('sid'), unique('sid')]
        // While both are live, a third ends the older of them.
        expect(
          await store.createSession(kept, alice, LIVE + HOUR, T0 + HOUR - 1, cap)
        ).toStrictEqual([old[0]])
        expect(await recordedOf([...old, kept])).toStrictEqual([old[1], kept])
        // Once the other has expired it holds no place: one more leaves `kept` alone.
        expect(await store.createSession(late, alice, LIVE + HOUR, T0 + HOUR, cap)).toStrictEqual(
          []
        )
        expect(await store.getSession(kept)).toStrictEqual({ expiresAt: LIVE + HOUR })
        expect(await store.getSession(late)).toStrictEqual({ expiresAt: LIVE + HOUR })
      })

      it('of session creations issued together at the cap, every one is recorded and the principal never holds more than the cap', async () => {
        const cap = 4
        const older = Array.from({ length: cap }, () => unique('sid'))
        for (const [i, id] of older.entries()) {
          expect(await store.createSession(id, alice, LIVE, T0 + i, cap)).toStrictEqual([])
        }
        // As many newer ones as the cap, issued together: each ends one older session, whichever
        // order they run in, so the newest are the ones kept.
        const newer = Array.from({ length: cap }, () => unique('sid'))
        const evicted = await Promise.all(
          newer.map((id, i) => store.createSession(id, alice, LIVE, T0 + 10 + i, cap))
        )
        // Each names the one it ended: every older session, once.
        expect(evicted.map((sids) => sids.length)).toStrictEqual(newer.map(() => 1))
        expect(evicted.flat().toSorted()).toStrictEqual(older.toSorted())
        expect(await recordedOf([...older, ...newer])).toStrictEqual(newer)
        // Three times the cap more: the principal ends up with exactly the cap, all of them new.
        const burst = Array.from({ length: 3 * cap }, () => unique('sid'))
        const ended = await Promise.all(
          burst.map((id, i) => store.createSession(id, alice, LIVE, T0 + 20 + i, cap))
        )
        const kept = await recordedOf(burst)
        expect(await recordedOf(newer)).toStrictEqual([])
        expect(kept).toHaveLength(cap)
        // Every session ended is named once, by the creation that ended it.
        expect(ended.flat().toSorted()).toStrictEqual(
          [...newer, ...burst].filter((id) => !kept.includes(id)).toSorted()
        )
      })

      it('renewSession keeps a live session and its subscriptions until the later expiry; never shortens, never brings back an ended, expired or unknown session', async () => {
        const RENEWED = LIVE + HOUR
        await open(sid)
        expect(await subscribe(sid, 'note://n_1')).toBe('subscribed')
        expect(await store.renewSession(sid, RENEWED, T0 + 1)).toBe(true)
        // An earlier expiry (a replica with a shorter lifetime) shortens nothing.
        expect(await store.renewSession(sid, LIVE - 1, T0 + 2)).toBe(true)
        expect(await subscribe(sid, 'note://n_2', T0 + 3)).toBe('subscribed')
        // Past the expiry it was created with, purged: the session and both subscriptions remain.
        await store.purgeExpired(LIVE + 1, 1000)
        expect(await store.getSession(sid)).toStrictEqual({ expiresAt: RENEWED })
        expect(await subscribe(sid, 'note://n_3', LIVE + 1)).toBe('subscribed')
        for (const uri of ['note://n_1', 'note://n_2', 'note://n_3']) {
          expect(await store.isSubscribed(sid, uri)).toBe(true)
        }
        // Past the renewed expiry everything goes.
        await store.purgeExpired(RENEWED, 1000)
        expect(await store.getSession(sid)).toBeUndefined()
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(false)

        // A session ended (DELETE) stays ended.
        await open(other)
        await store.endSession(other)
        expect(await store.renewSession(other, RENEWED, T0 + 1)).toBe(false)
        expect(await store.getSession(other)).toBeUndefined()
        // One expired at `now`, purged or not, is not renewed either.
        const expired = unique('sid')
        await open(expired, alice, T0 + 10)
        expect(await store.renewSession(expired, RENEWED, T0 + 10)).toBe(false)
        expect(await store.getSession(expired)).toStrictEqual({ expiresAt: T0 + 10 })
        await store.purgeExpired(T0 + 10, 1000)
        expect(await store.getSession(expired)).toBeUndefined()
        expect(await store.renewSession(unique('sid'), RENEWED, T0)).toBe(false)
      })

      it('a session renewed a lifetime from each use slides: getSession answers each new expiry, then, unused, the last one until it is purged', async () => {
        await open(sid)
        expect(await subscribe(sid, 'note://n_1')).toBe('subscribed')
        let now = T0
        // Four uses half a lifetime apart: two lifetimes past the expiry it was created with.
        for (let use = 0; use < 4; use++) {
          now += HOUR / 2
          expect(await store.renewSession(sid, now + HOUR, now)).toBe(true)
          await store.purgeExpired(now, 1000)
          expect(await store.getSession(sid)).toStrictEqual({ expiresAt: now + HOUR })
        }
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(true)
        // Unused for a lifetime: expired, answered with its expiry until purged, and never renewed.
        const last = now + HOUR
        expect(await store.renewSession(sid, last + HOUR, last)).toBe(false)
        expect(await store.getSession(sid)).toStrictEqual({ expiresAt: last })
        await store.purgeExpired(last, 1000)
        expect(await store.getSession(sid)).toBeUndefined()
        expect(await store.isSubscribed(sid, 'note://n_1')).toBe(false)
      })

      it("of subscriptions issued together across a principal's sessions, never more than its cap", async () => {
        const cap = 25
        const sids = [sid, other, unique('sid')]
        for (const id of sids) await open(id)
        const attempts = sids.flatMap((id) =>
          Array.from({ length: 20 }, (_, i) => ({ id, uri: `note://n_${i}` }))
        )
        const outcomes = await Promise.all(
          attempts.map(({ id, uri }) => subscribe(id, uri, T0, cap))
        )
        expect(outcomes.filter((outcome) => outcome === 'subscribed')).toHaveLength(cap)
        // Every other one is refused at the principal's cap, which is what it holds.
        expect(outcomes.filter((outcome) => outcome !== 'subscribed')).toStrictEqual(
          Array.from({ length: attempts.length - cap }, () => principalFull(cap))
        )
        const held = await Promise.all(attempts.map(({ id, uri }) => store.isSubscribed(id, uri)))
        expect(held.filter(Boolean)).toHaveLength(cap)
      })

      describe('input slots', () => {
        const answer = (id: string) => JSON.stringify({ jsonrpc: '2.0', id, result: { ok: id } })

        it('an answer delivered to its expected slot is read as often as asked, until forgotten', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          expect(await store.deliverInput(sid, 'r1', answer('r1'), T0)).toBe(true)
          expect(await store.readInput(sid, 'r1')).toBe(answer('r1'))
          expect(await store.readInput(sid, 'r1')).toBe(answer('r1'))
          // A late duplicate does not replace it.
          expect(await store.deliverInput(sid, 'r1', answer('late'), T0)).toBe(false)
          await store.forgetInput(sid, 'r1')
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
          // Forgetting removed the slot: a late duplicate finds nothing to fill.
          expect(await store.deliverInput(sid, 'r1', answer('late'), T0)).toBe(false)
        })

        it('reading before the answer arrives finds nothing and keeps the slot open', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
          expect(await store.deliverInput(sid, 'r1', answer('r1'), T0)).toBe(true)
          expect(await store.readInput(sid, 'r1')).toBe(answer('r1'))
        })

        it('an answer for a slot nobody expected is refused and stored nowhere', async () => {
          expect(await store.deliverInput(sid, 'r1', answer('r1'), T0)).toBe(false)
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
          await store.expectInput(sid, 'r1', LIVE)
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
        })

        it("an answer sent to another session's slot is refused and leaves that slot open", async () => {
          await store.expectInput(sid, 'r1', LIVE)
          expect(await store.deliverInput(other, 'r1', answer('forged'), T0)).toBe(false)
          expect(await store.readInput(other, 'r1')).toBeUndefined()
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
          expect(await store.deliverInput(sid, 'r1', answer('r1'), T0)).toBe(true)
          expect(await store.readInput(sid, 'r1')).toBe(answer('r1'))
        })

        it('a second answer to one slot is refused and the first one kept', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          expect(await store.deliverInput(sid, 'r1', answer('first'), T0)).toBe(true)
          expect(await store.deliverInput(sid, 'r1', answer('second'), T0 + 1)).toBe(false)
          expect(await store.readInput(sid, 'r1')).toBe(answer('first'))
        })

        it('of two answers issued together to one slot exactly one is stored', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          const outcomes = await Promise.all([
            store.deliverInput(sid, 'r1', answer('one'), T0),
            store.deliverInput(sid, 'r1', answer('two'), T0),
          ])
          expect([...outcomes].sort()).toEqual([false, true])
          expect(await store.readInput(sid, 'r1')).toBe(answer(outcomes[0] ? 'one' : 'two'))
        })

        it('an answer arriving at or after the slot expiry is refused', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          expect(await store.deliverInput(sid, 'r1', answer('r1'), LIVE)).toBe(false)
          expect(await store.deliverInput(sid, 'r1', answer('r1'), LIVE + HOUR)).toBe(false)
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
          expect(await store.deliverInput(sid, 'r1', answer('r1'), LIVE - 1)).toBe(true)
        })

        it('opening a slot again keeps its answer and only ever extends its expiry', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          await store.expectInput(sid, 'r1', LIVE + HOUR)
          await store.expectInput(sid, 'r1', T0)
          expect(await store.deliverInput(sid, 'r1', answer('r1'), LIVE + 1)).toBe(true)
          await store.expectInput(sid, 'r1', LIVE + HOUR)
          expect(await store.readInput(sid, 'r1')).toBe(answer('r1'))
        })

        it('forgetInput removes a slot whatever its state', async () => {
          await store.expectInput(sid, 'open', LIVE)
          await store.expectInput(sid, 'answered', LIVE)
          await store.deliverInput(sid, 'answered', answer('answered'), T0)
          await store.forgetInput(sid, 'open')
          await store.forgetInput(sid, 'answered')
          await store.forgetInput(sid, 'never-expected')
          expect(await store.readInput(sid, 'answered')).toBeUndefined()
          expect(await store.deliverInput(sid, 'open', answer('open'), T0)).toBe(false)
        })

        it('slots of one request id in two sessions are independent', async () => {
          await store.expectInput(sid, 'r1', LIVE)
          await store.expectInput(other, 'r1', LIVE)
          expect(await store.deliverInput(other, 'r1', answer('theirs'), T0)).toBe(true)
          expect(await store.readInput(sid, 'r1')).toBeUndefined()
          expect(await store.deliverInput(sid, 'r1', answer('mine'), T0)).toBe(true)
          expect(await store.readInput(sid, 'r1')).toBe(answer('mine'))
          expect(await store.readInput(other, 'r1')).toBe(answer('theirs'))
        })

        it('an answer of 1 MiB round-trips exactly', async () => {
          const payload = jsonOfSize(MIB, (text) => ({
            jsonrpc: '2.0',
            id: 'big',
            result: { text },
          }))
          expect(utf8Bytes(payload)).toBe(MIB)
          await store.expectInput(sid, 'big', LIVE)
          expect(await store.deliverInput(sid, 'big', payload, T0)).toBe(true)
          expect(await store.readInput(sid, 'big')).toBe(payload)
        })

        it('ids and answers with quotes, unicode and control characters are kept apart exactly', async () => {
          const id = `it's "r" \u0001 ✓`
          const payload = `raw \u0000 and \u0001 and 'quotes' ✓`
          await store.expectInput(sid, id, LIVE)
          expect(await store.deliverInput(sid, `${id} `, payload, T0)).toBe(false)
          expect(await store.deliverInput(sid, id, payload, T0)).toBe(true)
          expect(await store.readInput(sid, id)).toBe(payload)
        })
      })
    })

    describe('streams (2025 era)', () => {
      let sid: string
      let other: string
      const LIVE = T0 + HOUR

      beforeEach(() => {
        sid = unique('sid')
        other = unique('sid')
      })

      /** A new stream of session `id`, kept until LIVE, without any optional field unless given. */
      function newStream(id: string, stream: string, fields: Partial<NewStream> = {}): NewStream {
        return { sid: id, stream, expiresAt: LIVE, ...fields }
      }

      const stored = (stream: NewStream): StreamRecord => ({ ...stream, ended: false, version: 1 })
      const event = (seq: number) =>
        JSON.stringify({ jsonrpc: '2.0', method: 'n', params: { seq } })
      /** Stores events `seqs` of the stream, in that order, each kept until `expiresAt`. */
      async function append(id: string, stream: string, seqs: number[], expiresAt = LIVE) {
        for (const seq of seqs) {
          expect(await store.appendEvent(id, stream, seq, event(seq), expiresAt)).toBe(true)
        }
      }
      /** The seqs `readEvents` answers, checking each payload is the one stored for it. */
      async function seqsAfter(id: string, stream: string, afterSeq = 0, limit = 100, now = T0) {
        const events = await store.readEvents(id, stream, afterSeq, limit, now)
        for (const { seq, payload } of events) expect(payload).toBe(event(seq))
        return events.map(({ seq }) => seq)
      }

      it('a stream never created is unknown and has no events', async () => {
        expect(await store.getStream(sid, 's1')).toBeUndefined()
        expect(await store.readEvents(sid, 's1', 0, 10, T0)).toStrictEqual([])
      })

      it('createStream stores every field as given, at version 1 and not ended; getStream answers the same, expired or not', async () => {
        const bare = newStream(sid, 'bare')
        const full = newStream(sid, 'full', {
          call: '{"request":{"method":"tools/call"},"rounds":[]}',
          leaseOwner: 'replica-a',
          leaseExpiresAt: T0 + 30_000,
        })
        for (const stream of [bare, full]) {
          const created = await storeStream(store, stream)
          expect(created).toStrictEqual(stored(stream))
          expect(await store.getStream(sid, stream.stream)).toStrictEqual(created)
        }
        // Optional fields given as undefined are absent from the record.
        const given = newStream(sid, 'undefined', { call: undefined, leaseOwner: undefined })
        expect(await storeStream(store, given)).toStrictEqual(stored(newStream(sid, 'undefined')))
        // The record is answered past its expiry until purged: the caller checks.
        await storeStream(store, newStream(other, 'old', { expiresAt: T0 }))
        expect(await store.getStream(other, 'old')).toMatchObject({ expiresAt: T0 })
      })

      it('createStream of a (sid, stream) that exists throws and leaves the stored record unchanged; the same stream id in another session is another record', async () => {
        const first = await storeStream(store, newStream(sid, 's1', { call: '{"first":true}' }))
        const attempt = storeStream(store, newStream(sid, 's1', { call: '{"second":true}' }))
        await expect(attempt).rejects.toThrow()
        expect(await store.getStream(sid, 's1')).toStrictEqual(first)
        const theirs = await storeStream(store, newStream(other, 's1'))
        expect(theirs).toStrictEqual(stored(newStream(other, 's1')))
        expect(await store.getStream(sid, 's1')).toStrictEqual(first)
      })

      describe("the cap on a session's live records (createStream with maxPerSession)", () => {
        /** Creates `stream` of session `id` under `cap`, counting at `now`. */
        const create = (id: string, stream: string, cap: number, now = T0, fields = {}) =>
          store.createStream(newStream(id, stream, fields), cap, now)

        /** Ends `stream` of session `id` (at version 1), kept until `expiresAt`. */
        async function end(id: string, stream: string, expiresAt: number) {
          expect(await store.updateStream(id, stream, 1, { ended: true, expiresAt })).toBeDefined()
        }
        /** The streams among `streams` that session `id` still has a record of. */
        async function held(id: string, streams: string[]) {
          const records = await Promise.all(streams.map((stream) => store.getStream(id, stream)))
          return streams.filter((_, i) => records[i] !== undefined)
        }

        it('stores records while the session holds fewer than maxPerSession live ones, then, with none of them ended, refuses one and stores nothing', async () => {
          for (const stream of ['s1', 's2', 's3']) {
            expect(await create(sid, stream, 3)).toStrictEqual(stored(newStream(sid, stream)))
          }
          expect(await create(sid, 's4', 3, T0, { call: '{}' })).toBeUndefined()
          expect(await store.getStream(sid, 's4')).toBeUndefined()
          expect(await held(sid, ['s1', 's2', 's3'])).toStrictEqual(['s1', 's2', 's3'])
          // The cap is the caller's: a larger one has room.
          expect(await create(sid, 's4', 4)).toStrictEqual(stored(newStream(sid, 's4')))
          expect(await create(sid, 's5', 4)).toBeUndefined()
        })

        it('at the cap, evicts ended records only, the oldest (those that expire first) first, with their events, and stops at half the cap; below the cap it evicts none', async () => {
          // Six records under a cap of 6: five ended, at expiries out of creation order, and one
          // call in progress that expires before all of them.
          const ended = {
            s1: LIVE - 30,
            s2: LIVE - 10,
            s3: LIVE - 50,
            s4: LIVE - 20,
            s5: LIVE - 40,
          }
          for (const stream of Object.keys(ended)) {
            expect(await create(sid, stream, 6)).toBeDefined()
            await append(sid, stream, [1, 2])
          }
          expect(await create(sid, 'busy', 6, T0, { expiresAt: LIVE - 100 })).toBeDefined()
          for (const [stream, expiresAt] of Object.entries(ended)) await end(sid, stream, expiresAt)
          const all = [...Object.keys(ended), 'busy']
          // At the cap: the three oldest ended go (s3, s5, s1), leaving 3 = 6 / 2, then n1 is stored.
          expect(await create(sid, 'n1', 6)).toStrictEqual(stored(newStream(sid, 'n1')))
          expect(await held(sid, [...all, 'n1'])).toStrictEqual(['s2', 's4', 'busy', 'n1'])
          for (const stream of ['s1', 's3', 's5'])
            expect(await seqsAfter(sid, stream)).toStrictEqual([])
          // Their events are gone, not merely hidden: their seqs are free again.
          expect(await store.appendEvent(sid, 's3', 1, event(1), LIVE)).toBe(true)
          for (const stream of ['s2', 's4'])
            expect(await seqsAfter(sid, stream)).toStrictEqual([1, 2])
          // Below the cap, nothing is evicted: n2 and n3 fill it again.
          for (const stream of ['n2', 'n3']) expect(await create(sid, stream, 6)).toBeDefined()
          const full = ['s2', 's4', 'busy', 'n1', 'n2', 'n3']
          expect(await held(sid, full)).toStrictEqual(full)
          // At the cap with 4 not ended, more than half: every ended record goes, and no other.
          expect(await create(sid, 'n4', 6)).toBeDefined()
          const inProgress = ['busy', 'n1', 'n2', 'n3', 'n4']
          expect(await held(sid, [...full, 'n4'])).toStrictEqual(inProgress)
          for (const stream of ['s2', 's4']) expect(await seqsAfter(sid, stream)).toStrictEqual([])
          expect(await create(sid, 'n5', 6)).toBeDefined()
          // Only calls in progress are left, and they fill the cap: refused.
          expect(await create(sid, 'n6', 6)).toBeUndefined()
          expect(await held(sid, [...inProgress, 'n5', 'n6'])).toStrictEqual([...inProgress, 'n5'])
        })

        it('under a cap smaller than the records held, evicts down to half of that cap; with room, evicts none; refused, evicts none', async () => {
          const streams = ['s1', 's2', 's3', 's4', 's5', 's6']
          for (const stream of streams) {
            expect(await create(sid, stream, 6)).toBeDefined()
            await append(sid, stream, [1])
          }
          for (const [i, stream] of streams.slice(0, 5).entries()) await end(sid, stream, LIVE - i)
          // 6 live, 5 of them ended (s5 the oldest), under a cap of 5: down to 2, the oldest four go.
          expect(await create(sid, 'n1', 5)).toBeDefined()
          expect(await held(sid, [...streams, 'n1'])).toStrictEqual(['s1', 's6', 'n1'])
          // Under a cap of 6 there is room without evicting.
          expect(await create(sid, 'n2', 6)).toBeDefined()
          const kept = ['s1', 's6', 'n1', 'n2']
          expect(await held(sid, kept)).toStrictEqual(kept)
          // 3 not ended fill a cap of 3: refused, and the ended one is not evicted.
          expect(await create(sid, 'n3', 3)).toBeUndefined()
          expect(await held(sid, [...kept, 'n3'])).toStrictEqual(kept)
          expect(await seqsAfter(sid, 's1')).toStrictEqual([1])
        })

        it('refuses while records not ended fill the cap, keeping the ended ones a larger cap let it hold', async () => {
          expect(await create(sid, 'done', 3)).toBeDefined()
          await append(sid, 'done', [1])
          await end(sid, 'done', LIVE)
          for (const stream of ['s1', 's2']) expect(await create(sid, stream, 3)).toBeDefined()
          expect(await create(sid, 's3', 2)).toBeUndefined()
          expect(await held(sid, ['done', 's1', 's2', 's3'])).toStrictEqual(['done', 's1', 's2'])
          expect(await seqsAfter(sid, 'done')).toStrictEqual([1])
        })

        it("evicts none of another session's ended records", async () => {
          for (const id of [sid, other]) {
            for (const stream of ['s1', 's2']) {
              expect(await create(id, stream, 2)).toBeDefined()
              await append(id, stream, [1])
              await end(id, stream, LIVE)
            }
          }
          for (const stream of ['n1', 'n2']) expect(await create(sid, stream, 2)).toBeDefined()
          expect(await create(sid, 'n3', 2)).toBeUndefined()
          expect(await held(sid, ['s1', 's2', 'n1', 'n2'])).toStrictEqual(['n1', 'n2'])
          expect(await held(other, ['s1', 's2', 'n1'])).toStrictEqual(['s1', 's2'])
          for (const stream of ['s1', 's2'])
            expect(await seqsAfter(other, stream)).toStrictEqual([1])
        })

        it('evicts nothing when its stream exists (and throws)', async () => {
          for (const stream of ['s1', 's2']) expect(await create(sid, stream, 2)).toBeDefined()
          await end(sid, 's1', LIVE)
          await expect(create(sid, 's2', 2)).rejects.toThrow()
          expect(await held(sid, ['s1', 's2'])).toStrictEqual(['s1', 's2'])
        })

        it('another session has its own room, for the same stream ids too', async () => {
          for (const stream of ['s1', 's2']) expect(await create(sid, stream, 2)).toBeDefined()
          expect(await create(sid, 's3', 2)).toBeUndefined()
          for (const stream of ['s1', 's2']) {
            expect(await create(other, stream, 2)).toStrictEqual(stored(newStream(other, stream)))
          }
          expect(await create(other, 's3', 2)).toBeUndefined()
          expect(await store.getStream(sid, 's3')).toBeUndefined()
          expect(await store.getStream(other, 's3')).toBeUndefined()
        })

        it('counts records until their expiresAt and none from then on, purged or not; an update bringing it forward frees a place', async () => {
          expect(await create(sid, 'short', 2, T0, { expiresAt: T0 + 10 })).toBeDefined()
          expect(await create(sid, 'long', 2)).toBeDefined()
          expect(await create(sid, 's3', 2, T0 + 9)).toBeUndefined()
          // Expired at now but not purged yet: it counts for nothing.
          expect(await create(sid, 's3', 2, T0 + 10)).toStrictEqual(stored(newStream(sid, 's3')))
          expect(await create(sid, 's4', 2, T0 + 10)).toBeUndefined()
          expect(await store.updateStream(sid, 'long', 1, { expiresAt: T0 + 20 })).toBeDefined()
          expect(await create(sid, 's4', 2, T0 + 19)).toBeUndefined()
          expect(await create(sid, 's4', 2, T0 + 20)).toStrictEqual(stored(newStream(sid, 's4')))
        })

        it('of creations issued together at a cap full of ended records, the evictions make room for maxPerSession and no more', async () => {
          const done = ['d1', 'd2', 'd3', 'd4']
          for (const stream of done) {
            expect(await create(sid, stream, 4)).toBeDefined()
            await append(sid, stream, [1])
            await end(sid, stream, LIVE)
          }
          const streams = Array.from({ length: 10 }, (_, i) => `s${i}`)
          const outcomes = await Promise.all(streams.map((stream) => create(sid, stream, 4)))
          expect(outcomes.filter((outcome) => outcome !== undefined)).toHaveLength(4)
          expect(await held(sid, [...done, ...streams])).toHaveLength(4)
          expect(await held(sid, done)).toStrictEqual([])
          for (const stream of done) expect(await seqsAfter(sid, stream)).toStrictEqual([])
        })

        it("of creations issued together, never stores more than maxPerSession in one session; another session's fill their own room", async () => {
          const streams = Array.from({ length: 12 }, (_, i) => `s${i}`)
          const attempts = [sid, other].flatMap((id) => streams.map((stream) => ({ id, stream })))
          const outcomes = await Promise.all(
            attempts.map(({ id, stream }) => create(id, stream, 5))
          )
          for (const id of [sid, other]) {
            const kept = outcomes.filter((outcome) => outcome?.sid === id)
            expect(kept, id).toHaveLength(5)
          }
          expect(outcomes.filter((outcome) => outcome === undefined)).toHaveLength(14)
          for (const [i, { id, stream }] of attempts.entries()) {
            expect(await store.getStream(id, stream)).toStrictEqual(outcomes[i])
          }
        })

        it('rejects a maxPerSession that is not a positive integer, and stores nothing', async () => {
          for (const cap of [0, -1, 1.5, Number.NaN, Infinity]) {
            await expect(create(sid, 's1', cap), String(cap)).rejects.toBeInstanceOf(RangeError)
            expect(await store.getStream(sid, 's1')).toBeUndefined()
          }
        })
      })

      it('updateStream applies a patch only at the expected version, adding 1; a field left undefined is kept, null clears it', async () => {
        const created = await storeStream(
          store,
          newStream(sid, 's1', { call: '{"round":1}', leaseOwner: 'a', leaseExpiresAt: T0 + 1 })
        )
        expect(await store.updateStream(sid, 's1', 2, { call: '{"round":2}' })).toBeUndefined()
        expect(await store.updateStream(sid, 's1', 0, { ended: true })).toBeUndefined()
        expect(await store.getStream(sid, 's1')).toStrictEqual(created)

        const taken = await store.updateStream(sid, 's1', 1, {
          leaseOwner: 'b',
          leaseExpiresAt: T0 + 2,
        })
        expect(taken).toStrictEqual({
          ...created,
          leaseOwner: 'b',
          leaseExpiresAt: T0 + 2,
          version: 2,
        })
        // The version it was taken at is spent: a second writer of version 1 loses.
        expect(await store.updateStream(sid, 's1', 1, { leaseOwner: 'c' })).toBeUndefined()

        const finished = await store.updateStream(sid, 's1', 2, {
          call: null,
          leaseOwner: null,
          leaseExpiresAt: null,
          ended: true,
          expiresAt: LIVE + HOUR,
        })
        const expected: StreamRecord = {
          sid,
          stream: 's1',
          ended: true,
          expiresAt: LIVE + HOUR,
          version: 3,
        }
        expect(finished).toStrictEqual(expected)
        expect(await store.getStream(sid, 's1')).toStrictEqual(expected)
        // An empty patch still moves the version; a record never created matches nothing.
        expect(await store.updateStream(sid, 's1', 3, {})).toStrictEqual({
          ...expected,
          version: 4,
        })
        expect(await store.updateStream(sid, 'never', 1, { ended: true })).toBeUndefined()
        expect(await store.updateStream(other, 's1', 1, { ended: true })).toBeUndefined()
        expect(await store.getStream(sid, 'never')).toBeUndefined()
      })

      it('of updates issued together at one version exactly one applies', async () => {
        await storeStream(store, newStream(sid, 's1'))
        const owners = ['a', 'b', 'c', 'd']
        const outcomes = await Promise.all(
          owners.map((owner) =>
            store.updateStream(sid, 's1', 1, { leaseOwner: owner, leaseExpiresAt: T0 + 1 })
          )
        )
        const won = outcomes.filter((outcome) => outcome !== undefined)
        expect(won).toHaveLength(1)
        expect(await store.getStream(sid, 's1')).toStrictEqual(won[0])
        expect(won[0]).toMatchObject({ version: 2 })
      })

      it('appendEvent stores each seq once: a duplicate is refused and overwrites nothing', async () => {
        expect(await store.appendEvent(sid, 's1', 1, event(1), LIVE)).toBe(true)
        expect(await store.appendEvent(sid, 's1', 1, '{"forged":true}', LIVE + HOUR)).toBe(false)
        expect(await store.readEvents(sid, 's1', 0, 10, T0)).toStrictEqual([
          { seq: 1, payload: event(1) },
        ])
        // Its expiry was not moved by the refused duplicate either.
        expect(await store.readEvents(sid, 's1', 0, 10, LIVE)).toStrictEqual([])
      })

      it('of appends of one seq issued together exactly one is stored', async () => {
        const outcomes = await Promise.all(
          ['one', 'two', 'three'].map((writer) => store.appendEvent(sid, 's1', 1, writer, LIVE))
        )
        expect(outcomes.filter(Boolean)).toHaveLength(1)
        const [kept] = await store.readEvents(sid, 's1', 0, 10, T0)
        expect(kept?.payload).toBe(['one', 'two', 'three'][outcomes.indexOf(true)])
      })

      it('readEvents answers the events after afterSeq in order, at most limit, and skips expired ones', async () => {
        await append(sid, 's1', [3, 1, 2, 5])
        await append(sid, 's1', [4], T0 + 10)
        expect(await seqsAfter(sid, 's1')).toStrictEqual([1, 2, 3, 4, 5])
        expect(await seqsAfter(sid, 's1', 2)).toStrictEqual([3, 4, 5])
        expect(await seqsAfter(sid, 's1', 0, 2)).toStrictEqual([1, 2])
        expect(await seqsAfter(sid, 's1', 2, 2)).toStrictEqual([3, 4])
        expect(await seqsAfter(sid, 's1', 5)).toStrictEqual([])
        // Expired at `now` (purged or not): skipped, and what follows it is still answered.
        expect(await seqsAfter(sid, 's1', 2, 2, T0 + 10)).toStrictEqual([3, 5])
        expect(await seqsAfter(sid, 's1', 0, 100, LIVE)).toStrictEqual([])
      })

      it("another session's or another stream's events are never answered, for the same stream id in two sessions", async () => {
        await append(sid, 's1', [1, 2])
        await append(sid, 's2', [3])
        await append(other, 's1', [4, 5, 6])
        expect(await seqsAfter(sid, 's1')).toStrictEqual([1, 2])
        expect(await seqsAfter(sid, 's2')).toStrictEqual([3])
        expect(await seqsAfter(other, 's1')).toStrictEqual([4, 5, 6])
        expect(await seqsAfter(other, 's2')).toStrictEqual([])
        // Each stream numbers its own events: seq 1 of another stream is free.
        expect(await store.appendEvent(other, 's2', 1, event(1), LIVE)).toBe(true)
        expect(await seqsAfter(sid, 's1')).toStrictEqual([1, 2])
      })

      it('rejects a limit or afterSeq that is not a whole number, and a seq that is not positive', async () => {
        for (const limit of [0, -1, 1.5, Number.NaN]) {
          await expect(store.readEvents(sid, 's1', 0, limit, T0)).rejects.toBeInstanceOf(RangeError)
        }
        for (const afterSeq of [-1, 0.5, Number.NaN]) {
          await expect(store.readEvents(sid, 's1', afterSeq, 10, T0)).rejects.toBeInstanceOf(
            RangeError
          )
        }
        for (const seq of [0, -1, 1.5]) {
          await expect(store.appendEvent(sid, 's1', seq, '{}', LIVE)).rejects.toBeInstanceOf(
            RangeError
          )
        }
      })

      it("endSession removes the session's streams and their events, and no other session's", async () => {
        for (const id of [sid, other]) {
          expect(await store.createSession(id, alice, LIVE, T0, 1_000)).toStrictEqual([])
          await storeStream(store, newStream(id, 's1', { call: '{}' }))
          await append(id, 's1', [1, 2])
        }
        await store.endSession(sid)
        expect(await store.getStream(sid, 's1')).toBeUndefined()
        expect(await seqsAfter(sid, 's1')).toStrictEqual([])
        expect(await store.getStream(other, 's1')).toMatchObject({ call: '{}' })
        expect(await seqsAfter(other, 's1')).toStrictEqual([1, 2])
        // The ids are free again (a session id is never reused, but nothing lingers under it).
        expect(await store.appendEvent(sid, 's1', 1, event(1), LIVE)).toBe(true)
      })

      it("a session ended at its principal's cap loses its streams and their events with it", async () => {
        const cap = 2
        const third = unique('sid')
        for (const [i, id] of [sid, other].entries()) {
          expect(await store.createSession(id, alice, LIVE, T0 + i, cap)).toStrictEqual([])
          await storeStream(store, newStream(id, 's1'))
          await append(id, 's1', [1])
        }
        expect(await store.createSession(third, alice, LIVE, T0 + 2, cap)).toStrictEqual([sid])
        expect(await store.getStream(sid, 's1')).toBeUndefined()
        expect(await seqsAfter(sid, 's1')).toStrictEqual([])
        expect(await store.getStream(other, 's1')).toBeDefined()
        expect(await seqsAfter(other, 's1')).toStrictEqual([1])
      })

      it('an event payload of 256 KiB round-trips byte-exact, unicode and control characters included', async () => {
        const payload = jsonOfSize(256 * 1024, (text) => ({
          jsonrpc: '2.0',
          method: 'notifications/message',
          params: { data: text },
        }))
        expect(utf8Bytes(payload)).toBe(256 * 1024)
        const raw = `raw \u0000 \u0001 \u0001\u0002 'quotes' "q" \\ ✓ 🎉 日本語 é`
        expect(await store.appendEvent(sid, 's1', 1, payload, LIVE)).toBe(true)
        expect(await store.appendEvent(sid, 's1', 2, raw, LIVE)).toBe(true)
        expect(await store.readEvents(sid, 's1', 0, 10, T0)).toStrictEqual([
          { seq: 1, payload },
          { seq: 2, payload: raw },
        ])
        const call = jsonOfSize(256 * 1024, (text) => ({ request: { text } }))
        await storeStream(store, newStream(sid, 's1', { call, leaseOwner: raw }))
        expect(await store.getStream(sid, 's1')).toMatchObject({ call, leaseOwner: raw })
      })

      it('ids with quotes, unicode and control characters are kept apart exactly', async () => {
        const [id, stream] = [`${sid} it's "x" \u0000 ✓`, `s \u0001 🎉`]
        await storeStream(store, newStream(id, stream))
        await append(id, stream, [1])
        expect(await store.getStream(id, stream)).toStrictEqual(stored(newStream(id, stream)))
        expect(await store.getStream(id, `${stream}\u0000`)).toBeUndefined()
        expect(await store.getStream(sid, stream)).toBeUndefined()
        expect(await seqsAfter(id, stream)).toStrictEqual([1])
        expect(await seqsAfter(id, `${stream} `)).toStrictEqual([])
      })
    })

    describe('tasks', () => {
      /** This test's clock: later than every task an earlier test left behind has lived. */
      let now: number

      beforeEach(() => {
        now = taskClock()
      })

      /** Every optional field set. */
      function fullTask(fields: Partial<NewTask> = {}): NewTask {
        return newTask(alice, now, {
          status: 'input_required',
          statusMessage: 'Waiting for an answer',
          inputRequests: '{"conflicts-1":{"method":"elicitation/create"}}',
          inputResponses: '{"earlier":{"action":"accept"}}',
          result: '{"content":[],"isError":false}',
          error: '{"code":-32603,"message":"boom"}',
          leaseOwner: 'replica-a',
          leaseExpiresAt: now + 30_000,
          ...fields,
        })
      }

      const stored = (task: NewTask): TaskRecord => ({
        ...task,
        cancelRequested: false,
        version: 1,
      })

      it('createTask stores every field as given, at version 1 and not cancelled; getTask answers the same', async () => {
        for (const task of [newTask(alice, now), fullTask()]) {
          const created = await createTask(task)
          expect(created).toStrictEqual(stored(task))
          expect(await store.getTask(task.id)).toStrictEqual(created)
        }
      })

      it('optional fields given as undefined are absent from the record', async () => {
        const task = newTask(alice, now, {
          statusMessage: undefined,
          result: undefined,
          leaseExpiresAt: undefined,
        })
        const { statusMessage, result, leaseExpiresAt, ...given } = task
        expect(await createTask(task)).toStrictEqual(stored(given as NewTask))
      })

      it('text fields round-trip exactly, including quotes, unicode and control characters', async () => {
        const text = `it's "q" \\ \u0000 \u0001 \u0001\u0002 ✓ 🎉 日本語 é`
        const task = fullTask({
          id: `t_${unique('x')}-AZaz09_-`,
          owner: `owner ${text}`,
          tool: `tool ${text}`,
          args: JSON.stringify({ text }),
          statusMessage: text,
          journal: JSON.stringify([text]),
          leaseOwner: text,
        })
        await createTask(task)
        expect(await store.getTask(task.id)).toStrictEqual(stored(task))
        const updated = await store.updateTask(task.id, 1, { statusMessage: `${text}!` })
        expect(updated?.statusMessage).toBe(`${text}!`)
        expect(await store.getTask(`${task.id}\u0000`)).toBeUndefined()
      })

      it('createTask with an id that exists throws and leaves the stored task unchanged', async () => {
        const first = await createTask(newTask(alice, now))
        const attempt = createTask(fullTask({ id: first.id, owner: bob, tool: 'other' }))
        await expect(attempt).rejects.toThrow()
        expect(await store.getTask(first.id)).toStrictEqual(first)
      })

      it('getTask of an unknown id is undefined', async () => {
        expect(await store.getTask(unique('task'))).toBeUndefined()
      })

      it('updateTask with the current version applies the patch, adds one to the version and answers the stored record', async () => {
        const created = await createTask(newTask(alice, now))
        const patch = {
          status: 'completed',
          statusMessage: 'Imported 3 notes',
          updatedAt: now + 5,
          expiresAt: now + 2 * HOUR,
          pollIntervalMs: 2500,
          journal: '[{"once":"split","value":3}]',
          result: '{"content":[{"type":"text","text":"3"}]}',
          leaseOwner: 'replica-b',
          leaseExpiresAt: now + 60_000,
        } as const
        const updated = await store.updateTask(created.id, 1, patch)
        const expected: TaskRecord = { ...created, ...patch, version: 2 }
        expect(updated).toStrictEqual(expected)
        expect(await store.getTask(created.id)).toStrictEqual(expected)
      })

      it('a field left undefined keeps its value and null clears an optional one', async () => {
        const created = await createTask(fullTask())
        const kept = await store.updateTask(created.id, 1, {
          status: undefined,
          statusMessage: undefined,
          result: undefined,
          updatedAt: now + 1,
        })
        expect(kept).toStrictEqual({ ...created, updatedAt: now + 1, version: 2 })

        const cleared = await store.updateTask(created.id, 2, {
          status: 'working',
          statusMessage: null,
          inputRequests: null,
          inputResponses: null,
          result: null,
          error: null,
          leaseOwner: null,
          leaseExpiresAt: null,
        })
        expect(cleared).toStrictEqual({
          ...stored(newTask(alice, now, { id: created.id })),
          updatedAt: now + 1,
          version: 3,
        })
        expect(await store.getTask(created.id)).toStrictEqual(cleared)
      })

      it('an empty patch only adds one to the version', async () => {
        const created = await createTask(fullTask())
        expect(await store.updateTask(created.id, 1, {})).toStrictEqual({ ...created, version: 2 })
      })

      it('the cancel flag is set by a patch and kept by later patches that leave it', async () => {
        const created = await createTask(newTask(alice, now))
        expect(await store.updateTask(created.id, 1, { cancelRequested: true })).toMatchObject({
          cancelRequested: true,
          version: 2,
        })
        const later = await store.updateTask(created.id, 2, { status: 'cancelled' })
        expect(later).toMatchObject({ status: 'cancelled', cancelRequested: true, version: 3 })
        expect(await store.updateTask(created.id, 3, { cancelRequested: false })).toMatchObject({
          cancelRequested: false,
        })
      })

      it('updateTask with a stale or a future version answers undefined and changes nothing', async () => {
        const created = await createTask(newTask(alice, now))
        const current = await store.updateTask(created.id, 1, { statusMessage: 'first' })
        expect(current?.version).toBe(2)
        for (const version of [1, 3, 0, -1]) {
          expect(await store.updateTask(created.id, version, { status: 'failed' })).toBeUndefined()
        }
        expect(await store.getTask(created.id)).toStrictEqual(current)
      })

      it('updateTask of an unknown id answers undefined', async () => {
        expect(await store.updateTask(unique('task'), 1, { status: 'failed' })).toBeUndefined()
      })

      it('of two updates issued together with one expected version exactly one applies', async () => {
        const created = await createTask(newTask(alice, now))
        const outcomes = await Promise.all([
          store.updateTask(created.id, 1, { status: 'completed', result: '{"by":"a"}' }),
          store.updateTask(created.id, 1, { status: 'cancelled', cancelRequested: true }),
        ])
        const winners = outcomes.filter((o) => o !== undefined)
        expect(winners).toHaveLength(1)
        expect(await store.getTask(created.id)).toStrictEqual(winners[0])
      })

      it('every successful update adds one to the version, and each needs the one before', async () => {
        const created = await createTask(newTask(alice, now))
        for (let version = 1; version <= 4; version++) {
          const patch = { statusMessage: `step ${version}` }
          const updated = await store.updateTask(created.id, version, patch)
          expect(updated).toMatchObject({ statusMessage: `step ${version}`, version: version + 1 })
          expect(await store.updateTask(created.id, version, patch)).toBeUndefined()
        }
      })

      it('a task moves through every status, and refuses one the contract does not define', async () => {
        const created = await createTask(newTask(alice, now))
        const statuses = ['input_required', 'working', 'completed', 'cancelled', 'failed'] as const
        for (const [i, status] of statuses.entries()) {
          expect(await store.updateTask(created.id, i + 1, { status })).toMatchObject({ status })
        }
        const current = await store.getTask(created.id)
        await expect(
          store.updateTask(created.id, statuses.length + 1, { status: 'paused' as never })
        ).rejects.toThrow()
        expect(await store.getTask(created.id)).toStrictEqual(current)
        const unknown = newTask(alice, now, { status: 'paused' as never })
        await expect(createTask(unknown)).rejects.toThrow()
        expect(await store.getTask(unknown.id)).toBeUndefined()
      })

      it('payload fields of 1 MiB round-trip exactly, when created and when updated', async () => {
        const fields = [
          'args',
          'journal',
          'statusMessage',
          'inputRequests',
          'inputResponses',
          'result',
          'error',
        ] as const
        for (const field of fields) {
          const [first, second] = ['1', '2'].map((n) =>
            jsonOfSize(MIB, (text) => ({ field, n, text }))
          )
          const task = newTask(alice, now, { [field]: first })
          expect((await createTask(task))[field]).toBe(first)
          expect((await store.getTask(task.id))?.[field]).toBe(first)
          if (field === 'args') continue
          const updated = await store.updateTask(task.id, 1, { [field]: second })
          expect(updated?.[field]).toBe(second)
          expect(await store.getTask(task.id)).toStrictEqual(updated)
        }
      })

      describe('findRunnableTasks', () => {
        const runnable = async (at = now) => store.findRunnableTasks(at, 10_000)

        it('finds working tasks without a lease or whose lease ran out at or before now', async () => {
          const unleased = await createTask(newTask(alice, now))
          const ranOut = await createTask(
            newTask(alice, now, { leaseOwner: 'dead', leaseExpiresAt: now - 1 })
          )
          const endsNow = await createTask(
            newTask(alice, now, { leaseOwner: 'late', leaseExpiresAt: now })
          )
          const found = await runnable()
          for (const task of [unleased, ranOut, endsNow]) expect(found).toContain(task.id)
        })

        it('ignores terminal, input_required, expired and leased tasks', async () => {
          const ignored = [
            newTask(alice, now, { status: 'completed' }),
            newTask(alice, now, { status: 'cancelled' }),
            newTask(alice, now, { status: 'failed' }),
            newTask(alice, now, { status: 'input_required' }),
            newTask(alice, now, { expiresAt: now }),
            newTask(alice, now, { expiresAt: now - 1 }),
            newTask(alice, now, { leaseOwner: 'alive', leaseExpiresAt: now + 1 }),
            newTask(alice, now, { leaseExpiresAt: now + HOUR }),
          ]
          for (const task of ignored) await createTask(task)
          const control = await createTask(newTask(alice, now))
          const found = await runnable()
          expect(found).toContain(control.id)
          for (const task of ignored) expect(found, JSON.stringify(task)).not.toContain(task.id)
        })

        it('answers at most limit distinct ids', async () => {
          const ids: string[] = []
          for (let i = 0; i < 5; i++) ids.push((await createTask(newTask(alice, now))).id)
          const three = await store.findRunnableTasks(now, 3)
          expect(three).toHaveLength(3)
          expect(new Set(three).size).toBe(3)
          for (const id of three) expect(ids).toContain(id)
          expect((await store.findRunnableTasks(now, 1)).length).toBe(1)
          const all = await runnable()
          for (const id of ids) expect(all).toContain(id)
        })

        it('follows updates: a task leaves when leased or suspended, and returns when its lease is released or it resumes', async () => {
          const created = await createTask(newTask(alice, now))
          expect(await runnable()).toContain(created.id)
          const leased = { leaseOwner: 'replica-a', leaseExpiresAt: now + 30_000 }
          await store.updateTask(created.id, 1, leased)
          expect(await runnable()).not.toContain(created.id)
          // Its runner died: once the lease has run out, the task is runnable again.
          expect(await runnable(now + 30_000)).toContain(created.id)
          await store.updateTask(created.id, 2, { status: 'input_required', ...leased })
          expect(await runnable(now + 30_000)).not.toContain(created.id)
          await store.updateTask(created.id, 3, {
            status: 'working',
            leaseOwner: null,
            leaseExpiresAt: null,
          })
          expect(await runnable()).toContain(created.id)
          await store.updateTask(created.id, 4, { status: 'completed' })
          expect(await runnable()).not.toContain(created.id)
        })

        it('rejects a limit that is not a positive integer and a now that is not finite', async () => {
          for (const limit of [0, -1, 1.5, Number.NaN]) {
            await expect(store.findRunnableTasks(now, limit)).rejects.toBeInstanceOf(RangeError)
          }
          await expect(store.findRunnableTasks(Number.NaN, 10)).rejects.toBeInstanceOf(RangeError)
          await expect(store.findRunnableTasks(Infinity, 10)).rejects.toBeInstanceOf(RangeError)
        })
      })

      describe('the cap on live tasks (createTask with maxLive, countLiveTasks)', () => {
        it('stores tasks while their principal holds fewer than maxLive live ones, then refuses one and stores nothing', async () => {
          for (let i = 0; i < 3; i++) {
            const task = newTask(alice, now)
            expect(await store.createTask(task, 3)).toStrictEqual(stored(task))
          }
          const refused = newTask(alice, now)
          expect(await store.createTask(refused, 3)).toBeUndefined()
          expect(await store.getTask(refused.id)).toBeUndefined()
          expect(await store.countLiveTasks(alice, now)).toBe(3)
          expect(await store.createTask(refused, 4)).toStrictEqual(stored(refused))
          expect(await store.countLiveTasks(alice, now)).toBe(4)
        })

        it("counts a principal's tasks under each of its owners (one per OAuth client), and no one else's", async () => {
          const viaOne = newTask(`${alice} through client one`, now, { principal: alice })
          const viaOther = newTask(`${alice} through client two`, now, { principal: alice })
          expect(await store.createTask(viaOne, 2)).toBeDefined()
          expect(await store.createTask(viaOther, 2)).toBeDefined()
          expect(await store.createTask(newTask(alice, now), 2)).toBeUndefined()
          expect(await store.createTask(newTask(bob, now), 2)).toBeDefined()
          expect(await store.countLiveTasks(alice, now)).toBe(2)
          expect(await store.countLiveTasks(bob, now)).toBe(1)
          expect(await store.countLiveTasks(unique('carol'), now)).toBe(0)
        })

        it('counts tasks of every status until their expiresAt, and none from then on, purged or not', async () => {
          const statuses = [
            'working',
            'input_required',
            'completed',
            'cancelled',
            'failed',
          ] as const
          for (const status of statuses) {
            expect(await store.createTask(newTask(alice, now, { status }), 5)).toBeDefined()
          }
          expect(await store.countLiveTasks(alice, now)).toBe(5)
          expect(await store.createTask(newTask(alice, now), 5)).toBeUndefined()

          const later = now + HOUR
          expect(await store.countLiveTasks(alice, later - 1)).toBe(5)
          expect(await store.countLiveTasks(alice, later)).toBe(0)
          // Expired but not purged yet: they count for nothing.
          const fresh = newTask(alice, later)
          expect(await store.createTask(fresh, 1)).toStrictEqual(stored(fresh))
          expect(await store.createTask(newTask(alice, later), 1)).toBeUndefined()
          while ((await store.purgeExpired(later, 1000)) > 0);
          expect(await store.countLiveTasks(alice, later)).toBe(1)
          expect(await store.getTask(fresh.id)).toStrictEqual(stored(fresh))
        })

        it('frees a place as soon as an update brings a task’s expiresAt forward', async () => {
          const done = await createTask(newTask(alice, now, { status: 'completed' }))
          expect(await store.createTask(newTask(alice, now + 10), 1)).toBeUndefined()
          await store.updateTask(done.id, 1, { expiresAt: now + 10 })
          expect(await store.countLiveTasks(alice, now + 9)).toBe(1)
          expect(await store.createTask(newTask(alice, now + 10), 1)).toBeDefined()
        })

        it('of creations issued together, never stores more than maxLive', async () => {
          const tasks = Array.from({ length: 12 }, () => newTask(alice, now))
          const outcomes = await Promise.all(tasks.map((task) => store.createTask(task, 5)))
          expect(outcomes.filter((outcome) => outcome !== undefined)).toHaveLength(5)
          expect(await store.countLiveTasks(alice, now)).toBe(5)
          for (const [i, task] of tasks.entries()) {
            const found = await store.getTask(task.id)
            expect(found).toStrictEqual(outcomes[i])
          }
        })

        it('rejects a maxLive that is not a positive integer, and stores nothing', async () => {
          for (const maxLive of [0, -1, 1.5, Number.NaN, Infinity]) {
            const task = newTask(alice, now)
            await expect(store.createTask(task, maxLive), String(maxLive)).rejects.toBeInstanceOf(
              RangeError
            )
            expect(await store.getTask(task.id)).toBeUndefined()
          }
        })
      })
    })

    describe('purge of expired rows', () => {
      /** Purges everything expired at `now`, so a test can count exactly the rows it made. */
      async function drain(now: number): Promise<void> {
        while ((await store.purgeExpired(now, 1000)) > 0);
      }

      it("session rows and their subscriptions go at the session's own expiry; live ones stay", async () => {
        const now = T0 + 10 * HOUR
        await drain(now)
        const [gone, kept] = [unique('sid'), unique('sid')]
        const cap = 1_000
        await store.createSession(gone, alice, now, now - HOUR, cap)
        await store.createSession(kept, alice, now + 1, now - HOUR, cap)
        await store.setSessionLogLevel(kept, 'info')
        await store.addSubscription(gone, 'note://n_1', now - HOUR, cap)
        await store.addSubscription(kept, 'note://n_1', now - HOUR, cap)
        await store.expectInput(gone, 'r1', now)
        await store.expectInput(kept, 'r1', now + 1)

        // A subscription lives exactly as long as its session, not a lifetime of its own.
        expect(await store.purgeExpired(now - 1, 1000)).toBe(0)
        expect(await store.isSubscribed(gone, 'note://n_1')).toBe(true)
        expect(await store.purgeExpired(now, 1000)).toBe(3)
        expect(await store.getSession(gone)).toBeUndefined()
        expect(await store.getSession(kept)).toStrictEqual({ expiresAt: now + 1, logLevel: 'info' })
        expect(await store.isSubscribed(gone, 'note://n_1')).toBe(false)
        expect(await store.isSubscribed(kept, 'note://n_1')).toBe(true)
        expect(await store.deliverInput(gone, 'r1', '{}', now - 1)).toBe(false)
        expect(await store.deliverInput(kept, 'r1', '{}', now)).toBe(true)
      })

      it('tasks go at their expiresAt whatever their status; live ones stay', async () => {
        const now = taskClock()
        await drain(now)
        const gone = [
          newTask(alice, now - HOUR, { expiresAt: now }),
          newTask(alice, now - HOUR, { expiresAt: now - 1, status: 'completed' }),
          newTask(alice, now - HOUR, { expiresAt: now - HOUR, status: 'input_required' }),
        ]
        const kept = [
          newTask(alice, now - HOUR, { expiresAt: now + 1 }),
          newTask(alice, now - HOUR, { expiresAt: now + HOUR, status: 'failed' }),
        ]
        for (const task of [...gone, ...kept]) await createTask(task)

        expect(await store.purgeExpired(now, 1000)).toBe(3)
        for (const task of gone) expect(await store.getTask(task.id)).toBeUndefined()
        for (const task of kept) expect(await store.getTask(task.id)).toMatchObject(task)
      })

      it('counts expired tasks in the budget it spends across tables', async () => {
        const now = taskClock()
        await drain(now)
        await store.createSession(unique('sid'), alice, now, now - HOUR, 1_000)
        await createTask(newTask(alice, now - HOUR, { expiresAt: now }))
        await createTask(newTask(alice, now - HOUR, { expiresAt: now }))
        expect(await store.purgeExpired(now, 2)).toBe(2)
        expect(await store.purgeExpired(now, 2)).toBe(1)
        expect(await store.purgeExpired(now, 2)).toBe(0)
      })

      it('stream records and their events go at their own expiry; live ones stay', async () => {
        const now = T0 + 10 * HOUR
        await drain(now)
        const sid = unique('sid')
        await storeStream(store, { sid, stream: 'gone', expiresAt: now })
        await storeStream(store, { sid, stream: 'kept', expiresAt: now + 1 })
        await store.appendEvent(sid, 'gone', 1, '{}', now - 1)
        await store.appendEvent(sid, 'kept', 1, '{"seq":1}', now)
        await store.appendEvent(sid, 'kept', 2, '{"seq":2}', now + 1)

        expect(await store.purgeExpired(now - 2, 1000)).toBe(0)
        expect(await store.purgeExpired(now, 1000)).toBe(3)
        expect(await store.getStream(sid, 'gone')).toBeUndefined()
        expect(await store.getStream(sid, 'kept')).toMatchObject({ expiresAt: now + 1 })
        // Read at a time before any expiry: only what the purge left is there.
        expect(await store.readEvents(sid, 'gone', 0, 10, T0)).toStrictEqual([])
        expect(await store.readEvents(sid, 'kept', 0, 10, T0)).toStrictEqual([
          { seq: 2, payload: '{"seq":2}' },
        ])
      })

      it('counts expired stream records and events in the budget it spends across tables', async () => {
        const now = T0 + 10 * HOUR
        await drain(now)
        const sid = unique('sid')
        await storeStream(store, { sid, stream: 's1', expiresAt: now })
        await store.appendEvent(sid, 's1', 1, '{}', now)
        await store.appendEvent(sid, 's1', 2, '{}', now)
        expect(await store.purgeExpired(now, 2)).toBe(2)
        expect(await store.purgeExpired(now, 2)).toBe(1)
        expect(await store.purgeExpired(now, 2)).toBe(0)
      })

      itRefusesInvalidPurgeLimits(() => store)
    })
  })
}
