/**
 * @module storage/sqlite
 * The embedded `NotesStore` adapter on `node:sqlite` (Node 24, no native addon). It applies the SQLite
 * schema's numbered migrations, and owns FTS5 full-text search, the single-use key table that makes
 * deletes and share publications happen at most once, and the optimistic concurrency of updates.
 *
 * Several server processes on one machine may open the same file: the database runs in WAL mode with a
 * busy timeout, every multi-statement write runs in a `BEGIN IMMEDIATE` transaction, and every
 * check-and-set (version, share status, single-use key) is decided inside SQLite, never in memory.
 *
 * Shared with the D1 adapter (`storage/shared.ts`), which runs the same SQLite dialect: the schema, one
 * source of truth — the files under `migrations/` that wrangler applies to D1 are read here and applied
 * in order, each once, inside one transaction with its row in `schema_migrations` (version = the file's
 * number) — and every statement but the four that spend single-use keys and publish links, which here
 * run inside a transaction and on D1 in a claim-guarded batch. (`used_keys.claim` is D1's; this adapter
 * leaves it NULL.) Shared with every adapter: note ids, paging, search words, row mapping, and the
 * errors, which are defined with the store contract (`notes/store.ts`).
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
 * before `migrate()` or after `close()`. SQLite failures propagate as thrown errors.
 */

import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import {
  ShareNotApprovedError,
  StoreNotMigratedError,
  type DecideOutcome,
  type NewNote,
  type Note,
  type NotePatch,
  type NotesStore,
  type OnceOutcome,
  type Page,
  type SearchQuery,
  type ShareRequest,
  type UpdateOutcome,
} from '../notes/store.ts'
import {
  MAX_SEARCH_WORDS,
  SQLITE_MIGRATIONS,
  SQLITE_SQL,
  assertPublishable,
  checkPaging,
  insertNoteParams,
  likePrefix,
  notMigrated,
  pendingShareRequest,
  searchStatement,
  sqliteRowToNote,
  toPage,
  toShareRequest,
  undecidedOutcome,
  updateNoteParams,
  type ShareRow,
  type SqliteNoteRow,
} from './shared.ts'

/** Milliseconds a writer waits for another process's lock before failing with SQLITE_BUSY. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/** Where the schema's migration files ({@link SQLITE_MIGRATIONS}) are: `migrations/` of this project. */
const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url)

