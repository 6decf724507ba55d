/**
 * The D1 adapters inside workerd, against local D1 with `migrations/` applied (as wrangler does for
 * the notes Worker): a database an older deployment left, brought forward by today's stores; the
 * engine's store (`stateless-mcp/d1`) through the engine contract, adopting the tables those
 * migrations made; the notes store through the notes contract (the same suites the node:sqlite
 * adapters pass, with the failures inside D1 made by triggers, so its batches are seen to be
 * transactions); what only the notes adapter has: the schema check in `migrate()`, its error types,
 * and a full-text index that stays consistent; and last, once every table is dropped, the engine's
 * store on a D1 database without the notes Worker's migrations, making its tables itself.
 */
import { env } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import { D1EngineStore } from '../../src/mcp/d1.ts'
import {
  D1_MIGRATIONS,
  D1NotesStore,
  D1SchemaMissingError,
  openD1Stores,
} from '../../src/storage/d1.ts'
import { ShareNotApprovedError, StoreNotMigratedError } from '../../src/notes/store.ts'
import {
  describeNotesStoreContract,
  noteId,
  sqliteRefusal,
} from '../support/notes-store-contract.ts'
import { expectKept, sqliteRowsAt } from '../support/older-deployment.ts'
import { describeEngineStoreContract, T0 } from '../support/store-contract.ts'

async function openStore(): Promise<D1NotesStore> {
  const store = new D1NotesStore({ db: env.DB })
  await store.migrate()
  return store
}

async function openEngine(): Promise<D1EngineStore> {
  const store = new D1EngineStore({ db: env.DB })
  await store.migrate()
  return store
}

/** `env.DB` answering every statement that names `table` as D1 answers for a table that is not there. */
function withoutTable(table: string) {
  return {
    prepare: (sql: string) =>
      sql.includes(table)
        ? {
            bind() {
              return this
            },
            all: async () => {
              throw new Error(`D1_ERROR: no such table: ${table}: SQLITE_ERROR`)
            },
          }
        : env.DB.prepare(sql),
    batch: env.DB.batch.bind(env.DB),
  }
}

// First, before any store of today touched the database: the rows an older deployment left.
describe('a D1 database an older deployment migrated with wrangler', () => {
  it('keeps every note, session, stream and task, and serves them', async () => {
    for (const row of sqliteRowsAt(8).split(';\n')) await env.DB.prepare(row).run()
    const stores = openD1Stores(env.DB)
    await stores.migrate()
    await expectKept(stores.notes, stores.engine, 8)
    const adopted = await env.DB.prepare('SELECT version FROM mcp_schema').all()
    expect(adopted.results).toEqual([{ version: 8 }])
  })
})

describeEngineStoreContract('D1 (local, inside workerd), on the tables wrangler made', openEngine)

describeNotesStoreContract('D1 (local, inside workerd)', openStore, {
  async refuseInDatabase(write, title) {
    const { create, drop } = sqliteRefusal(`refuse_${write.toLowerCase()}`, write, title)
    await env.DB.prepare(create).run()
    return async () => {
      await env.DB.prepare(drop).run()
    }
  },
})

