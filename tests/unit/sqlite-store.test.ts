/**
 * The node:sqlite adapters: the engine's store (`stateless-mcp/sqlite`) and the notes store
 * (`storage/sqlite.ts`), each through its contract against an in-memory database and against a file
 * (the notes' there with the failures inside the database, made by triggers on the file), and both
 * on one connection to one file, as a replica opens them; plus what only SQLite has: WAL on a file, several connections on one file, replicas (processes) opening and
 * migrating one new file at the same moment, threads racing on one file for once-keys, bulk deletes,
 * versions, decisions, input slots and the caps on subscriptions and sessions (node:sqlite answers
 * synchronously, so only separate threads interleave), task versions, the live-task cap and imports,
 * stream takeovers, event appends and the cap on a session's stream records, the migration
 * bookkeeping (each store's own table, adopting an older file's shared one: `sqlite-migration.test.ts`
 * brings a file of every older step forward) and the upgrade of an older file, FTS5 index
 * consistency, the indexes behind runnable tasks and the live-task count, the adapters' own errors,
 * and the sweeps of expired rows (the engine's `expiry-sweeps.ts`) over these stores.
 */

import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { spawn, type ChildProcess } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { DatabaseSync } from 'node:sqlite'
import { Worker } from 'node:worker_threads'
import { MAX_SUBSCRIPTIONS_PER_SESSION } from '../../src/mcp/session-store.ts'
import { NodeSqliteDriver, SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { startExpirySweeps, sweepExpired } from '../../src/mcp/stores/expiry-sweeps.ts'
import { ENGINE_SQLITE_SCHEMA } from '../../src/mcp/stores/sqlite/schema.ts'
import { SQL } from '../../src/mcp/stores/sqlite/statements.ts'
import {
  REPLAY_RETENTION_MS,
  ShareNotApprovedError,
  StoreNotMigratedError,
} from '../../src/notes/store.ts'
import { NOTES_SQLITE_SCHEMA } from '../../src/storage/sqlite/schema.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import {
  describeNotesStoreContract,
  noteId,
  sqliteRefusal,
} from '../support/notes-store-contract.ts'
import { bothStores, type BothStores } from '../support/sqlite-stores.ts'
import {
  describeEngineStoreContract,
  newTask,
  storeStream,
  storeTask,
  T0,
} from '../support/store-contract.ts'

const tempRoot = mkdtempSync(join(tmpdir(), 'notes-sqlite-'))
let fileCounter = 0

function tempPath(): string {
  fileCounter += 1
  return join(tempRoot, `db-${fileCounter}`, 'notes.sqlite')
}

async function openNotes(path: string): Promise<SqliteNotesStore> {
  const store = new SqliteNotesStore({ path })
  await store.migrate()
  return store
}

async function openEngine(path: string): Promise<SqliteEngineStore> {
  const store = new SqliteEngineStore({ path })
  await store.migrate()
  return store
}

/** The steps each store records in its own table, on a file it migrated. */
const RECORDED = {
  mcp_schema: ENGINE_SQLITE_SCHEMA.steps.map(({ version }) => ({ version })),
  notes_schema: NOTES_SQLITE_SCHEMA.steps.map(({ version }) => ({ version })),
}

/** The rows of each store's bookkeeping table in the file at `path`. */
function recordedSteps(path: string) {
  return onFile(path, (db) => ({
    mcp_schema: db.prepare('SELECT version FROM mcp_schema ORDER BY version').all(),
    notes_schema: db.prepare('SELECT version FROM notes_schema ORDER BY version').all(),
  }))
}

/** Runs `work` on a separate raw connection to the file, the way another process would see it. */
function onFile<T>(path: string, work: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path)
  try {
    return work(db)
  } finally {
    db.close()
  }
}

afterAll(() => {
  rmSync(tempRoot, { recursive: true, force: true })
})

describeEngineStoreContract('sqlite :memory:', () => openEngine(':memory:'))
/** On a file, on the connection the notes store shares, as a replica opens them. */
describeEngineStoreContract('sqlite file shared with the notes', () => bothStores(tempPath()))
describeNotesStoreContract('sqlite :memory:', () => openNotes(':memory:'))
/** The file of the contract test running now. */
let contractPath = ''
describeNotesStoreContract('sqlite file', () => openNotes((contractPath = tempPath())), {
  async refuseInDatabase(write, title) {
    const path = contractPath
    const { create, drop } = sqliteRefusal(`refuse_${write.toLowerCase()}`, write, title)
    onFile(path, (db) => db.exec(create))
    return async () => onFile(path, (db) => db.exec(drop))
  },
})

/** The cap on live tasks of the threads that race to create tasks of one principal. */
const RACED_TASK_CAP = 25

