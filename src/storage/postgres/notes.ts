/**
 * @module storage/postgres/notes
 * The note methods of the PostgreSQL store ({@link noteMethods}): creation under a fresh id with the
 * note's search vectors, the idempotent import (one transaction of conditional inserts), the
 * optimistic update, the bulk delete behind a single-use key (one transaction: spend the key, then
 * delete), paging (by offset over recency, or by `seq` in creation order), the lookup by titles,
 * search (`search.ts` builds the `tsvector` and `tsquery` literals) and completions.
 * Also the mapping of a note row ({@link toNote}), which the shares read too.
 */
import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres'
import { newNoteId } from '../../notes/note-id.ts'
import type { NewNote, Note, OnceOutcome } from '../../notes/store.ts'
import * as common from '../common/notes.ts'
import { insertedRow, type PortMethods } from 'stateless-mcp/compose'
import { RANK_WEIGHTS, tsqueryLiteral, tsvectorLiteral } from './search.ts'
import { decodePgText as dec, encodePgText as enc } from 'stateless-mcp/postgres'

export const noteMethods: PortMethods<common.NoteMethods, Sql> = common.withDeleteOne({
  async create(principal, note, now) {
    const sql = this.db
    const [row] = await sql<Array<common.NoteRow<string[]>>>`
      ${insertNote(sql, newNoteId(), principal, note, now)}
      RETURNING id, title, body, tags, created_at, updated_at, version`
    return toNote(insertedRow(row))
  },

  async importNotes(principal, notes, now) {
    const sql = this.db
    common.checkImport(notes)
    if (notes.length === 0) return 0
    // Pipelined on the transaction's connection. An id another transaction is inserting for this
    // principal makes the insert wait for its commit, then skip; NOT EXISTS skips committed ids of
    // any principal.
    const inserted = await sql.begin((tx) =>
      Promise.all(
        notes.map(
          (note) => tx`
            ${insertNote(tx, note.id, principal, note, now)}
            WHERE NOT EXISTS (SELECT 1 FROM notes WHERE id = ${enc(note.id)})
            ON CONFLICT (principal, id) DO NOTHING
            RETURNING id`
        )
      )
    )
    return inserted.filter((rows) => rows.count > 0).length
  },

  async get(principal, id) {
    return getNote(this.db, principal, id)
  },

  async update(principal, id, expectedVersion, patch, now) {
    const sql = this.db
    // A version that is not an integer matches no stored version; it must not reach the bigint column.
    if (Number.isSafeInteger(expectedVersion)) {
      const tags = patch.tags === undefined ? undefined : common.sortedTags(patch.tags)
      const [row] = await sql<Array<common.NoteRow<string[]>>>`
        UPDATE notes SET
          title = coalesce(${nullable(patch.title, enc)}::text, title),
          title_tsv = coalesce(${nullable(patch.title, (t) => tsvectorLiteral(t, 'A'))}::tsvector,
            title_tsv),
          body = coalesce(${nullable(patch.body, enc)}::text, body),
          body_tsv = coalesce(${nullable(patch.body, (b) => tsvectorLiteral(b, 'D'))}::tsvector,
            body_tsv),
          tags = coalesce(${tags === undefined ? null : tags.map(enc)}::text[], tags),
          tags_tsv = coalesce(
            ${nullable(tags, (t) => tsvectorLiteral(t.join(' '), 'B'))}::tsvector, tags_tsv),
          updated_at = ${now},
          version = version + 1
        WHERE principal = ${enc(principal)} AND id = ${enc(id)} AND version = ${expectedVersion}
        RETURNING id, title, body, tags, created_at, updated_at, version`
      if (row !== undefined) return { kind: 'updated', note: toNote(row) }
    }
    return common.updateMissed(await getNote(sql, principal, id))
  },

  async deleteMany(principal, ids, onceKey) {
    const sql = this.db
    common.checkDeleteMany(ids)
    return sql.begin(async (tx): Promise<OnceOutcome<string[]>> => {
      // A concurrent holder of the same key makes this INSERT wait for its commit (then skip) or its
      // rollback (then spend the key).
      const used = await tx`
        INSERT INTO used_keys (once_key, used_at) VALUES (${enc(onceKey)}, ${Date.now()})
        ON CONFLICT DO NOTHING`
      if (used.count === 0) return { kind: 'already_done' }
      // The search vectors are columns of the row: they go with it.
      const deleted = await tx<Array<{ id: string }>>`
        DELETE FROM notes
        WHERE principal = ${enc(principal)} AND id = ANY(${ids.map(enc)}::text[])
        RETURNING id`
      return {
        kind: 'done',
        value: common.deletedInOrder(
          ids,
          deleted.map((row) => dec(row.id))
        ),
      }
    })
  },

  async list(principal, offset, limit) {
    const sql = this.db
    common.checkPaging(offset, limit)
    const rows = await sql<Array<common.NoteRow<string[]>>>`
      SELECT id, title, body, tags, created_at, updated_at, version FROM notes
      WHERE principal = ${enc(principal)}
      ORDER BY updated_at DESC, seq DESC LIMIT ${limit + 1} OFFSET ${offset}`
    return common.toPage(rows, offset, limit, toNote)
  },

  async search(principal, query) {
    const sql = this.db
    const { offset, limit } = query
    common.checkPaging(offset, limit)
    const tags = [...new Set(query.tags ?? [])].map(enc)
    const match = tsqueryLiteral(query.text)
    if (match === null) return { items: [] }
    const rows =
      match === undefined
        ? await sql<Array<common.NoteRow<string[]>>>`
            SELECT id, title, body, tags, created_at, updated_at, version FROM notes
            WHERE principal = ${enc(principal)} AND tags @> ${tags}::text[]
            ORDER BY updated_at DESC, seq DESC LIMIT ${limit + 1} OFFSET ${offset}`
        : await sql<Array<common.NoteRow<string[]>>>`
            SELECT id, title, body, tags, created_at, updated_at, version FROM notes
            WHERE principal = ${enc(principal)} AND tags @> ${tags}::text[]
              AND search @@ ${match}::tsquery
            ORDER BY ts_rank(${RANK_WEIGHTS}::float4[], search, ${match}::tsquery, 1) DESC,
              updated_at DESC, seq DESC
            LIMIT ${limit + 1} OFFSET ${offset}`
    return common.toPage(rows, offset, limit, toNote)
  },

  async findByTitles(principal, titles) {
    const wanted = common.distinctTitles(titles)
    if (wanted.length === 0) return []
    const rows = await this.db<Array<{ id: string; title: string; version: string }>>`
      SELECT DISTINCT ON (title) id, title, version FROM notes
      WHERE principal = ${enc(principal)} AND title = ANY(${wanted.map(enc)}::text[])
      ORDER BY title, updated_at DESC, seq DESC`
    return rows.map((row) => ({
      id: dec(row.id),
      title: dec(row.title),
      version: Number(row.version),
    }))
  },

  async listByCreation(principal, query) {
    const start = common.creationStart(query.after, query.limit)
    const tags = [...new Set(query.tags ?? [])].map(enc)
    const rows = await this.db<Array<common.NoteRow<string[]> & { seq: string }>>`
      SELECT id, title, body, tags, created_at, updated_at, version, seq FROM notes
      WHERE principal = ${enc(principal)} AND seq > ${start} AND tags @> ${tags}::text[]
      ORDER BY seq LIMIT ${query.limit + 1}`
    return common.toCreationPage(rows, query.limit, toNote)
  },

  async listTags(principal) {
    const rows = await this.db<Array<{ tag: string; count: string }>>`
      SELECT t.tag, count(*) AS count FROM notes AS n, unnest(n.tags) AS t (tag)
      WHERE n.principal = ${enc(principal)}
      GROUP BY t.tag ORDER BY t.tag COLLATE "C"`
    return rows.map((row) => ({ tag: dec(row.tag), count: Number(row.count) }))
  },

  async completeIds(principal, prefix, limit) {
    const sql = this.db
    if (limit <= 0) return []
    // Exact, case-sensitive prefix comparison: no wildcard of the prefix can take effect.
    const rows = await sql<Array<{ id: string }>>`
      SELECT id FROM notes
      WHERE principal = ${enc(principal)} AND id >= ${enc(prefix)}
        AND starts_with(id, ${enc(prefix)})
      ORDER BY id LIMIT ${limit}`
    return rows.map((row) => dec(row.id))
  },

  async completeTags(principal, prefix, limit) {
    const sql = this.db
    if (limit <= 0) return []
    const rows = await sql<Array<{ tag: string }>>`
      SELECT DISTINCT t.tag COLLATE "C" AS tag FROM notes AS n, unnest(n.tags) AS t (tag)
      WHERE n.principal = ${enc(principal)} AND starts_with(t.tag, ${enc(prefix)})
      ORDER BY 1 LIMIT ${limit}`
    return rows.map((row) => dec(row.tag))
  },
})

