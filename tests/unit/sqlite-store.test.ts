/**
 * The node:sqlite adapter: the shared `NotesStore` contract against an in-memory database and against a
 * file, plus what only SQLite has: WAL on a file, several connections (and threads) on one file, the
 * migration bookkeeping, FTS5 index consistency, and the adapter's own error types.
 */

import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { Worker } from 'node:worker_threads'
import {
  ShareNotApprovedError,
  SqliteNotesStore,
  StoreNotMigratedError,
} from '../../src/storage/sqlite.ts'
import { describeNotesStoreContract } from '../support/store-contract.ts'

const T0 = 1_750_000_000_000
const tempRoot = mkdtempSync(join(tmpdir(), 'notes-sqlite-'))
let fileCounter = 0

function tempPath(): string {
  fileCounter += 1
  return join(tempRoot, `db-${fileCounter}`, 'notes.sqlite')
}

async function openStore(path: string): Promise<SqliteNotesStore> {
  const store = new SqliteNotesStore({ path })
  await store.migrate()
  return store
}

afterAll(() => {
  rmSync(tempRoot, { recursive: true, force: true })
})

describeNotesStoreContract('sqlite :memory:', () => openStore(':memory:'))
describeNotesStoreContract('sqlite file', () => openStore(tempPath()))

describe('SqliteNotesStore on a file', () => {
  let path: string
  const opened: SqliteNotesStore[] = []
  const open = async () => {
    const store = await openStore(path)
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
    const db = new DatabaseSync(path)
    try {
      return read(db)
    } finally {
      db.close()
    }
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

  it('records each migration once, however often and by however many stores it runs', async () => {
    const first = await open()
    const second = await open()
    await first.migrate()
    await second.migrate()
    const versions = inspect((db) => db.prepare('SELECT version FROM schema_migrations').all())
    expect(versions).toEqual([{ version: 1 }])
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

  it('concurrent threads on one file spend each once-key exactly once', async () => {
    await open()
    const storeUrl = new URL('../../src/storage/sqlite.ts', import.meta.url).href
    const keys = 60
    const worker = (seed: number) =>
      new Promise<number>((resolve, reject) => {
        const source = `
          const { parentPort, workerData } = require('node:worker_threads')
          import(workerData.storeUrl).then(async ({ SqliteNotesStore }) => {
            const store = new SqliteNotesStore({ path: workerData.path })
            await store.migrate()
            let done = 0
            for (let i = 0; i < workerData.keys; i++) {
              const note = await store.create('p', { title: 'w' + workerData.seed, body: '', tags: [] }, i)
              const outcome = await store.delete('p', note.id, 'shared-key-' + i)
              if (outcome.kind === 'done') done++
            }
            await store.close()
            parentPort.postMessage(done)
          }, (error) => { throw error })
        `
        const w = new Worker(source, { eval: true, workerData: { storeUrl, path, keys, seed } })
        w.once('message', resolve)
        w.once('error', reject)
      })
    const done = await Promise.all([worker(1), worker(2), worker(3), worker(4)])
    expect(done.reduce((a, b) => a + b, 0)).toBe(keys)
    const remaining = inspect((db) => db.prepare('SELECT count(*) AS n FROM notes').get())
    expect(remaining).toEqual({ n: 3 * keys })
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
    await store.close()
    expect(() =>
      inspect((db) => db.exec(`INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')`))
    ).not.toThrow()
  })
})

describe('SqliteNotesStore specifics', () => {
  let store: SqliteNotesStore

  beforeEach(async () => {
    store = await openStore(':memory:')
  })

  afterEach(async () => {
    await store.close()
  })

  it('note ids are n_ followed by 16 base64url characters', async () => {
    const created = await store.create('p', { title: 't', body: '', tags: [] }, T0)
    expect(created.id).toMatch(/^n_[A-Za-z0-9_-]{16}$/)
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
  })
})
