/**
 * @module storage/postgres
 * The `NotesStore` adapter on PostgreSQL (the pure-JS `postgres` driver), for replicas on many machines
 * sharing one database. It owns every statement of the store: the single-use keys that make deletes
 * (of one note, or of a chosen set in one transaction) and share publications happen at most once
 * across every replica, the optimistic concurrency of updates, what 2025-era sessions keep
 * (`SessionStore`: live sessions, their creation times and log levels, subscriptions, input slots),
 * the records of tasks (`TaskStore`), the idempotent import of notes, and the purge of expired rows.
 * It has the semantics of the SQLite-dialect store (`sql-store.ts`). The schema and its migrations are
 * `postgres-schema.ts`'s, the search text builders `postgres-search.ts`'s.
 *
 * Concurrency: every check-and-set (note or task version, share status, single-use key, published
 * link, input slot, imported note) is decided by PostgreSQL — a conditional `UPDATE`, an
 * `INSERT … ON CONFLICT DO NOTHING` on a unique key, a row lock — never in memory; multi-statement
 * writes run in one transaction. The caps on a principal's sessions, subscriptions and live tasks
 * are each counted under a per-principal advisory lock (READ COMMITTED alone would let two replicas
 * both take the last place); a session created at the cap ends the principal's oldest-created ones,
 * with their subscriptions, under that lock and in the same transaction as its insert. A purge takes
 * its rows with `FOR UPDATE SKIP LOCKED`, so replicas sweeping at once never wait on each other.
 *
 * Text: PostgreSQL `text` cannot hold U+0000, so every string crosses the boundary through a reversible,
 * order- and prefix-preserving escape (U+0000 ⇄ U+0001 U+0001, U+0001 ⇄ U+0001 U+0002); stored values are
 * escaped, everything returned is exactly what was given. The database must be UTF8-encoded.
 *
 * It leaves to others: validation and limits of titles, bodies, tags and query text, tag normalisation,
 * wording of errors, generation of share-request, link and single-use key ids (the notes application),
 * and the connection URL (configuration, `DATABASE_URL`). It generates note ids itself (imported notes
 * come with theirs), never task ids.
 *
 * Shared with the other adapters (`storage/shared.ts`): note ids, tag normalisation, paging, the choice
 * of search words, share-request mapping and outcomes, the task columns and the mapping of records
 * and patches onto them (the task statements are built from those lists, once).
 *
 * Errors: `ShareNotApprovedError` when `publishShare` is asked to publish a share that is missing,
 * belongs to another principal or is not approved; `StoreNotMigratedError` when a method runs
 * before `migrate()` or after `close()`; `RangeError` for invalid paging, purge or runnable-task
 * limits and refused imports. Database failures propagate as the driver's errors. The two error
 * classes are defined with the store contract (`notes/store.ts`).
 */