/**
 * The cap on one session's live stream records of the threads that race to create its streams (at
 * now 1, kept until 10).
 */
const RACED_STREAM_CAP = 25

/** The caps on one principal's sessions and subscriptions that the threads of a race contend for. */
const PRINCIPAL_SESSIONS = 100
const PRINCIPAL_SUBSCRIPTIONS = 150

/**
 * What each thread of a race tries, per id, as source text run inside the thread: the store, the id,
 * its index and the thread's seed in, whether this thread's attempt took effect (or on how many
 * notes) out.
 */
const RACES = {
  delete: `(store, id, i) => store.delete('p', id, 'shared-key-' + i).then((o) => o.kind === 'done')`,
  deleteMany: `(store, group, i) => store.deleteMany('p', group.split(' '), 'group-key-' + i)
    .then((o) => (o.kind === 'done' ? o.value.length : 0))`,
  update: `(store, id, i, seed) =>
    store.update('p', id, 1, { title: 'by ' + seed }, 1).then((o) => o.kind === 'updated')`,
  decide: `(store, id, i, seed) =>
    store.decideShareRequest(id, seed % 2 ? 'approved' : 'refused', 1).then((o) => o === 'decided')`,
  deliver: `(store, id, i, seed) => store.deliverInput('sid', id, 'answer from ' + seed, 1)`,
  subscribe: `(store, id, i, seed) =>
    store.addSubscription('sid', id + '#' + seed, 1, Infinity).then((o) => o === 'subscribed')`,
  subscribeAcross: `(store, id, i, seed) =>
    store.addSubscription('sid-' + seed, id, 1, ${PRINCIPAL_SUBSCRIPTIONS}).then((o) => o === 'subscribed')`,
  openSession: `(store, id, i, seed) =>
    store.createSession(id + '#' + seed, 'p', 10, 2, ${PRINCIPAL_SESSIONS}).then((ended) => ended.length)`,
  task: `(store, id, i, seed) =>
    store.updateTask(id, 1, { statusMessage: 'by ' + seed }).then((task) => task !== undefined)`,
  import: `(store, id, i, seed) =>
    store.importNotes('p', [{ id, title: 'by ' + seed, body: '', tags: [] }], 1).then((n) => n === 1)`,
  createTask: `(store, id, i, seed) => store.createTask({
      id: id + '-' + seed, owner: 'p via ' + seed, principal: 'p', tool: 't', args: '{}',
      status: 'working', createdAt: 1, updatedAt: 1, expiresAt: 10, pollIntervalMs: 1, journal: '{}',
    }, ${RACED_TASK_CAP}).then((task) => task !== undefined)`,
  createStream: `(store, id, i, seed) =>
    store.createStream({ sid: 'sid', stream: id + '-' + seed, expiresAt: 10 }, ${RACED_STREAM_CAP}, 1)
      .then((stream) => stream !== undefined)`,
  stream: `(store, id, i, seed) =>
    store.updateStream('sid', id, 1, { leaseOwner: 'by ' + seed, leaseExpiresAt: 5 })
      .then((stream) => stream !== undefined)`,
  appendEvent: `(store, id, i, seed) => store.appendEvent('sid', id, 1, 'by ' + seed, 10)`,
} as const

/** Processes of `startReplicasTogether`, and the new files each of them opens. */
const REPLICAS = 4
const REPLICA_FILES = 40
/** Time between two files: each replica opens file i at the same moment, `i` slots after the start. */
const REPLICA_SLOT_MS = 40

/**
 * One replica process (argv: the store module's URL, then the files and the slot as JSON): says
 * `ready`, reads the start time from stdin, then opens, migrates and writes a note to each file at
 * its slot (the last milliseconds spun, so that every replica starts within the same instant), and
 * prints the outcome of each file (`ok` or the error).
 */
const REPLICA_SOURCE = `
  import { createInterface } from 'node:readline'
  import { setTimeout as sleep } from 'node:timers/promises'
  const { bothStores } = await import(process.argv[1])
  const { files, slotMs } = JSON.parse(process.argv[2])
  const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  console.log('ready')
  const start = Number((await input.next()).value)
  const outcomes = []
  for (const [i, path] of files.entries()) {
    const at = start + i * slotMs
    await sleep(Math.max(0, at - Date.now() - 5))
    while (Date.now() < at) {}
    try {
      const store = await bothStores(path)
      await store.create('p', { title: 'replica ' + process.pid, body: '', tags: [] }, 1)
      await store.close()
      outcomes.push('ok')
    } catch (error) {
      outcomes.push(String(error))
    }
  }
  console.log(JSON.stringify(outcomes))
  process.exit(0)
`