export interface SqliteNotesStoreOptions {
  /** File path, or `':memory:'` for a private in-memory database. */
  path: string
  /** Defaults to {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  busyTimeoutMs?: number
}

/** Defined with the store contract (every adapter throws them); re-exported for this adapter's users. */
export { MAX_SEARCH_WORDS, ShareNotApprovedError, StoreNotMigratedError }

/** The shared statements, and this adapter's own: those that spend single-use keys and publish links. */
function prepareStatements(db: DatabaseSync) {
  const p = (sql: string): StatementSync => db.prepare(sql)
  const shared = Object.fromEntries(
    Object.entries(SQLITE_SQL).map(([name, sql]) => [name, p(sql)])
  ) as Record<keyof typeof SQLITE_SQL, StatementSync>
  // Run inside `BEGIN IMMEDIATE` only: the transaction decides, so no claim is needed (unlike on D1).
  return {
    ...shared,
    /** ?1 key, ?2 now. Changes no row when the key was spent before. */
    useKey: p(`INSERT INTO used_keys (once_key, used_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING`),
    /** ?1 principal, ?2 id. */
    deleteNote: p(`DELETE FROM notes WHERE principal = ?1 AND id = ?2`),
    /** ?1 link, ?2 share, ?3 principal, ?4 note id, ?5 now. */
    insertLink: p(`
      INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
      VALUES (?1, ?2, ?3, ?4, ?5)`),
    /** ?1 link, ?2 share. */
    setShareLink: p(`UPDATE share_requests SET link_id = ?1 WHERE id = ?2`),
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

  /** Applies the migration files not yet recorded in `schema_migrations`, in one transaction. */
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
      for (const file of SQLITE_MIGRATIONS) {
        const version = migrationVersion(file)
        if (version <= current) continue
        this.#db.exec(readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8'))
        record.run(version, Date.now())
      }
    })
    this.#statements ??= prepareStatements(this.#db)
  }

  async close(): Promise<void> {
    this.#statements = undefined
    if (this.#db.isOpen) this.#db.close()
  }

  async create(principal: string, note: NewNote, now: number): Promise<Note> {
    const row = this.#s.insertNote.get(...insertNoteParams(principal, note, now))
    if (row === undefined) throw new Error('INSERT … RETURNING produced no row')
    return toNote(row)
  }

  async get(principal: string, id: string): Promise<Note | undefined> {
    const row = this.#s.getNote.get(principal, id)
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
    const row = s.updateNote.get(...updateNoteParams(principal, id, expectedVersion, patch, now))
    if (row !== undefined) return { kind: 'updated', note: toNote(row) }
    const current = s.getNote.get(principal, id)
    return current === undefined
      ? { kind: 'not_found' }
      : { kind: 'conflict', current: toNote(current) }
  }

  async delete(principal: string, id: string, onceKey: string): Promise<OnceOutcome<boolean>> {
    const s = this.#s
    return this.#transaction((): OnceOutcome<boolean> => {
      if (s.useKey.run(onceKey, Date.now()).changes === 0) {
        return { kind: 'already_done' }
      }
      const deleted = s.deleteNote.run(principal, id).changes > 0
      return { kind: 'done', value: deleted }
    })
  }

  async list(principal: string, offset: number, limit: number): Promise<Page<Note>> {
    checkPaging(offset, limit)
    const rows = this.#s.listNotes.all(principal, limit + 1, offset)
    return toPage(rows, offset, limit, toNote)
  }

  async search(principal: string, query: SearchQuery): Promise<Page<Note>> {
    const { statement, params } = searchStatement(principal, query)
    const rows = this.#s[statement].all(...params)
    return toPage(rows, query.offset, query.limit, toNote)
  }

  async listTags(principal: string): Promise<Array<{ tag: string; count: number }>> {
    return this.#s.listTags
      .all(principal)
      .map((row) => ({ tag: String(row.tag), count: Number(row.count) }))
  }

  async completeIds(principal: string, prefix: string, limit: number): Promise<string[]> {
    if (limit <= 0) return []
    return this.#s.completeIds.all(principal, prefix, limit).map((row) => String(row.id))
  }

  async completeTags(principal: string, prefix: string, limit: number): Promise<string[]> {
    if (limit <= 0) return []
    return this.#s.completeTags
      .all(principal, likePrefix(prefix), limit)
      .map((row) => String(row.tag))
  }

  async createShareRequest(
    request: Omit<ShareRequest, 'status' | 'linkId'>
  ): Promise<ShareRequest> {
    this.#s.insertShare.run(request.id, request.principal, request.noteId, request.expiresAt)
    return pendingShareRequest(request)
  }

  async getShareRequest(id: string): Promise<ShareRequest | undefined> {
    const row = this.#s.getShare.get(id) as ShareRow | undefined
    return row === undefined ? undefined : toShareRequest(row)
  }

  async decideShareRequest(
    id: string,
    decision: 'approved' | 'refused',
    now: number
  ): Promise<DecideOutcome> {
    const s = this.#s
    if (s.decideShare.get(id, decision, now) !== undefined) return 'decided'
    const row = s.getShare.get(id) as ShareRow | undefined
    return undecidedOutcome(row?.status)
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
      if (s.keyUsed.get(onceKey) !== undefined) return { kind: 'already_done' }
      const share = s.getShare.get(shareId) as ShareRow | undefined
      assertPublishable(share, principal)
      if (share.link_id !== null) return { kind: 'already_done' }
      const now = Date.now()
      s.useKey.run(onceKey, now)
      s.insertLink.run(linkId, shareId, principal, share.note_id, now)
      s.setShareLink.run(linkId, shareId)
      return { kind: 'done', value: linkId }
    })
  }

  async getSharedNote(linkId: string): Promise<Note | undefined> {
    const row = this.#s.getSharedNote.get(linkId)
    return row === undefined ? undefined : toNote(row)
  }

  get #s(): Statements {
    if (this.#statements === undefined) throw notMigrated(!this.#db.isOpen)
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

/** The version of a migration file: the number its name starts with (`0001_init.sql` is 1). */
function migrationVersion(file: string): number {
  const match = /^(\d+)_/.exec(file)
  if (match === null) throw new Error(`migration file ${file} does not start with its number`)
  return Number(match[1])
}

/** node:sqlite types rows loosely; every note statement selects exactly the note columns. */
function toNote(row: Record<string, unknown>): Note {
  return sqliteRowToNote(row as unknown as SqliteNoteRow)
}
