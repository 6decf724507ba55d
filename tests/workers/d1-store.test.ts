/**
 * The D1 adapter inside workerd, against local D1 with `migrations/` applied: the shared `NotesStore`
 * contract (the same suite the node:sqlite adapter passes, with the failures inside D1 made by
 * triggers, so its batches are seen to be transactions), plus what only this adapter has: the schema
 * check in `migrate()`, its error types, and a full-text index that stays consistent.
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { D1_MIGRATIONS, D1NotesStore, D1SchemaMissingError } from '../../src/storage/d1.ts'
import { ShareNotApprovedError, StoreNotMigratedError } from '../../src/notes/store.ts'
import { describeNotesStoreContract, noteId, sqliteRefusal } from '../support/store-contract.ts'

const T0 = 1_750_000_000_000

async function openStore(): Promise<D1NotesStore> {
  const store = new D1NotesStore({ db: env.DB })
  await store.migrate()
  return store
}

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
    const store = new D1NotesStore({ db: env.DB, migrationsTable: 'no_such_table' })
    const attempt = store.migrate()
    await expect(attempt).rejects.toBeInstanceOf(D1SchemaMissingError)
    await expect(attempt).rejects.toThrow(/wrangler d1 migrations apply DB/)
  })

  it('migrate() lets a failure other than a missing table through', async () => {
    const unreachable = {
      prepare: () => ({
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

  it('note ids are n_ followed by 16 base64url characters', async () => {
    const store = await openStore()
    const created = await store.create('p', { title: 't', body: '', tags: [] }, T0)
    expect(created.id).toMatch(/^n_[A-Za-z0-9_-]{16}$/)
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
  })
})
