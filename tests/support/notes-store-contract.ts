/**
 * @module tests/support/notes-store-contract
 * The contract every `NotesStore` adapter passes (node:sqlite, PostgreSQL, D1): one vitest `describe`
 * block exercising the notes application's store through its interface only: notes and their
 * versions, principal isolation, paging (by recency, and by creation, which writes between pages
 * do not disturb), the lookup by titles, search, tags and completions, the single-use keys of
 * deletes (the all-or-nothing `deleteMany`), share requests and their publication, the idempotent
 * `importNotes`, and the purge of its expired rows. Each test takes a store from `makeStore` (already migrated) and
 * invents its own principals, note contents, share ids and once-keys with random suffixes, so adapters
 * may hand out a fresh database per test or one shared database. The engine's state (sessions,
 * streams, tasks) has its own contract, `store-contract.ts`.
 *
 * A call that fails part-way inside the database is made with a trigger the adapter installs
 * (`refuseInDatabase`; {@link sqliteRefusal} is the SQLite dialect's), which refuses to insert or delete
 * a note of one title: the statement fails on that row after the rows before it were written.
 *
 * It leaves to the adapter tests: engine specifics (journal mode, several connections, error names,
 * tokenizer details such as accent folding) and how the store is created and torn down.
 */

import { describe, expect, it } from 'vitest'
import {
  MAX_DELETE_NOTES,
  MAX_FIND_TITLES,
  MAX_IMPORT_NOTES,
  REPLAY_RETENTION_MS,
  type NewNote,
  type Note,
  type NotesStore,
} from '../../src/notes/store.ts'
import {
  freshStoreEachTest,
  HOUR,
  itRefusesInvalidPurgeLimits,
  T0,
  unique,
  type StoreContractOptions,
} from './store-contract.ts'

export interface NotesStoreContractOptions extends StoreContractOptions {
  /**
   * Makes the database of the store under test refuse, with an error whose message contains
   * {@link REFUSED_IN_DATABASE}, to insert (`INSERT`) or to delete (`DELETE`) a note titled `title`,
   * until the function it answers is called. Absent where nothing but the store can reach the database
   * (a private in-memory SQLite database): the tests of failures inside the database are left out
   * there, for another variant of the same adapter to run.
   */
  refuseInDatabase?: RefuseInDatabase
}

export type RefuseInDatabase = (
  write: 'INSERT' | 'DELETE',
  title: string
) => Promise<() => Promise<void>>

/** What the error of a write refused by `refuseInDatabase` says. */
export const REFUSED_IN_DATABASE = 'refused by the test trigger'

/**
 * The SQLite dialect's statements behind `refuseInDatabase` (node:sqlite and D1): a trigger `name`
 * refusing to `write` a note titled `title`, and its removal. `name` and `title` are the test's own
 * (letters, digits, `_` and `-`), never user input.
 */
export function sqliteRefusal(
  name: string,
  write: 'INSERT' | 'DELETE',
  title: string
): { create: string; drop: string } {
  const row = write === 'INSERT' ? 'new' : 'old'
  return {
    create: `CREATE TRIGGER ${name} BEFORE ${write} ON notes WHEN ${row}.title = '${title}'
      BEGIN SELECT RAISE(ABORT, '${REFUSED_IN_DATABASE}'); END`,
    drop: `DROP TRIGGER ${name}`,
  }
}

/** An id of the form the stores mint (`n_` and 16 base64url characters), for `importNotes`. */
export function noteId(): string {
  const base64 = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(12))))
  return `n_${base64.replaceAll('+', '-').replaceAll('/', '_')}`
}

function note(title: string, body = '', tags: string[] = []): NewNote {
  return { title, body, tags }
}

function titles(notes: Note[]): string[] {
  return notes.map((n) => n.title)
}

/**
 * Issues together, through `a` and `b` (one store twice, or two replicas on one database), two
 * updates of a new note of `principal` with the same expected version: exactly one wins.
 */
export async function expectOneOfTwoUpdatesWins(
  a: NotesStore,
  b: NotesStore,
  principal: string
): Promise<void> {
  const created = await a.create(principal, note('race'), T0)
  const outcomes = await Promise.all([
    a.update(principal, created.id, 1, { title: 'one' }, T0 + 1),
    b.update(principal, created.id, 1, { title: 'two' }, T0 + 1),
  ])
  expect(outcomes.map((o) => o.kind).sort()).toEqual(['conflict', 'updated'])
  expect((await a.get(principal, created.id))?.version).toBe(2)
}

