/**
 * Databases made by a deployment from before the engine owned its state migrate forward without
 * losing a session, a stream or a task. Until then one bookkeeping table recorded the steps of the
 * whole shared schema (`schema_migrations`: on node:sqlite the files under `migrations/`, which
 * wrangler still applies to D1; on PostgreSQL the same numbered steps in code). Each test builds a
 * database as that deployment left it — every step up to the newest, or up to an older one — with a
 * note, a session with a subscription and an answered input slot, a stream with its events and the
 * checkpoint of a call waiting on it (its record's `call` and lease), and a task; then opens it with
 * today's stores (the notes' and the engine's, on one connection, as a replica does): everything is
 * there, and usable (compare-and-set versions go on from where they were, new rows go in beside the
 * old ones, an older step's missing tables are made).
 *
 * PostgreSQL needs a server (tests/support/postgres.ts): without one the file fails under `CI=true`
 * and its PostgreSQL tests are reported as skipped elsewhere. D1 is `tests/workers/d1-store.test.ts`'s.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { createScratchDatabase, type ScratchDatabase } from '../../scripts/support/postgres.ts'
import { ENGINE_POSTGRES_SCHEMA } from '../../src/mcp/stores/postgres/schema.ts'
import type { EngineStore } from '../../src/mcp/stores/engine-store.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { openPostgresStores } from '../../src/storage/postgres.ts'
import { NOTES_POSTGRES_SCHEMA } from '../../src/storage/postgres/schema.ts'
import { openSqliteStores } from '../../src/storage/sqlite.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { newTask } from '../support/store-contract.ts'

const T0 = 1_750_000_000_000
const HOUR = 3_600_000
/** Every row made below lives until then. */
const LATER = T0 + 24 * HOUR

/** What a deployment from before left in its database, through the stores of that time. */
const OLD = {
  sid: 'sid-old',
  principal: 'p',
  stream: 'stream-old',
  /** The checkpoint of a call waiting for the client: what a replica needs to re-drive it. */
  call: '{"request":{"method":"tools/call"},"round":1}',
  task: newTask('p', T0, { expiresAt: LATER }),
} as const

/** The steps of the shared schema `step` and before, as their files under `migrations/`. */
function sqliteFilesUpTo(step: number): string[] {
  const dir = new URL('../../migrations/', import.meta.url)
  return readdirSync(dir)
    .filter((file) => Number(/^(\d+)_/.exec(file)?.[1]) <= step)
    .sort()
    .map((file) => readFileSync(new URL(file, dir), 'utf8'))
}

/** The rows a deployment that had applied the shared schema up to `step` held, in SQLite. */
function sqliteRowsAt(step: number): string {
  const rows = [
    `INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
      VALUES ('n_oldnote00000000', 'p', 'Kept', 'from before', '["old"]', ${T0}, ${T0}, 1)`,
  ]
  if (step >= 5) {
    rows.push(
      `INSERT INTO sessions (sid, principal, log_level, created_at, expires_at)
        VALUES ('${OLD.sid}', 'p', 'info', ${T0}, ${LATER})`,
      `INSERT INTO session_subscriptions (sid, uri, principal, expires_at)
        VALUES ('${OLD.sid}', 'note://n_oldnote00000000', 'p', ${LATER})`,
      `INSERT INTO input_slots (sid, request_id, payload, expires_at)
        VALUES ('${OLD.sid}', 'r1', '{"answer":1}', ${LATER})`
    )
  }
  if (step >= 6) {
    const task = OLD.task
    rows.push(
      `INSERT INTO tasks (id, owner, principal, tool, args, created_at, status, updated_at,
        expires_at, poll_interval_ms, journal, version)
        VALUES ('${task.id}', 'p', 'p', '${task.tool}', '${task.args}', ${T0}, 'working', ${T0},
          ${LATER}, 1000, '[]', 3)`
    )
  }
  if (step >= 7) {
    rows.push(
      `INSERT INTO session_streams (sid, stream, call, lease_owner, lease_expires_at, ended,
        expires_at, version)
        VALUES ('${OLD.sid}', '${OLD.stream}', '${OLD.call}', 'replica-a', ${T0 + 10_000}, 0,
          ${LATER}, 4)`,
      ...[1, 2, 3].map(
        (seq) => `INSERT INTO stream_events (sid, stream, seq, payload, expires_at)
          VALUES ('${OLD.sid}', '${OLD.stream}', ${seq}, '{"seq":${seq}}', ${LATER})`
      )
    )
  }
  return rows.join(';\n')
}

