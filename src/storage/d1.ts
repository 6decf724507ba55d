/**
 * @module storage/d1
 * The Cloudflare D1 `NotesStore` adapter, for the Worker. D1 is SQLite behind an RPC binding, so the
 * schema, FTS5 search and ranking are those of the node:sqlite adapter (`migrations/0001_init.sql`
 * mirrors its first migration); what differs is how atomicity is reached. D1 has no interactive
 * transactions: a statement is atomic, and `batch()` runs its statements as one transaction that
 * commits or rolls back as a whole, but nothing can be read in between and acted upon. So:
 * - every check-and-set (note version, share status) is one conditional statement whose outcome is
 *   read from `RETURNING`; a follow-up read only explains a miss, it never decides;
 * - a single-use key is spent in a batch that inserts `(once_key, claim)` with a fresh random claim
 *   (`ON CONFLICT DO NOTHING`), and the later statements of the same batch act only where that claim
 *   is found, i.e. only when this call is the one that spent the key.
 *
 * Migrations belong to wrangler: `wrangler d1 migrations apply DB --local|--remote` applies the files
 * under `migrations/` and records them in `d1_migrations` (the workerd tests apply the same files with
 * the vitest plugin's `applyD1Migrations`). `migrate()` does not change the schema: it checks that every
 * migration this code needs is recorded and otherwise throws {@link D1SchemaMissingError} naming the
 * command, so a Worker deployed ahead of its migrations fails loudly instead of half-working. Schema
 * changes are a reviewed deploy step, not something each isolate races to do on a cold start.
 *
 * Leaves to others: validation, limits and wording (the notes application), ids of share requests,
 * links and once-keys (the application), the binding itself (`worker.ts`). Runtime-neutral: it talks
 * to a structural {@link D1Like} binding and imports nothing from `node:*` or from workers-types.
 */

import {
  ShareNotApprovedError,
  type DecideOutcome,
  type NewNote,
  type Note,
  type NotePatch,
  type NotesStore,
  type OnceOutcome,
  type Page,
  type SearchQuery,
  type ShareRequest,
  type ShareStatus,
  type UpdateOutcome,
} from '../notes/store.ts'

/** Migration files (under `migrations/`) this code needs, in order. Append when adding a step. */
export const D1_MIGRATIONS: readonly string[] = ['0001_init.sql']
/** The bookkeeping table of `wrangler d1 migrations` (wrangler.toml `migrations_table`). */
export const D1_MIGRATIONS_TABLE = 'd1_migrations'
/** Upper bound on the number of distinct words of a search text that reach FTS5 (as on SQLite). */
export const MAX_SEARCH_WORDS = 64

/** Weights of the FTS columns (title, body, tags) in bm25 ranking. */
const BM25_WEIGHTS = '4.0, 1.0, 2.0'
/** How often `publishShare` re-runs when its explanation contradicts its batch (a racing decision). */
const PUBLISH_ATTEMPTS = 3

/** The statement surface of a D1 binding this adapter uses (a real `D1Database` satisfies it). */
export interface D1PreparedLike {
  bind(...values: unknown[]): D1PreparedLike
  first<T = Record<string, unknown>>(): Promise<T | null>
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>
  run(): Promise<unknown>
}

export interface D1Like {
  prepare(sql: string): D1PreparedLike
  batch<T = Record<string, unknown>>(statements: D1PreparedLike[]): Promise<Array<{ results: T[] }>>
}

export interface D1NotesStoreOptions {
  /** The D1 binding (`env.DB`). */
  db: D1Like
  /** Bookkeeping table name; defaults to {@link D1_MIGRATIONS_TABLE}. */
  migrationsTable?: string
}

/** Defined with the store contract (every adapter throws it); re-exported for this adapter's users. */
export { ShareNotApprovedError }

/** The D1 database lacks a migration this code needs; the message names the command to run. */
export class D1SchemaMissingError extends Error {
  override name = 'D1SchemaMissingError'
}