import postgres, { type PendingQuery, type Row, type Sql, type TransactionSql } from 'postgres'
import type { LogLevel } from '../mcp/protocol.ts'
import { positiveWholeNumber } from '../mcp/options.ts'
import {
  MAX_SUBSCRIPTIONS_PER_SESSION,
  type SessionRecord,
  type SubscribeOutcome,
} from '../mcp/session-store.ts'
import type { NewTask, TaskPatch, TaskRecord } from '../mcp/task-store.ts'
import {
  REPLAY_RETENTION_MS,
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
import { newNoteId } from '../notes/note-id.ts'
import {
  assertPublishable,
  capParam,
  checkDeleteMany,
  checkImport,
  checkPaging,
  checkSweep,
  deletedInOrder,
  NEW_TASK_FIELDS,
  newTaskValues,
  notMigrated,
  oneDeleted,
  pendingShareRequest,
  purgeWithin,
  sessionRecord,
  subscribeRefusal,
  sortedTags,
  TASK_COLUMNS,
  TASK_PATCH_COLUMNS,
  taskPatchValues,
  toPage,
  toShareRequest,
  toTaskRecord,
  undecidedOutcome,
  type ShareRow,
  type TaskRow,
} from './shared.ts'
import { migrateSchema } from './postgres-schema.ts'
import { RANK_WEIGHTS, tsqueryLiteral, tsvectorLiteral } from './postgres-search.ts'

/**
 * First key of the transaction-scoped advisory lock that serialises the `createSession`s and
 * `addSubscription`s of one principal (the second is a hash of the principal): neither cap's count
 * can race another replica's insert, and a subscription added to a session that a creation ends for
 * the cap is either seen and removed with it or refused for a session that is gone. The two-key space
 * never meets the migration lock's bigint key.
 */
const PRINCIPAL_SESSIONS_LOCK_CLASS = 0x6e6d7365 // "nmse"
/** First key of the lock that serialises `createTask`s of one principal (the second: its hash). */
const TASK_CAP_LOCK_CLASS = 0x6e6d7461 // "nmta"

export interface PostgresNotesStoreOptions {
  /** `postgres://user:password@host:port/database` (query parameters become connection settings). */
  url: string
  /** Most connections of the pool; the driver's default (10) when absent. */
  max?: number
}

/**
 * The tables `purgeExpired` sweeps, in the order it spends its budget, each with the condition its
 * rows meet once their lifetime ended at `now`: once-keys and unpublished shares are kept
 * `REPLAY_RETENTION_MS` past their last use (published shares stay with their links), session rows go
 * at their own expiry.
 */
const PURGES: ReadonlyArray<{
  table: string
  expired: (sql: Sql, now: number) => PendingQuery<Row[]>
}> = [
  { table: 'used_keys', expired: (sql, now) => sql`used_at <= ${now - REPLAY_RETENTION_MS}` },
  {
    table: 'share_requests',
    expired: (sql, now) => sql`link_id IS NULL AND expires_at <= ${now - REPLAY_RETENTION_MS}`,
  },
  { table: 'sessions', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'session_subscriptions', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'input_slots', expired: (sql, now) => sql`expires_at <= ${now}` },
  { table: 'tasks', expired: (sql, now) => sql`expires_at <= ${now}` },
]

/**
 * The task statements, built once from the column lists of `shared.ts` (run with `unsafe`: the text
 * is these constants only, every value is a bound parameter). `TASK_GET` binds the id; `TASK_INSERT` binds
 * `NEW_TASK_FIELDS` as $1, $2…; `TASK_UPDATE` binds the id ($1), the expected version ($2), then for
 * each column of `TASK_PATCH_COLUMNS` whether to set it and the value.
 */
const TASK_SELECT = Object.values(TASK_COLUMNS).join(', ')
const TASK_INSERT = `
  INSERT INTO tasks (${NEW_TASK_FIELDS.map((field) => TASK_COLUMNS[field]).join(', ')})
  VALUES (${NEW_TASK_FIELDS.map((_, i) => `$${i + 1}`).join(', ')})
  RETURNING ${TASK_SELECT}`
const TASK_UPDATE = `
  UPDATE tasks SET
    ${Object.values(TASK_PATCH_COLUMNS)
      .map(
        (column, i) =>
          `${column} = CASE WHEN $${3 + 2 * i}::boolean THEN $${4 + 2 * i} ELSE ${column} END`
      )
      .join(',\n    ')},
    version = version + 1
  WHERE id = $1 AND version = $2
  RETURNING ${TASK_SELECT}`
/** The read behind every `tasks/get` poll. */
const TASK_GET = `SELECT ${TASK_SELECT} FROM tasks WHERE id = $1`

interface NoteRow {
  id: string
  title: string
  body: string
  tags: string[]
  created_at: string
  updated_at: string
  version: string
}

/** Thrown inside a transaction to roll it back and answer `already_done`. */
class AlreadyDone extends Error {}

export class PostgresNotesStore implements NotesStore {
  readonly #sql: Sql
  #migrated = false
  #closed = false

  constructor(options: PostgresNotesStoreOptions) {
    if (typeof options?.url !== 'string' || options.url === '') {
      throw new TypeError('PostgresNotesStore: options.url must be a postgres:// URL')
    }
    if (options.max !== undefined && (!Number.isInteger(options.max) || options.max < 1)) {
      throw new TypeError('PostgresNotesStore: options.max must be a positive integer')
    }
    this.#sql = postgres(options.url, {
      ...(options.max === undefined ? {} : { max: options.max }),
      onnotice: () => {},
    })
  }

  async migrate(): Promise<void> {
    if (this.#closed) throw notMigrated(true)
    const [encoding] = await this.#sql<Array<{ server_encoding: string }>>`SHOW server_encoding`
    if (encoding?.server_encoding !== 'UTF8') {
      throw new Error(
        `PostgresNotesStore needs a UTF8 database (this one is ${encoding?.server_encoding})`
      )
    }
    await migrateSchema(this.#sql)
    this.#migrated = true
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#migrated = false
    await this.#sql.end({ timeout: 5 })
  }

  async create(principal: string, note: NewNote, now: number): Promise<Note> {
    const sql = this.#ready
    const [row] = await sql<NoteRow[]>`
      ${insertNote(sql, newNoteId(), principal, note, now)}
      RETURNING id, title, body, tags, created_at, updated_at, version`
    if (row === undefined) throw new Error('INSERT … RETURNING produced no row')
    return toNote(row)
  }

  async importNotes(
    principal: string,
    notes: Array<NewNote & { id: string }>,
    now: number
  ): Promise<number> {
    const sql = this.#ready
    checkImport(notes)
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
  }

  async get(principal: string, id: string): Promise<Note | undefined> {
    return this.#getNote(this.#ready, principal, id)
  }

  async update(
    principal: string,
    id: string,
    expectedVersion: number,
    patch: NotePatch,
    now: number
  ): Promise<UpdateOutcome> {
    const sql = this.#ready
    // A version that is not an integer matches no stored version; it must not reach the bigint column.
    if (Number.isSafeInteger(expectedVersion)) {
      const tags = patch.tags === undefined ? undefined : sortedTags(patch.tags)
      const [row] = await sql<NoteRow[]>`
        UPDATE notes SET
          title = coalesce(${nullable(patch.title, enc)}::text, title),
          title_tsv = coalesce(${nullable(patch.title, (t) => tsvectorLiteral(t, 'A'))}::tsvector,
            title_tsv),
          body = coalesce(${nullable(patch.body, enc)}::text, body),
          body_tsv = coalesce(${nullable(patch.body, (b) => tsvectorLiteral(b, 'D'))}::tsvector,
            body_tsv),
          tags = coalesce(${tags === undefined ? null : sql.array(tags.map(enc))}::text[], tags),
          tags_tsv = coalesce(
            ${nullable(tags, (t) => tsvectorLiteral(t.join(' '), 'B'))}::tsvector, tags_tsv),
          updated_at = ${now},
          version = version + 1
        WHERE principal = ${enc(principal)} AND id = ${enc(id)} AND version = ${expectedVersion}
        RETURNING id, title, body, tags, created_at, updated_at, version`
      if (row !== undefined) return { kind: 'updated', note: toNote(row) }
    }
    const current = await this.#getNote(sql, principal, id)
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
    const sql = this.#ready
    checkDeleteMany(ids)
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
        WHERE principal = ${enc(principal)} AND id = ANY(${tx.array(ids.map(enc))}::text[])
        RETURNING id`
      return {
        kind: 'done',
        value: deletedInOrder(
          ids,
          deleted.map((row) => dec(row.id))
        ),
      }
    })
  }

  async list(principal: string, offset: number, limit: number): Promise<Page<Note>> {
    const sql = this.#ready
    checkPaging(offset, limit)
    const rows = await sql<NoteRow[]>`
      SELECT id, title, body, tags, created_at, updated_at, version FROM notes
      WHERE principal = ${enc(principal)}
      ORDER BY updated_at DESC, seq DESC LIMIT ${limit + 1} OFFSET ${offset}`
    return toPage(rows, offset, limit, toNote)
  }

  async search(principal: string, query: SearchQuery): Promise<Page<Note>> {
    const sql = this.#ready
    const { offset, limit } = query
    checkPaging(offset, limit)
    const tags = sql.array([...new Set(query.tags ?? [])].map(enc))
    const match = tsqueryLiteral(query.text)
    if (match === null) return { items: [] }
    const rows =
      match === undefined
        ? await sql<NoteRow[]>`
            SELECT id, title, body, tags, created_at, updated_at, version FROM notes
            WHERE principal = ${enc(principal)} AND tags @> ${tags}::text[]
            ORDER BY updated_at DESC, seq DESC LIMIT ${limit + 1} OFFSET ${offset}`
        : await sql<NoteRow[]>`
            SELECT id, title, body, tags, created_at, updated_at, version FROM notes
            WHERE principal = ${enc(principal)} AND tags @> ${tags}::text[]
              AND search @@ ${match}::tsquery
            ORDER BY ts_rank(${RANK_WEIGHTS}::float4[], search, ${match}::tsquery, 1) DESC,
              updated_at DESC, seq DESC
            LIMIT ${limit + 1} OFFSET ${offset}`
    return toPage(rows, offset, limit, toNote)
  }

  async listTags(principal: string): Promise<Array<{ tag: string; count: number }>> {
    const rows = await this.#ready<Array<{ tag: string; count: string }>>`
      SELECT t.tag, count(*) AS count FROM notes AS n, unnest(n.tags) AS t (tag)
      WHERE n.principal = ${enc(principal)}
      GROUP BY t.tag ORDER BY t.tag COLLATE "C"`
    return rows.map((row) => ({ tag: dec(row.tag), count: Number(row.count) }))
  }

  async completeIds(principal: string, prefix: string, limit: number): Promise<string[]> {
    const sql = this.#ready
    if (limit <= 0) return []
    // Exact, case-sensitive prefix comparison: no wildcard of the prefix can take effect.
    const rows = await sql<Array<{ id: string }>>`
      SELECT id FROM notes
      WHERE principal = ${enc(principal)} AND id >= ${enc(prefix)}
        AND starts_with(id, ${enc(prefix)})
      ORDER BY id LIMIT ${limit}`
    return rows.map((row) => dec(row.id))
  }

  async completeTags(principal: string, prefix: string, limit: number): Promise<string[]> {
    const sql = this.#ready
    if (limit <= 0) return []
    const rows = await sql<Array<{ tag: string }>>`
      SELECT DISTINCT t.tag COLLATE "C" AS tag FROM notes AS n, unnest(n.tags) AS t (tag)
      WHERE n.principal = ${enc(principal)} AND starts_with(t.tag, ${enc(prefix)})
      ORDER BY 1 LIMIT ${limit}`
    return rows.map((row) => dec(row.tag))
  }

  async createShareRequest(
    request: Omit<ShareRequest, 'status' | 'linkId'>
  ): Promise<ShareRequest> {
    await this.#ready`
      INSERT INTO share_requests (id, principal, note_id, status, expires_at)
      VALUES (${enc(request.id)}, ${enc(request.principal)}, ${enc(request.noteId)}, 'pending',
        ${request.expiresAt})`
    return pendingShareRequest(request)
  }

  async getShareRequest(id: string): Promise<ShareRequest | undefined> {
    const row = await this.#getShare(this.#ready, id)
    return row === undefined ? undefined : toShareRequest(row, dec)
  }

  async decideShareRequest(
    id: string,
    decision: 'approved' | 'refused',
    now: number
  ): Promise<DecideOutcome> {
    const sql = this.#ready
    const decided = await sql`
      UPDATE share_requests SET status = ${decision}, decided_at = ${now}
      WHERE id = ${enc(id)} AND status = 'pending' AND expires_at > ${now}
      RETURNING id`
    if (decided.count > 0) return 'decided'
    const row = await this.#getShare(sql, id)
    return undecidedOutcome(row?.status)
  }

  async publishShare(
    principal: string,
    shareId: string,
    linkId: string,
    onceKey: string
  ): Promise<OnceOutcome<string>> {
    const sql = this.#ready
    try {
      return await sql.begin(async (tx): Promise<OnceOutcome<string>> => {
        const [spent] = await tx`SELECT 1 FROM used_keys WHERE once_key = ${enc(onceKey)}`
        if (spent !== undefined) return { kind: 'already_done' }
        // The row lock orders concurrent publications of one share: a later one sees the link.
        const share = await this.#getShare(tx, shareId, true)
        // The row holds escaped strings: compare with the escaped principal (the escape is one-to-one).
        assertPublishable(share, enc(principal))
        if (share.link_id !== null) return { kind: 'already_done' }
        const now = Date.now()
        const used = await tx`
          INSERT INTO used_keys (once_key, used_at) VALUES (${enc(onceKey)}, ${now})
          ON CONFLICT DO NOTHING`
        // Spent meanwhile by another transaction: roll back, write nothing.
        if (used.count === 0) throw new AlreadyDone()
        await tx`
          INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
          VALUES (${enc(linkId)}, ${share.id}, ${share.principal}, ${share.note_id}, ${now})`
        await tx`UPDATE share_requests SET link_id = ${enc(linkId)} WHERE id = ${share.id}`
        return { kind: 'done', value: linkId }
      })
    } catch (error) {
      if (error instanceof AlreadyDone) return { kind: 'already_done' }
      throw error
    }
  }

  async getSharedNote(linkId: string): Promise<Note | undefined> {
    const [row] = await this.#ready<NoteRow[]>`
      SELECT n.id, n.title, n.body, n.tags, n.created_at, n.updated_at, n.version
      FROM shared_links AS l JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
      WHERE l.id = ${enc(linkId)}`
    return row === undefined ? undefined : toNote(row)
  }

  async createSession(
    sid: string,
    principal: string,
    expiresAt: number,
    now: number,
    maxPerPrincipal: number
  ): Promise<number> {
    const owner = enc(principal)
    const cap = capParam(maxPerPrincipal)
    return this.#ready.begin(async (tx) => {
      let evicted = 0
      if (cap !== null) {
        await tx`SELECT pg_advisory_xact_lock(${PRINCIPAL_SESSIONS_LOCK_CLASS}, hashtext(${owner}))`
        // The principal's live sessions beyond the newest cap - 1, oldest created first (ties by
        // sid), end with their subscriptions to make room for this one.
        const [row] = await tx<Array<{ evicted: number }>>`
          WITH ended AS (
            DELETE FROM sessions WHERE sid IN (
              SELECT sid FROM sessions WHERE principal = ${owner} AND expires_at > ${now}
              ORDER BY created_at DESC, sid DESC OFFSET ${cap - 1}
            )
            RETURNING sid
          ), unsubscribed AS (
            DELETE FROM session_subscriptions WHERE sid IN (SELECT sid FROM ended)
          )
          SELECT count(*)::int AS evicted FROM ended`
        evicted = row?.evicted ?? 0
      }
      await tx`
        INSERT INTO sessions (sid, principal, created_at, expires_at)
        VALUES (${enc(sid)}, ${owner}, ${now}, ${expiresAt})`
      return evicted
    })
  }

  async getSession(sid: string): Promise<SessionRecord | undefined> {
    const [row] = await this.#ready<Array<{ log_level: string | null }>>`
      SELECT log_level FROM sessions WHERE sid = ${enc(sid)}`
    return sessionRecord(row === undefined ? undefined : { logLevel: row.log_level })
  }

  async setSessionLogLevel(sid: string, level: LogLevel): Promise<void> {
    await this.#ready`UPDATE sessions SET log_level = ${level} WHERE sid = ${enc(sid)}`
  }

  async endSession(sid: string): Promise<void> {
    await this.#ready.begin(async (tx) => {
      await tx`DELETE FROM sessions WHERE sid = ${enc(sid)}`
      await tx`DELETE FROM session_subscriptions WHERE sid = ${enc(sid)}`
    })
  }

  async addSubscription(
    sid: string,
    uri: string,
    now: number,
    maxPerPrincipal: number
  ): Promise<SubscribeOutcome> {
    const cap = capParam(maxPerPrincipal)
    return this.#ready.begin(async (tx) => {
      const [session] = await tx<Array<{ principal: string }>>`
        SELECT principal FROM sessions WHERE sid = ${enc(sid)} AND expires_at > ${now}`
      if (session === undefined) return 'no_session'
      // Adds for one principal (so for each of its sessions) are serialised with each other and with
      // its creations, so neither count below can race another replica's add, and a creation that
      // ends this session for the cap does so before this insert or sees (and removes) its row.
      await tx`SELECT pg_advisory_xact_lock(
        ${PRINCIPAL_SESSIONS_LOCK_CLASS}, hashtext(${session.principal}))`
      const held = await tx`
        INSERT INTO session_subscriptions (sid, uri, principal, expires_at)
        SELECT s.sid, ${enc(uri)}, s.principal, s.expires_at FROM sessions AS s
        WHERE s.sid = ${enc(sid)} AND s.expires_at > ${now} AND (
          EXISTS (
            SELECT 1 FROM session_subscriptions WHERE sid = ${enc(sid)} AND uri = ${enc(uri)})
          OR ((SELECT count(*) FROM session_subscriptions WHERE sid = ${enc(sid)})
              < ${MAX_SUBSCRIPTIONS_PER_SESSION}
            AND (${cap}::bigint IS NULL OR (
              SELECT count(*) FROM session_subscriptions AS other
              WHERE other.principal = s.principal AND other.expires_at > ${now}
            ) < ${cap}::bigint)))
        ON CONFLICT (sid, uri) DO UPDATE SET expires_at = excluded.expires_at`
      if (held.count > 0) return 'subscribed'
      const [after] = await tx<Array<{ session: number; principal: number }>>`
        SELECT (SELECT count(*) FROM session_subscriptions WHERE sid = ${enc(sid)})::int AS session,
          (SELECT count(*) FROM session_subscriptions AS other
            WHERE other.principal = s.principal AND other.expires_at > ${now})::int AS principal
        FROM sessions AS s WHERE s.sid = ${enc(sid)} AND s.expires_at > ${now}`
      return subscribeRefusal(after)
    })
  }

  async removeSubscription(sid: string, uri: string): Promise<void> {
    await this.#ready`
      DELETE FROM session_subscriptions WHERE sid = ${enc(sid)} AND uri = ${enc(uri)}`
  }

  async isSubscribed(sid: string, uri: string): Promise<boolean> {
    const rows = await this.#ready`
      SELECT 1 FROM session_subscriptions WHERE sid = ${enc(sid)} AND uri = ${enc(uri)}`
    return rows.count > 0
  }

  async expectInput(sid: string, requestId: string, expiresAt: number): Promise<void> {
    await this.#ready`
      INSERT INTO input_slots (sid, request_id, expires_at)
      VALUES (${enc(sid)}, ${enc(requestId)}, ${expiresAt})
      ON CONFLICT (sid, request_id) DO UPDATE SET
        expires_at = greatest(input_slots.expires_at, excluded.expires_at)`
  }

  async deliverInput(
    sid: string,
    requestId: string,
    payload: string,
    now: number
  ): Promise<boolean> {
    const filled = await this.#ready`
      UPDATE input_slots SET payload = ${enc(payload)}
      WHERE sid = ${enc(sid)} AND request_id = ${enc(requestId)}
        AND payload IS NULL AND expires_at > ${now}`
    return filled.count === 1
  }

  async takeInput(sid: string, requestId: string): Promise<string | undefined> {
    const [row] = await this.#ready<Array<{ payload: string }>>`
      DELETE FROM input_slots
      WHERE sid = ${enc(sid)} AND request_id = ${enc(requestId)} AND payload IS NOT NULL
      RETURNING payload`
    return row === undefined ? undefined : dec(row.payload)
  }

  async forgetInput(sid: string, requestId: string): Promise<void> {
    await this.#ready`
      DELETE FROM input_slots WHERE sid = ${enc(sid)} AND request_id = ${enc(requestId)}`
  }

  async createTask(task: NewTask, maxLive: number): Promise<TaskRecord | undefined> {
    const sql = this.#ready
    positiveWholeNumber('maxLive', maxLive)
    const values = newTaskValues(task).map(encValue)
    const principal = enc(task.principal)
    return sql.begin(async (tx) => {
      // Creations of one principal are serialised, and the count runs after the lock is held (its
      // own snapshot), so it sees every task another replica stored before: none can take the last
      // place twice.
      await tx`SELECT pg_advisory_xact_lock(${TASK_CAP_LOCK_CLASS}, hashtext(${principal}))`
      if ((await countLive(tx, principal, task.createdAt)) >= maxLive) return undefined
      const [row] = await tx.unsafe<TaskRow[]>(TASK_INSERT, values, { prepare: true })
      if (row === undefined) throw new Error('INSERT … RETURNING produced no row')
      return toTaskRecord(row, dec)
    })
  }

  async countLiveTasks(principal: string, now: number): Promise<number> {
    return countLive(this.#ready, enc(principal), now)
  }

  async getTask(id: string): Promise<TaskRecord | undefined> {
    const [row] = await this.#ready.unsafe<TaskRow[]>(TASK_GET, [enc(id)], { prepare: true })
    return row === undefined ? undefined : toTaskRecord(row, dec)
  }

  async updateTask(
    id: string,
    expectedVersion: number,
    patch: TaskPatch
  ): Promise<TaskRecord | undefined> {
    const sql = this.#ready
    // A version that is not an integer matches no stored version; it must not reach the bigint column.
    if (!Number.isSafeInteger(expectedVersion)) return undefined
    const values = taskPatchValues(patch).flatMap(([set, value]) => [set, encValue(value)])
    const [row] = await sql.unsafe<TaskRow[]>(TASK_UPDATE, [enc(id), expectedVersion, ...values], {
      prepare: true,
    })
    return row === undefined ? undefined : toTaskRecord(row, dec)
  }

  async findRunnableTasks(now: number, limit: number): Promise<string[]> {
    const sql = this.#ready
    checkSweep(now, limit)
    // The condition and order of the partial index tasks_runnable, which answers it alone.
    const rows = await sql<Array<{ id: string }>>`
      SELECT id FROM tasks
      WHERE status = 'working' AND coalesce(lease_expires_at, 0) <= ${now} AND expires_at > ${now}
      ORDER BY coalesce(lease_expires_at, 0), expires_at, id LIMIT ${limit}`
    return rows.map((row) => dec(row.id))
  }

  async purgeExpired(now: number, limit: number): Promise<number> {
    const sql = this.#ready
    // The rows are chosen and locked once, in a materialised CTE, then deleted by their ctid; rows
    // another replica's purge holds are skipped, so sweeping replicas never wait on each other.
    return purgeWithin(now, limit, PURGES, async ({ table, expired }, budget) => {
      const removed = await sql`
        WITH doomed AS MATERIALIZED (
          SELECT ctid FROM ${sql(table)} WHERE ${expired(sql, now)}
          LIMIT ${budget} FOR UPDATE SKIP LOCKED)
        DELETE FROM ${sql(table)} AS t USING doomed WHERE t.ctid = doomed.ctid`
      return removed.count
    })
  }

  /** The pool, once `migrate()` has run and until `close()`. */
  get #ready(): Sql {
    if (!this.#migrated) throw notMigrated(this.#closed)
    return this.#sql
  }

  async #getNote(sql: Sql, principal: string, id: string): Promise<Note | undefined> {
    const [row] = await sql<NoteRow[]>`
      SELECT id, title, body, tags, created_at, updated_at, version FROM notes
      WHERE principal = ${enc(principal)} AND id = ${enc(id)}`
    return row === undefined ? undefined : toNote(row)
  }

  /** The stored (still escaped) share row; `forUpdate` locks it until the transaction ends. */
  async #getShare(
    sql: Sql | TransactionSql,
    id: string,
    forUpdate = false
  ): Promise<ShareRow | undefined> {
    const [row] = await sql<ShareRow[]>`
      SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests
      WHERE id = ${enc(id)} ${forUpdate ? sql`FOR UPDATE` : sql``}`
    return row
  }
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
  const tags = sortedTags(note.tags)
  return sql`
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version,
      title_tsv, tags_tsv, body_tsv)
    SELECT ${enc(id)}::text, ${enc(principal)}::text, ${enc(note.title)}::text,
      ${enc(note.body)}::text, ${sql.array(tags.map(enc))}::text[], ${now}::bigint, ${now}::bigint,
      1, ${tsvectorLiteral(note.title, 'A')}::tsvector,
      ${tsvectorLiteral(tags.join(' '), 'B')}::tsvector,
      ${tsvectorLiteral(note.body, 'D')}::tsvector`
}

/** The live tasks (unexpired at `now`) of a principal, given escaped ({@link enc}). */
async function countLive(
  sql: Sql | TransactionSql,
  principal: string,
  now: number
): Promise<number> {
  const [row] = await sql<Array<{ live: number }>>`
    SELECT count(*)::integer AS live FROM tasks WHERE principal = ${principal} AND expires_at > ${now}`
  return row?.live ?? 0
}

/** A value bound to a task column: strings escaped ({@link enc}), anything else as it is. */
function encValue<T>(value: T): T | string {
  return typeof value === 'string' ? enc(value) : value
}

function nullable<T>(value: T | undefined, map: (value: T) => string): string | null {
  return value === undefined ? null : map(value)
}

/**
 * Escapes a string for a PostgreSQL `text` value, which cannot hold U+0000: U+0000 becomes U+0001 U+0001
 * and U+0001 becomes U+0001 U+0002. The code is prefix-free and keeps the order of code points, so
 * equality, prefixes and bytewise order of escaped values are those of the originals.
 */
function enc(value: string): string {
  if (!value.includes('\u0000') && !value.includes('\u0001')) return value
  return value.replace(/[\u0000\u0001]/g, (c) => (c === '\u0000' ? '\u0001\u0001' : '\u0001\u0002'))
}

/** Reverses {@link enc}. */
function dec(value: string): string {
  if (!value.includes('\u0001')) return value
  return value.replace(/\u0001([\u0001\u0002])/g, (_, c: string) =>
    c === '\u0001' ? '\u0000' : '\u0001'
  )
}

function toNote(row: NoteRow): Note {
  return {
    id: dec(row.id),
    title: dec(row.title),
    body: dec(row.body),
    tags: row.tags.map(dec),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    version: Number(row.version),
  }
}
