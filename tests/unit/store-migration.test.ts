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
import { readdirSync, readFileSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { createScratchDatabase, type ScratchDatabase } from '../../scripts/support/postgres.ts'
import { ENGINE_POSTGRES_SCHEMA } from '../../src/mcp/stores/postgres/schema.ts'
import { openPostgresStores } from '../../src/storage/postgres.ts'
import { NOTES_POSTGRES_SCHEMA } from '../../src/storage/postgres/schema.ts'
import { openSqliteStores } from '../../src/storage/sqlite.ts'
import { expectBroughtForward, sqliteRowsAt, T0 } from '../support/older-deployment.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { scratchFiles } from '../support/scratch-files.ts'

/** The steps of the shared schema `step` and before, as their files under `migrations/`. */
function sqliteFilesUpTo(step: number): string[] {
  const dir = new URL('../../migrations/', import.meta.url)
  return readdirSync(dir)
    .filter((file) => Number(/^(\d+)_/.exec(file)?.[1]) <= step)
    .sort()
    .map((file) => readFileSync(new URL(file, dir), 'utf8'))
}

describe('a node:sqlite file of an older deployment', () => {
  const scratch = scratchFiles('notes-migration-')

  /** A file with the shared schema applied up to `step` as the node:sqlite store of then did. */
  function olderFile(step: number): string {
    const path = scratch('older.db')
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
    async (step) => expectBroughtForward(openSqliteStores({ path: olderFile(step) }), step)
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
    expect(versions('notes_schema')).toEqual([6, 9])
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
    async (step) =>
      expectBroughtForward(openPostgresStores({ url: await olderDatabase(step) }), step)
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
      expect(await versions('notes_schema')).toEqual([6, 9])
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