/**
 * Starts `replicas` processes that open the same new `files` at the same moments (see
 * {@link REPLICA_SOURCE}); answers each replica's outcomes, file by file.
 */
async function startReplicasTogether(files: string[], replicas: number): Promise<string[][]> {
  const storeUrl = new URL('../support/sqlite-stores.ts', import.meta.url).href
  const args = ['--input-type=module', '-e', REPLICA_SOURCE, storeUrl]
  const children: ChildProcess[] = []
  try {
    const lines = Array.from({ length: replicas }, () => {
      const setup = JSON.stringify({ files, slotMs: REPLICA_SLOT_MS })
      const child = spawn(process.execPath, [...args, setup], {
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      children.push(child)
      return createInterface({ input: child.stdout })[Symbol.asyncIterator]()
    })
    for (const line of lines) expect((await line.next()).value).toBe('ready')
    const start = Date.now() + 50
    for (const child of children) child.stdin!.write(`${start}\n`)
    return await Promise.all(
      lines.map(async (line) => JSON.parse(String((await line.next()).value)) as string[])
    )
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill()
  }
}

describe('the SQLite stores on a file', () => {
  let path: string
  const opened: BothStores[] = []
  const open = async () => {
    const store = await bothStores(path)
    opened.push(store)
    return store
  }

  beforeEach(() => {
    path = tempPath()
  })

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close()
  })

  /** A separate raw connection, to look at the file the way another process would. */
  function inspect<T>(read: (db: DatabaseSync) => T): T {
    return onFile(path, read)
  }

  /** How many subscriptions the file holds that match the SQL condition `where`. */
  function subscriptionsWhere(where: string): number {
    const counted = inspect((db) =>
      db.prepare(`SELECT count(*) AS n FROM session_subscriptions WHERE ${where}`).get()
    )
    return Number(counted?.n)
  }

  it('creates the missing parent directory and runs the file in WAL mode', async () => {
    expect(existsSync(join(path, '..'))).toBe(false)
    const store = await open()
    await store.create('p', { title: 't', body: '', tags: [] }, T0)
    expect(inspect((db) => db.prepare('PRAGMA journal_mode').get())).toEqual({
      journal_mode: 'wal',
    })
    expect(existsSync(`${path}-wal`)).toBe(true)
  })

  it('a store opening a new file while another connection holds its write lock waits for it, then migrates', async () => {
    // What another replica switching the new file to WAL, or migrating it, holds for a moment. The
    // switch to WAL upgrades a read to a write, for which SQLite never waits on its own.
    mkdirSync(join(path, '..'), { recursive: true })
    const holder = new DatabaseSync(path)
    holder.exec('BEGIN IMMEDIATE')
    const store = new SqliteNotesStore({ path })
    const migrating = store.migrate()
    holder.exec('COMMIT')
    holder.close()
    await migrating
    await store.create('p', { title: 't', body: '', tags: [] }, T0)
    await store.close()
    expect(inspect((db) => db.prepare('PRAGMA journal_mode').get())).toEqual({
      journal_mode: 'wal',
    })
    expect(inspect((db) => db.prepare('SELECT count(*) AS n FROM notes_schema').get())).toEqual({
      n: NOTES_SQLITE_SCHEMA.steps.length,
    })
  })

  it('replicas starting at the same moment on new files all open and migrate them', async () => {
    const files = Array.from({ length: REPLICA_FILES }, () => tempPath())
    const outcomes = await startReplicasTogether(files, REPLICAS)
    expect(outcomes).toEqual(Array.from({ length: REPLICAS }, () => files.map(() => 'ok')))
    for (const file of files) {
      expect(recordedSteps(file)).toEqual(RECORDED)
      expect(onFile(file, (db) => db.prepare('SELECT count(*) AS n FROM notes').get())).toEqual({
        n: REPLICAS,
      })
    }
  })

  it("records each step once, in its own store's table, however often and by however many stores it runs", async () => {
    const first = await open()
    const second = await open()
    await first.migrate()
    await second.migrate()
    expect(recordedSteps(path)).toEqual(RECORDED)
    // A fresh file has no shared bookkeeping: that table is an older deployment's.
    expect(
      inspect((db) =>
        db.prepare("SELECT name FROM sqlite_master WHERE name = 'schema_migrations'").get()
      )
    ).toBeUndefined()
  })

  it('upgrades a file from before the shared schema, keeping its spent once-keys', async () => {
    // The shape node:sqlite files had before step 1 became the schema D1 shares: no used_keys.claim.
    const legacy = (db: DatabaseSync) => {
      db.exec(readFileSync(new URL('../../migrations/0001_init.sql', import.meta.url), 'utf8'))
      db.exec(`DROP TABLE used_keys;
        CREATE TABLE used_keys (once_key TEXT PRIMARY KEY, used_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
        INSERT INTO schema_migrations VALUES (1, 0);
        INSERT INTO used_keys VALUES ('spent-before', ${Date.now()});`)
    }
    mkdirSync(join(path, '..'), { recursive: true })
    inspect(legacy)
    const store = await open()
    const note = await store.create('p', { title: 't', body: '', tags: [] }, T0)
    expect(await store.delete('p', note.id, 'spent-before')).toEqual({ kind: 'already_done' })
    expect(await store.delete('p', note.id, 'fresh')).toEqual({ kind: 'done', value: true })
  })

  it('two stores on one file see each other’s writes', async () => {
    const a = await open()
    const b = await open()
    const created = await a.create('p', { title: 'from a', body: 'hello', tags: ['x'] }, T0)
    expect(await b.get('p', created.id)).toEqual(created)
    const updated = await b.update('p', created.id, 1, { title: 'from b' }, T0 + 1)
    expect(updated.kind).toBe('updated')
    expect((await a.search('p', { text: 'from b', offset: 0, limit: 10 })).items).toHaveLength(1)
    expect(await a.update('p', created.id, 1, { title: 'stale' }, T0 + 2)).toMatchObject({
      kind: 'conflict',
      current: { title: 'from b', version: 2 },
    })
  })

  it('a once-key spent through one store answers already_done through another', async () => {
    const a = await open()
    const b = await open()
    const first = await a.create('p', { title: 'one', body: '', tags: [] }, T0)
    const second = await a.create('p', { title: 'two', body: '', tags: [] }, T0 + 1)
    expect(await a.delete('p', first.id, 'key-1')).toEqual({ kind: 'done', value: true })
    expect(await b.delete('p', second.id, 'key-1')).toEqual({ kind: 'already_done' })
    expect(await b.get('p', second.id)).toEqual(second)

    await a.createShareRequest({ id: 's1', principal: 'p', noteId: second.id, expiresAt: T0 + 10 })
    expect(await b.decideShareRequest('s1', 'approved', T0 + 2)).toBe('decided')
    expect(await a.decideShareRequest('s1', 'refused', T0 + 3)).toBe('already_decided')
    expect(await a.publishShare('p', 's1', 'link-1', 'key-2')).toEqual({
      kind: 'done',
      value: 'link-1',
    })
    expect(await b.publishShare('p', 's1', 'link-2', 'key-2')).toEqual({ kind: 'already_done' })
    expect(await b.getSharedNote('link-1')).toEqual(second)
  })

  /**
   * Runs `op` of the script below in `threads` worker threads, each with its own connection to the
   * file, released together from a barrier; answers how many times `op` succeeded in all of them.
   */
  async function race(op: keyof typeof RACES, ids: string[], threads = 4) {
    const storeUrl = new URL('../support/sqlite-stores.ts', import.meta.url).href
    const barrier = new Int32Array(new SharedArrayBuffer(4))
    const attempt = RACES[op]
    const source = `
      const { parentPort, workerData } = require('node:worker_threads')
      const { storeUrl, path, ids, seed, barrier, threads } = workerData
      import(storeUrl).then(async ({ bothStores }) => {
        const store = await bothStores(path)
        Atomics.add(barrier, 0, 1)
        while (Atomics.load(barrier, 0) < threads) Atomics.wait(barrier, 0, Atomics.load(barrier, 0), 50)
        let won = 0
        for (const [i, id] of ids.entries()) won += Number(await (${attempt})(store, id, i, seed))
        await store.close()
        parentPort.postMessage(won)
      })
    `
    const run = (seed: number) =>
      new Promise<number>((resolve, reject) => {
        const workerData = { storeUrl, path, ids, seed, barrier, threads }
        const worker = new Worker(source, { eval: true, workerData })
        worker.once('message', resolve)
        worker.once('error', reject)
      })
    const wins = await Promise.all(Array.from({ length: threads }, (_, i) => run(i + 1)))
    return wins.reduce((a, b) => a + b, 0)
  }

  async function seedNotes(store: BothStores, count: number): Promise<string[]> {
    const ids: string[] = []
    for (let i = 0; i < count; i++) {
      ids.push((await store.create('p', { title: `n${i}`, body: '', tags: [] }, 0)).id)
    }
    return ids
  }

  it('threads racing on one file spend each once-key exactly once', async () => {
    const store = await open()
    // Every thread deletes note i with once-key i: each key is spent, and its note deleted, once.
    const ids = await seedNotes(store, 60)
    expect(await race('delete', ids)).toBe(ids.length)
    expect((await store.list('p', 0, 100)).items).toEqual([])
  })

  it('threads racing to delete the same notes with one once-key: one call deletes each set whole', async () => {
    const store = await open()
    const ids = await seedNotes(store, 60)
    // Twenty sets of three notes, each deleted by every thread with the set's own once-key.
    const groups = Array.from({ length: 20 }, (_, i) => ids.slice(3 * i, 3 * i + 3).join(' '))
    expect(await race('deleteMany', groups)).toBe(ids.length)
    expect((await store.list('p', 0, 100)).items).toEqual([])
  })

  it('threads racing to update one note with the same expected version: exactly one wins', async () => {
    const store = await open()
    const ids = await seedNotes(store, 60)
    expect(await race('update', ids)).toBe(ids.length)
    for (const id of ids) expect((await store.get('p', id))?.version).toBe(2)
  })

  it('threads racing to decide one share: exactly one decision is recorded', async () => {
    const store = await open()
    const [noteId] = await seedNotes(store, 1)
    const ids: string[] = []
    for (let i = 0; i < 60; i++) {
      const share = { id: `s${i}`, principal: 'p', noteId: noteId!, expiresAt: T0 }
      ids.push((await store.createShareRequest(share)).id)
    }
    expect(await race('decide', ids)).toBe(ids.length)
    for (const id of ids) expect((await store.getShareRequest(id))?.status).not.toBe('pending')
  })

  it('threads racing to answer one input slot: exactly one answer is stored', async () => {
    const store = await open()
    const ids = Array.from({ length: 60 }, (_, i) => `r${i}`)
    for (const id of ids) await store.expectInput('sid', id, 10)
    expect(await race('deliver', ids)).toBe(ids.length)
    for (const id of ids) expect(await store.readInput('sid', id)).toMatch(/^answer from [1-4]$/)
  })

  it('threads racing to subscribe one session never exceed its cap', async () => {
    const store = await open()
    await store.createSession('sid', 'p', 10, 1, Infinity)
    const ids = Array.from({ length: 60 }, (_, i) => `note://n_${i}`)
    expect(await race('subscribe', ids)).toBe(MAX_SUBSCRIPTIONS_PER_SESSION)
    expect(subscriptionsWhere(`sid = 'sid'`)).toBe(MAX_SUBSCRIPTIONS_PER_SESSION)
  })

  it("threads racing to subscribe a principal's sessions never exceed the principal's cap", async () => {
    const store = await open()
    // Thread k subscribes session sid-k, all four of principal p, to the same 60 URIs.
    for (let seed = 1; seed <= 4; seed++) await store.createSession(`sid-${seed}`, 'p', 10, 1, 4)
    const ids = Array.from({ length: 60 }, (_, i) => `note://n_${i}`)
    expect(await race('subscribeAcross', ids)).toBe(PRINCIPAL_SUBSCRIPTIONS)
    expect(subscriptionsWhere(`principal = 'p'`)).toBe(PRINCIPAL_SUBSCRIPTIONS)
  })

  it("threads racing to open sessions of one principal never exceed the principal's cap, ending the oldest", async () => {
    const store = await open()
    // The principal is at its cap with sessions older than any the threads open.
    for (let i = 0; i < PRINCIPAL_SESSIONS; i++) {
      expect(await store.createSession(`old-${i}`, 'p', 10, 1, PRINCIPAL_SESSIONS)).toStrictEqual(
        []
      )
    }
    const ids = Array.from({ length: 60 }, (_, i) => `sid-${i}`)
    // Each thread adds how many sessions its creations ended.
    const evicted = await race('openSession', ids)
    const opened = 4 * ids.length
    expect(evicted).toBe(opened)
    const recorded = inspect((db) =>
      db
        .prepare(
          `SELECT count(*) AS n, count(*) FILTER (WHERE sid LIKE 'old-%') AS old
          FROM sessions WHERE principal = 'p'`
        )
        .get()
    )
    expect(recorded).toEqual({ n: PRINCIPAL_SESSIONS, old: 0 })
  })

  it('threads racing to update one task with the same expected version: exactly one wins', async () => {
    const store = await open()
    const ids = Array.from({ length: 60 }, (_, i) => `task-${i}`)
    for (const id of ids) {
      await storeTask(store, newTask('p', T0, { id }))
    }
    expect(await race('task', ids)).toBe(ids.length)
    for (const id of ids) {
      expect(await store.getTask(id)).toMatchObject({ statusMessage: /^by [1-4]$/, version: 2 })
    }
  })

  it('threads racing to take over one stream with the same expected version: exactly one wins', async () => {
    const store = await open()
    const streams = Array.from({ length: 60 }, (_, i) => `stream-${i}`)
    for (const stream of streams) await storeStream(store, { sid: 'sid', stream, expiresAt: 10 })
    expect(await race('stream', streams)).toBe(streams.length)
    for (const stream of streams) {
      expect(await store.getStream('sid', stream)).toMatchObject({
        leaseOwner: /^by [1-4]$/,
        version: 2,
      })
    }
  })

  it("threads racing to create one session's streams, its cap full of ended records, evict each of them once and never exceed the cap", async () => {
    const store = await open()
    for (let i = 0; i < RACED_STREAM_CAP; i++) {
      const stream = `ended-${i}`
      await storeStream(store, { sid: 'sid', stream, expiresAt: 5 })
      expect(await store.appendEvent('sid', stream, 1, '{}', 5)).toBe(true)
      expect(await store.updateStream('sid', stream, 1, { ended: true })).toBeDefined()
    }
    const ids = Array.from({ length: 20 }, (_, i) => `stream-${i}`)
    expect(await race('createStream', ids)).toBe(RACED_STREAM_CAP)
    const held = inspect((db) =>
      db
        .prepare(
          `SELECT (SELECT count(*) FROM session_streams WHERE sid = 'sid') AS records,
            (SELECT count(*) FROM session_streams WHERE sid = 'sid' AND ended = 0) AS unended,
            (SELECT count(*) FROM stream_events WHERE sid = 'sid') AS events`
        )
        .get()
    )
    expect(held).toEqual({ records: RACED_STREAM_CAP, unended: RACED_STREAM_CAP, events: 0 })
  })

  it('threads racing to append one event of a stream: exactly one stores it, and it is the one read', async () => {
    const store = await open()
    const streams = Array.from({ length: 60 }, (_, i) => `stream-${i}`)
    expect(await race('appendEvent', streams)).toBe(streams.length)
    for (const stream of streams) {
      const events = await store.readEvents('sid', stream, 0, 10, 1)
      expect(events).toStrictEqual([{ seq: 1, payload: expect.stringMatching(/^by [1-4]$/) }])
    }
  })

  it("reads a stream's events through the primary key in order, and purges streams and events by their expiry indexes", async () => {
    await open()
    const plans = inspect((db) =>
      [SQL.readEvents, SQL.purgeStreams, SQL.purgeStreamEvents].map((sql) =>
        db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all()
          .map((row) => String(row.detail))
      )
    )
    const [read, purgeStreams, purgeEvents] = plans as [string[], string[], string[]]
    // No sort step: the primary key (sid, stream, seq) answers the order.
    expect(read).toEqual([
      expect.stringMatching(
        /^SEARCH stream_events USING INDEX sqlite_autoindex_stream_events_1 \(sid=\? AND stream=\? AND seq>\?\)$/
      ),
    ])
    expect(purgeStreams).toContainEqual(
      expect.stringMatching(/USING COVERING INDEX session_streams_by_expiry/)
    )
    expect(purgeEvents).toContainEqual(
      expect.stringMatching(/USING COVERING INDEX stream_events_by_expiry/)
    )
  })

  it('threads racing to create tasks of one principal never exceed its cap on live tasks', async () => {
    const store = await open()
    const ids = Array.from({ length: 20 }, (_, i) => `task-${i}`)
    expect(await race('createTask', ids)).toBe(RACED_TASK_CAP)
    expect(await store.countLiveTasks('p', 1)).toBe(RACED_TASK_CAP)
    const held = inspect((db) => db.prepare(`SELECT count(*) AS n FROM tasks`).get())
    expect(held).toEqual({ n: RACED_TASK_CAP })
  })

  it('counts live tasks from the covering index tasks_live_by_principal, never the table', async () => {
    await open()
    const [count, insert] = inspect((db) =>
      [SQL.countLiveTasks, SQL.insertTask].map((sql) =>
        db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all()
          .map((row) => String(row.detail))
      )
    )
    const byIndex =
      /^SEARCH tasks USING COVERING INDEX tasks_live_by_principal \(principal=\? AND expires_at>\?\)$/
    expect(count).toEqual([expect.stringMatching(byIndex)])
    expect(insert).toContainEqual(expect.stringMatching(byIndex))
    expect(insert!.filter((detail) => detail.startsWith('SCAN tasks'))).toEqual([])
  })

  it('threads racing to import the same notes: each note is created once', async () => {
    const store = await open()
    const ids = Array.from({ length: 60 }, () => noteId())
    expect(await race('import', ids)).toBe(ids.length)
    const listed = (await store.list('p', 0, 100)).items.map((note) => note.id)
    expect(listed.sort()).toEqual([...ids].sort())
  })

  it('findRunnableTasks reads the partial covering index tasks_runnable, never the table', async () => {
    await open()
    const plan = inspect((db) =>
      db.prepare(`EXPLAIN QUERY PLAN ${SQL.findRunnableTasks}`).all(T0, 10)
    ).map((row) => String(row.detail))
    expect(plan).toEqual([
      expect.stringMatching(/^SEARCH tasks USING COVERING INDEX tasks_runnable /),
    ])
  })

  it('keeps the full-text index consistent with the notes table', async () => {
    const store = await open()
    const ids: string[] = []
    for (let i = 0; i < 20; i++) {
      const tags = [`t${i % 3}`]
      ids.push((await store.create('p', { title: `note ${i}`, body: `body ${i}`, tags }, T0)).id)
    }
    for (const [i, id] of ids.entries()) {
      if (i % 2 === 0) await store.update('p', id, 1, { body: `changed ${i}` }, T0 + i)
      if (i % 5 === 0) await store.delete('p', id, `key-${i}`)
    }
    const imported = Array.from({ length: 10 }, (_, i) => ({
      id: noteId(),
      title: `imported ${i}`,
      body: `body ${i}`,
      tags: [`t${i % 3}`],
    }))
    await store.importNotes('p', imported, T0)
    await store.importNotes('p', imported, T0 + 1)
    await store.update('p', imported[0]!.id, 1, { body: 'changed' }, T0 + 2)
    await store.delete('p', imported[1]!.id, 'key-imported')
    const survivors = (await store.list('p', 0, 100)).items.map((note) => note.id)
    await store.deleteMany(
      'p',
      survivors.filter((_, i) => i % 3 === 0),
      'key-many'
    )
    await store.close()
    expect(() =>
      inspect((db) => db.exec(`INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')`))
    ).not.toThrow()
  })
})

