/**
 * @module storage/sql-store
 * The one `NotesStore` implementation of the SQLite dialect, shared by the node:sqlite adapter
 * (`sqlite.ts`) and the D1 adapter (`d1.ts`): both are thin {@link SqlDriver}s, which differ only in how
 * a statement reaches the database (a synchronous call in this process, an RPC to D1) and in who owns
 * the schema (node:sqlite applies the migration files itself; on D1 wrangler applies them and the
 * driver only checks). Runtime-neutral: the Worker bundles it, so it imports no `node:*` module and no
 * driver.
 *
 * Schema, one source of truth: the SQL files under `migrations/` (`SQLITE_MIGRATIONS`), which
 * wrangler applies to D1 and the node:sqlite driver reads and applies (files, not a TypeScript module,
 * because wrangler needs them on disk anyway); the statements are `sql-statements.ts`'s. Besides
 * notes and shares the store keeps what 2025-era sessions need (`SessionStore`): live sessions with
 * their principal, creation time and log level (at most the caller's cap per principal: a new one
 * at the cap ends the oldest-created, with their subscriptions), subscriptions (at most
 * `MAX_SUBSCRIPTIONS_PER_SESSION` per session and the caller's cap per principal, each living as
 * long as its session), and input slots; and the records of tasks (`TaskStore`, at most the
 * caller's cap of live ones per principal). Expired rows are purged with `purgeExpired` (spent
 * once-keys and unpublished share requests `REPLAY_RETENTION_MS` after their last use, session rows
 * and tasks at their own expiry).
 *
 * Atomicity is reached the way D1 allows, which is also correct on node:sqlite: D1 has no
 * interactive transaction, only single statements and `batch()` (one transaction, all or nothing,
 * nothing read in between). So every check-and-set (note version, share status, input slot, task
 * version, the live-task cap, the cap on subscriptions) is one conditional statement whose outcome
 * is read from `RETURNING` or its change count, and a follow-up read only explains a miss, never
 * decides. `createSession` at the cap is one batch: end the sessions beyond the newest cap - 1 (their
 * subscriptions, then them), then insert, so no two creations both take the last place.
 * `importNotes` is one batch of conditional inserts, each answering whether it created its note. A
 * single-use key is spent in a batch that inserts `(once_key, claim)` with a fresh random claim
 * (`ON CONFLICT DO NOTHING`); the later statements of the same batch act only where that claim is
 * found, i.e. only when this call spent the key: `deleteMany` is that batch with one
 * `DELETE … RETURNING` of every listed note (`delete` is its one-id case).
 *
 * Search: free text is reduced to word tokens (letters, digits) and each token is quoted as an FTS5
 * string, so no character of user input reaches the FTS5 query syntax. Every word must match, the last
 * as a prefix; at most `MAX_SEARCH_WORDS` distinct words (see `shared.ts`). Ranking is bm25 with
 * the title weighted above tags above the body, then the most recently updated first.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, wording of errors,
 * generation of share-request, link and single-use key ids (the notes application) and of task ids
 * (the engine). It generates note ids itself (imported notes come with theirs). Errors:
 * `ShareNotApprovedError` from `publishShare`, `StoreNotMigratedError` before `migrate()` or after
 * `close()`, `RangeError` for invalid paging, purge or runnable-task limits and refused imports;
 * database failures propagate as the driver throws them.
 */