/** A store method ran before `migrate()` checked the schema, or after `close()`. */
export class StoreNotMigratedError extends Error {
  override name = 'StoreNotMigratedError'
}

interface NoteRow {
  id: string
  title: string
  body: string
  tags: string
  created_at: number
  updated_at: number
  version: number
}

interface ShareRow {
  id: string
  principal: string
  note_id: string
  status: ShareStatus
  expires_at: number
  link_id: string | null
}

const NOTE_COLUMNS = 'n.id, n.title, n.body, n.tags, n.created_at, n.updated_at, n.version'
const RETURNING_NOTE = 'RETURNING id, title, body, tags, created_at, updated_at, version'

/** Keeps only notes carrying every tag of the JSON array `?2` (`?3` distinct tags). */
const TAG_FILTER = `(?3 = 0 OR (
  SELECT count(DISTINCT t.value) FROM json_each(n.tags) AS t
  WHERE t.value IN (SELECT value FROM json_each(?2))
) = ?3)`

/** Parameters: ?1 principal, ?2 tags JSON, ?3 tag count, ?4 limit, ?5 offset (?6 match). */
const SQL = {
  insertNote: `
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)
    ${RETURNING_NOTE}`,
  getNote: `SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND n.id = ?2`,
  updateNote: `
    UPDATE notes SET
      title = coalesce(?4, title),
      body = coalesce(?5, body),
      tags = coalesce(?6, tags),
      updated_at = ?7,
      version = version + 1
    WHERE principal = ?1 AND id = ?2 AND version = ?3
    ${RETURNING_NOTE}`,
  /** ?1 key, ?2 now, ?3 claim. Returns a row only when this statement spent the key. */
  spendKey: `
    INSERT INTO used_keys (once_key, used_at, claim) VALUES (?1, ?2, ?3)
    ON CONFLICT DO NOTHING RETURNING once_key`,
  /** Deletes only when the key ?3 carries this call's claim ?4. */
  deleteNote: `
    DELETE FROM notes
    WHERE principal = ?1 AND id = ?2
      AND EXISTS (SELECT 1 FROM used_keys WHERE once_key = ?3 AND claim = ?4)
    RETURNING id`,
  keyUsed: `SELECT 1 AS used FROM used_keys WHERE once_key = ?1`,
  listNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?2 OFFSET ?3`,
  filterNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?4 OFFSET ?5`,
  searchNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes_fts JOIN notes AS n ON n.seq = notes_fts.rowid
    WHERE notes_fts MATCH ?6 AND n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY bm25(notes_fts, ${BM25_WEIGHTS}), n.updated_at DESC, n.seq DESC
    LIMIT ?4 OFFSET ?5`,
  listTags: `
    SELECT t.value AS tag, count(*) AS count FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 GROUP BY t.value ORDER BY t.value`,
  // Exact, case-sensitive prefix comparison: no wildcard of the prefix can take effect.
  completeIds: `
    SELECT n.id FROM notes AS n
    WHERE n.principal = ?1 AND substr(n.id, 1, length(?2)) = ?2
    ORDER BY n.id LIMIT ?3`,
  completeTags: `
    SELECT DISTINCT t.value AS tag FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 AND t.value LIKE ?2 ESCAPE '\\'
    ORDER BY t.value LIMIT ?3`,
  insertShare: `
    INSERT INTO share_requests (id, principal, note_id, status, expires_at)
    VALUES (?1, ?2, ?3, 'pending', ?4)`,
  getShare: `
    SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests WHERE id = ?1`,
  decideShare: `
    UPDATE share_requests SET status = ?2, decided_at = ?3
    WHERE id = ?1 AND status = 'pending' AND expires_at > ?3
    RETURNING id`,
  /** ?1 key, ?2 now, ?3 claim, ?4 share, ?5 principal: spends the key only for a publishable share. */
  spendKeyForShare: `
    INSERT INTO used_keys (once_key, used_at, claim)
    SELECT ?1, ?2, ?3 WHERE EXISTS (
      SELECT 1 FROM share_requests
      WHERE id = ?4 AND principal = ?5 AND status = 'approved' AND link_id IS NULL
    )
    ON CONFLICT DO NOTHING RETURNING once_key`,
  /** ?1 link, ?2 now, ?3 share, ?4 key, ?5 claim. */
  insertLink: `
    INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
    SELECT ?1, s.id, s.principal, s.note_id, ?2 FROM share_requests AS s
    WHERE s.id = ?3 AND EXISTS (SELECT 1 FROM used_keys WHERE once_key = ?4 AND claim = ?5)`,
  /** ?1 link, ?2 share, ?3 key, ?4 claim. */
  setShareLink: `
    UPDATE share_requests SET link_id = ?1
    WHERE id = ?2 AND EXISTS (SELECT 1 FROM used_keys WHERE once_key = ?3 AND claim = ?4)`,
  getSharedNote: `
    SELECT ${NOTE_COLUMNS} FROM shared_links AS l
    JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
    WHERE l.id = ?1`,
} as const

export class D1NotesStore implements NotesStore {
  readonly #db: D1Like
  readonly #migrationsTable: string
  #state: 'new' | 'ready' | 'closed' = 'new'

  constructor(options: D1NotesStoreOptions) {
    if (typeof options?.db?.prepare !== 'function' || typeof options.db.batch !== 'function') {
      throw new TypeError('D1NotesStore: options.db must be a D1 database binding')
    }
    const table = options.migrationsTable ?? D1_MIGRATIONS_TABLE
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(table)) {
      throw new TypeError('D1NotesStore: options.migrationsTable must be a plain SQL identifier')
    }
    this.#db = options.db
    this.#migrationsTable = table
  }

  /** Checks that every migration in {@link D1_MIGRATIONS} is recorded; changes nothing. */
  async migrate(): Promise<void> {
    let applied: Set<string>
    try {
      const { results } = await this.#db
        .prepare(`SELECT name FROM ${this.#migrationsTable}`)
        .all<{ name: string }>()
      applied = new Set(results.map((row) => row.name))
    } catch (error) {
      // No bookkeeping table: nothing was ever applied. Anything else (D1 unreachable) propagates.
      if (!/no such table/i.test(error instanceof Error ? error.message : String(error)))
        throw error
      applied = new Set()
    }
    const missing = D1_MIGRATIONS.filter((name) => !applied.has(name))
    if (missing.length > 0) {
      throw new D1SchemaMissingError(
        `D1 schema is missing migration ${missing.join(', ')}: run \`wrangler d1 migrations apply DB --local\` (or --remote for the deployed database)`
      )
    }
    if (this.#state === 'new') this.#state = 'ready'
  }

  async close(): Promise<void> {
    this.#state = 'closed'
  }

  async create(principal: string, note: NewNote, now: number): Promise<Note> {
    const row = await this.#q(SQL.insertNote)
      .bind(newNoteId(), principal, note.title, note.body, tagsJson(note.tags), now)
      .first<NoteRow>()
    if (row === null) throw new Error('INSERT … RETURNING produced no row')
    return toNote(row)
  }

  async get(principal: string, id: string): Promise<Note | undefined> {
    const row = await this.#q(SQL.getNote).bind(principal, id).first<NoteRow>()
    return row === null ? undefined : toNote(row)
  }

  async update(
    principal: string,
    id: string,
    expectedVersion: number,
    patch: NotePatch,
    now: number
  ): Promise<UpdateOutcome> {
    const row = await this.#q(SQL.updateNote)
      .bind(
        principal,
        id,
        expectedVersion,
        patch.title ?? null,
        patch.body ?? null,
        patch.tags === undefined ? null : tagsJson(patch.tags),
        now
      )
      .first<NoteRow>()
    if (row !== null) return { kind: 'updated', note: toNote(row) }
    const current = await this.get(principal, id)
    return current === undefined ? { kind: 'not_found' } : { kind: 'conflict', current }
  }

  async delete(principal: string, id: string, onceKey: string): Promise<OnceOutcome<boolean>> {
    this.#ready()
    const claim = newClaim()
    const [spent, deleted] = await this.#db.batch([
      this.#db.prepare(SQL.spendKey).bind(onceKey, Date.now(), claim),
      this.#db.prepare(SQL.deleteNote).bind(principal, id, onceKey, claim),
    ])
    if ((spent?.results.length ?? 0) === 0) return { kind: 'already_done' }
    return { kind: 'done', value: (deleted?.results.length ?? 0) > 0 }
  }

  async list(principal: string, offset: number, limit: number): Promise<Page<Note>> {
    checkPaging(offset, limit)
    const { results } = await this.#q(SQL.listNotes)
      .bind(principal, limit + 1, offset)
      .all<NoteRow>()
    return toPage(results, offset, limit)
  }

  async search(principal: string, query: SearchQuery): Promise<Page<Note>> {
    const { offset, limit } = query
    checkPaging(offset, limit)
    const tags = [...new Set(query.tags ?? [])]
    const params = [principal, JSON.stringify(tags), tags.length, limit + 1, offset]
    const match = ftsMatch(query.text)
    const statement =
      match === undefined
        ? this.#q(SQL.filterNotes).bind(...params)
        : this.#q(SQL.searchNotes).bind(...params, match)
    const { results } = await statement.all<NoteRow>()
    return toPage(results, offset, limit)
  }

  async listTags(principal: string): Promise<Array<{ tag: string; count: number }>> {
    const { results } = await this.#q(SQL.listTags)
      .bind(principal)
      .all<{ tag: string; count: number }>()
    return results.map((row) => ({ tag: String(row.tag), count: Number(row.count) }))
  }

  async completeIds(principal: string, prefix: string, limit: number): Promise<string[]> {
    this.#ready()
    if (limit <= 0) return []
    const { results } = await this.#q(SQL.completeIds)
      .bind(principal, prefix, limit)
      .all<{ id: string }>()
    return results.map((row) => String(row.id))
  }

  async completeTags(principal: string, prefix: string, limit: number): Promise<string[]> {
    this.#ready()
    if (limit <= 0) return []
    const pattern = `${prefix.replace(/[\\%_]/g, '\\$&')}%`
    const { results } = await this.#q(SQL.completeTags)
      .bind(principal, pattern, limit)
      .all<{ tag: string }>()
    return results.map((row) => String(row.tag))
  }

  async createShareRequest(
    request: Omit<ShareRequest, 'status' | 'linkId'>
  ): Promise<ShareRequest> {
    await this.#q(SQL.insertShare)
      .bind(request.id, request.principal, request.noteId, request.expiresAt)
      .run()
    return {
      id: request.id,
      principal: request.principal,
      noteId: request.noteId,
      status: 'pending',
      expiresAt: request.expiresAt,
    }
  }

  async getShareRequest(id: string): Promise<ShareRequest | undefined> {
    const row = await this.#q(SQL.getShare).bind(id).first<ShareRow>()
    return row === null ? undefined : toShareRequest(row)
  }

  async decideShareRequest(
    id: string,
    decision: 'approved' | 'refused',
    now: number
  ): Promise<DecideOutcome> {
    const decided = await this.#q(SQL.decideShare).bind(id, decision, now).first()
    if (decided !== null) return 'decided'
    // The conditional UPDATE above was the decision; this read only explains why it did not apply.
    const row = await this.#q(SQL.getShare).bind(id).first<ShareRow>()
    if (row === null) return 'not_found'
    return row.status === 'pending' ? 'expired' : 'already_decided'
  }

  async publishShare(
    principal: string,
    shareId: string,
    linkId: string,
    onceKey: string
  ): Promise<OnceOutcome<string>> {
    this.#ready()
    for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
      const claim = newClaim()
      const now = Date.now()
      const [spent] = await this.#db.batch([
        this.#db.prepare(SQL.spendKeyForShare).bind(onceKey, now, claim, shareId, principal),
        this.#db.prepare(SQL.insertLink).bind(linkId, now, shareId, onceKey, claim),
        this.#db.prepare(SQL.setShareLink).bind(linkId, shareId, onceKey, claim),
      ])
      if ((spent?.results.length ?? 0) > 0) return { kind: 'done', value: linkId }

      // Nothing was written; explain why, in the order the SQLite adapter checks.
      if ((await this.#db.prepare(SQL.keyUsed).bind(onceKey).first()) !== null) {
        return { kind: 'already_done' }
      }
      const share = await this.#db.prepare(SQL.getShare).bind(shareId).first<ShareRow>()
      if (share === null || share.principal !== principal || share.status !== 'approved') {
        throw new ShareNotApprovedError('share request is not an approved share of this principal')
      }
      if (share.link_id !== null) return { kind: 'already_done' }
      // Publishable now but not when the batch ran (approved in between): run the batch again.
    }
    throw new Error('publishShare: the share kept changing while it was being published')
  }

  async getSharedNote(linkId: string): Promise<Note | undefined> {
    const row = await this.#q(SQL.getSharedNote).bind(linkId).first<NoteRow>()
    return row === null ? undefined : toNote(row)
  }

  /** A prepared statement, once the schema was checked. */
  #q(sql: string): D1PreparedLike {
    this.#ready()
    return this.#db.prepare(sql)
  }

  #ready(): void {
    if (this.#state !== 'ready') {
      throw new StoreNotMigratedError(
        this.#state === 'closed' ? 'the store is closed' : 'call migrate() before using the store'
      )
    }
  }
}

