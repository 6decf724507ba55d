/**
 * @module storage/sqlite
 * The embedded `NotesStore` adapter on `node:sqlite` (Node 24, no native addon). It owns the SQLite
 * schema and its numbered migrations, FTS5 full-text search, the single-use key table that makes
 * deletes and share publications happen at most once, and the optimistic concurrency of updates.
 *
 * Several server processes on one machine may open the same file: the database runs in WAL mode with a
 * busy timeout, every multi-statement write runs in a `BEGIN IMMEDIATE` transaction, and every
 * check-and-set (version, share status, single-use key) is decided inside SQLite, never in memory.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, tag normalisation,
 * wording of errors, generation of share-request, link and single-use key ids (the notes application),
 * and deciding where the file lives (configuration). It generates note ids itself.
 *
 * Search: the free text is reduced to word tokens (letters, digits) and each token is quoted as an FTS5
 * string, so no character of user input can reach the FTS5 query syntax. Every word must match; the last
 * one matches as a prefix. At most {@link MAX_SEARCH_WORDS} distinct words are used (the first ones and
 * the last), which bounds the cost of a query. Ranking is bm25 with the title weighted above tags above
 * the body, then the most recently updated first.
 *
 * Errors: {@link ShareNotApprovedError} when `publishShare` is asked to publish a share that is missing,
 * belongs to another principal or is not approved; {@link StoreNotMigratedError} when a method runs
 * before `migrate()`. SQLite failures propagate as thrown errors.
 */

import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
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

/** Milliseconds a writer waits for another process's lock before failing with SQLITE_BUSY. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000
/** Upper bound on the number of distinct words of a search text that reach FTS5. */
export const MAX_SEARCH_WORDS = 64

/** Weights of the FTS columns (title, body, tags) in bm25 ranking. */
const BM25_WEIGHTS = '4.0, 1.0, 2.0'