describe('SqliteNotesStore specifics', () => {
  let store: SqliteNotesStore

  beforeEach(async () => {
    store = await openNotes(':memory:')
  })

  afterEach(async () => {
    await store.close()
  })

  it('tags are stored sorted and unique', async () => {
    const created = await store.create('p', { title: 't', body: '', tags: ['b', 'a', 'b'] }, T0)
    expect(created.tags).toEqual(['a', 'b'])
    const updated = await store.update('p', created.id, 1, { tags: ['z', 'y', 'z'] }, T0 + 1)
    expect(updated).toMatchObject({ kind: 'updated', note: { tags: ['y', 'z'] } })
  })

  it('search folds diacritics both ways', async () => {
    await store.create('p', { title: 'Café crème', body: '', tags: [] }, T0)
    await store.create('p', { title: 'naive', body: '', tags: [] }, T0)
    const search = async (text: string) =>
      (await store.search('p', { text, offset: 0, limit: 10 })).items.map((n) => n.title)
    expect(await search('cafe creme')).toEqual(['Café crème'])
    expect(await search('CAFÉ')).toEqual(['Café crème'])
    expect(await search('naïve')).toEqual(['naive'])
  })

  it('search uses at most the first words and the last one of a very long text', async () => {
    await store.create('p', { title: 'alpha omega', body: '', tags: [] }, T0)
    const filler = Array.from({ length: 500 }, (_, i) => `zz${i}`).join(' ')
    const page = await store.search('p', { text: `alpha ${filler} ome`, offset: 0, limit: 10 })
    expect(page.items).toEqual([])
    const repeated = `${'alpha '.repeat(500)}ome`
    const found = await store.search('p', { text: repeated, offset: 0, limit: 10 })
    expect(found.items.map((n) => n.title)).toEqual(['alpha omega'])
  })

  it('publishing a share that is not approved throws ShareNotApprovedError', async () => {
    const created = await store.create('p', { title: 't', body: '', tags: [] }, T0)
    await store.createShareRequest({ id: 's', principal: 'p', noteId: created.id, expiresAt: T0 })
    const attempt = store.publishShare('p', 's', 'l', 'k')
    await expect(attempt).rejects.toBeInstanceOf(ShareNotApprovedError)
    await expect(attempt).rejects.toMatchObject({ name: 'ShareNotApprovedError' })
  })

  it('rejects invalid paging instead of looping forever', async () => {
    await expect(store.list('p', 0, 0)).rejects.toBeInstanceOf(RangeError)
    await expect(store.list('p', -1, 10)).rejects.toBeInstanceOf(RangeError)
    await expect(store.search('p', { text: 'x', offset: 0, limit: 1.5 })).rejects.toBeInstanceOf(
      RangeError
    )
  })

  it('methods before migrate and after close throw StoreNotMigratedError', async () => {
    const fresh = new SqliteNotesStore({ path: ':memory:' })
    await expect(fresh.get('p', 'x')).rejects.toBeInstanceOf(StoreNotMigratedError)
    await fresh.migrate()
    await fresh.close()
    await fresh.close()
    await expect(fresh.list('p', 0, 1)).rejects.toMatchObject({ name: 'StoreNotMigratedError' })
  })

  it('rejects a missing path at construction', () => {
    expect(() => new SqliteNotesStore({ path: '' })).toThrow(TypeError)
    expect(() => new SqliteEngineStore({ path: '' })).toThrow(TypeError)
  })

  it('the engine store before migrate and after close throws StoreNotMigratedError', async () => {
    const fresh = new SqliteEngineStore({ path: ':memory:' })
    await expect(fresh.getSession('sid')).rejects.toBeInstanceOf(StoreNotMigratedError)
    await fresh.migrate()
    await fresh.close()
    await expect(fresh.getTask('t')).rejects.toMatchObject({ name: 'StoreNotMigratedError' })
  })

  it('a store sharing a connection leaves it open at close, for the other store and its opener', async () => {
    const driver = new NodeSqliteDriver({ path: ':memory:' })
    const notes = new SqliteNotesStore({ driver })
    const engine = new SqliteEngineStore({ driver })
    await notes.migrate()
    await engine.migrate()
    await notes.close()
    await engine.createSession('sid', 'p', T0 + 1, T0, 10)
    expect(await engine.getSession('sid')).toStrictEqual({ expiresAt: T0 + 1 })
    await engine.close()
    expect(await driver.get('SELECT count(*) AS n FROM sessions', [])).toEqual({ n: 1 })
    await driver.close()
  })
})

