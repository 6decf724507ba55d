/**
 * @module storage/shared
 * What the `NotesStore` adapters (`sqlite.ts`, `postgres.ts`, `d1.ts`) have in common, written once so
 * that they cannot drift apart. Runtime-neutral: it is bundled into the Cloudflare Worker with the D1
 * adapter, so it imports nothing from `node:*`, from a driver or from workers-types, only Web
 * standards (random bytes from `mcp/random.ts`, `btoa`) and the store contract.
 *
 * For every adapter: the note-id format and random tokens, tag normalisation, paging checks and page
 * building, which words of a search text reach the query ({@link MAX_SEARCH_WORDS}), the mapping of a
 * share-request row, and the outcomes and errors decided the same way everywhere (`decideShareRequest`'s
 * explanation of a miss, `publishShare`'s refusal, {@link notMigrated}). The error classes themselves
 * live with the contract in `notes/store.ts`, so `instanceof` works whichever adapter threw.
 *
 * For the two SQLite-dialect adapters (node:sqlite and D1, one schema): the list of schema migration
 * files, the FTS5 query built from free text, the note row and its mapping, and the statements both run
 * unchanged. They are written with numbered parameters (`?1`, `?2`…), which D1 and node:sqlite both
 * bind positionally; each statement's comment lists its parameters, and those with many come with the
 * function that lays them out ({@link insertNoteParams}, {@link updateNoteParams},
 * {@link searchStatement}). The statements that differ (spending a single-use key, deleting, publishing
 * a link: node:sqlite decides them inside a transaction, D1 in a batch guarded by a claim) stay in their
 * adapter, as does everything PostgreSQL-specific (its schema is a different dialect and stays in
 * `postgres.ts`).
 *
 * Schema, one source of truth: the SQL files under `migrations/` ({@link SQLITE_MIGRATIONS}). wrangler
 * applies them to D1; the node:sqlite adapter reads the same files and applies them itself. They are
 * not generated from a TypeScript module because wrangler needs the `.sql` files on disk anyway:
 * reading them in the Node-only SQLite adapter needs no generator and no check that the two copies
 * agree. D1's `used_keys.claim` column is therefore in node:sqlite databases too, nullable and unused
 * there; files created before the schema was shared lack it, which the node:sqlite statements never
 * notice (they do not name it).
 */

import { base64url } from 'jose'
import { randomBytes } from '../mcp/random.ts'
import {
  ShareNotApprovedError,
  StoreNotMigratedError,
  type DecideOutcome,
  type NewNote,
  type Note,
  type NotePatch,
  type Page,
  type SearchQuery,
  type ShareRequest,
  type ShareStatus,
} from '../notes/store.ts'

// -------------------------------------------------------------------------------------------------
// Every adapter
// -------------------------------------------------------------------------------------------------

/** Upper bound on the number of distinct words of a search text that reach the query. */
export const MAX_SEARCH_WORDS = 64

/** `n_` + 16 base64url characters (96 random bits): the note ids every adapter mints. */
export function newNoteId(): string {
  return `n_${randomBase64url(12)}`
}

/** `byteCount` random bytes from Web Crypto as unpadded base64url. */
export function randomBase64url(byteCount: number): string {
  return base64url.encode(randomBytes(byteCount))
}

/** Tags as stored: each once, sorted by code unit. */
export function sortedTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort()
}

/** Throws `RangeError` unless `offset` is a non-negative and `limit` a positive integer. */
export function checkPaging(offset: number, limit: number): void {
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError('offset must be a non-negative integer')
  }
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
}

/**
 * One page from rows fetched with `LIMIT limit + 1`: the extra row only tells that another page
 * follows.
 */
export function toPage<Row>(
  rows: readonly Row[],
  offset: number,
  limit: number,
  toNote: (row: Row) => Note
): Page<Note> {
  const items = rows.slice(0, limit).map(toNote)
  return rows.length > limit ? { items, nextOffset: offset + limit } : { items }
}

/** Word tokens: runs of letters, digits and private-use characters (what FTS5's unicode61 indexes). */
const WORD = /[\p{L}\p{N}\p{Co}]+/gu

/** The words of a text, in order (see {@link WORD}). */
export function wordsOf(text: string): string[] {
  return text.match(WORD) ?? []
}

/**
 * The words of a search that reach the query, or `undefined` when there are none. Every word must
 * match and the last one is a prefix, so the last is kept as it is; the earlier ones are made distinct
 * (after `fold`) and only the first {@link MAX_SEARCH_WORDS} − 1 of them are kept, which bounds the cost
 * of a query.
 */
export function searchTerms(
  words: readonly string[],
  fold: (word: string) => string = (word) => word
): { earlier: string[]; last: string } | undefined {
  const last = words.at(-1)
  if (last === undefined) return undefined
  const earlier = [...new Set(words.slice(0, -1).map(fold))].slice(0, MAX_SEARCH_WORDS - 1)
  return { earlier, last }
}

