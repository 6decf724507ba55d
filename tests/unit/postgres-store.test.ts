/**
 * The PostgreSQL adapters: the engine's store (`stateless-mcp/postgres`) and the notes store
 * (`storage/postgres.ts`), each through its contract against a throw-away database (the notes' with
 * the failures inside the database, made by triggers), the engine's also on the pool the notes
 * share, plus what only PostgreSQL has: several stores
 * (replicas) on one database racing on once-keys, bulk deletes, share decisions, input slots, the
 * caps on subscriptions (per session and per principal) and on a principal's sessions, task
 * versions, the live-task cap, the cap on a session's stream records, imports and migrations, text
 * PostgreSQL cannot hold (U+0000), search independent of the database's locale, the UTF8
 * requirement, and the adapters' own error types. (A database of an older deployment brought
 * forward: `store-migration.test.ts`.)
 *
 * Needs a server: `TEST_DATABASE_URL`, or PostgreSQL on 127.0.0.1:5432 (see tests/support/postgres.ts;
 * `.ci/run` installs and starts one). Without one the file fails under `CI=true` and is reported as
 * skipped elsewhere.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import postgres from 'postgres'
import { createScratchDatabase, type ScratchDatabase } from '../../scripts/support/postgres.ts'
import { PostgresEngineStore } from '../../src/mcp/postgres.ts'
import { MAX_SUBSCRIPTIONS_PER_SESSION } from '../../src/mcp/session-store.ts'
import { ENGINE_POSTGRES_SCHEMA } from '../../src/mcp/stores/postgres/schema.ts'
import { ShareNotApprovedError, StoreNotMigratedError } from '../../src/notes/store.ts'
import { openPostgresStores, PostgresNotesStore } from '../../src/storage/postgres.ts'
import { NOTES_POSTGRES_SCHEMA } from '../../src/storage/postgres/schema.ts'
import { bothOf, type BothStores } from '../support/both-stores.ts'
import {
  describeNotesStoreContract,
  expectOneOfTwoUpdatesWins,
  noteId,
  REFUSED_IN_DATABASE,
  type RefuseInDatabase,
} from '../support/notes-store-contract.ts'
import {
  describeEngineStoreContract,
  newTask,
  storeStream,
  storeTask,
  T0,
} from '../support/store-contract.ts'
import { testDatabaseUrl } from '../support/postgres.ts'

const serverUrl = await testDatabaseUrl()

/** Runs `work` on a connection of its own to the database at `url`, beside the stores. */
async function asAdmin<T>(url: string, work: (admin: postgres.Sql) => Promise<T>): Promise<T> {
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  try {
    return await work(admin)
  } finally {
    await admin.end({ timeout: 5 })
  }
}