export interface SqliteNotesStoreOptions {
  /** File path, or `':memory:'` for a private in-memory database. */
  path: string
  /** Defaults to {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  busyTimeoutMs?: number
}

/** Defined with the store contract (every adapter throws it); re-exported for this adapter's users. */
export { ShareNotApprovedError }

/** A store method ran before `migrate()` prepared the schema and statements. */
export class StoreNotMigratedError extends Error {
  override name = 'StoreNotMigratedError'
}

/**
 * Numbered migrations, applied in order, each once, inside one transaction with its bookkeeping row.
 * Never edit a released step; append a new one.
 */
const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE notes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        principal TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 1,
        UNIQUE (principal, id)
      );
      CREATE INDEX notes_by_recency ON notes (principal, updated_at DESC, seq DESC);

      CREATE VIRTUAL TABLE notes_fts USING fts5 (
        title, body, tags,
        content = 'notes', content_rowid = 'seq',
        tokenize = 'unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts (rowid, title, body, tags)
          VALUES (new.seq, new.title, new.body, new.tags);
      END;
      CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, body, tags)
          VALUES ('delete', old.seq, old.title, old.body, old.tags);
      END;
      CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, tags ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, body, tags)
          VALUES ('delete', old.seq, old.title, old.body, old.tags);
        INSERT INTO notes_fts (rowid, title, body, tags)
          VALUES (new.seq, new.title, new.body, new.tags);
      END;

      CREATE TABLE used_keys (
        once_key TEXT PRIMARY KEY,
        used_at INTEGER NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE share_requests (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        note_id TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending'
          CHECK (status IN ('pending', 'approved', 'refused')),
        expires_at INTEGER NOT NULL,
        decided_at INTEGER,
        link_id TEXT
      ) WITHOUT ROWID;

      CREATE TABLE shared_links (
        id TEXT PRIMARY KEY,
        share_id TEXT NOT NULL UNIQUE REFERENCES share_requests (id),
        principal TEXT NOT NULL,
        note_id TEXT NOT NULL,
        created_at INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
]

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

/** Keeps only notes carrying every tag of the JSON array `:tags` (`:tag_count` distinct tags). */
const TAG_FILTER = `(:tag_count = 0 OR (
  SELECT count(DISTINCT t.value) FROM json_each(n.tags) AS t
  WHERE t.value IN (SELECT value FROM json_each(:tags))
) = :tag_count)`

function prepareStatements(db: DatabaseSync) {
  const p = (sql: string): StatementSync => db.prepare(sql)
  return {
    insertNote: p(`
      INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
      VALUES (:id, :principal, :title, :body, :tags, :now, :now, 1)
      ${RETURNING_NOTE}`),
    getNote: p(
      `SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = :principal AND n.id = :id`
    ),
    updateNote: p(`
      UPDATE notes SET
        title = coalesce(:title, title),
        body = coalesce(:body, body),
        tags = coalesce(:tags, tags),
        updated_at = :now,
        version = version + 1
      WHERE principal = :principal AND id = :id AND version = :version
      ${RETURNING_NOTE}`),
    deleteNote: p(`DELETE FROM notes WHERE principal = :principal AND id = :id`),
    keyUsed: p(`SELECT 1 FROM used_keys WHERE once_key = :key`),
    useKey: p(
      `INSERT INTO used_keys (once_key, used_at) VALUES (:key, :now) ON CONFLICT DO NOTHING`
    ),
    listNotes: p(`
      SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = :principal
      ORDER BY n.updated_at DESC, n.seq DESC LIMIT :limit OFFSET :offset`),
    filterNotes: p(`
      SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = :principal AND ${TAG_FILTER}
      ORDER BY n.updated_at DESC, n.seq DESC LIMIT :limit OFFSET :offset`),
    searchNotes: p(`
      SELECT ${NOTE_COLUMNS} FROM notes_fts JOIN notes AS n ON n.seq = notes_fts.rowid
      WHERE notes_fts MATCH :match AND n.principal = :principal AND ${TAG_FILTER}
      ORDER BY bm25(notes_fts, ${BM25_WEIGHTS}), n.updated_at DESC, n.seq DESC
      LIMIT :limit OFFSET :offset`),
    listTags: p(`
      SELECT t.value AS tag, count(*) AS count FROM notes AS n, json_each(n.tags) AS t
      WHERE n.principal = :principal GROUP BY t.value ORDER BY t.value`),
    // Exact, case-sensitive prefix comparison: no wildcard of the prefix can take effect.
    completeIds: p(`
      SELECT n.id FROM notes AS n
      WHERE n.principal = :principal AND substr(n.id, 1, length(:prefix)) = :prefix
      ORDER BY n.id LIMIT :limit`),
    completeTags: p(`
      SELECT DISTINCT t.value AS tag FROM notes AS n, json_each(n.tags) AS t
      WHERE n.principal = :principal AND t.value LIKE :pattern ESCAPE '\\'
      ORDER BY t.value LIMIT :limit`),
    insertShare: p(`
      INSERT INTO share_requests (id, principal, note_id, status, expires_at)
      VALUES (:id, :principal, :note_id, 'pending', :expires_at)`),
    getShare: p(`
      SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests WHERE id = :id`),
    decideShare: p(`
      UPDATE share_requests SET status = :status, decided_at = :now
      WHERE id = :id AND status = 'pending' AND expires_at > :now`),
    insertLink: p(`
      INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
      VALUES (:id, :share_id, :principal, :note_id, :now)`),
    setShareLink: p(`UPDATE share_requests SET link_id = :link_id WHERE id = :id`),
    getSharedNote: p(`
      SELECT ${NOTE_COLUMNS} FROM shared_links AS l
      JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
      WHERE l.id = :id`),
  }
}

type Statements = ReturnType<typeof prepareStatements>

export class SqliteNotesStore implements NotesStore {
  readonly #db: DatabaseSync
  #statements: Statements | undefined

  constructor(options: SqliteNotesStoreOptions) {
    if (typeof options?.path !== 'string' || options.path === '') {
      throw new TypeError('SqliteNotesStore: options.path must be a file path or ":memory:"')
    }
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw new TypeError('SqliteNotesStore: options.busyTimeoutMs must be a non-negative integer')
    }
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    this.#db = new DatabaseSync(options.path)
    this.#db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
    this.#db.exec('PRAGMA journal_mode = WAL')
    this.#db.exec('PRAGMA synchronous = NORMAL')
    this.#db.exec('PRAGMA foreign_keys = ON')
  }

  async migrate(): Promise<void> {
    await this.#transaction(() => {
      this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        applied_at INTEGER NOT NULL
      )`)
      const row = this.#db.prepare('SELECT max(version) AS v FROM schema_migrations').get()
      const current = Number(row?.v ?? 0)
      const record = this.#db.prepare(
        'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)'
      )
      for (const step of MIGRATIONS) {
        if (step.version <= current) continue
        this.#db.exec(step.sql)
        record.run(step.version, Date.now())
      }
    })
    this.#statements ??= prepareStatements(this.#db)
  }

  async close(): Promise<void> {
    this.#statements = undefined
    if (this.#db.isOpen) this.#db.close()
  }

  async create(principal: string, note: NewNote, now: number): Promise<Note> {
    const row = this.#s.insertNote.get({
      id: newNoteId(),
      principal,
      title: note.title,
      body: note.body,
      tags: tagsJson(note.tags),
      now,
    })
    if (row === undefined) throw new Error('INSERT … RETURNING produced no row')
    return toNote(row)
  }

  async get(principal: string, id: string): Promise<Note | undefined> {
    const row = this.#s.getNote.get({ principal, id })
    return row === undefined ? undefined : toNote(row)
  }

  async update(
    principal: string,
    id: string,
    expectedVersion: number,
    patch: NotePatch,
    now: number
  ): Promise<UpdateOutcome> {
    const s = this.#s
    const row = s.updateNote.get({
      principal,
      id,
      version: expectedVersion,
      title: patch.title ?? null,
      body: patch.body ?? null,
      tags: patch.tags === undefined ? null : tagsJson(patch.tags),
      now,
    })
    if (row !== undefined) return { kind: 'updated', note: toNote(row) }
    const current = s.getNote.get({ principal, id })
    return current === undefined
      ? { kind: 'not_found' }
      : { kind: 'conflict', current: toNote(current) }
  }

  async delete(principal: string, id: string, onceKey: string): Promise<OnceOutcome<boolean>> {
    const s = this.#s
    return this.#transaction((): OnceOutcome<boolean> => {
      if (s.useKey.run({ key: onceKey, now: Date.now() }).changes === 0) {
        return { kind: 'already_done' }
      }
      const deleted = s.deleteNote.run({ principal, id }).changes > 0
      return { kind: 'done', value: deleted }
    })
  }

  async list(principal: string, offset: number, limit: number): Promise<Page<Note>> {
    checkPaging(offset, limit)
    const rows = this.#s.listNotes.all({ principal, offset, limit: limit + 1 })
    return toPage(rows, offset, limit)
  }

  async search(principal: string, query: SearchQuery): Promise<Page<Note>> {
    const { offset, limit } = query
    checkPaging(offset, limit)
    const tags = [...new Set(query.tags ?? [])]
    const params: Record<string, SQLInputValue> = {
      principal,
      tags: JSON.stringify(tags),
      tag_count: tags.length,
      offset,
      limit: limit + 1,
    }
    const match = ftsMatch(query.text)
    const rows =
      match === undefined
        ? this.#s.filterNotes.all(params)
        : this.#s.searchNotes.all({ ...params, match })
    return toPage(rows, offset, limit)
  }

  async listTags(principal: string): Promise<Array<{ tag: string; count: number }>> {
    return this.#s.listTags
      .all({ principal })
      .map((row) => ({ tag: String(row.tag), count: Number(row.count) }))
  }

  async completeIds(principal: string, prefix: string, limit: number): Promise<string[]> {
    if (limit <= 0) return []
    return this.#s.completeIds.all({ principal, prefix, limit }).map((row) => String(row.id))
  }

  async completeTags(principal: string, prefix: string, limit: number): Promise<string[]> {
    if (limit <= 0) return []
    const pattern = `${prefix.replace(/[\\%_]/g, '\\$&')}%`
    return this.#s.completeTags.all({ principal, pattern, limit }).map((row) => String(row.tag))
  }

  async createShareRequest(
    request: Omit<ShareRequest, 'status' | 'linkId'>
  ): Promise<ShareRequest> {
    this.#s.insertShare.run({
      id: request.id,
      principal: request.principal,
      note_id: request.noteId,
      expires_at: request.expiresAt,
    })
    return {
      id: request.id,
      principal: request.principal,
      noteId: request.noteId,
      status: 'pending',
      expiresAt: request.expiresAt,
    }
  }

  async getShareRequest(id: string): Promise<ShareRequest | undefined> {
    const row = this.#s.getShare.get({ id }) as ShareRow | undefined
    return row === undefined ? undefined : toShareRequest(row)
  }

  async decideShareRequest(
    id: string,
    decision: 'approved' | 'refused',
    now: number
  ): Promise<DecideOutcome> {
    const s = this.#s
    if (s.decideShare.run({ id, status: decision, now }).changes > 0) return 'decided'
    // The conditional UPDATE above was the decision; this read only explains why it did not apply.
    const row = s.getShare.get({ id }) as ShareRow | undefined
    if (row === undefined) return 'not_found'
    return row.status === 'pending' ? 'expired' : 'already_decided'
  }

  async publishShare(
    principal: string,
    shareId: string,
    linkId: string,
    onceKey: string
  ): Promise<OnceOutcome<string>> {
    const s = this.#s
    return this.#transaction((): OnceOutcome<string> => {
      // Every check runs under the write lock; the key is recorded only when the link is.
      if (s.keyUsed.get({ key: onceKey }) !== undefined) return { kind: 'already_done' }
      const share = s.getShare.get({ id: shareId }) as ShareRow | undefined
      if (share === undefined || share.principal !== principal || share.status !== 'approved') {
        throw new ShareNotApprovedError('share request is not an approved share of this principal')
      }
      if (share.link_id !== null) return { kind: 'already_done' }
      const now = Date.now()
      s.useKey.run({ key: onceKey, now })
      s.insertLink.run({ id: linkId, share_id: shareId, principal, note_id: share.note_id, now })
      s.setShareLink.run({ id: shareId, link_id: linkId })
      return { kind: 'done', value: linkId }
    })
  }

  async getSharedNote(linkId: string): Promise<Note | undefined> {
    const row = this.#s.getSharedNote.get({ id: linkId })
    return row === undefined ? undefined : toNote(row)
  }

  get #s(): Statements {
    if (this.#statements === undefined) {
      throw new StoreNotMigratedError(
        this.#db.isOpen ? 'call migrate() before using the store' : 'the store is closed'
      )
    }
    return this.#statements
  }

  /** Runs `work` in a `BEGIN IMMEDIATE` transaction (write lock up front, so no upgrade deadlock). */
  async #transaction<T>(work: () => T): Promise<T> {
    this.#db.exec('BEGIN IMMEDIATE')
    try {
      const result = work()
      this.#db.exec('COMMIT')
      return result
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK')
      throw error
    }
  }
}

/** `n_` + 16 base64url characters (96 random bits). */
function newNoteId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12))
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return `n_${btoa(binary).replaceAll('+', '-').replaceAll('/', '_')}`
}

function tagsJson(tags: string[]): string {
  return JSON.stringify([...new Set(tags)].sort())
}

/**
 * The FTS5 MATCH expression for free text, or `undefined` when the text holds no word. Words are runs of
 * letters, digits and private-use characters (what the unicode61 tokenizer indexes); each is emitted as a
 * double-quoted FTS5 string, so operators, column filters, `*`, `^`, parentheses and quotes in the input
 * are inert. Words are ANDed; the last one is a prefix query.
 */
function ftsMatch(text: string): string | undefined {
  const words = text.match(/[\p{L}\p{N}\p{Co}]+/gu)
  if (words === null) return undefined
  const last = words[words.length - 1] as string
  const rest = [...new Set(words.slice(0, -1).map((w) => w.toLowerCase()))]
  const kept = rest.slice(0, MAX_SEARCH_WORDS - 1)
  const quote = (word: string) => `"${word.replaceAll('"', '""')}"`
  return [...kept.map(quote), `${quote(last)}*`].join(' ')
}

function checkPaging(offset: number, limit: number): void {
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError('offset must be a non-negative integer')
  }
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
}

function toPage(rows: Array<Record<string, unknown>>, offset: number, limit: number): Page<Note> {
  const items = rows.slice(0, limit).map(toNote)
  return rows.length > limit ? { items, nextOffset: offset + limit } : { items }
}

function toNote(row: Record<string, unknown>): Note {
  const r = row as unknown as NoteRow
  return {
    id: r.id,
    title: r.title,
    body: r.body,
    tags: JSON.parse(r.tags) as string[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    version: r.version,
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