/** A note of the store from its row (strings unescaped). */
export function toNote(row: common.NoteRow<string[]>): Note {
  return common.noteOf(row, (tags) => tags.map(dec), dec)
}

async function getNote(sql: Sql, principal: string, id: string): Promise<Note | undefined> {
  const [row] = await sql<Array<common.NoteRow<string[]>>>`
    SELECT id, title, body, tags, created_at, updated_at, version FROM notes
    WHERE principal = ${enc(principal)} AND id = ${enc(id)}`
  return row === undefined ? undefined : toNote(row)
}

/**
 * `INSERT INTO notes (…) SELECT …` of a new note (version 1, created and updated at `now`, tags
 * sorted, with its search vectors); the caller appends a condition, a conflict clause, `RETURNING`.
 */
function insertNote(
  sql: Sql | TransactionSql,
  id: string,
  principal: string,
  note: NewNote,
  now: number
): PendingQuery<Row[]> {
  const tags = common.sortedTags(note.tags)
  return sql`
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version,
      title_tsv, tags_tsv, body_tsv)
    SELECT ${enc(id)}::text, ${enc(principal)}::text, ${enc(note.title)}::text,
      ${enc(note.body)}::text, ${tags.map(enc)}::text[], ${now}::bigint, ${now}::bigint,
      1, ${tsvectorLiteral(note.title, 'A')}::tsvector,
      ${tsvectorLiteral(tags.join(' '), 'B')}::tsvector,
      ${tsvectorLiteral(note.body, 'D')}::tsvector`
}

function nullable<T>(value: T | undefined, map: (value: T) => string): string | null {
  return value === undefined ? null : map(value)
}