describe.skipIf(serverUrl === undefined)('the PostgreSQL stores', () => {
  const scratches: ScratchDatabase[] = []
  const opened: Array<{ close(): Promise<void> }> = []
  /** The database of this file: every test invents its own principals, so one is enough. */
  let shared: ScratchDatabase

  async function scratch(options?: Parameters<typeof createScratchDatabase>[1]) {
    const db = await createScratchDatabase(serverUrl as string, options)
    scratches.push(db)
    return db
  }

  /** Both stores on one pool of the database at `url`, as a replica opens them, migrated. */
  async function open(url = shared.url, max?: number): Promise<BothStores> {
    const stores = openPostgresStores(max === undefined ? { url } : { url, max })
    const store = bothOf(stores.notes, stores.engine, () => stores.close())
    opened.push(store)
    await store.migrate()
    return store
  }

  /** The engine's store alone, on a pool of its own. */
  async function openEngine(url = shared.url): Promise<PostgresEngineStore> {
    const store = new PostgresEngineStore({ url })
    opened.push(store)
    await store.migrate()
    return store
  }

  beforeAll(async () => {
    shared = await scratch()
  })

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close()
  })

  afterAll(async () => {
    for (const db of scratches.splice(0)) await db.drop()
  })

  /** A trigger refusing to write one title, on the shared database, until removed. */
  const refuseInDatabase: RefuseInDatabase = async (write, title) => {
    const name = `refuse_${write.toLowerCase()}`
    const row = write === 'INSERT' ? 'NEW' : 'OLD'
    await asAdmin(shared.url, (admin) =>
      admin.unsafe(`
        CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '${REFUSED_IN_DATABASE}'; END $$;
        CREATE TRIGGER ${name} BEFORE ${write} ON notes
          FOR EACH ROW WHEN (${row}.title = '${title}') EXECUTE FUNCTION ${name}();`)
    )
    return async () => {
      await asAdmin(shared.url, (admin) =>
        admin.unsafe(`DROP TRIGGER ${name} ON notes; DROP FUNCTION ${name}();`)
      )
    }
  }

  describeEngineStoreContract('postgres', () => openEngine())
  describeEngineStoreContract('postgres, the pool shared with the notes', () => open())
  describeNotesStoreContract('postgres', () => open(), { refuseInDatabase })
  describeNotesStoreContract('postgres, one connection', () => open(shared.url, 1), {
    refuseInDatabase,
  })

  describe('replicas on one database', () => {
    /** Of two racing calls with one once-key, one was done (answering `value`), the other already. */
    function expectOneDone(pair: unknown[], value: unknown) {
      expect(pair).toContainEqual({ kind: 'done', value })
      expect(pair).toContainEqual({ kind: 'already_done' })
    }

    /** Two stores on the shared database, as two replicas, and a principal no other test uses. */
    async function twoReplicas() {
      return { a: await open(), b: await open(), p: `p-${crypto.randomUUID()}` }
    }

    /** Four stores on the shared database and a principal no other test uses. */
    async function fourReplicas() {
      const stores = await Promise.all([open(), open(), open(), open()])
      return { stores, p: `p-${crypto.randomUUID()}` }
    }

    it('a once-key spent through one store answers already_done through another', async () => {
      const { a, b, p } = await twoReplicas()
      const key = (n: number) => `${p}-key-${n}`
      const first = await a.create(p, { title: 'one', body: '', tags: [] }, T0)
      const second = await a.create(p, { title: 'two', body: '', tags: [] }, T0 + 1)
      expect(await a.delete(p, first.id, key(1))).toEqual({ kind: 'done', value: true })
      expect(await b.delete(p, second.id, key(1))).toEqual({ kind: 'already_done' })
      expect(await b.get(p, second.id)).toEqual(second)

      const share = `${p}-s1`
      await a.createShareRequest({ id: share, principal: p, noteId: second.id, expiresAt: T0 + 10 })
      expect(await b.decideShareRequest(share, 'approved', T0 + 2)).toBe('decided')
      expect(await a.decideShareRequest(share, 'refused', T0 + 3)).toBe('already_decided')
      expect(await a.publishShare(p, share, `${p}-link-1`, key(2))).toEqual({
        kind: 'done',
        value: `${p}-link-1`,
      })
      expect(await b.publishShare(p, share, `${p}-link-2`, key(2))).toEqual({
        kind: 'already_done',
      })
      expect(await b.getSharedNote(`${p}-link-1`)).toEqual(second)
    })

    it('concurrent deletes with the same once-key on two stores: exactly one is done', async () => {
      const { a, b, p } = await twoReplicas()
      const rounds = 40
      const outcomes = await Promise.all(
        Array.from({ length: rounds }, async (_, i) => {
          const target = await a.create(p, { title: `n${i}`, body: '', tags: [] }, T0 + i)
          const key = `${p}-key-${i}`
          return Promise.all([a.delete(p, target.id, key), b.delete(p, target.id, key)])
        })
      )
      for (const pair of outcomes) expectOneDone(pair, true)
      expect(await a.list(p, 0, 10)).toEqual({ items: [] })
    })

    it('concurrent deletes of different notes with one once-key on several stores delete one note', async () => {
      const { stores, p } = await fourReplicas()
      const notes = await Promise.all(
        stores.map((s, i) => s.create(p, { title: `n${i}`, body: '', tags: [] }, T0 + i))
      )
      const key = `${p}-key`
      const outcomes = await Promise.all(stores.map((s, i) => s.delete(p, notes[i]!.id, key)))
      expect(outcomes.filter((o) => o.kind === 'done')).toEqual([{ kind: 'done', value: true }])
      expect((await stores[0].list(p, 0, 10)).items).toHaveLength(3)
    })

    it('concurrent bulk deletes with the same once-key on two stores: one deletes every note, once', async () => {
      const { a, b, p } = await twoReplicas()
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const notes = await Promise.all(
            [0, 1, 2].map((j) => a.create(p, { title: `n${i}.${j}`, body: '', tags: [] }, T0))
          )
          const ids = notes.map((note) => note.id)
          const key = `${p}-key-${i}`
          return {
            ids,
            pair: await Promise.all([a.deleteMany(p, ids, key), b.deleteMany(p, ids, key)]),
          }
        })
      )
      for (const { ids, pair } of outcomes) expectOneDone(pair, ids)
      expect(await a.list(p, 0, 10)).toEqual({ items: [] })
    })

    it('concurrent bulk deletes of the same notes with their own once-keys on several stores delete each note once', async () => {
      const { stores, p } = await fourReplicas()
      const notes = Array.from({ length: 200 }, (_, i) => ({
        id: noteId(),
        title: `n${i}`,
        body: '',
        tags: [],
      }))
      await stores[0].importNotes(p, notes, T0)
      const ids = notes.map((note) => note.id)
      // Each store lists the notes in its own order, so the transactions meet in different places.
      const outcomes = await Promise.all(
        stores.map((s, i) =>
          s.deleteMany(p, i % 2 === 0 ? ids : [...ids].reverse(), `${p}-key-${i}`)
        )
      )
      const deleted = outcomes.flatMap((o) => (o.kind === 'done' ? o.value : []))
      expect(deleted.sort()).toEqual([...ids].sort())
      expect(await stores[0].list(p, 0, 10)).toEqual({ items: [] })
    })

    it('concurrent publications of one share on two stores create exactly one link', async () => {
      const { a, b, p } = await twoReplicas()
      const target = await a.create(p, { title: 't', body: '', tags: [] }, T0)
      for (const sameKey of [true, false]) {
        const share = `${p}-share-${sameKey}`
        await a.createShareRequest({
          id: share,
          principal: p,
          noteId: target.id,
          expiresAt: T0 + 9,
        })
        await a.decideShareRequest(share, 'approved', T0 + 1)
        const keys = sameKey ? [`${share}-k`, `${share}-k`] : [`${share}-k1`, `${share}-k2`]
        const links = [`${share}-l1`, `${share}-l2`]
        const outcomes = await Promise.all([
          a.publishShare(p, share, links[0]!, keys[0]!),
          b.publishShare(p, share, links[1]!, keys[1]!),
        ])
        const done = outcomes.filter((o) => o.kind === 'done')
        expect(done).toHaveLength(1)
        expect(outcomes.filter((o) => o.kind === 'already_done')).toHaveLength(1)
        const linkId = (done[0] as { value: string }).value
        expect((await b.getShareRequest(share))?.linkId).toBe(linkId)
        const other = links.find((l) => l !== linkId)!
        expect(await a.getSharedNote(other)).toBeUndefined()
        expect(await a.getSharedNote(linkId)).toEqual(target)
      }
    })

    it('concurrent decisions on several stores: exactly one is recorded', async () => {
      const stores = await Promise.all([open(), open(), open()])
      const p = `p-${crypto.randomUUID()}`
      const target = await stores[0].create(p, { title: 't', body: '', tags: [] }, T0)
      const share = `${p}-share`
      await stores[0].createShareRequest({
        id: share,
        principal: p,
        noteId: target.id,
        expiresAt: T0 + 10,
      })
      const outcomes = await Promise.all(
        stores.map((s, i) => s.decideShareRequest(share, i === 1 ? 'refused' : 'approved', T0 + 1))
      )
      expect(outcomes.sort()).toEqual(['already_decided', 'already_decided', 'decided'])
    })

    it('concurrent updates with one expected version on two stores: exactly one wins', async () => {
      const { a, b, p } = await twoReplicas()
      await expectOneOfTwoUpdatesWins(a, b, p)
    })

    it('concurrent updates of one task with one expected version on two stores: exactly one wins', async () => {
      const { a, b, p } = await twoReplicas()
      const rounds = 40
      const outcomes = await Promise.all(
        Array.from({ length: rounds }, async () => {
          const task = await storeTask(a, newTask(p, T0))
          const pair = await Promise.all([
            a.updateTask(task.id, 1, { status: 'completed', result: '{"by":"a"}' }),
            b.updateTask(task.id, 1, { status: 'cancelled', cancelRequested: true }),
          ])
          return { pair, stored: await b.getTask(task.id) }
        })
      )
      for (const { pair, stored } of outcomes) {
        const winners = pair.filter((outcome) => outcome !== undefined)
        expect(winners).toHaveLength(1)
        expect(stored).toEqual(winners[0])
        expect(stored?.version).toBe(2)
      }
    })

    it('concurrent creations of one principal’s tasks on several stores never exceed its cap', async () => {
      const { stores, p } = await fourReplicas()
      const cap = 25
      const outcomes = await Promise.all(
        stores.flatMap((store, s) =>
          Array.from({ length: 20 }, () =>
            store.createTask(newTask(`${p} via client ${s}`, T0, { principal: p }), cap)
          )
        )
      )
      expect(outcomes.filter((task) => task !== undefined)).toHaveLength(cap)
      expect(await stores[0].countLiveTasks(p, T0)).toBe(cap)
      const [row] = await asAdmin(
        shared.url,
        (admin) => admin`SELECT count(*)::integer AS n FROM tasks WHERE principal = ${p}`
      )
      expect(row).toEqual({ n: cap })
    })

    it("concurrent creations of one session's streams on several stores, its cap full of ended records, evict each of them once and never exceed the cap", async () => {
      const { stores } = await fourReplicas()
      const sid = `sid-${crypto.randomUUID()}`
      const cap = 25
      for (let i = 0; i < cap; i++) {
        const store = stores[i % stores.length]!
        const stream = `ended-${i}`
        await storeStream(store, { sid, stream, expiresAt: T0 + 5 })
        expect(await store.appendEvent(sid, stream, 1, '{}', T0 + 5)).toBe(true)
        expect(await store.updateStream(sid, stream, 1, { ended: true })).toBeDefined()
      }
      const outcomes = await Promise.all(
        stores.flatMap((store, s) =>
          Array.from({ length: 20 }, (_, i) =>
            store.createStream({ sid, stream: `s${s}-${i}`, expiresAt: T0 + 10 }, cap, T0)
          )
        )
      )
      expect(outcomes.filter((stream) => stream !== undefined)).toHaveLength(cap)
      const [row] = await asAdmin(
        shared.url,
        (admin) => admin`
          SELECT (SELECT count(*)::integer FROM session_streams WHERE sid = ${sid}) AS records,
            (SELECT count(*)::integer FROM session_streams WHERE sid = ${sid} AND NOT ended)
              AS unended,
            (SELECT count(*)::integer FROM stream_events WHERE sid = ${sid}) AS events`
      )
      expect(row).toEqual({ records: cap, unended: cap, events: 0 })
    })

    it('concurrent imports of the same notes on several stores create each note once', async () => {
      const { stores, p } = await fourReplicas()
      const notes = Array.from({ length: 300 }, (_, i) => ({
        id: noteId(),
        title: `note ${i}`,
        body: `body ${i}`,
        tags: [],
      }))
      const counts = await Promise.all(stores.map((s) => s.importNotes(p, notes, T0)))
      expect(counts.reduce((sum, count) => sum + count, 0)).toBe(notes.length)
      const [row] = await asAdmin(
        shared.url,
        (admin) => admin`
          SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids FROM notes
          WHERE principal = ${p}`
      )
      expect(row).toEqual({ n: notes.length, ids: notes.length })
    })

    it('concurrent answers to one input slot on several stores: exactly one is stored', async () => {
      const stores = await Promise.all([open(), open(), open(), open()])
      const sid = `sid-${crypto.randomUUID()}`
      await stores[0].expectInput(sid, 'r1', T0 + 10)
      const outcomes = await Promise.all(
        stores.map((s, i) => s.deliverInput(sid, 'r1', `answer ${i}`, T0))
      )
      expect(outcomes.filter(Boolean)).toHaveLength(1)
      expect(await stores[1].readInput(sid, 'r1')).toBe(`answer ${outcomes.indexOf(true)}`)
    })

    it('concurrent subscriptions on several stores never exceed the cap of a session', async () => {
      const stores = await Promise.all([open(), open(), open(), open()])
      const sid = `sid-${crypto.randomUUID()}`
      await stores[0].createSession(sid, `p-${sid}`, T0 + 10, T0, Infinity)
      for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION - 2; i++) {
        await stores[0].addSubscription(sid, `note://n_${i}`, T0, Infinity)
      }
      // Four replicas race for the last two places, each with its own new URI.
      const outcomes = await Promise.all(
        stores.map((s, i) => s.addSubscription(sid, `note://race_${i}`, T0, Infinity))
      )
      expect(outcomes.filter((outcome) => outcome === 'subscribed')).toHaveLength(2)
      const [row] = await asAdmin(
        shared.url,
        (admin) => admin`SELECT count(*)::int AS n FROM session_subscriptions WHERE sid = ${sid}`
      )
      expect(row?.n).toBe(MAX_SUBSCRIPTIONS_PER_SESSION)
    })

    it("concurrent subscriptions to a principal's sessions on several stores never exceed its cap", async () => {
      const stores = await Promise.all([open(), open(), open(), open()])
      const principal = `p-${crypto.randomUUID()}`
      const cap = 30
      // Store k subscribes session k of the one principal to the same 20 URIs, all at once.
      const sids = stores.map((_, k) => `sid-${k}-${principal}`)
      for (const sid of sids) await stores[0].createSession(sid, principal, T0 + 10, T0, 10)
      const outcomes = await Promise.all(
        stores.flatMap((s, k) =>
          Array.from({ length: 20 }, (_, i) =>
            s.addSubscription(sids[k]!, `note://n_${i}`, T0, cap)
          )
        )
      )
      expect(outcomes.filter((outcome) => outcome === 'subscribed')).toHaveLength(cap)
      const [row] = await asAdmin(
        shared.url,
        (admin) =>
          admin`SELECT count(*)::int AS n FROM session_subscriptions WHERE principal = ${principal}`
      )
      expect(row?.n).toBe(cap)
    })

    it('concurrent sessions of one principal opened on several stores never exceed its cap, ending the oldest', async () => {
      const stores = await Promise.all([open(), open(), open(), open()])
      const principal = `p-${crypto.randomUUID()}`
      const cap = 10
      // The principal is at its cap with sessions older than any the stores open, each subscribed.
      for (let i = 0; i < cap; i++) {
        const sid = `old-${i}-${principal}`
        expect(await stores[0].createSession(sid, principal, T0 + 10, T0, cap)).toStrictEqual([])
        expect(await stores[0].addSubscription(sid, 'note://n_1', T0, Infinity)).toBe('subscribed')
      }
      const evicted = await Promise.all(
        stores.flatMap((s, k) =>
          Array.from({ length: 8 }, (_, i) =>
            s.createSession(`sid-${k}-${i}-${principal}`, principal, T0 + 10, T0 + 1, cap)
          )
        )
      )
      expect(evicted.reduce((a, b) => a + b.length, 0)).toBe(evicted.length)
      const [row] = await asAdmin(
        shared.url,
        (admin) => admin`
          SELECT count(*)::int AS n, (count(*) FILTER (WHERE sid LIKE 'old-%'))::int AS old,
            (SELECT count(*)::int FROM session_subscriptions WHERE principal = ${principal}) AS subs
          FROM sessions WHERE principal = ${principal}`
      )
      expect(row).toEqual({ n: cap, old: 0, subs: 0 })
    })

    it('a subscription added on one store while another ends its session for the cap is not left behind', async () => {
      const stores = await Promise.all([open(), open()])
      const principal = `p-${crypto.randomUUID()}`
      const cap = 1
      // Each round: one store subscribes the principal's one session while the other opens the next,
      // which ends it; whichever runs first, no subscription outlives its session.
      let sid = `sid-0-${principal}`
      await stores[0].createSession(sid, principal, T0 + 10, T0, cap)
      for (let round = 1; round <= 20; round++) {
        const next = `sid-${round}-${principal}`
        await Promise.all([
          stores[0].addSubscription(sid, `note://n_${round}`, T0 + round, Infinity),
          stores[1].createSession(next, principal, T0 + 10, T0 + round, cap),
        ])
        sid = next
      }
      const [row] = await asAdmin(
        shared.url,
        (admin) => admin`
          SELECT count(*)::int AS orphans FROM session_subscriptions AS sub
          WHERE sub.principal = ${principal}
            AND NOT EXISTS (SELECT 1 FROM sessions AS s WHERE s.sid = sub.sid)`
      )
      expect(row?.orphans).toBe(0)
    })
  })

  describe('migrations', () => {
    it('stores migrating a fresh database at once record each step once', async () => {
      const db = await scratch()
      await Promise.all(Array.from({ length: 5 }, () => open(db.url)))
      await asAdmin(db.url, async (admin) => {
        for (const { table, steps } of [ENGINE_POSTGRES_SCHEMA, NOTES_POSTGRES_SCHEMA]) {
          const rows = await admin`SELECT version FROM ${admin(table)} ORDER BY version`
          expect(rows.map((r) => r.version)).toEqual(steps.map((step) => step.version))
        }
        const tables = await admin`
          SELECT table_name FROM information_schema.tables
          WHERE table_schema = current_schema() ORDER BY table_name`
        expect(tables.map((r) => r.table_name)).toEqual([
          'input_slots',
          'mcp_schema',
          'notes',
          'notes_schema',
          'session_streams',
          'session_subscriptions',
          'sessions',
          'share_requests',
          'shared_links',
          'stream_events',
          'tasks',
          'used_keys',
        ])
      })
    })

    it('refuses a database that is not UTF8', async () => {
      const db = await scratch({ encoding: 'SQL_ASCII', locale: 'C' })
      const store = new PostgresNotesStore({ url: db.url })
      const engine = new PostgresEngineStore({ url: db.url })
      opened.push(store, engine)
      await expect(store.migrate()).rejects.toThrow(/UTF8/)
      await expect(store.list('p', 0, 1)).rejects.toBeInstanceOf(StoreNotMigratedError)
      await expect(engine.migrate()).rejects.toThrow(/UTF8/)
    })
  })

  describe('text and search', () => {
    const titles = async (store: BothStores, p: string, text: string, tags?: string[]) =>
      (await store.search(p, { text, ...(tags ? { tags } : {}), offset: 0, limit: 10 })).items.map(
        (n) => n.title
      )

    it('U+0000 and U+0001 round-trip in every field and keep prefixes, order and equality', async () => {
      const store = await open()
      const p = `p-\u0000-${crypto.randomUUID()}`
      const tags = ['a\u0000', 'a\u0001', 'a\u0001\u0002', 'a\u0002', 'b']
      const created = await store.create(
        p,
        { title: 'x\u0000y\u0001', body: '\u0001\u0000', tags },
        T0
      )
      expect(created).toMatchObject({ title: 'x\u0000y\u0001', body: '\u0001\u0000', tags })
      expect(await store.get(p, created.id)).toEqual(created)
      expect(await store.listTags(p)).toEqual(tags.map((tag) => ({ tag, count: 1 })))
      expect(await store.completeTags(p, 'a\u0001', 10)).toEqual(['a\u0001', 'a\u0001\u0002'])
      expect(await store.completeTags(p, 'a\u0000', 10)).toEqual(['a\u0000'])
      expect(await store.completeTags(p, '\u0000', 10)).toEqual([])
      expect(await titles(store, p, '', ['a\u0000', 'a\u0002'])).toEqual(['x\u0000y\u0001'])
      expect(await titles(store, p, '', ['a\u0001\u0001'])).toEqual([])
      expect(await titles(store, p, 'y')).toEqual(['x\u0000y\u0001'])
      expect(await store.get(p, `${created.id}\u0000`)).toBeUndefined()

      const share = `s-\u0000-${crypto.randomUUID()}`
      await store.createShareRequest({
        id: share,
        principal: p,
        noteId: created.id,
        expiresAt: T0 + 9,
      })
      expect(await store.decideShareRequest(share, 'approved', T0 + 1)).toBe('decided')
      const link = `l-\u0001-${crypto.randomUUID()}`
      expect(await store.publishShare(p, share, link, `k-\u0000-${p}`)).toEqual({
        kind: 'done',
        value: link,
      })
      expect(await store.getShareRequest(share)).toEqual({
        id: share,
        principal: p,
        noteId: created.id,
        status: 'approved',
        expiresAt: T0 + 9,
        linkId: link,
      })
      expect(await store.getSharedNote(link)).toEqual(created)
    })

    it('search folds diacritics both ways', async () => {
      const store = await open()
      const p = `p-${crypto.randomUUID()}`
      await store.create(p, { title: 'Café crème', body: '', tags: [] }, T0)
      await store.create(p, { title: 'naive', body: '', tags: [] }, T0)
      expect(await titles(store, p, 'cafe creme')).toEqual(['Café crème'])
      expect(await titles(store, p, 'CAFÉ')).toEqual(['Café crème'])
      expect(await titles(store, p, 'naïve')).toEqual(['naive'])
      expect(await titles(store, p, 'cre\u0301')).toEqual(['Café crème'])
    })

    it('search does not depend on the locale of the database', async () => {
      const db = await scratch({ locale: 'C' })
      const store = await open(db.url)
      const p = `p-${crypto.randomUUID()}`
      await store.create(p, { title: 'Привет Мир', body: 'Grüße aus KÖLN 東京', tags: [] }, T0)
      await store.create(p, { title: 'other', body: '', tags: [] }, T0)
      for (const text of ['привет', 'МИР', 'köln', 'KOLN', 'ПРИВ', 'GRÜßE', 'gruße', '東京']) {
        expect(await titles(store, p, text), text).toEqual(['Привет Мир'])
      }
    })

    it('search uses at most the first words and the last one of a very long text', async () => {
      const store = await open()
      const p = `p-${crypto.randomUUID()}`
      await store.create(p, { title: 'alpha omega', body: '', tags: [] }, T0)
      const filler = Array.from({ length: 500 }, (_, i) => `zz${i}`).join(' ')
      expect(await titles(store, p, `alpha ${filler} ome`)).toEqual([])
      expect(await titles(store, p, `${'alpha '.repeat(500)}ome`)).toEqual(['alpha omega'])
    })

    it('notes with huge words and very many words are stored and found by their other words', async () => {
      const store = await open()
      const p = `p-${crypto.randomUUID()}`
      const huge = 'é'.repeat(5000)
      const many = Array.from({ length: 20_000 }, (_, i) => `w${i % 300}`).join(' ')
      await store.create(p, { title: `huge ${huge}`, body: `${many} needle`, tags: [] }, T0)
      expect(await titles(store, p, 'huge')).toEqual([`huge ${huge}`])
      expect(await titles(store, p, 'needle')).toEqual([`huge ${huge}`])
      expect(await titles(store, p, 'w299 needl')).toEqual([`huge ${huge}`])
      expect(await titles(store, p, huge)).toEqual([])
    })

    it('a title match ranks above a tag match above a body match', async () => {
      const store = await open()
      const p = `p-${crypto.randomUUID()}`
      await store.create(p, { title: 'title lynx', body: '', tags: [] }, T0)
      await store.create(p, { title: 'body', body: 'lynx', tags: [] }, T0 + 2)
      await store.create(p, { title: 'tag', body: '', tags: ['lynx'] }, T0 + 1)
      const page = await store.search(p, { text: 'lynx', offset: 0, limit: 10 })
      expect(page.items.map((n) => n.title)).toEqual(['title lynx', 'tag', 'body'])
    })
  })

  describe('adapter specifics', () => {
    it('tags are stored sorted and unique', async () => {
      const store = await open()
      const created = await store.create('p', { title: 't', body: '', tags: ['b', 'a', 'b'] }, T0)
      expect(created.tags).toEqual(['a', 'b'])
      const updated = await store.update('p', created.id, 1, { tags: ['z', 'y', 'z'] }, T0 + 1)
      expect(updated).toMatchObject({ kind: 'updated', note: { tags: ['y', 'z'] } })
    })

    it('an expected version that is not a safe integer is a conflict, not a database error', async () => {
      const store = await open()
      const created = await store.create('p', { title: 't', body: '', tags: [] }, T0)
      for (const version of [1.5, Number.MAX_SAFE_INTEGER, 2 ** 64, Number.NaN]) {
        expect(await store.update('p', created.id, version, { title: 'x' }, T0 + 1)).toEqual({
          kind: 'conflict',
          current: created,
        })
      }
    })

    it('an expected task version that is not a safe integer answers undefined, not a database error', async () => {
      const store = await open()
      const task = await storeTask(store, newTask('p', T0))
      for (const version of [1.5, Number.MAX_SAFE_INTEGER + 1, 2 ** 64, Number.NaN]) {
        expect(await store.updateTask(task.id, version, { status: 'failed' })).toBeUndefined()
      }
      expect(await store.getTask(task.id)).toEqual(task)
    })

    it('publishing a share that is not approved throws ShareNotApprovedError', async () => {
      const store = await open()
      const created = await store.create('p', { title: 't', body: '', tags: [] }, T0)
      const share = `s-${crypto.randomUUID()}`
      await store.createShareRequest({
        id: share,
        principal: 'p',
        noteId: created.id,
        expiresAt: T0,
      })
      const attempt = store.publishShare('p', share, `l-${share}`, `k-${share}`)
      await expect(attempt).rejects.toBeInstanceOf(ShareNotApprovedError)
      await expect(attempt).rejects.toMatchObject({ name: 'ShareNotApprovedError' })
    })

    it('rejects invalid paging instead of looping forever', async () => {
      const store = await open()
      await expect(store.list('p', 0, 0)).rejects.toBeInstanceOf(RangeError)
      await expect(store.list('p', -1, 10)).rejects.toBeInstanceOf(RangeError)
      await expect(store.search('p', { text: 'x', offset: 0, limit: 1.5 })).rejects.toBeInstanceOf(
        RangeError
      )
    })

    it('methods before migrate and after close throw StoreNotMigratedError', async () => {
      const fresh = new PostgresNotesStore({ url: shared.url })
      opened.push(fresh)
      await expect(fresh.get('p', 'x')).rejects.toBeInstanceOf(StoreNotMigratedError)
      await fresh.migrate()
      await fresh.close()
      await fresh.close()
      await expect(fresh.list('p', 0, 1)).rejects.toMatchObject({ name: 'StoreNotMigratedError' })
      await expect(fresh.migrate()).rejects.toBeInstanceOf(StoreNotMigratedError)
    })

    it('rejects a missing url or a bad pool size at construction', () => {
      expect(() => new PostgresNotesStore({ url: '' })).toThrow(TypeError)
      expect(() => new PostgresNotesStore({ url: shared.url, max: 0 })).toThrow(TypeError)
      expect(() => new PostgresEngineStore({ url: '' })).toThrow(TypeError)
    })

    it('a store sharing the pool leaves it open at close, for the other store and its opener', async () => {
      const stores = openPostgresStores({ url: shared.url })
      await stores.migrate()
      await stores.notes.close()
      const sid = `sid-${crypto.randomUUID()}`
      expect(await stores.engine.createSession(sid, 'p', T0 + 1, T0, 10)).toEqual([])
      expect(await stores.engine.getSession(sid)).toStrictEqual({ expiresAt: T0 + 1 })
      await stores.close()
      await expect(stores.engine.getSession(sid)).rejects.toBeInstanceOf(StoreNotMigratedError)
    })
  })
})