/** What the stores of today must find of the rows {@link sqliteRowsAt} made at `step`, and use. */
async function expectKept(notes: NotesStore, engine: EngineStore, step: number): Promise<void> {
  expect(await notes.get('p', 'n_oldnote00000000')).toMatchObject({ title: 'Kept', tags: ['old'] })
  const now = T0 + HOUR
  if (step >= 5) {
    expect(await engine.getSession(OLD.sid)).toStrictEqual({ expiresAt: LATER, logLevel: 'info' })
    expect(await engine.isSubscribed(OLD.sid, 'note://n_oldnote00000000')).toBe(true)
    expect(await engine.readInput(OLD.sid, 'r1')).toBe('{"answer":1}')
    expect(await engine.renewSession(OLD.sid, LATER + HOUR, now)).toBe(true)
  }
  if (step >= 6) {
    expect(await engine.getTask(OLD.task.id)).toMatchObject({ status: 'working', version: 3 })
    expect(await engine.updateTask(OLD.task.id, 3, { status: 'completed' })).toMatchObject({
      status: 'completed',
      version: 4,
    })
    expect(await engine.countLiveTasks('p', now)).toBe(1)
  }
  if (step >= 7) {
    expect(await engine.getStream(OLD.sid, OLD.stream)).toStrictEqual({
      sid: OLD.sid,
      stream: OLD.stream,
      call: OLD.call,
      leaseOwner: 'replica-a',
      leaseExpiresAt: T0 + 10_000,
      ended: false,
      expiresAt: LATER,
      version: 4,
    })
    expect(await engine.readEvents(OLD.sid, OLD.stream, 1, 10, now)).toStrictEqual([
      { seq: 2, payload: '{"seq":2}' },
      { seq: 3, payload: '{"seq":3}' },
    ])
    // Another replica takes the call over from the checkpoint, and the stream goes on.
    const taken = { leaseOwner: 'replica-b', leaseExpiresAt: now + 10_000 }
    expect(await engine.updateStream(OLD.sid, OLD.stream, 4, taken)).toMatchObject({ version: 5 })
    expect(await engine.appendEvent(OLD.sid, OLD.stream, 4, '{"seq":4}', LATER)).toBe(true)
    expect(await engine.appendEvent(OLD.sid, OLD.stream, 3, '{"again":3}', LATER)).toBe(false)
  }
  // Whatever the step, the engine's tables are all there now, and take new rows.
  expect(await engine.createSession('sid-new', 'p', LATER, now, 1_000)).toHaveLength(0)
  expect(
    await engine.createStream({ sid: 'sid-new', stream: 's', expiresAt: LATER }, 64, now)
  ).toMatchObject({ version: 1 })
  expect(await engine.createTask(newTask('p', now, { expiresAt: LATER }), 10)).toBeDefined()
  expect(await notes.create('p', { title: 'New', body: '', tags: [] }, now)).toMatchObject({
    version: 1,
  })
}