describe('D1NotesStore specifics', () => {
  it('the migrations this code needs are exactly the files under migrations/', () => {
    expect(env.TEST_MIGRATIONS.map((migration) => migration.name)).toEqual(D1_MIGRATIONS)
  })

  it('migrate() refuses a database without the migrations, naming the command to run', async () => {
    const store = new D1NotesStore({ db: withoutTable('d1_migrations') as never })
    const attempt = store.migrate()
    await expect(attempt).rejects.toBeInstanceOf(D1SchemaMissingError)
    await expect(attempt).rejects.toThrow(/wrangler d1 migrations apply DB/)
  })

  it('migrate() lets a failure other than a missing table through', async () => {
    const unreachable = {
      prepare: () => ({
        bind() {
          return this
        },
        all: async () => {
          throw new Error('D1_ERROR: Network connection lost.')
        },
      }),
      batch: async () => [],
    }
    const store = new D1NotesStore({ db: unreachable as never })
    await expect(store.migrate()).rejects.toThrow('Network connection lost')
  })

  it('methods before migrate and after close throw StoreNotMigratedError', async () => {
    const fresh = new D1NotesStore({ db: env.DB })
    await expect(fresh.get('p', 'x')).rejects.toBeInstanceOf(StoreNotMigratedError)
    await fresh.migrate()
    await fresh.close()
    await expect(fresh.list('p', 0, 1)).rejects.toMatchObject({ name: 'StoreNotMigratedError' })
  })

  it('search folds diacritics both ways, as on SQLite', async () => {
    const store = await openStore()
    const principal = `p-${crypto.randomUUID()}`
    await store.create(principal, { title: 'Café crème', body: '', tags: [] }, T0)
    await store.create(principal, { title: 'naive', body: '', tags: [] }, T0)
    const search = async (text: string) =>
      (await store.search(principal, { text, offset: 0, limit: 10 })).items.map((n) => n.title)
    expect(await search('cafe creme')).toEqual(['Café crème'])
    expect(await search('naïve')).toEqual(['naive'])
  })

  it('keeps the full-text index consistent with the notes table', async () => {
    const store = await openStore()
    const principal = `p-${crypto.randomUUID()}`
    const created: string[] = []
    for (let i = 0; i < 12; i++) {
      const note = await store.create(principal, { title: `n${i}`, body: `b${i}`, tags: [] }, T0)
      created.push(note.id)
      if (i % 2 === 0) await store.update(principal, note.id, 1, { body: `changed ${i}` }, T0 + i)
      if (i % 3 === 0) await store.delete(principal, note.id, `key-${crypto.randomUUID()}`)
    }
    const imported = Array.from({ length: 6 }, (_, i) => ({
      id: noteId(),
      title: `i${i}`,
      body: `imported ${i}`,
      tags: [],
    }))
    await store.importNotes(principal, imported, T0)
    await store.importNotes(principal, imported, T0 + 1)
    await store.update(principal, imported[0]!.id, 1, { body: 'changed 0' }, T0 + 2)
    await store.delete(principal, imported[1]!.id, `key-${crypto.randomUUID()}`)
    const many = [imported[5]!.id, created[11]!, imported[1]!.id]
    expect(await store.deleteMany(principal, many, `key-${crypto.randomUUID()}`)).toEqual({
      kind: 'done',
      value: many.slice(0, 2),
    })
    // FTS5 fails this command (SQLITE_CORRUPT_VTAB) when the index and the table disagree.
    const check = await env.DB.prepare(
      `INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')`
    ).run()
    expect(check).toMatchObject({ success: true })
    const found = async (text: string) =>
      (await store.search(principal, { text, offset: 0, limit: 20 })).items.map((n) => n.title)
    // Survivors are the notes not divisible by 3 but n11; the even ones among them were updated; of
    // the imported ones i1 and i5 were deleted and i0 changed.
    expect((await found('changed')).sort()).toEqual(['i0', 'n10', 'n2', 'n4', 'n8'])
    expect((await found('imported')).sort()).toEqual(['i2', 'i3', 'i4'])
    expect(await found('b1')).toEqual(['n1'])
    expect(await found('b11')).toEqual([])
    expect(await found('b0')).toEqual([])
    expect(await found('b3')).toEqual([])
  })

  it('publishing a share that is not approved throws ShareNotApprovedError', async () => {
    const store = await openStore()
    const created = await store.create('p', { title: 't', body: '', tags: [] }, T0)
    const id = `s-${crypto.randomUUID()}`
    await store.createShareRequest({ id, principal: 'p', noteId: created.id, expiresAt: T0 })
    const attempt = store.publishShare('p', id, `l-${crypto.randomUUID()}`, 'k')
    await expect(attempt).rejects.toBeInstanceOf(ShareNotApprovedError)
  })

  it('rejects a binding that is not a D1 database', () => {
    expect(() => new D1NotesStore({ db: {} as never })).toThrow(TypeError)
    expect(() => new D1EngineStore({ db: {} as never })).toThrow(TypeError)
  })
})

// Last: the same database emptied, as one no notes Worker ever migrated.
describe('a D1 database without the notes Worker’s migrations', () => {
  beforeAll(async () => {
    // Newest first: a table goes before those its rows refer to.
    const { results } = await env.DB.prepare(
      `SELECT name FROM sqlite_master WHERE type = 'table'
        AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'notes_fts_%'
        ORDER BY rowid DESC`
    ).all<{ name: string }>()
    for (const { name } of results) await env.DB.prepare(`DROP TABLE IF EXISTS "${name}"`).run()
  })

  it('the engine store makes its tables itself, recording each step', async () => {
    const store = await openEngine()
    const { results } = await env.DB.prepare(
      'SELECT version FROM mcp_schema ORDER BY version'
    ).all()
    expect(results).toEqual([3, 4, 5, 6, 7, 8].map((version) => ({ version })))
    await store.close()
  })

  describeEngineStoreContract('D1 (local, inside workerd), tables made by the engine', openEngine)
})