import type { LogLevel } from '../mcp/protocol.ts'
import { positiveWholeNumber } from '../mcp/options.ts'
import { randomBase64url } from '../mcp/random.ts'
import {
  MAX_SUBSCRIPTIONS_PER_SESSION,
  type SessionRecord,
  type SubscribeOutcome,
} from '../mcp/session-store.ts'
import type { NewTask, TaskPatch, TaskRecord } from '../mcp/task-store.ts'
import {
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
import { newNoteId } from '../notes/note-id.ts'
import {
  assertPublishable,
  capParam,
  checkDeleteMany,
  checkImport,
  checkPaging,
  checkSweep,
  deletedInOrder,
  newTaskValues,
  notMigrated,
  oneDeleted,
  pendingShareRequest,
  purgeWithin,
  sessionRecord,
  subscribeRefusal,
  searchTerms,
  sortedTags,
  taskPatchValues,
  toPage,
  toShareRequest,
  toTaskRecord,
  undecidedOutcome,
  wordsOf,
  type ShareRow,
  type TaskRow,
} from './shared.ts'
import { PURGES, SQL } from './sql-statements.ts'

/** A value bound to, or read from, a SQLite-dialect statement. */
export type SqlValue = string | number | null
export type SqlRow = Record<string, SqlValue>
export interface SqlStatement {
  sql: string
  params: readonly SqlValue[]
}

/** How the store reaches one SQLite-dialect database. */
export interface SqlDriver {
  /** Every row the statement returns (none for a statement without `RETURNING`). */
  all(sql: string, params: readonly SqlValue[]): Promise<SqlRow[]>
  /** The first row the statement returns, if any. */
  get(sql: string, params: readonly SqlValue[]): Promise<SqlRow | undefined>
  /** Runs a write; answers how many rows it changed. */
  run(sql: string, params: readonly SqlValue[]): Promise<number>
  /** Runs the statements in order as one transaction (all apply or none); the rows of each. */
  batch(statements: readonly SqlStatement[]): Promise<SqlRow[][]>
  /** Makes sure the schema of `SQLITE_MIGRATIONS` is in place (applying or checking it). */
  migrate(): Promise<void>
  close(): Promise<void>
}

/** How often `publishShare` re-runs when its explanation contradicts its batch (a racing decision). */
const PUBLISH_ATTEMPTS = 3

export class SqlNotesStore implements NotesStore {
  readonly #driver: SqlDriver
  #state: 'new' | 'ready' | 'closed' = 'new'

  constructor(driver: SqlDriver) {
    this.#driver = driver
  }

  async migrate(): Promise<void> {
    if (this.#state === 'closed') throw notMigrated(true)
    await this.#driver.migrate()
    this.#state = 'ready'
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return
    this.#state = 'closed'
    await this.#driver.close()
  }

  async create(principal: string, note: NewNote, now: number): Promise<Note> {
    const row = await this.#db.get(SQL.insertNote, [
      newNoteId(),
      principal,
      note.title,
      note.body,
      tagsJson(note.tags),
      now,
    ])
    if (row === undefined) throw new Error('INSERT … RETURNING produced no row')
    return toNote(row)
  }

  async importNotes(
    principal: string,
    notes: Array<NewNote & { id: string }>,
    now: number
  ): Promise<number> {
    const db = this.#db
    checkImport(notes)
    if (notes.length === 0) return 0
    const results = await db.batch(
      notes.map((note) => ({
        sql: SQL.importNote,
        params: [note.id, principal, note.title, note.body, tagsJson(note.tags), now],
      }))
    )
    return results.filter((rows) => rows.length > 0).length
  }

  async get(principal: string, id: string): Promise<Note | undefined> {
    const row = await this.#db.get(SQL.getNote, [principal, id])
    return row === undefined ? undefined : toNote(row)
  }

  async update(
    principal: string,
    id: string,
    expectedVersion: number,
    patch: NotePatch,
    now: number
  ): Promise<UpdateOutcome> {
    const row = await this.#db.get(SQL.updateNote, [
      principal,
      id,
      expectedVersion,
      patch.title ?? null,
      patch.body ?? null,
      patch.tags === undefined ? null : tagsJson(patch.tags),
      now,
    ])
    if (row !== undefined) return { kind: 'updated', note: toNote(row) }
    const current = await this.get(principal, id)
    return current === undefined ? { kind: 'not_found' } : { kind: 'conflict', current }
  }

  async delete(principal: string, id: string, onceKey: string): Promise<OnceOutcome<boolean>> {
    return oneDeleted(await this.deleteMany(principal, [id], onceKey))
  }

  async deleteMany(
    principal: string,
    ids: readonly string[],
    onceKey: string
  ): Promise<OnceOutcome<string[]>> {
    const db = this.#db
    checkDeleteMany(ids)
    const claim = newClaim()
    // Two statements whatever the number of ids (they travel as one JSON array): D1 caps a
    // statement's parameters, not the length of one.
    const [spent, deleted] = await db.batch([
      { sql: SQL.spendKey, params: [onceKey, Date.now(), claim] },
      { sql: SQL.deleteNotes, params: [principal, JSON.stringify(ids), onceKey, claim] },
    ])
    if ((spent?.length ?? 0) === 0) return { kind: 'already_done' }
    const rows = (deleted ?? []).map((row) => String(row.id))
    return { kind: 'done', value: deletedInOrder(ids, rows) }
  }

  async list(principal: string, offset: number, limit: number): Promise<Page<Note>> {
    checkPaging(offset, limit)
    const rows = await this.#db.all(SQL.listNotes, [principal, limit + 1, offset])
    return toPage(rows, offset, limit, toNote)
  }

  async search(principal: string, query: SearchQuery): Promise<Page<Note>> {
    const { offset, limit } = query
    checkPaging(offset, limit)
    const tags = [...new Set(query.tags ?? [])]
    const params = [principal, JSON.stringify(tags), tags.length, limit + 1, offset]
    const match = ftsMatch(query.text)
    const rows =
      match === undefined
        ? await this.#db.all(SQL.filterNotes, params)
        : await this.#db.all(SQL.searchNotes, [...params, match])
    return toPage(rows, offset, limit, toNote)
  }

  async listTags(principal: string): Promise<Array<{ tag: string; count: number }>> {
    const rows = await this.#db.all(SQL.listTags, [principal])
    return rows.map((row) => ({ tag: String(row.tag), count: Number(row.count) }))
  }

  async completeIds(principal: string, prefix: string, limit: number): Promise<string[]> {
    const db = this.#db
    if (limit <= 0) return []
    const rows = await db.all(SQL.completeIds, [principal, prefix, limit])
    return rows.map((row) => String(row.id))
  }

  async completeTags(principal: string, prefix: string, limit: number): Promise<string[]> {
    const db = this.#db
    if (limit <= 0) return []
    const rows = await db.all(SQL.completeTags, [principal, likePrefix(prefix), limit])
    return rows.map((row) => String(row.tag))
  }

  async createShareRequest(
    request: Omit<ShareRequest, 'status' | 'linkId'>
  ): Promise<ShareRequest> {
    await this.#db.run(SQL.insertShare, [
      request.id,
      request.principal,
      request.noteId,
      request.expiresAt,
    ])
    return pendingShareRequest(request)
  }

  async getShareRequest(id: string): Promise<ShareRequest | undefined> {
    const row = await this.#share(id)
    return row === undefined ? undefined : toShareRequest(row)
  }

  async decideShareRequest(
    id: string,
    decision: 'approved' | 'refused',
    now: number
  ): Promise<DecideOutcome> {
    if ((await this.#db.get(SQL.decideShare, [id, decision, now])) !== undefined) return 'decided'
    return undecidedOutcome((await this.#share(id))?.status)
  }

  async publishShare(
    principal: string,
    shareId: string,
    linkId: string,
    onceKey: string
  ): Promise<OnceOutcome<string>> {
    const db = this.#db
    for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
      const claim = newClaim()
      const now = Date.now()
      const [spent] = await db.batch([
        { sql: SQL.spendKeyForShare, params: [onceKey, now, claim, shareId, principal] },
        { sql: SQL.insertLink, params: [linkId, now, shareId, onceKey, claim] },
        { sql: SQL.setShareLink, params: [linkId, shareId, onceKey, claim] },
      ])
      if ((spent?.length ?? 0) > 0) return { kind: 'done', value: linkId }

      // Nothing was written; explain why: a spent key first, then the share's state.
      if ((await db.get(SQL.keyUsed, [onceKey])) !== undefined) return { kind: 'already_done' }
      const share = await this.#share(shareId)
      assertPublishable(share, principal)
      if (share.link_id !== null) return { kind: 'already_done' }
      // Publishable now but not when the batch ran (approved in between): run the batch again.
    }
    throw new Error('publishShare: the share kept changing while it was being published')
  }

  async getSharedNote(linkId: string): Promise<Note | undefined> {
    const row = await this.#db.get(SQL.getSharedNote, [linkId])
    return row === undefined ? undefined : toNote(row)
  }

  async createSession(
    sid: string,
    principal: string,
    expiresAt: number,
    now: number,
    maxPerPrincipal: number
  ): Promise<number> {
    const db = this.#db
    const create = { sql: SQL.createSession, params: [sid, principal, now, expiresAt] }
    const cap = capParam(maxPerPrincipal)
    if (cap === null) {
      await db.run(create.sql, create.params)
      return 0
    }
    const overCap = [principal, now, cap]
    const [, evicted] = await db.batch([
      { sql: SQL.evictSubscriptions, params: overCap },
      { sql: SQL.evictSessions, params: overCap },
      create,
    ])
    return evicted?.length ?? 0
  }

  async getSession(sid: string): Promise<SessionRecord | undefined> {
    const row = await this.#db.get(SQL.getSession, [sid])
    return sessionRecord(row === undefined ? undefined : { logLevel: row.log_level })
  }

  async setSessionLogLevel(sid: string, level: LogLevel): Promise<void> {
    await this.#db.run(SQL.setLogLevel, [sid, level])
  }

  async endSession(sid: string): Promise<void> {
    await this.#db.batch([
      { sql: SQL.endSession, params: [sid] },
      { sql: SQL.endSubscriptions, params: [sid] },
    ])
  }

  async addSubscription(
    sid: string,
    uri: string,
    now: number,
    maxPerPrincipal: number
  ): Promise<SubscribeOutcome> {
    const db = this.#db
    const params = [sid, uri, now, MAX_SUBSCRIPTIONS_PER_SESSION, capParam(maxPerPrincipal)]
    if ((await db.get(SQL.addSubscription, params)) !== undefined) return 'subscribed'
    const row = await db.get(SQL.explainSubscription, [sid, now])
    return subscribeRefusal(
      row === undefined
        ? undefined
        : { session: Number(row.session), principal: Number(row.principal) }
    )
  }

  async removeSubscription(sid: string, uri: string): Promise<void> {
    await this.#db.run(SQL.removeSubscription, [sid, uri])
  }

  async isSubscribed(sid: string, uri: string): Promise<boolean> {
    return (await this.#db.get(SQL.isSubscribed, [sid, uri])) !== undefined
  }

  async expectInput(sid: string, requestId: string, expiresAt: number): Promise<void> {
    await this.#db.run(SQL.expectInput, [sid, requestId, expiresAt])
  }

  async deliverInput(
    sid: string,
    requestId: string,
    payload: string,
    now: number
  ): Promise<boolean> {
    return (await this.#db.run(SQL.deliverInput, [sid, requestId, payload, now])) === 1
  }

  async takeInput(sid: string, requestId: string): Promise<string | undefined> {
    const row = await this.#db.get(SQL.takeInput, [sid, requestId])
    return row === undefined ? undefined : String(row.payload)
  }

  async forgetInput(sid: string, requestId: string): Promise<void> {
    await this.#db.run(SQL.forgetInput, [sid, requestId])
  }

  async createTask(task: NewTask, maxLive: number): Promise<TaskRecord | undefined> {
    const db = this.#db
    positiveWholeNumber('maxLive', maxLive)
    const row = await db.get(SQL.insertTask, [...newTaskValues(task), maxLive])
    return row === undefined ? undefined : toTaskRecord(row as TaskRow)
  }

  async countLiveTasks(principal: string, now: number): Promise<number> {
    const row = await this.#db.get(SQL.countLiveTasks, [principal, now])
    return Number(row?.live ?? 0)
  }

  async getTask(id: string): Promise<TaskRecord | undefined> {
    const row = await this.#db.get(SQL.getTask, [id])
    return row === undefined ? undefined : toTaskRecord(row as TaskRow)
  }

  async updateTask(
    id: string,
    expectedVersion: number,
    patch: TaskPatch
  ): Promise<TaskRecord | undefined> {
    const params: SqlValue[] = [id, expectedVersion]
    for (const [set, value] of taskPatchValues(patch)) {
      params.push(set ? 1 : 0, typeof value === 'boolean' ? Number(value) : value)
    }
    const row = await this.#db.get(SQL.updateTask, params)
    return row === undefined ? undefined : toTaskRecord(row as TaskRow)
  }

  async findRunnableTasks(now: number, limit: number): Promise<string[]> {
    const db = this.#db
    checkSweep(now, limit)
    const rows = await db.all(SQL.findRunnableTasks, [now, limit])
    return rows.map((row) => String(row.id))
  }

  async purgeExpired(now: number, limit: number): Promise<number> {
    const db = this.#db
    return purgeWithin(now, limit, PURGES, ({ sql, cutoff }, budget) =>
      db.run(sql, [cutoff(now), budget])
    )
  }

  /** The driver, once `migrate()` has run and until `close()`. */
  get #db(): SqlDriver {
    if (this.#state !== 'ready') throw notMigrated(this.#state === 'closed')
    return this.#driver
  }

  async #share(id: string): Promise<ShareRow | undefined> {
    const row = await this.#db.get(SQL.getShare, [id])
    return row === undefined ? undefined : toShareRow(row)
  }
}

/** 128 random bits proving which call spent a once-key. */
function newClaim(): string {
  return randomBase64url(16)
}

/** Tags as stored in the `tags` column: a JSON array, each tag once, sorted. */
function tagsJson(tags: readonly string[]): string {
  return JSON.stringify(sortedTags(tags))
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

/** A note row as every note statement selects it. */
function toNote(row: SqlRow): Note {
  return {
    id: String(row.id),
    title: String(row.title),
    body: String(row.body),
    tags: JSON.parse(String(row.tags)) as string[],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    version: Number(row.version),
  }
}

function toShareRow(row: SqlRow): ShareRow {
  return {
    id: String(row.id),
    principal: String(row.principal),
    note_id: String(row.note_id),
    status: row.status as ShareStatus,
    expires_at: Number(row.expires_at),
    link_id: row.link_id === null ? null : String(row.link_id),
  }
}