/** A share-request row as every adapter selects it (times as the driver returns them). */
export interface ShareRow {
  id: string
  principal: string
  note_id: string
  status: ShareStatus
  expires_at: number | string
  link_id: string | null
}

/** A stored share request; `text` undoes the adapter's escaping of stored strings, if any. */
export function toShareRequest(
  row: ShareRow,
  text: (stored: string) => string = (stored) => stored
): ShareRequest {
  const request: ShareRequest = {
    id: text(row.id),
    principal: text(row.principal),
    noteId: text(row.note_id),
    status: row.status,
    expiresAt: Number(row.expires_at),
  }
  if (row.link_id !== null) request.linkId = text(row.link_id)
  return request
}

/** What `createShareRequest` answers once the request is stored. */
export function pendingShareRequest(
  request: Omit<ShareRequest, 'status' | 'linkId'>
): ShareRequest {
  return {
    id: request.id,
    principal: request.principal,
    noteId: request.noteId,
    status: 'pending',
    expiresAt: request.expiresAt,
  }
}

/**
 * Why `decideShareRequest`'s conditional update did not apply, from the share's status read after it
 * (`undefined`: no such share). The update was the decision; this only explains a miss.
 */
export function undecidedOutcome(status: ShareStatus | undefined): DecideOutcome {
  if (status === undefined) return 'not_found'
  return status === 'pending' ? 'expired' : 'already_decided'
}

/**
 * Throws {@link ShareNotApprovedError} unless `share` exists, belongs to `principal` and is approved
 * (`publishShare`'s precondition). Compare stored values: an adapter that escapes stored strings passes
 * the escaped principal.
 */
export function assertPublishable<Share extends { principal: string; status: ShareStatus }>(
  share: Share | undefined,
  principal: string
): asserts share is Share {
  if (share === undefined || share.principal !== principal || share.status !== 'approved') {
    throw new ShareNotApprovedError('share request is not an approved share of this principal')
  }
}

/** The error of a store method called before `migrate()` or, when `closed`, after `close()`. */
export function notMigrated(closed: boolean): StoreNotMigratedError {
  return new StoreNotMigratedError(
    closed ? 'the store is closed' : 'call migrate() before using the store'
  )
}

// -------------------------------------------------------------------------------------------------
// The SQLite dialect: node:sqlite and D1
// -------------------------------------------------------------------------------------------------

/**
 * The schema's migration files under `migrations/`, in order; the number before `_` is the step's
 * version. wrangler applies them to D1 (recorded in `d1_migrations`), the node:sqlite adapter reads and
 * applies them (recorded in `schema_migrations`). Never edit a released file; append a new one here.
 */
export const SQLITE_MIGRATIONS: readonly string[] = ['0001_init.sql']

/** A note row as the SQLite-dialect statements select it. */
export interface SqliteNoteRow {
  id: string
  title: string
  body: string
  /** JSON array of strings. */
  tags: string
  created_at: number
  updated_at: number
  version: number
}

export function sqliteRowToNote(row: SqliteNoteRow): Note {
  return {
    id: row.id,
    title: row.title,
    body: row.body,
    tags: JSON.parse(row.tags) as string[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  }
}

/** Tags as stored in the `tags` column: a JSON array, each tag once, sorted. */
export function tagsJson(tags: readonly string[]): string {
  return JSON.stringify(sortedTags(tags))
}

/** A `LIKE … ESCAPE '\'` pattern matching the strings that start with `prefix`, wildcards inert. */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, '\\$&')}%`
}

/**
 * The FTS5 MATCH expression for free text, or `undefined` when the text holds no word. Each word (see
 * {@link wordsOf}) becomes a double-quoted FTS5 string, so no operator, column filter, `*`, `^`,
 * parenthesis or quote of the input takes effect. Words are ANDed; the last one is a prefix query. The
 * earlier words are made distinct case-insensitively (the tokenizer folds case anyway), and at most
 * {@link MAX_SEARCH_WORDS} words are used (see {@link searchTerms}).
 */
export function ftsMatch(text: string): string | undefined {
  const terms = searchTerms(wordsOf(text), (word) => word.toLowerCase())
  if (terms === undefined) return undefined
  const quote = (word: string) => `"${word.replaceAll('"', '""')}"`
  return [...terms.earlier.map(quote), `${quote(terms.last)}*`].join(' ')
}

/** Weights of the FTS columns (title, body, tags) in bm25 ranking: title above tags above body. */
const BM25_WEIGHTS = '4.0, 1.0, 2.0'
const NOTE_COLUMNS = 'n.id, n.title, n.body, n.tags, n.created_at, n.updated_at, n.version'
const RETURNING_NOTE = 'RETURNING id, title, body, tags, created_at, updated_at, version'

/** Keeps only notes carrying every tag of the JSON array `?2` (`?3` distinct tags). */
const TAG_FILTER = `(?3 = 0 OR (
  SELECT count(DISTINCT t.value) FROM json_each(n.tags) AS t
  WHERE t.value IN (SELECT value FROM json_each(?2))
) = ?3)`