export function describeNotesStoreContract(
  name: string,
  makeStore: () => Promise<NotesStore>,
  options: NotesStoreContractOptions = {}
): void {
  const refuseInDatabase = options.refuseInDatabase

  describe(`NotesStore contract: ${name}`, () => {
    // The principal under test, alice, and bob, a stranger who must never see or touch her notes.
    let store: NotesStore, alice: string, bob: string
    freshStoreEachTest(makeStore, options, (fixture) => ({ store, alice, bob } = fixture))

    /** Creates notes in order, one millisecond apart, so the last one is the most recent. */
    async function seed(principal: string, notes: NewNote[], start = T0): Promise<Note[]> {
      const created: Note[] = []
      for (const [i, n] of notes.entries())
        created.push(await store.create(principal, n, start + i))
      return created
    }

    async function collectPages(
      fetchPage: (offset: number) => Promise<{ items: Note[]; nextOffset?: number }>
    ): Promise<Note[][]> {
      const pages: Note[][] = []
      let offset: number | undefined = 0
      while (offset !== undefined && pages.length < 100) {
        const page: { items: Note[]; nextOffset?: number } = await fetchPage(offset)
        pages.push(page.items)
        offset = page.nextOffset
      }
      return pages
    }

    describe('schema', () => {
      it('migrate is idempotent and keeps existing notes', async () => {
        const created = await store.create(alice, note('kept'), T0)
        await store.migrate()
        await store.migrate()
        expect(await store.get(alice, created.id)).toEqual(created)
      })
    })

    describe('create and get', () => {
      it('create returns the note with a generated id (n_ and 16 base64url characters), version 1 and both timestamps at now', async () => {
        const created = await store.create(alice, note('Title', 'Body', ['a', 'b']), T0)
        expect(created).toEqual({
          id: expect.stringMatching(/^n_[A-Za-z0-9_-]{16}$/),
          title: 'Title',
          body: 'Body',
          tags: ['a', 'b'],
          createdAt: T0,
          updatedAt: T0,
          version: 1,
        })
      })

      it('generated ids are distinct and URL-safe', async () => {
        const ids = new Set<string>()
        for (let i = 0; i < 25; i++) ids.add((await store.create(alice, note(`n${i}`), T0)).id)
        expect(ids.size).toBe(25)
        for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{8,}$/)
      })

      it('get returns exactly what create returned', async () => {
        const created = await store.create(alice, note('t', 'b', ['x']), T0)
        expect(await store.get(alice, created.id)).toEqual(created)
      })

      it('title, body and tags round-trip exactly, including markdown, quotes and unicode', async () => {
        const body =
          '# Heading\n\n- item "quoted" \'single\' `code` \\ back\u0000slash?\n\n日本語 ✓ 🎉 é'
        const tags = ['c++', 'naïve', 'x_y%z']
        const created = await store.create(alice, note('', body, tags), T0)
        expect(await store.get(alice, created.id)).toMatchObject({ title: '', body, tags })
      })

      it('get of an unknown id is undefined', async () => {
        expect(await store.get(alice, 'n_doesnotexist0000')).toBeUndefined()
      })
    })

    describe('principal isolation', () => {
      it('another principal cannot get a note', async () => {
        const created = await store.create(alice, note('secret'), T0)
        expect(await store.get(bob, created.id)).toBeUndefined()
      })

      it('another principal cannot update a note, and the note stays unchanged', async () => {
        const created = await store.create(alice, note('secret'), T0)
        const outcome = await store.update(bob, created.id, 1, { title: 'pwned' }, T0 + 1)
        expect(outcome).toEqual({ kind: 'not_found' })
        expect(await store.get(alice, created.id)).toEqual(created)
      })

      it('another principal cannot delete a note', async () => {
        const created = await store.create(alice, note('secret'), T0)
        const outcome = await store.delete(bob, created.id, unique('key'))
        expect(outcome).toEqual({ kind: 'done', value: false })
        expect(await store.get(alice, created.id)).toEqual(created)
      })

      it("another principal's list, search, tags and completions reveal nothing", async () => {
        const created = await store.create(
          alice,
          note('secret plan', 'hidden body', ['private']),
          T0
        )
        expect(await store.list(bob, 0, 10)).toEqual({ items: [] })
        expect(await store.search(bob, { text: '', offset: 0, limit: 10 })).toEqual({ items: [] })
        expect(await store.search(bob, { text: 'secret', offset: 0, limit: 10 })).toEqual({
          items: [],
        })
        expect(
          await store.search(bob, { text: '', tags: ['private'], offset: 0, limit: 10 })
        ).toEqual({ items: [] })
        expect(await store.listTags(bob)).toEqual([])
        expect(await store.completeIds(bob, '', 10)).toEqual([])
        expect(await store.completeIds(bob, created.id.slice(0, 3), 10)).toEqual([])
        expect(await store.completeTags(bob, '', 10)).toEqual([])
        expect(await store.completeTags(bob, 'pri', 10)).toEqual([])
      })

      it("one principal's notes do not appear among another's", async () => {
        await store.create(alice, note('alice note', 'shared word'), T0)
        const bobs = await store.create(bob, note('bob note', 'shared word'), T0 + 1)
        expect((await store.list(bob, 0, 10)).items).toEqual([bobs])
        expect((await store.search(bob, { text: 'shared', offset: 0, limit: 10 })).items).toEqual([
          bobs,
        ])
      })

      it("another principal cannot publish a principal's approved share", async () => {
        const created = await store.create(alice, note('shared'), T0)
        const shareId = unique('share')
        await store.createShareRequest({
          id: shareId,
          principal: alice,
          noteId: created.id,
          expiresAt: T0 + HOUR,
        })
        expect(await store.decideShareRequest(shareId, 'approved', T0 + 1)).toBe('decided')
        await expect(
          store.publishShare(bob, shareId, unique('link'), unique('key'))
        ).rejects.toThrow()
        expect((await store.getShareRequest(shareId))?.linkId).toBeUndefined()
      })
    })

    describe('update', () => {
      it('update with the current version applies the patch and bumps version and updatedAt', async () => {
        const created = await store.create(alice, note('old', 'old body', ['a']), T0)
        const outcome = await store.update(
          alice,
          created.id,
          1,
          { title: 'new', body: 'new body', tags: ['b', 'c'] },
          T0 + 5
        )
        const expected: Note = {
          ...created,
          title: 'new',
          body: 'new body',
          tags: ['b', 'c'],
          updatedAt: T0 + 5,
          version: 2,
        }
        expect(outcome).toEqual({ kind: 'updated', note: expected })
        expect(await store.get(alice, created.id)).toEqual(expected)
      })

      it('fields absent from the patch stay unchanged', async () => {
        const created = await store.create(alice, note('title', 'body', ['t']), T0)
        const outcome = await store.update(alice, created.id, 1, { body: 'changed' }, T0 + 1)
        expect(outcome).toMatchObject({
          kind: 'updated',
          note: { title: 'title', body: 'changed', tags: ['t'], createdAt: T0, version: 2 },
        })
      })

      it('tags can be replaced with an empty list and a title with an empty string', async () => {
        const created = await store.create(alice, note('title', 'body', ['t']), T0)
        const outcome = await store.update(alice, created.id, 1, { title: '', tags: [] }, T0 + 1)
        expect(outcome).toMatchObject({ kind: 'updated', note: { title: '', tags: [] } })
      })

      it('every successful update adds one to the version', async () => {
        const created = await store.create(alice, note('v'), T0)
        for (let v = 1; v <= 3; v++) {
          const outcome = await store.update(alice, created.id, v, { body: `v${v}` }, T0 + v)
          expect(outcome).toMatchObject({ kind: 'updated', note: { version: v + 1 } })
        }
      })

      it('update with a stale version is a conflict carrying the current note and changes nothing', async () => {
        const created = await store.create(alice, note('first'), T0)
        const second = await store.update(alice, created.id, 1, { title: 'second' }, T0 + 1)
        expect(second.kind).toBe('updated')
        const current = await store.get(alice, created.id)
        const outcome = await store.update(alice, created.id, 1, { title: 'stale' }, T0 + 2)
        expect(outcome).toEqual({ kind: 'conflict', current })
        expect(await store.get(alice, created.id)).toEqual(current)
      })

      it('update with a future version is a conflict too', async () => {
        const created = await store.create(alice, note('first'), T0)
        expect(await store.update(alice, created.id, 7, { title: 'x' }, T0 + 1)).toEqual({
          kind: 'conflict',
          current: created,
        })
      })

      it('update of an unknown id is not_found', async () => {
        expect(await store.update(alice, 'n_doesnotexist0000', 1, { title: 'x' }, T0)).toEqual({
          kind: 'not_found',
        })
      })

      it('of two updates issued together with the same expected version exactly one wins', async () => {
        await expectOneOfTwoUpdatesWins(store, store, alice)
      })

      it('search follows updates: old words stop matching and new words match', async () => {
        const created = await store.create(alice, note('walrus', 'tusks', ['arctic']), T0)
        await store.update(
          alice,
          created.id,
          1,
          { title: 'penguin', body: 'flippers', tags: ['antarctic'] },
          T0 + 1
        )
        for (const text of ['walrus', 'tusks', 'arctic']) {
          expect((await store.search(alice, { text, offset: 0, limit: 10 })).items).toEqual([])
        }
        for (const text of ['penguin', 'flippers', 'antarctic']) {
          expect(titles((await store.search(alice, { text, offset: 0, limit: 10 })).items)).toEqual(
            ['penguin']
          )
        }
      })
    })

    describe('delete', () => {
      it('delete removes the note and answers done with true', async () => {
        const created = await store.create(alice, note('doomed'), T0)
        expect(await store.delete(alice, created.id, unique('key'))).toEqual({
          kind: 'done',
          value: true,
        })
        expect(await store.get(alice, created.id)).toBeUndefined()
      })

      it('a second delete with the same once-key answers already_done and changes nothing', async () => {
        const [first, second] = await seed(alice, [note('first'), note('second')])
        const key = unique('key')
        expect(await store.delete(alice, first!.id, key)).toEqual({ kind: 'done', value: true })
        expect(await store.delete(alice, first!.id, key)).toEqual({ kind: 'already_done' })
        expect(await store.delete(alice, second!.id, key)).toEqual({ kind: 'already_done' })
        expect(await store.get(alice, second!.id)).toEqual(second)
      })

      it('a second delete with a new once-key answers done with false', async () => {
        const created = await store.create(alice, note('doomed'), T0)
        await store.delete(alice, created.id, unique('key'))
        expect(await store.delete(alice, created.id, unique('key'))).toEqual({
          kind: 'done',
          value: false,
        })
      })

      it('a once-key spent on a delete that found nothing stays spent', async () => {
        const created = await store.create(alice, note('survivor'), T0)
        const key = unique('key')
        expect(await store.delete(alice, 'n_doesnotexist0000', key)).toEqual({
          kind: 'done',
          value: false,
        })
        expect(await store.delete(alice, created.id, key)).toEqual({ kind: 'already_done' })
        expect(await store.get(alice, created.id)).toEqual(created)
      })

      it('of two deletes issued together with the same once-key exactly one is done', async () => {
        const created = await store.create(alice, note('race'), T0)
        const key = unique('key')
        const outcomes = await Promise.all([
          store.delete(alice, created.id, key),
          store.delete(alice, created.id, key),
        ])
        expect(outcomes).toContainEqual({ kind: 'done', value: true })
        expect(outcomes).toContainEqual({ kind: 'already_done' })
      })

      it('a deleted note disappears from list, search, tags and completions', async () => {
        const created = await store.create(alice, note('ephemeral', 'gone soon', ['temp']), T0)
        await store.delete(alice, created.id, unique('key'))
        expect(await store.list(alice, 0, 10)).toEqual({ items: [] })
        expect(await store.search(alice, { text: 'ephemeral', offset: 0, limit: 10 })).toEqual({
          items: [],
        })
        expect(await store.listTags(alice)).toEqual([])
        expect(await store.completeIds(alice, created.id, 10)).toEqual([])
        expect(await store.completeTags(alice, 'te', 10)).toEqual([])
      })
    })

    describe('deleteMany', () => {
      const ids = (notes: Note[]) => notes.map((n) => n.id)

      it('deletes every listed note and answers their ids in the order given', async () => {
        const notes = await seed(alice, [note('one'), note('two'), note('three'), note('kept')])
        const listed = [notes[2]!.id, notes[0]!.id, notes[1]!.id]
        expect(await store.deleteMany(alice, listed, unique('key'))).toEqual({
          kind: 'done',
          value: listed,
        })
        expect((await store.list(alice, 0, 10)).items).toEqual([notes[3]])
      })

      it("leaves out of its answer ids already gone, never there or another principal's, whose note stays", async () => {
        const [gone, mine] = await seed(alice, [note('gone'), note('mine')])
        const [bobs] = await seed(bob, [note('bob keeps')])
        await store.delete(alice, gone!.id, unique('key'))
        const listed = [gone!.id, 'n_doesnotexist0000', bobs!.id, mine!.id]
        expect(await store.deleteMany(alice, listed, unique('key'))).toEqual({
          kind: 'done',
          value: [mine!.id],
        })
        expect(await store.get(bob, bobs!.id)).toEqual(bobs)
        expect(await store.get(alice, bobs!.id)).toBeUndefined()
      })

      it('a second call with the same once-key answers already_done and changes nothing, whatever it lists', async () => {
        const [first, second] = await seed(alice, [note('first'), note('second')])
        const key = unique('key')
        expect(await store.deleteMany(alice, [first!.id], key)).toEqual({
          kind: 'done',
          value: [first!.id],
        })
        expect(await store.deleteMany(alice, [first!.id], key)).toEqual({ kind: 'already_done' })
        expect(await store.deleteMany(alice, [second!.id], key)).toEqual({ kind: 'already_done' })
        expect(await store.get(alice, second!.id)).toEqual(second)
      })

      it('shares its once-keys with delete and publishShare', async () => {
        const notes = await seed(alice, [note('a'), note('b'), note('c')])
        const spentByDelete = unique('key')
        await store.delete(alice, notes[0]!.id, spentByDelete)
        expect(await store.deleteMany(alice, ids(notes), spentByDelete)).toEqual({
          kind: 'already_done',
        })
        const spentByMany = unique('key')
        await store.deleteMany(alice, [notes[1]!.id], spentByMany)
        expect(await store.delete(alice, notes[2]!.id, spentByMany)).toEqual({
          kind: 'already_done',
        })
        const share = unique('share')
        await store.createShareRequest({
          id: share,
          principal: alice,
          noteId: notes[2]!.id,
          expiresAt: T0 + HOUR,
        })
        await store.decideShareRequest(share, 'approved', T0)
        expect(await store.publishShare(alice, share, unique('link'), spentByMany)).toEqual({
          kind: 'already_done',
        })
        expect((await store.list(alice, 0, 10)).items).toEqual([notes[2]])
      })

      it('an id listed twice is deleted and answered once', async () => {
        const [once, other] = await seed(alice, [note('once'), note('other')])
        const listed = [once!.id, other!.id, once!.id]
        expect(await store.deleteMany(alice, listed, unique('key'))).toEqual({
          kind: 'done',
          value: [once!.id, other!.id],
        })
      })

      it('an empty list deletes nothing and spends the key', async () => {
        const [kept] = await seed(alice, [note('kept')])
        const key = unique('key')
        expect(await store.deleteMany(alice, [], key)).toEqual({ kind: 'done', value: [] })
        expect(await store.deleteMany(alice, [kept!.id], key)).toEqual({ kind: 'already_done' })
        expect(await store.get(alice, kept!.id)).toEqual(kept)
      })

      it('deleted notes leave list, search, tags and completions; the others are still found', async () => {
        const notes = await seed(alice, [
          note('Walrus', 'arctic whiskers', ['sea', 'north']),
          note('Penguin', 'antarctic flippers', ['sea', 'south']),
          note('Puffin', 'arctic beak', ['sea', 'north']),
        ])
        await store.deleteMany(alice, [notes[0]!.id, notes[2]!.id], unique('key'))
        const search = async (text: string) =>
          titles((await store.search(alice, { text, offset: 0, limit: 10 })).items)
        expect(await search('arctic')).toEqual([])
        expect(await search('whiskers')).toEqual([])
        expect(await search('flippers')).toEqual(['Penguin'])
        expect(await search('sea')).toEqual(['Penguin'])
        expect(await store.listTags(alice)).toEqual([
          { tag: 'sea', count: 1 },
          { tag: 'south', count: 1 },
        ])
        expect(await store.completeTags(alice, 'no', 10)).toEqual([])
        expect(await store.completeIds(alice, 'n_', 10)).toEqual([notes[1]!.id])
      })

      it('accepts MAX_DELETE_NOTES ids in one call and refuses more, deleting and spending nothing', async () => {
        const listed = Array.from({ length: MAX_DELETE_NOTES }, () => noteId())
        for (let start = 0; start < listed.length; start += MAX_IMPORT_NOTES) {
          const chunk = listed.slice(start, start + MAX_IMPORT_NOTES)
          await store.importNotes(
            alice,
            chunk.map((id, i) => ({ id, ...note(`n${start + i}`) })),
            T0
          )
        }
        const key = unique('key')
        const attempt = store.deleteMany(alice, [...listed, noteId()], key)
        await expect(attempt).rejects.toBeInstanceOf(RangeError)
        expect((await store.list(alice, MAX_DELETE_NOTES - 1, 10)).items).toHaveLength(1)
        expect(await store.deleteMany(alice, listed, key)).toEqual({ kind: 'done', value: listed })
        expect(await store.list(alice, 0, 1)).toEqual({ items: [] })
      })

      it('of two calls issued together with the same once-key exactly one deletes, the whole list', async () => {
        const notes = await seed(alice, [note('a'), note('b'), note('c')])
        const key = unique('key')
        const outcomes = await Promise.all([
          store.deleteMany(alice, ids(notes), key),
          store.deleteMany(alice, ids(notes), key),
        ])
        expect(outcomes).toContainEqual({ kind: 'done', value: ids(notes) })
        expect(outcomes).toContainEqual({ kind: 'already_done' })
        expect(await store.list(alice, 0, 10)).toEqual({ items: [] })
      })

      if (refuseInDatabase !== undefined) {
        it('a call the database refuses part-way deletes none of the notes and leaves the key unspent', async () => {
          const boom = unique('boom')
          const notes = await seed(alice, [
            note('first', 'doomed'),
            note(boom, 'doomed'),
            note('third', 'doomed'),
          ])
          const key = unique('key')
          const allow = await refuseInDatabase('DELETE', boom)
          try {
            const attempt = store.deleteMany(alice, ids(notes), key)
            await expect(attempt).rejects.toThrow(REFUSED_IN_DATABASE)
          } finally {
            await allow()
          }
          for (const n of notes) expect(await store.get(alice, n.id)).toEqual(n)
          const found = await store.search(alice, { text: 'doomed', offset: 0, limit: 10 })
          expect(titles(found.items).sort()).toEqual([boom, 'first', 'third'].sort())
          expect(await store.deleteMany(alice, ids(notes), key)).toEqual({
            kind: 'done',
            value: ids(notes),
          })
        })
      }
    })

    describe('list', () => {
      it('list is empty for a principal without notes', async () => {
        expect(await store.list(alice, 0, 10)).toEqual({ items: [] })
      })

      it('list orders notes by updatedAt, most recent first', async () => {
        const [a, b] = await seed(alice, [note('a'), note('b'), note('c')])
        expect(titles((await store.list(alice, 0, 10)).items)).toEqual(['c', 'b', 'a'])
        await store.update(alice, a!.id, 1, { body: 'touched' }, T0 + 100)
        await store.update(alice, b!.id, 1, { body: 'touched' }, T0 + 50)
        expect(titles((await store.list(alice, 0, 10)).items)).toEqual(['a', 'b', 'c'])
      })

      it('list pages with nextOffset and omits it on the last page', async () => {
        await seed(
          alice,
          ['1', '2', '3', '4', '5'].map((t) => note(t))
        )
        expect(await store.list(alice, 0, 2)).toMatchObject({ nextOffset: 2 })
        const pages = await collectPages((offset) => store.list(alice, offset, 2))
        expect(pages.map(titles)).toEqual([['5', '4'], ['3', '2'], ['1']])
        expect(await store.list(alice, 4, 2)).not.toHaveProperty('nextOffset')
      })

      it('a page that ends exactly at the last note has no nextOffset', async () => {
        await seed(
          alice,
          ['1', '2', '3', '4'].map((t) => note(t))
        )
        const second = await store.list(alice, 2, 2)
        expect(titles(second.items)).toEqual(['2', '1'])
        expect(second.nextOffset).toBeUndefined()
        expect(await store.list(alice, 4, 2)).toEqual({ items: [] })
      })
    })

    describe('findByTitles', () => {
      /** Each note found as `title: body`, read back by its id at the version it was found at. */
      const found = async (principal: string, wanted: string[]) => {
        const lines: string[] = []
        for (const { id, title, version } of await store.findByTitles(principal, wanted)) {
          const note = await store.get(principal, id)
          expect(note && { title: note.title, version: note.version }).toEqual({ title, version })
          lines.push(`${title}: ${note!.body}`)
        }
        return lines.sort()
      }

      it('answers, for each title notes carry, the most recently updated of them, once', async () => {
        const [older, , other] = await seed(alice, [
          note('Twice', 'older'),
          note('Twice', 'newer'),
          note('Once', 'only'),
        ])
        expect(await found(alice, ['Twice', 'Once', 'Twice', 'Never'])).toEqual([
          'Once: only',
          'Twice: newer',
        ])
        await store.update(alice, older!.id, 1, { body: 'touched' }, T0 + 100)
        expect(await found(alice, ['Twice'])).toEqual(['Twice: touched'])
        expect(await store.findByTitles(alice, ['Once'])).toEqual([
          { id: other!.id, title: other!.title, version: other!.version },
        ])
      })

      it('matches whole titles exactly: case, spaces, wildcards and quotes count', async () => {
        await seed(alice, [note('Plan'), note("it's 100% _done_"), note('a "quoted" title')])
        expect(await found(alice, ['plan', 'Plan ', 'Pla', '%', 'Pla_'])).toEqual([])
        expect(await found(alice, ["it's 100% _done_", 'a "quoted" title'])).toEqual([
          'a "quoted" title: ',
          "it's 100% _done_: ",
        ])
      })

      it("never answers another principal's notes; no titles answer nothing", async () => {
        await seed(alice, [note('Private')])
        expect(await store.findByTitles(bob, ['Private'])).toEqual([])
        expect(await store.findByTitles(alice, [])).toEqual([])
      })

      it('follows title changes and deletes', async () => {
        const [renamed, deleted] = await seed(alice, [note('Before'), note('Gone')])
        await store.update(alice, renamed!.id, 1, { title: 'After' }, T0 + 10)
        await store.delete(alice, deleted!.id, unique('key'))
        expect(await found(alice, ['Before', 'After', 'Gone'])).toEqual(['After: '])
      })

      it(`accepts MAX_FIND_TITLES titles in one call and refuses more`, async () => {
        await seed(alice, [note('t-0'), note(`t-${MAX_FIND_TITLES - 1}`)])
        const wanted = Array.from({ length: MAX_FIND_TITLES }, (_, i) => `t-${i}`)
        expect(await found(alice, wanted)).toEqual(['t-0: ', `t-${MAX_FIND_TITLES - 1}: `])
        await expect(store.findByTitles(alice, [...wanted, 'one more'])).rejects.toThrow(RangeError)
      })
    })

    describe('listByCreation', () => {
      /** Every page from the first, each one's titles; `between` runs after each page but the last. */
      async function creationPages(
        principal: string,
        limit: number,
        { tags, between }: { tags?: string[]; between?: () => Promise<void> } = {}
      ): Promise<string[][]> {
        const pages: string[][] = []
        let after: string | undefined
        do {
          const page = await store.listByCreation(principal, { tags, after, limit })
          pages.push(titles(page.items))
          after = page.next
          if (after !== undefined) await between?.()
        } while (after !== undefined && pages.length < 100)
        return pages
      }

      it('pages through the notes oldest first, whatever their updates, with next until the last page', async () => {
        const [first] = await seed(
          alice,
          ['1', '2', '3', '4', '5'].map((t) => note(t))
        )
        await store.update(alice, first!.id, 1, { body: 'touched' }, T0 + 100)
        expect(await creationPages(alice, 2)).toEqual([['1', '2'], ['3', '4'], ['5']])
        expect(await creationPages(alice, 5)).toEqual([['1', '2', '3', '4', '5']])
        expect(await store.listByCreation(alice, { limit: 10 })).toEqual({
          items: expect.any(Array),
        })
        expect(await store.listByCreation(bob, { limit: 10 })).toEqual({ items: [] })
      })

      it('keeps only notes carrying every given tag', async () => {
        await seed(alice, [
          note('a', '', ['x']),
          note('b', '', ['x', 'y']),
          note('c', '', ['y']),
          note('d', '', ['x', 'y']),
        ])
        expect(await creationPages(alice, 1, { tags: ['x', 'y'] })).toEqual([['b'], ['d']])
        expect(await creationPages(alice, 10, { tags: ['x'] })).toEqual([['a', 'b', 'd']])
      })

      it('has every note that exists throughout exactly once, whatever is created, updated or deleted between pages', async () => {
        const seeded = await seed(
          alice,
          Array.from({ length: 9 }, (_, i) => note(`kept ${i}`))
        )
        const doomed = await seed(alice, [note('doomed 1'), note('doomed 2')], T0 + 50)
        let step = 0
        const pages = await creationPages(alice, 3, {
          // Each kind of write that moves notes in the recency order `list` pages by.
          between: async () => {
            step++
            const moved = seeded[9 - step]!
            await store.update(alice, moved.id, moved.version, { body: 'moved' }, T0 + 100 + step)
            await store.create(alice, note(`new ${step}`), T0 + 100 + step)
            const gone = doomed[step - 1]
            if (gone) await store.delete(alice, gone.id, unique('key'))
          },
        })
        const listed = pages.flat()
        const kept = listed.filter((title) => title.startsWith('kept '))
        expect(kept).toEqual(seeded.map((n) => n.title))
        expect(new Set(listed).size).toBe(listed.length)
      })

      it('refuses an after no page answered, and a limit that is not a positive integer', async () => {
        for (const after of ['', 'x', '-1', '1.5', '01', '99999999999999999999'])
          await expect(store.listByCreation(alice, { after, limit: 1 })).rejects.toThrow(RangeError)
        for (const limit of [0, -1, 1.5])
          await expect(store.listByCreation(alice, { limit })).rejects.toThrow(RangeError)
      })
    })

    describe('search', () => {
      const search = (principal: string, text: string, tags?: string[], limit = 50) =>
        store
          .search(principal, { text, ...(tags ? { tags } : {}), offset: 0, limit })
          .then((page) => titles(page.items).sort())

      it('every word of the text must match', async () => {
        await seed(alice, [
          note('alpha beta'),
          note('alpha gamma'),
          note('beta', 'delta alpha'),
          note('omega'),
        ])
        expect(await search(alice, 'alpha')).toEqual(['alpha beta', 'alpha gamma', 'beta'])
        expect(await search(alice, 'alpha beta')).toEqual(['alpha beta', 'beta'])
        expect(await search(alice, 'beta alpha gamma')).toEqual([])
      })

      it('the last word matches as a prefix', async () => {
        await seed(alice, [note('weekly meeting'), note('meat loaf'), note('weekly review')])
        expect(await search(alice, 'mee')).toEqual(['weekly meeting'])
        expect(await search(alice, 'weekly me')).toEqual(['weekly meeting'])
        expect(await search(alice, 'weekly')).toEqual(['weekly meeting', 'weekly review'])
      })

      it('matches words in the title, the body and the tags', async () => {
        await seed(alice, [
          note('zebra', 'plain'),
          note('plain', 'the zebra crossing'),
          note('plain too', 'nothing', ['zebra']),
          note('unrelated'),
        ])
        expect(await search(alice, 'zebra')).toEqual(['plain', 'plain too', 'zebra'])
      })

      it('matching ignores case, including non-ASCII letters', async () => {
        await seed(alice, [note('Привет Мир', 'Grüße aus KÖLN'), note('other')])
        expect(await search(alice, 'привет')).toEqual(['Привет Мир'])
        expect(await search(alice, 'мир')).toEqual(['Привет Мир'])
        expect(await search(alice, 'köln')).toEqual(['Привет Мир'])
        expect(await search(alice, 'ПРИВ')).toEqual(['Привет Мир'])
      })

      it('empty text matches every note, most recently updated first', async () => {
        await seed(alice, [note('a'), note('b'), note('c')])
        const page = await store.search(alice, { text: '', offset: 0, limit: 10 })
        expect(titles(page.items)).toEqual(['c', 'b', 'a'])
        expect(page.nextOffset).toBeUndefined()
      })

      it('text of whitespace only behaves like empty text', async () => {
        await seed(alice, [note('a'), note('b')])
        expect(await search(alice, '   \t\n ')).toEqual(['a', 'b'])
      })

      it('a tag filter keeps only notes carrying every given tag', async () => {
        await seed(alice, [
          note('both', 'fruit', ['red', 'sweet']),
          note('red only', 'fruit', ['red']),
          note('sweet only', 'fruit', ['sweet']),
          note('all three', 'vegetable', ['red', 'sour', 'sweet']),
        ])
        expect(await search(alice, '', ['red'])).toEqual(['all three', 'both', 'red only'])
        expect(await search(alice, '', ['red', 'sweet'])).toEqual(['all three', 'both'])
        expect(await search(alice, 'fruit', ['red', 'sweet'])).toEqual(['both'])
        expect(await search(alice, '', ['red', 'missing'])).toEqual([])
        expect(await search(alice, '', [])).toHaveLength(4)
      })

      it('tag filters match whole tags, not prefixes or wildcards', async () => {
        await seed(alice, [
          note('a', '', ['work']),
          note('b', '', ['workshop']),
          note('c', '', ['w%']),
        ])
        expect(await search(alice, '', ['work'])).toEqual(['a'])
        expect(await search(alice, '', ['w%'])).toEqual(['c'])
        expect(await search(alice, '', ['w_rk'])).toEqual([])
      })

      it('a note matching in its title ranks above a newer note mentioning the word once in passing', async () => {
        const filler = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ')
        await seed(alice, [
          note('Kiwi recipes', 'kiwi smoothie, kiwi tart and more kiwi', ['kiwi']),
          note('Shopping', `${filler} kiwi ${filler}`),
        ])
        const page = await store.search(alice, { text: 'kiwi', offset: 0, limit: 10 })
        expect(titles(page.items)).toEqual(['Kiwi recipes', 'Shopping'])
      })

      it('search pages with nextOffset and omits it on the last page', async () => {
        await seed(alice, [
          ...['1', '2', '3', '4', '5'].map((t) => note(`match ${t}`)),
          note('other'),
        ])
        const pages = await collectPages((offset) =>
          store.search(alice, { text: 'match', offset, limit: 2 })
        )
        expect(pages.map((p) => p.length)).toEqual([2, 2, 1])
        const all = pages.flat().map((n) => n.title)
        expect(new Set(all).size).toBe(5)
      })

      it('operator words in the text are ordinary words', async () => {
        await seed(alice, [note('rock and roll'), note('rock or roll'), note('not near')])
        expect(await search(alice, 'rock AND roll')).toEqual(['rock and roll'])
        expect(await search(alice, 'rock OR roll')).toEqual(['rock or roll'])
        expect(await search(alice, 'NOT NEAR')).toEqual(['not near'])
      })

      it('hostile query syntax in the text never throws', async () => {
        await seed(alice, [note('foo bar', 'baz "quoted" (paren) star* col:on', ['t'])])
        const hostile = [
          '"',
          '""',
          '"foo AND (',
          '*',
          '**',
          'foo*',
          '*foo',
          'AND',
          'OR',
          'NOT',
          'AND OR NOT',
          'foo AND',
          'foo OR',
          'NOT foo',
          '(',
          ')',
          '(foo',
          'foo)',
          'NEAR',
          'NEAR/2',
          'NEAR(foo bar)',
          'NEAR(foo bar, 2)',
          'foo NEAR/2 bar',
          'title:foo',
          '{title body}: foo',
          '-title: foo',
          '^foo',
          '+foo',
          '-foo',
          'foo -bar',
          'foo:',
          ':',
          "'",
          "foo' OR '1'='1",
          '; DROP TABLE notes; --',
          '\\',
          '\\"',
          '%',
          '_',
          '%_%',
          '\u0000',
          'foo\u0000bar',
          '\u0301',
          'e\u0301',
          '🎉',
          '🎉 foo',
          '日本語',
          '\uD800',
          '\uFFFF',
          '&|!<>~',
          'foo & bar | baz ! qux',
          'foo:*',
          "foo:* & 'bar'",
          '$1',
          '?',
          ':name',
          '@x',
        ]
        for (const text of hostile) {
          const page = await store.search(alice, { text, offset: 0, limit: 10 })
          expect(Array.isArray(page.items), text).toBe(true)
          const tagged = await store.search(alice, {
            text,
            tags: ['t', text],
            offset: 0,
            limit: 10,
          })
          expect(tagged.items, text).toEqual([])
        }
        expect(await search(alice, '"foo (')).toEqual(['foo bar'])
        expect(await search(alice, '(paren) "quoted" star*')).toEqual(['foo bar'])
        expect(await search(alice, 'title:foo')).toEqual([])
      })

      it('very long search text never throws', async () => {
        await seed(alice, [note('short')])
        const longWord = 'x'.repeat(20_000)
        const manyWords = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ')
        const manyQuotes = '"('.repeat(5000)
        for (const text of [longWord, manyWords, manyQuotes, `${manyWords} short`]) {
          const page = await store.search(alice, { text, offset: 0, limit: 10 })
          expect(Array.isArray(page.items)).toBe(true)
        }
        expect(await search(alice, longWord)).toEqual([])
      })
    })

    describe('listTags', () => {
      it('listTags counts notes per tag, sorted by tag name', async () => {
        await seed(alice, [
          note('1', '', ['work', 'urgent']),
          note('2', '', ['work']),
          note('3', '', ['home', 'work']),
          note('4'),
        ])
        expect(await store.listTags(alice)).toEqual([
          { tag: 'home', count: 1 },
          { tag: 'urgent', count: 1 },
          { tag: 'work', count: 3 },
        ])
      })

      it('listTags follows updates and deletes', async () => {
        const [a, b] = await seed(alice, [note('a', '', ['x', 'y']), note('b', '', ['x'])])
        await store.update(alice, a!.id, 1, { tags: ['y', 'z'] }, T0 + 10)
        await store.delete(alice, b!.id, unique('key'))
        expect(await store.listTags(alice)).toEqual([
          { tag: 'y', count: 1 },
          { tag: 'z', count: 1 },
        ])
      })
    })

    describe('completions', () => {
      it('completeIds returns the ids starting with the prefix, sorted and limited', async () => {
        const created = await seed(
          alice,
          Array.from({ length: 12 }, (_, i) => note(`n${i}`))
        )
        const ids = created.map((n) => n.id).sort()
        expect(await store.completeIds(alice, '', 100)).toEqual(ids)
        expect(await store.completeIds(alice, '', 5)).toEqual(ids.slice(0, 5))
        const target = created[7]!.id
        expect(await store.completeIds(alice, target, 10)).toEqual([target])
        const prefix = target.slice(0, -2)
        expect(await store.completeIds(alice, prefix, 10)).toEqual(
          ids.filter((id) => id.startsWith(prefix))
        )
        expect(await store.completeIds(alice, `${target}x`, 10)).toEqual([])
      })

      it('completeIds treats % and _ in the prefix literally', async () => {
        const created = await seed(
          alice,
          Array.from({ length: 8 }, (_, i) => note(`n${i}`))
        )
        const first = created[0]!.id
        const prefixes = [
          '%',
          '_',
          '%%',
          '__',
          `${first[0]}%`,
          `${first[0]}_`,
          `%${first.slice(1)}`,
        ]
        prefixes.push(`_${first.slice(1)}`, `${first.slice(0, 2)}%`, `${first.slice(0, 3)}_`)
        for (const prefix of prefixes) {
          const expected = created
            .map((n) => n.id)
            .filter((id) => id.startsWith(prefix))
            .sort()
          expect(await store.completeIds(alice, prefix, 100), prefix).toEqual(expected)
        }
      })

      it('completeTags returns distinct tags starting with the prefix, sorted and limited', async () => {
        await seed(alice, [
          note('1', '', ['project-a', 'personal']),
          note('2', '', ['project-b', 'project-a']),
          note('3', '', ['work']),
        ])
        expect(await store.completeTags(alice, 'p', 10)).toEqual([
          'personal',
          'project-a',
          'project-b',
        ])
        expect(await store.completeTags(alice, 'pro', 1)).toEqual(['project-a'])
        expect(await store.completeTags(alice, '', 10)).toEqual([
          'personal',
          'project-a',
          'project-b',
          'work',
        ])
        expect(await store.completeTags(alice, 'x', 10)).toEqual([])
      })

      it('completeTags treats % and _ in the prefix literally', async () => {
        await seed(alice, [note('1', '', ['a_b', 'axb', '100%', '1000', 'back\\slash', 'bz'])])
        expect(await store.completeTags(alice, 'a_', 10)).toEqual(['a_b'])
        expect(await store.completeTags(alice, '100%', 10)).toEqual(['100%'])
        expect(await store.completeTags(alice, '%', 10)).toEqual([])
        expect(await store.completeTags(alice, '_', 10)).toEqual([])
        expect(await store.completeTags(alice, '1_0', 10)).toEqual([])
        expect(await store.completeTags(alice, 'back\\', 10)).toEqual(['back\\slash'])
        expect(await store.completeTags(alice, 'b\\', 10)).toEqual([])
      })
    })

    describe('share requests', () => {
      async function newShare(principal = alice, expiresAt = T0 + HOUR) {
        const target = await store.create(principal, note('to share', 'shared body'), T0)
        const request = await store.createShareRequest({
          id: unique('share'),
          principal,
          noteId: target.id,
          expiresAt,
        })
        return { target, request }
      }

      it('a new share request is pending and has no link', async () => {
        const { target, request } = await newShare()
        const expected = {
          id: request.id,
          principal: alice,
          noteId: target.id,
          status: 'pending',
          expiresAt: T0 + HOUR,
        }
        expect(request).toEqual(expected)
        expect(await store.getShareRequest(request.id)).toEqual(expected)
      })

      it('getShareRequest of an unknown id is undefined', async () => {
        expect(await store.getShareRequest(unique('share'))).toBeUndefined()
      })

      it('a share request is decided once; a later decision answers already_decided and changes nothing', async () => {
        const { request } = await newShare()
        expect(await store.decideShareRequest(request.id, 'approved', T0 + 1)).toBe('decided')
        expect(await store.decideShareRequest(request.id, 'refused', T0 + 2)).toBe(
          'already_decided'
        )
        expect(await store.decideShareRequest(request.id, 'approved', T0 + 3)).toBe(
          'already_decided'
        )
        expect((await store.getShareRequest(request.id))?.status).toBe('approved')
      })

      it('a refusal is recorded and final', async () => {
        const { request } = await newShare()
        expect(await store.decideShareRequest(request.id, 'refused', T0 + 1)).toBe('decided')
        expect(await store.decideShareRequest(request.id, 'approved', T0 + 2)).toBe(
          'already_decided'
        )
        expect((await store.getShareRequest(request.id))?.status).toBe('refused')
      })

      it('a share request past expiresAt cannot be decided and stays pending', async () => {
        const { request } = await newShare()
        expect(await store.decideShareRequest(request.id, 'approved', T0 + HOUR + 1)).toBe(
          'expired'
        )
        expect((await store.getShareRequest(request.id))?.status).toBe('pending')
      })

      it('a decided share request answers already_decided even after expiry', async () => {
        const { request } = await newShare()
        await store.decideShareRequest(request.id, 'approved', T0 + 1)
        expect(await store.decideShareRequest(request.id, 'approved', T0 + 2 * HOUR)).toBe(
          'already_decided'
        )
      })

      it('deciding an unknown share request answers not_found', async () => {
        expect(await store.decideShareRequest(unique('share'), 'approved', T0)).toBe('not_found')
      })

      it('of two decisions issued together exactly one is recorded', async () => {
        const { request } = await newShare()
        const outcomes = await Promise.all([
          store.decideShareRequest(request.id, 'approved', T0 + 1),
          store.decideShareRequest(request.id, 'refused', T0 + 1),
        ])
        expect(outcomes.sort()).toEqual(['already_decided', 'decided'])
      })

      it('publishing an approved share creates a link that resolves to the note', async () => {
        const { target, request } = await newShare()
        await store.decideShareRequest(request.id, 'approved', T0 + 1)
        const linkId = unique('link')
        expect(await store.publishShare(alice, request.id, linkId, unique('key'))).toEqual({
          kind: 'done',
          value: linkId,
        })
        expect(await store.getShareRequest(request.id)).toMatchObject({
          status: 'approved',
          linkId,
        })
        expect(await store.getSharedNote(linkId)).toEqual(target)
      })

      it.each([
        {
          title:
            'a second publishShare with the same once-key answers already_done and creates no link',
          sameKey: true,
        },
        {
          title: 'a share that already has a link answers already_done even with a fresh once-key',
          sameKey: false,
        },
      ])('$title', async ({ sameKey }) => {
        const { request } = await newShare()
        await store.decideShareRequest(request.id, 'approved', T0 + 1)
        const firstKey = unique('key')
        const linkId = unique('link')
        const otherLink = unique('link')
        await store.publishShare(alice, request.id, linkId, firstKey)
        const secondKey = sameKey ? firstKey : unique('key')
        expect(await store.publishShare(alice, request.id, otherLink, secondKey)).toEqual({
          kind: 'already_done',
        })
        expect((await store.getShareRequest(request.id))?.linkId).toBe(linkId)
        expect(await store.getSharedNote(otherLink)).toBeUndefined()
      })

      it('a once-key spent on a delete cannot publish a share', async () => {
        const { request } = await newShare()
        await store.decideShareRequest(request.id, 'approved', T0 + 1)
        const key = unique('key')
        await store.delete(alice, 'n_doesnotexist0000', key)
        expect(await store.publishShare(alice, request.id, unique('link'), key)).toEqual({
          kind: 'already_done',
        })
        expect((await store.getShareRequest(request.id))?.linkId).toBeUndefined()
      })

      it('publishShare refuses pending, refused and unknown shares', async () => {
        const pending = (await newShare()).request
        const refused = (await newShare()).request
        await store.decideShareRequest(refused.id, 'refused', T0 + 1)
        for (const shareId of [pending.id, refused.id, unique('share')]) {
          const linkId = unique('link')
          await expect(store.publishShare(alice, shareId, linkId, unique('key'))).rejects.toThrow()
          expect(await store.getSharedNote(linkId)).toBeUndefined()
        }
        expect((await store.getShareRequest(pending.id))?.linkId).toBeUndefined()
        expect((await store.getShareRequest(refused.id))?.linkId).toBeUndefined()
      })

      it('a refused publication does not spend its once-key', async () => {
        const { request } = await newShare()
        const key = unique('key')
        await expect(store.publishShare(alice, request.id, unique('link'), key)).rejects.toThrow()
        await store.decideShareRequest(request.id, 'approved', T0 + 1)
        const linkId = unique('link')
        expect(await store.publishShare(alice, request.id, linkId, key)).toEqual({
          kind: 'done',
          value: linkId,
        })
      })

      it('a shared link shows the current note and nothing once the note is deleted', async () => {
        const { target, request } = await newShare()
        await store.decideShareRequest(request.id, 'approved', T0 + 1)
        const linkId = unique('link')
        await store.publishShare(alice, request.id, linkId, unique('key'))
        await store.update(alice, target.id, 1, { body: 'edited' }, T0 + 2)
        expect(await store.getSharedNote(linkId)).toMatchObject({ body: 'edited', version: 2 })
        await store.delete(alice, target.id, unique('key'))
        expect(await store.getSharedNote(linkId)).toBeUndefined()
      })

      it('getSharedNote of an unknown link is undefined', async () => {
        expect(await store.getSharedNote(unique('link'))).toBeUndefined()
      })
    })

    describe('importNotes', () => {
      const imported = (title: string, body = '', tags: string[] = []) => ({
        id: noteId(),
        ...note(title, body, tags),
      })

      it('creates every note under its id, at version 1, created and updated at now, and answers how many', async () => {
        const notes = [imported('one', 'first body', ['b', 'a', 'b']), imported('two')]
        expect(await store.importNotes(alice, notes, T0 + 7)).toBe(2)
        expect(await store.get(alice, notes[0]!.id)).toEqual({
          id: notes[0]!.id,
          title: 'one',
          body: 'first body',
          tags: ['a', 'b'],
          createdAt: T0 + 7,
          updatedAt: T0 + 7,
          version: 1,
        })
        expect(await store.get(alice, notes[1]!.id)).toMatchObject({ title: 'two', version: 1 })
      })

      it('a second call with the same ids creates none and changes nothing, whatever it carries', async () => {
        const notes = [imported('one'), imported('two')]
        expect(await store.importNotes(alice, notes, T0)).toBe(2)
        const edited = await store.update(alice, notes[0]!.id, 1, { body: 'edited' }, T0 + 1)
        expect(edited.kind).toBe('updated')
        const before = (await store.list(alice, 0, 10)).items
        const again = notes.map((n) => ({ ...n, title: `${n.title} again`, body: 'replay' }))
        expect(await store.importNotes(alice, again, T0 + 2)).toBe(0)
        expect(await store.importNotes(alice, notes, T0 + 3)).toBe(0)
        expect((await store.list(alice, 0, 10)).items).toEqual(before)
      })

      it('a call with some ids already imported creates only the others', async () => {
        const first = [imported('a'), imported('b')]
        await store.importNotes(alice, first, T0)
        const rerun = [...first, imported('c'), imported('d'), imported('e')]
        expect(await store.importNotes(alice, rerun, T0 + 1)).toBe(3)
        expect(titles((await store.list(alice, 0, 10)).items).sort()).toEqual([
          'a',
          'b',
          'c',
          'd',
          'e',
        ])
      })

      it("an id naming another principal's note is skipped: that note is untouched and stays invisible", async () => {
        const [bobs] = [imported('bob secret', 'bob body', ['mine'])]
        expect(await store.importNotes(bob, [bobs], T0)).toBe(1)
        const bobsNote = await store.get(bob, bobs.id)
        const created = await store.create(bob, note('created by bob'), T0)

        const forged = [
          { ...bobs, title: 'alice overwrite' },
          { ...imported('alice overwrite'), id: created.id },
          imported('alice own'),
        ]
        expect(await store.importNotes(alice, forged, T0 + 1)).toBe(1)
        expect(await store.get(bob, bobs.id)).toEqual(bobsNote)
        expect(await store.get(bob, created.id)).toEqual(created)
        expect(await store.get(alice, bobs.id)).toBeUndefined()
        expect(await store.get(alice, created.id)).toBeUndefined()
        expect(titles((await store.list(alice, 0, 10)).items)).toEqual(['alice own'])
        expect(titles((await store.list(bob, 0, 10)).items).sort()).toEqual([
          'bob secret',
          'created by bob',
        ])
      })

      it('imported notes are searchable, listed, tagged and completed like created ones', async () => {
        const notes = [
          imported('Walrus facts', 'tusks and whiskers', ['arctic']),
          imported('Penguin facts', 'flippers', ['antarctic', 'birds']),
        ]
        await store.importNotes(alice, notes, T0)
        const search = async (text: string, tags?: string[]) =>
          titles(
            (await store.search(alice, { text, ...(tags ? { tags } : {}), offset: 0, limit: 10 }))
              .items
          ).sort()
        expect(await search('whiskers')).toEqual(['Walrus facts'])
        expect(await search('facts')).toEqual(['Penguin facts', 'Walrus facts'])
        expect(await search('flip')).toEqual(['Penguin facts'])
        expect(await search('', ['birds'])).toEqual(['Penguin facts'])
        expect(await store.listTags(alice)).toEqual([
          { tag: 'antarctic', count: 1 },
          { tag: 'arctic', count: 1 },
          { tag: 'birds', count: 1 },
        ])
        expect(await store.completeIds(alice, notes[0]!.id, 10)).toEqual([notes[0]!.id])
        // And they follow updates like any note.
        await store.update(alice, notes[0]!.id, 1, { body: 'blubber' }, T0 + 1)
        expect(await search('whiskers')).toEqual([])
        expect(await search('blubber')).toEqual(['Walrus facts'])
      })

      it('a call that fails part-way creates none of its notes', async () => {
        const notes = [imported('first'), imported('second'), imported('third')]
        const broken = [notes[0]!, notes[1]!, { ...imported('x'), title: null as never }, notes[2]!]
        await expect(store.importNotes(alice, broken, T0)).rejects.toThrow()
        expect(await store.list(alice, 0, 10)).toEqual({ items: [] })
        expect(await store.search(alice, { text: 'first', offset: 0, limit: 10 })).toEqual({
          items: [],
        })
        // Nothing was spent either: the same notes import afterwards.
        expect(await store.importNotes(alice, notes, T0 + 1)).toBe(3)
      })

      if (refuseInDatabase !== undefined) {
        it('a call the database refuses part-way creates none of its notes', async () => {
          const boom = unique('boom')
          const notes = ['first', boom, 'third'].map((title) => imported(title, 'imported'))
          const allow = await refuseInDatabase('INSERT', boom)
          try {
            await expect(store.importNotes(alice, notes, T0)).rejects.toThrow(REFUSED_IN_DATABASE)
          } finally {
            await allow()
          }
          expect(await store.list(alice, 0, 10)).toEqual({ items: [] })
          expect(await store.search(alice, { text: 'imported', offset: 0, limit: 10 })).toEqual({
            items: [],
          })
          expect(await store.importNotes(alice, notes, T0)).toBe(3)
        })
      }

      it("refuses ids not of the store's own form, creating nothing", async () => {
        const good = imported('good')
        const bad = [
          '',
          'n_',
          'n_short',
          `${good.id}A`,
          `x${good.id.slice(1)}`,
          `N${good.id.slice(1)}`,
          `${good.id.slice(0, -1)}+`,
          `${good.id.slice(0, -1)}=`,
          `${good.id.slice(0, -1)}\u0000`,
          ` ${good.id.slice(1)}`,
          42,
          undefined,
        ]
        for (const id of bad) {
          const attempt = store.importNotes(
            alice,
            [good, { ...imported('bad'), id: id as never }],
            T0
          )
          await expect(attempt, String(id)).rejects.toBeInstanceOf(RangeError)
        }
        expect(await store.get(alice, good.id)).toBeUndefined()
      })

      it('accepts MAX_IMPORT_NOTES notes in one call and refuses more, creating nothing', async () => {
        const many = Array.from({ length: MAX_IMPORT_NOTES + 1 }, (_, i) => imported(`n${i}`))
        await expect(store.importNotes(alice, many, T0)).rejects.toBeInstanceOf(RangeError)
        expect(await store.list(alice, 0, 1)).toEqual({ items: [] })
        expect(await store.importNotes(alice, many.slice(0, MAX_IMPORT_NOTES), T0)).toBe(
          MAX_IMPORT_NOTES
        )
        const page = await store.list(alice, MAX_IMPORT_NOTES - 1, 10)
        expect(page.items).toHaveLength(1)
        expect(page.nextOffset).toBeUndefined()
      })

      it('an empty list creates nothing and answers 0', async () => {
        expect(await store.importNotes(alice, [], T0)).toBe(0)
        expect(await store.list(alice, 0, 1)).toEqual({ items: [] })
      })

      it('an id given twice in one call creates one note, from its first occurrence', async () => {
        const once = imported('first occurrence')
        const notes = [once, { ...once, title: 'second occurrence' }, imported('other')]
        expect(await store.importNotes(alice, notes, T0)).toBe(2)
        expect(await store.get(alice, once.id)).toMatchObject({ title: 'first occurrence' })
      })

      it('of two imports of the same notes issued together, each note is created once', async () => {
        const notes = Array.from({ length: 20 }, (_, i) => imported(`race ${i}`))
        const counts = await Promise.all([
          store.importNotes(alice, notes, T0),
          store.importNotes(alice, notes, T0),
        ])
        expect(counts[0] + counts[1]).toBe(notes.length)
        const listed = (await store.list(alice, 0, 50)).items
        expect(listed.map((n) => n.id).sort()).toEqual(notes.map((n) => n.id).sort())
      })
    })

    describe('purge of expired rows', () => {
      /** Purges everything expired at `now`, so a test can count exactly the rows it made. */
      async function drain(now: number): Promise<void> {
        while ((await store.purgeExpired(now, 1000)) > 0);
      }

      async function shareExpiringAt(expiresAt: number) {
        const target = await store.create(alice, note('share me'), T0)
        return store.createShareRequest({
          id: unique('share'),
          principal: alice,
          noteId: target.id,
          expiresAt,
        })
      }

      it('a spent once-key is remembered for the retention period, then purged', async () => {
        const key = unique('key')
        const doomed = await store.create(alice, note('doomed'), T0)
        const spentAt = Date.now()
        await store.delete(alice, doomed.id, key)
        const survivor = await store.create(alice, note('survivor'), T0)

        await store.purgeExpired(spentAt + REPLAY_RETENTION_MS - 60_000, 1000)
        expect(await store.delete(alice, survivor.id, key)).toEqual({ kind: 'already_done' })

        await drain(Date.now() + REPLAY_RETENTION_MS + 1)
        // Forgotten: the same key now spends afresh (no sealed state can carry it any more).
        expect(await store.delete(alice, survivor.id, key)).toEqual({ kind: 'done', value: true })
      })

      it('unpublished share requests go once expired for the retention period; live ones stay', async () => {
        const now = T0 + 10 * HOUR + REPLAY_RETENTION_MS
        await drain(now)
        const expired = await shareExpiringAt(T0 + HOUR)
        const refused = await shareExpiringAt(T0 + HOUR)
        expect(await store.decideShareRequest(refused.id, 'refused', T0 + 1)).toBe('decided')
        const withinRetention = await shareExpiringAt(T0 + 20 * HOUR)
        const live = await shareExpiringAt(now + HOUR)

        expect(await store.purgeExpired(now, 1000)).toBe(2)
        expect(await store.getShareRequest(expired.id)).toBeUndefined()
        expect(await store.getShareRequest(refused.id)).toBeUndefined()
        expect(await store.getShareRequest(withinRetention.id)).toEqual(withinRetention)
        expect(await store.getShareRequest(live.id)).toEqual(live)
      })

      it('a published share and its link are never purged', async () => {
        const now = T0 + 10 * HOUR + REPLAY_RETENTION_MS
        const share = await shareExpiringAt(T0 + HOUR)
        await store.decideShareRequest(share.id, 'approved', T0 + 1)
        const linkId = unique('link')
        await store.publishShare(alice, share.id, linkId, unique('key'))
        await drain(now)
        expect(await store.getShareRequest(share.id)).toEqual({
          ...share,
          status: 'approved',
          linkId,
        })
        expect(await store.getSharedNote(linkId)).toMatchObject({ title: 'share me' })
      })

      it('removes at most limit rows per call and says how many it removed', async () => {
        const now = T0 + 10 * HOUR + REPLAY_RETENTION_MS
        await drain(now)
        const shares = []
        for (let i = 0; i < 5; i++) shares.push(await shareExpiringAt(T0 + HOUR))
        expect(await store.purgeExpired(now, 2)).toBe(2)
        expect(await store.purgeExpired(now, 2)).toBe(2)
        expect(await store.purgeExpired(now, 2)).toBe(1)
        expect(await store.purgeExpired(now, 2)).toBe(0)
        for (const share of shares) expect(await store.getShareRequest(share.id)).toBeUndefined()
      })

      it('spends one budget across tables', async () => {
        await drain(Date.now() + REPLAY_RETENTION_MS + 1)
        await store.delete(alice, 'n_doesnotexist0000', unique('key'))
        await store.delete(alice, 'n_doesnotexist0000', unique('key'))
        await shareExpiringAt(T0 + HOUR)
        await shareExpiringAt(T0 + HOUR)
        const now = Date.now() + REPLAY_RETENTION_MS + 1
        expect(await store.purgeExpired(now, 3)).toBe(3)
        expect(await store.purgeExpired(now, 3)).toBe(1)
      })

      itRefusesInvalidPurgeLimits(() => store)
    })
  })
}