/** `n_` + 16 base64url characters (96 random bits), as on every adapter. */
function newNoteId(): string {
  return `n_${base64url(crypto.getRandomValues(new Uint8Array(12)))}`
}

/** 128 random bits proving which call spent a once-key. */
function newClaim(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)))
}

function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

function tagsJson(tags: string[]): string {
  return JSON.stringify([...new Set(tags)].sort())
}

/**
 * The FTS5 MATCH expression for free text, or `undefined` when the text holds no word. Words are runs of
 * letters, digits and private-use characters (what the unicode61 tokenizer indexes); each becomes a
 * double-quoted FTS5 string, so no operator, column filter, `*`, `^` or quote of the input takes effect.
 * Words are ANDed; the last one is a prefix query. At most {@link MAX_SEARCH_WORDS} distinct words are
 * kept (the first ones and the last), which bounds the cost of a query.
 */
function ftsMatch(text: string): string | undefined {
  const words = text.match(/[\p{L}\p{N}\p{Co}]+/gu)
  if (words === null) return undefined
  const last = words[words.length - 1] as string
  const earlier = [...new Set(words.slice(0, -1).map((word) => word.toLowerCase()))]
  const quote = (word: string) => `"${word.replaceAll('"', '""')}"`
  return [...earlier.slice(0, MAX_SEARCH_WORDS - 1).map(quote), `${quote(last)}*`].join(' ')
}

function checkPaging(offset: number, limit: number): void {
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError('offset must be a non-negative integer')
  }
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
}

function toPage(rows: NoteRow[], offset: number, limit: number): Page<Note> {
  const items = rows.slice(0, limit).map(toNote)
  return rows.length > limit ? { items, nextOffset: offset + limit } : { items }
}

function toNote(row: NoteRow): Note {
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

function toShareRequest(row: ShareRow): ShareRequest {
  const request: ShareRequest = {
    id: row.id,
    principal: row.principal,
    noteId: row.note_id,
    status: row.status,
    expiresAt: row.expires_at,
  }
  if (row.link_id !== null) request.linkId = row.link_id
  return request
}