/**
 * The statements node:sqlite and D1 run unchanged. Each comment lists the parameters; a statement that
 * decides a check-and-set returns a row only when it applied.
 */
export const SQLITE_SQL = {
  /** ?1 id, ?2 principal, ?3 title, ?4 body, ?5 tags JSON, ?6 now. */
  insertNote: `
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)
    ${RETURNING_NOTE}`,
  /** ?1 principal, ?2 id. */
  getNote: `SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND n.id = ?2`,
  /** ?1 principal, ?2 id, ?3 expected version, ?4 title, ?5 body, ?6 tags JSON (null: keep), ?7 now. */
  updateNote: `
    UPDATE notes SET
      title = coalesce(?4, title),
      body = coalesce(?5, body),
      tags = coalesce(?6, tags),
      updated_at = ?7,
      version = version + 1
    WHERE principal = ?1 AND id = ?2 AND version = ?3
    ${RETURNING_NOTE}`,
  /** ?1 key. */
  keyUsed: `SELECT 1 AS used FROM used_keys WHERE once_key = ?1`,
  /** ?1 principal, ?2 limit, ?3 offset. */
  listNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?2 OFFSET ?3`,
  /** ?1 principal, ?2 tags JSON, ?3 tag count, ?4 limit, ?5 offset. */
  filterNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?4 OFFSET ?5`,
  /** As `filterNotes`, plus ?6 the FTS5 match expression ({@link ftsMatch}). */
  searchNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes_fts JOIN notes AS n ON n.seq = notes_fts.rowid
    WHERE notes_fts MATCH ?6 AND n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY bm25(notes_fts, ${BM25_WEIGHTS}), n.updated_at DESC, n.seq DESC
    LIMIT ?4 OFFSET ?5`,
  /** ?1 principal. */
  listTags: `
    SELECT t.value AS tag, count(*) AS count FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 GROUP BY t.value ORDER BY t.value`,
  /**
   * ?1 principal, ?2 prefix, ?3 limit. Exact, case-sensitive prefix comparison: no wildcard of the
   * prefix can take effect.
   */
  completeIds: `
    SELECT n.id FROM notes AS n
    WHERE n.principal = ?1 AND substr(n.id, 1, length(?2)) = ?2
    ORDER BY n.id LIMIT ?3`,
  /** ?1 principal, ?2 {@link likePrefix} pattern, ?3 limit. */
  completeTags: `
    SELECT DISTINCT t.value AS tag FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 AND t.value LIKE ?2 ESCAPE '\\'
    ORDER BY t.value LIMIT ?3`,
  /** ?1 id, ?2 principal, ?3 note id, ?4 expires at. */
  insertShare: `
    INSERT INTO share_requests (id, principal, note_id, status, expires_at)
    VALUES (?1, ?2, ?3, 'pending', ?4)`,
  /** ?1 id. */
  getShare: `
    SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests WHERE id = ?1`,
  /** ?1 id, ?2 decision, ?3 now. */
  decideShare: `
    UPDATE share_requests SET status = ?2, decided_at = ?3
    WHERE id = ?1 AND status = 'pending' AND expires_at > ?3
    RETURNING id`,
  /** ?1 link id. */
  getSharedNote: `
    SELECT ${NOTE_COLUMNS} FROM shared_links AS l
    JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
    WHERE l.id = ?1`,
} as const

/** A value bound to a SQLite-dialect statement. */
export type SqlValue = string | number | null

/** The parameters of `SQLITE_SQL.insertNote` for a new note (its id minted here). */
export function insertNoteParams(principal: string, note: NewNote, now: number): SqlValue[] {
  return [newNoteId(), principal, note.title, note.body, tagsJson(note.tags), now]
}

/** The parameters of `SQLITE_SQL.updateNote`: absent fields of the patch are kept. */
export function updateNoteParams(
  principal: string,
  id: string,
  expectedVersion: number,
  patch: NotePatch,
  now: number
): SqlValue[] {
  return [
    principal,
    id,
    expectedVersion,
    patch.title ?? null,
    patch.body ?? null,
    patch.tags === undefined ? null : tagsJson(patch.tags),
    now,
  ]
}

/**
 * Which shared statement answers a search, and its parameters: `searchNotes` when the text holds a
 * word, else `filterNotes` (tags only). Throws `RangeError` for invalid paging.
 */
export function searchStatement(
  principal: string,
  query: SearchQuery
): { statement: 'filterNotes' | 'searchNotes'; params: SqlValue[] } {
  checkPaging(query.offset, query.limit)
  const tags = [...new Set(query.tags ?? [])]
  const params = [principal, JSON.stringify(tags), tags.length, query.limit + 1, query.offset]
  const match = ftsMatch(query.text)
  return match === undefined
    ? { statement: 'filterNotes', params }
    : { statement: 'searchNotes', params: [...params, match] }
}