describe('sweeps of expired rows over SqliteNotesStore', () => {
  let store: SqliteNotesStore
  /** A time at which every share request made below has been expired for the retention period. */
  const later = T0 + REPLAY_RETENTION_MS + 1

  beforeEach(async () => {
    store = await openNotes(':memory:')
  })

  afterEach(async () => {
    vi.useRealTimers()
    await store.close()
  })

  async function expiredShares(count: number): Promise<string[]> {
    const note = await store.create('p', { title: 't', body: '', tags: [] }, T0)
    const ids: string[] = []
    for (let i = 0; i < count; i++) {
      const share = { id: `s${i}`, principal: 'p', noteId: note.id, expiresAt: T0 }
      ids.push((await store.createShareRequest(share)).id)
    }
    return ids
  }

  it('a sweep runs batches until nothing more has expired', async () => {
    const ids = await expiredShares(7)
    expect(await sweepExpired(store, later, { batchRows: 3, maxBatches: 10 })).toBe(7)
    for (const id of ids) expect(await store.getShareRequest(id)).toBeUndefined()
  })

  it('a sweep stops after its batch budget and the next one goes on', async () => {
    await expiredShares(7)
    expect(await sweepExpired(store, later, { batchRows: 2, maxBatches: 2 })).toBe(4)
    expect(await sweepExpired(store, later, { batchRows: 2, maxBatches: 2 })).toBe(3)
    expect(await sweepExpired(store, later, { batchRows: 2, maxBatches: 2 })).toBe(0)
  })

  it('the Node timer sweeps at every interval until it is stopped', async () => {
    vi.useFakeTimers()
    const [first] = await expiredShares(1)
    const warnings: unknown[] = []
    const logger = { warn: (...args: unknown[]) => warnings.push(args), error: () => {} }
    const stop = startExpirySweeps([store], { intervalMs: 1000, logger, now: () => later })

    await vi.advanceTimersByTimeAsync(999)
    expect(await store.getShareRequest(first!)).toMatchObject({ id: first, status: 'pending' })
    await vi.advanceTimersByTimeAsync(1)
    expect(await store.getShareRequest(first!)).toBeUndefined()

    stop()
    const note = await store.create('p', { title: 'after', body: '', tags: [] }, T0)
    await store.createShareRequest({ id: 'after', principal: 'p', noteId: note.id, expiresAt: T0 })
    await vi.advanceTimersByTimeAsync(5000)
    expect(await store.getShareRequest('after')).toMatchObject({ id: 'after', status: 'pending' })
    expect(warnings).toEqual([])
  })

  it('a failed sweep is logged and the next interval tries again', async () => {
    vi.useFakeTimers()
    const warnings: unknown[] = []
    const logger = { warn: (message: string) => warnings.push(message), error: () => {} }
    // Never migrated: every purge throws StoreNotMigratedError.
    const unmigrated = new SqliteNotesStore({ path: ':memory:' })
    const stop = startExpirySweeps([unmigrated], { intervalMs: 1000, logger })
    await vi.advanceTimersByTimeAsync(2000)
    stop()
    expect(warnings).toEqual([
      'expired-row sweep failed; the next one retries',
      'expired-row sweep failed; the next one retries',
    ])
  })
})
