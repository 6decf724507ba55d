/**
 * @module storage/sqlite/notes
 * The note methods of the SQLite-dialect store ({@link noteMethods}), over node:sqlite and D1 alike:
 * creation under a fresh id, the idempotent import (one batch of conditional inserts, each answering
 * whether it created its note), the optimistic update, the bulk delete behind a single-use key (one
 * batch: spend the key with a fresh claim, then delete only where that claim is found), paging (by
 * offset over recency, or by `seq` in creation order), the lookup by titles, search and completions. Search: free text is reduced to word tokens and each is quoted as an FTS5
 * string ({@link ftsMatch}), so no character of user input reaches the FTS5 query syntax; ranking is
 * bm25 with the title above tags above the body, then the most recently updated first. Also the
 * mapping of a note row ({@link toNote}), which the shares read too.
 */
import { newNoteId } from '../../notes/note-id.ts'
import type { Note } from '../../notes/store.ts'
import * as common from '../common/notes.ts'
import { searchTerms, wordsOf } from '../common/search-words.ts'
import { insertedRow, type PortMethods } from 'stateless-mcp/compose'
import type { SqliteDriver, SqliteRow } from 'stateless-mcp/sqlite'
import { newClaim, SQL } from './statements.ts'

export const noteMethods: PortMethods<common.NoteMethods, SqliteDriver> = common.withDeleteOne({
  async create(principal, note, now) {
    const row = await this.db.get(SQL.insertNote, [
      newNoteId(),
      principal,
      note.title,
      note.body,
      tagsJson(note.tags),
      now,
    ])
    return toNote(insertedRow(row))
  },

  async importNotes(principal, notes, now) {
    const db = this.db
    common.checkImport(notes)
    if (notes.length === 0) return 0
    const results = await db.batch(
      notes.map((note) => ({
        sql: SQL.importNote,
        params: [note.id, principal, note.title, note.body, tagsJson(note.tags), now],
      }))
    )
    return results.filter((rows) => rows.length > 0).length
  },

  async get(principal, id) {
    const row = await this.db.get(SQL.getNote, [principal, id])
    return row === undefined ? undefined : toNote(row)
  },

  async update(principal, id, expectedVersion, patch, now) {
    const row = await this.db.get(SQL.updateNote, [
      principal,
      id,
      expectedVersion,
      patch.title ?? null,
      patch.body ?? null,
      patch.tags === undefined ? null : tagsJson(patch.tags),
      now,
    ])
    if (row !== undefined) return { kind: 'updated', note: toNote(row) }
    return common.updateMissed(await this.get(principal, id))
  },

  async deleteMany(principal, ids, onceKey) {
    const db = this.db
    common.checkDeleteMany(ids)
    const claim = newClaim()
    // Two statements whatever the number of ids (they travel as one JSON array): D1 caps a
    // statement's parameters, not the length of one.
    const [spent, deleted] = await db.batch([
      { sql: SQL.spendKey, params: [onceKey, Date.now(), claim] },
      { sql: SQL.deleteNotes, params: [principal, JSON.stringify(ids), onceKey, claim] },
    ])
    if ((spent?.length ?? 0) === 0) return { kind: 'already_done' }
    const rows = (deleted ?? []).map((row) => String(row.id))
    return { kind: 'done', value: common.deletedInOrder(ids, rows) }
  },

  async list(principal, offset, limit) {
    common.checkPaging(offset, limit)
    const rows = await this.db.all(SQL.listNotes, [principal, limit + 1, offset])
    return common.toPage(rows, offset, limit, toNote)
  },

  async search(principal, query) {
    const { offset, limit } = query
    common.checkPaging(offset, limit)
    const tags = [...new Set(query.tags ?? [])]
    const params = [principal, JSON.stringify(tags), tags.length, limit + 1, offset]
    const match = ftsMatch(query.text)
    const rows =
      match === undefined
        ? await this.db.all(SQL.filterNotes, params)
        : await this.db.all(SQL.searchNotes, [...params, match])
    return common.toPage(rows, offset, limit, toNote)
  },

  async findByTitles(principal, titles) {
    const wanted = common.distinctTitles(titles)
    if (wanted.length === 0) return []
    const rows = await this.db.all(SQL.findByTitles, [principal, JSON.stringify(wanted)])
    return rows.map((row) => ({
      id: String(row.id),
      title: String(row.title),
      version: Number(row.version),
    }))
  },

  async listByCreation(principal, query) {
    const start = common.creationStart(query.after, query.limit)
    const tags = [...new Set(query.tags ?? [])]
    const rows = await this.db.all(SQL.listByCreation, [
      principal,
      JSON.stringify(tags),
      tags.length,
      query.limit + 1,
      start,
    ])
    return common.toCreationPage(rows as Array<SqliteRow & { seq: number }>, query.limit, toNote)
  },

  async listTags(principal) {
    const rows = await this.db.all(SQL.listTags, [principal])
    return rows.map((row) => ({ tag: String(row.tag), count: Number(row.count) }))
  },

  async completeIds(principal, prefix, limit) {
    const db = this.db
    if (limit <= 0) return []
    const rows = await db.all(SQL.completeIds, [principal, prefix, limit])
    return rows.map((row) => String(row.id))
  },

  async completeTags(principal, prefix, limit) {
    const db = this.db
    if (limit <= 0) return []
    const rows = await db.all(SQL.completeTags, [principal, likePrefix(prefix), limit])
    return rows.map((row) => String(row.tag))
  },
})

/** A note of the store from its row, as every note statement selects it (tags as a JSON array). */
export function toNote(row: SqliteRow): Note {
  return common.noteOf(row as common.NoteRow<string>, (tags) => JSON.parse(tags) as string[])
}

/** Tags as stored in the `tags` column: a JSON array, each tag once, sorted. */
function tagsJson(tags: readonly string[]): string {
  return JSON.stringify(common.sortedTags(tags))
}

/** A `LIKE … ESCAPE '\'` pattern matching the strings that start with `prefix`, wildcards inert. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, '\\$&')}%`
}

/**
 * The FTS5 MATCH expression for free text, or `undefined` when the text holds no word. Each word (see
 * `wordsOf`) becomes a double-quoted FTS5 string, so no operator, column filter, `*`, `^`, parenthesis
 * or quote of the input takes effect. Words are ANDed; the last one is a prefix query. The earlier
 * words are made distinct case-insensitively (the tokenizer folds case anyway), and at most
 * `MAX_SEARCH_WORDS` words are used (see `searchTerms`).
 */
function ftsMatch(text: string): string | undefined {
  const terms = searchTerms(wordsOf(text), (word) => word.toLowerCase())
  if (terms === undefined) return undefined
  const quote = (word: string) => `"${word.replaceAll('"', '""')}"`
  return [...terms.earlier.map(quote), `${quote(terms.last)}*`].join(' ')
}