describe('a node:sqlite file of an older deployment', () => {
  const dir = mkdtempSync(join(tmpdir(), 'notes-migration-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0

  /** A file with the shared schema applied up to `step` as the node:sqlite store of then did. */
  function olderFile(step: number): string {
    const path = join(dir, `older-${++files}.db`)
    const db = new DatabaseSync(path)
    db.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)'
    )
    for (const [i, sql] of sqliteFilesUpTo(step).entries()) {
      db.exec(sql)
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?)').run(i + 1, T0)
    }
    db.exec(sqliteRowsAt(step))
    db.close()
    return path
  }

  it.each([8, 7, 6, 5])(
    'at step %i keeps every note, session, stream and task, and serves them',
    async (step) => {
      const stores = openSqliteStores({ path: olderFile(step) })
      await stores.migrate()
      try {
        await expectKept(stores.notes, stores.engine, step)
      } finally {
        await stores.close()
      }
    }
  )

  it('records, in each store’s own table, the step it adopted and those it applied', async () => {
    const path = olderFile(6)
    const stores = openSqliteStores({ path })
    await stores.migrate()
    await stores.migrate()
    await stores.close()
    const db = new DatabaseSync(path)
    const versions = (table: string) =>
      db
        .prepare(`SELECT version FROM ${table} ORDER BY version`)
        .all()
        .map((row) => row.version)
    expect(versions('mcp_schema')).toEqual([6, 7, 8])
    expect(versions('notes_schema')).toEqual([6])
    // The older bookkeeping stays as it was: nothing writes it any more.
    expect(versions('schema_migrations')).toEqual([1, 2, 3, 4, 5, 6])
    db.close()
  })
})

const serverUrl = await testDatabaseUrl()

describe.skipIf(serverUrl === undefined)('a PostgreSQL database of an older deployment', () => {
  const scratches: ScratchDatabase[] = []
  afterAll(async () => {
    for (const scratch of scratches) await scratch.drop()
  })

  /**
   * The shared schema's steps up to `step` as the PostgreSQL store of then applied them: the
   * engine's steps and the notes' are today's split of those very steps (one step each but 4, whose
   * parts are in both), recorded in `schema_migrations`.
   */
  async function olderDatabase(step: number): Promise<string> {
    const scratch = await createScratchDatabase(serverUrl as string)
    scratches.push(scratch)
    const sql = postgres(scratch.url, { max: 1, onnotice: () => {} })
    try {
      await sql.begin(async (tx) => {
        await tx`CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)`
        for (let version = 1; version <= step; version++) {
          for (const schema of [NOTES_POSTGRES_SCHEMA, ENGINE_POSTGRES_SCHEMA]) {
            const part = schema.steps.find((candidate) => candidate.version === version)
            for (const statement of part?.statements ?? []) await tx.unsafe(statement)
          }
          await tx`INSERT INTO schema_migrations VALUES (${version}, ${T0})`
        }
        for (const row of postgresRows(step).split(';\n')) await tx.unsafe(row)
      })
    } finally {
      await sql.end({ timeout: 5 })
    }
    return scratch.url
  }

  it.each([8, 7, 6, 5])(
    'at step %i keeps every note, session, stream and task, and serves them',
    async (step) => {
      const stores = openPostgresStores({ url: await olderDatabase(step) })
      await stores.migrate()
      try {
        await expectKept(stores.notes, stores.engine, step)
      } finally {
        await stores.close()
      }
    }
  )

  it('records, in each store’s own table, the step it adopted and those it applied', async () => {
    const url = await olderDatabase(6)
    const stores = openPostgresStores({ url })
    await stores.migrate()
    await stores.migrate()
    await stores.close()
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    try {
      const versions = async (table: string) =>
        (
          await sql<Array<{ version: number }>>`SELECT version FROM ${sql(table)} ORDER BY version`
        ).map((row) => row.version)
      expect(await versions('mcp_schema')).toEqual([6, 7, 8])
      expect(await versions('notes_schema')).toEqual([6])
      expect(await versions('schema_migrations')).toEqual([1, 2, 3, 4, 5, 6])
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
})

/**
 * {@link sqliteRowsAt} in PostgreSQL: the note's search vectors as the notes store builds them
 * (empty ones do: no search is asked here), its tags an array.
 */
function postgresRows(step: number): string {
  return sqliteRowsAt(step)
    .replace(
      `INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
      VALUES ('n_oldnote00000000', 'p', 'Kept', 'from before', '["old"]', ${T0}, ${T0}, 1)`,
      `INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version,
        title_tsv, tags_tsv, body_tsv)
      VALUES ('n_oldnote00000000', 'p', 'Kept', 'from before', '{old}', ${T0}, ${T0}, 1, '', '', '')`
    )
    .replace(`${T0 + 10_000}, 0,`, `${T0 + 10_000}, false,`)
}
