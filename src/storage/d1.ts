/**
 * @module storage/d1
 * The Cloudflare D1 `NotesStore` adapter, for the Worker. D1 is SQLite behind an RPC binding, so the
 * schema, FTS5 search, ranking and most statements are those of the node:sqlite adapter, shared with it
 * through `storage/shared.ts` (the schema is the files under `migrations/`, read by both); what differs
 * is how atomicity is reached. D1 has no interactive transactions: a statement is atomic, and `batch()`
 * runs its statements as one transaction that commits or rolls back as a whole, but nothing can be read
 * in between and acted upon. So:
 * - every check-and-set (note version, share status) is one conditional statement whose outcome is
 *   read from `RETURNING`; a follow-up read only explains a miss, it never decides;
 * - a single-use key is spent in a batch that inserts `(once_key, claim)` with a fresh random claim
 *   (`ON CONFLICT DO NOTHING`), and the later statements of the same batch act only where that claim
 *   is found, i.e. only when this call is the one that spent the key. These statements are this
 *   module's own; the others are the shared `SQLITE_SQL`.
 *
 * Migrations belong to wrangler: `wrangler d1 migrations apply DB --local|--remote` applies the files
 * under `migrations/` and records them in `d1_migrations` (the workerd tests apply the same files with
 * the vitest plugin's `applyD1Migrations`). `migrate()` does not change the schema: it checks that every
 * migration this code needs ({@link D1_MIGRATIONS}) is recorded and otherwise throws
 * {@link D1SchemaMissingError} naming the command, so a Worker deployed ahead of its migrations fails
 * loudly instead of half-working. Schema changes are a reviewed deploy step, not something each isolate
 * races to do on a cold start.
 *
 * Leaves to others: validation, limits and wording (the notes application), ids of share requests,
 * links and once-keys (the application), the binding itself (`worker.ts`). Errors shared with the
 * other adapters (`ShareNotApprovedError`, `StoreNotMigratedError`) are defined with the store contract.
 * Runtime-neutral: it talks to a structural {@link D1Like} binding and imports nothing from `node:*` or
 * from workers-types (nor does `storage/shared.ts`).
 */

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
  randomBase64url,
  sqliteRowToNote as toNote,
  toPage,
  toShareRequest,
  undecidedOutcome,
  updateNoteParams,
  type ShareRow,
  type SqliteNoteRow as NoteRow,
} from './shared.ts'

/** Migration files (under `migrations/`) this code needs, in order: the shared SQLite schema's. */
export const D1_MIGRATIONS: readonly string[] = SQLITE_MIGRATIONS
/** The bookkeeping table of `wrangler d1 migrations` (wrangler.toml `migrations_table`). */
export const D1_MIGRATIONS_TABLE = 'd1_migrations'
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

/** Defined with the store contract (every adapter throws them); re-exported for this adapter's users. */
export { MAX_SEARCH_WORDS, ShareNotApprovedError, StoreNotMigratedError }

/** The D1 database lacks a migration this code needs; the message names the command to run. */
export class D1SchemaMissingError extends Error {
  override name = 'D1SchemaMissingError'
}

/** The shared statements, and D1's own: those that spend a single-use key and act on its claim. */
const SQL = {
  ...SQLITE_SQL,
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
      .bind(...insertNoteParams(principal, note, now))
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
      .bind(...updateNoteParams(principal, id, expectedVersion, patch, now))
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
    return toPage(results, offset, limit, toNote)
  }

  async search(principal: string, query: SearchQuery): Promise<Page<Note>> {
    const { statement, params } = searchStatement(principal, query)
    const { results } = await this.#q(SQL[statement])
      .bind(...params)
      .all<NoteRow>()
    return toPage(results, query.offset, query.limit, toNote)
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
    const { results } = await this.#q(SQL.completeTags)
      .bind(principal, likePrefix(prefix), limit)
      .all<{ tag: string }>()
    return results.map((row) => String(row.tag))
  }

  async createShareRequest(
    request: Omit<ShareRequest, 'status' | 'linkId'>
  ): Promise<ShareRequest> {
    await this.#q(SQL.insertShare)
      .bind(request.id, request.principal, request.noteId, request.expiresAt)
      .run()
    return pendingShareRequest(request)
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
    const row = await this.#q(SQL.getShare).bind(id).first<ShareRow>()
    return undecidedOutcome(row?.status)
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
      const share =
        (await this.#db.prepare(SQL.getShare).bind(shareId).first<ShareRow>()) ?? undefined
      assertPublishable(share, principal)
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
    if (this.#state !== 'ready') throw notMigrated(this.#state === 'closed')
  }
}

/** 128 random bits proving which call spent a once-key. */
function newClaim(): string {
  return randomBase64url(16)
}
