/**
 * Adoption of the older shared bookkeeping (`schema_migrations`, D1's `d1_migrations`) is for the
 * databases older notes-mcp deployments made, and nothing else: another tool's bookkeeping table of
 * the same name in the same database does not make the engine skip its tables, and a schema of the
 * user's own starts from its own table even in a database an older deployment made. Each case is
 * tried on node:sqlite (whose driver reads both bookkeeping tables, as D1's does) and PostgreSQL.
 *
 * PostgreSQL needs a server (tests/support/postgres.ts): without one the file fails under `CI=true`.
 */
import { DatabaseSync } from 'node:sqlite'
import postgres, { type Sql } from 'postgres'
import { migratePostgresSchema, PostgresEngineStore } from 'stateless-mcp/postgres'
import { NodeSqliteDriver, SqliteEngineStore } from 'stateless-mcp/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import { createScratchDatabase, type ScratchDatabase } from '../../scripts/support/postgres.ts'
import { ENGINE_POSTGRES_SCHEMA } from '../../src/mcp/stores/postgres/schema.ts'
import { ENGINE_SQLITE_SCHEMA } from '../../src/mcp/stores/sqlite/schema.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { scratchFiles } from '../support/scratch-files.ts'

/** The tables a schema's steps create, by name. */
function tablesOf(schema: { steps: readonly { statements: readonly string[] }[] }): string[] {
  const names = schema.steps.flatMap((step) =>
    step.statements.flatMap((sql) => [...sql.matchAll(/CREATE TABLE (\w+)/g)].map((m) => m[1]!))
  )
  return [...new Set(names)].sort()
}

const ENGINE_STEPS = ENGINE_SQLITE_SCHEMA.steps.map((step) => step.version)
/** What `mcp_schema` records once every engine step is applied, none adopted. */
const EVERY_STEP = { first: Math.min(...ENGINE_STEPS), last: Math.max(...ENGINE_STEPS) }

/** A schema of the user's own, numbered from 1 as a new application would. */
const BOOKMARKS = {
  table: 'bookmarks_schema',
  steps: [
    { version: 1, statements: ['CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, url TEXT)'] },
  ],
}

describe('node:sqlite', () => {
  const scratch = scratchFiles('notes-adoption-')

  /** A file holding `setup`'s tables. */
  function file(setup: string): string {
    const path = scratch('adoption.db')
    const db = new DatabaseSync(path)
    db.exec(setup)
    db.close()
    return path
  }

  function read(path: string, sql: string): Record<string, unknown>[] {
    const db = new DatabaseSync(path, { readOnly: true })
    try {
      return db.prepare(sql).all()
    } finally {
      db.close()
    }
  }

  const tables = (path: string) =>
    read(path, "SELECT name FROM sqlite_master WHERE type = 'table'").map((row) => row.name)

  it.each([
    [
      "another tool's schema_migrations",
      'schema_migrations',
      `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, dirty INTEGER NOT NULL);
       INSERT INTO schema_migrations VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)`,
    ],
    [
      "another project's d1_migrations",
      'd1_migrations',
      `CREATE TABLE d1_migrations (id INTEGER PRIMARY KEY, name TEXT UNIQUE, applied_at TEXT);
       INSERT INTO d1_migrations (name) VALUES ('0001_init.sql'), ('0002_users.sql'),
         ('0003_orders.sql'), ('0004_index.sql'), ('0005_audit.sql')`,
    ],
  ])('beside %s, the engine makes every one of its tables', async (_, bookkeeping, setup) => {
    const path = file(setup)
    const theirs = read(path, `SELECT * FROM ${bookkeeping}`)
    const store = new SqliteEngineStore({ path })
    try {
      await store.migrate()
    } finally {
      await store.close()
    }
    expect(read(path, `SELECT * FROM ${bookkeeping}`)).toEqual(theirs)
    expect(tables(path)).toEqual(expect.arrayContaining(tablesOf(ENGINE_SQLITE_SCHEMA)))
    expect(
      read(path, 'SELECT min(version) AS first, max(version) AS last FROM mcp_schema')
    ).toEqual([EVERY_STEP])
  })

  it("a user's schema starts from step 1 in a file an older deployment made", async () => {
    const path = file(
      `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
       CREATE TABLE used_keys (once_key TEXT PRIMARY KEY, used_at INTEGER NOT NULL);
       INSERT INTO schema_migrations VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0)`
    )
    const driver = new NodeSqliteDriver({ path })
    try {
      await driver.migrate(BOOKMARKS)
    } finally {
      await driver.close()
    }
    expect(tables(path)).toContain('bookmarks')
    expect(read(path, 'SELECT version FROM bookmarks_schema')).toEqual([{ version: 1 }])
  })
})

const serverUrl = await testDatabaseUrl()

describe.skipIf(serverUrl === undefined)('PostgreSQL', () => {
  const scratches: ScratchDatabase[] = []
  afterAll(async () => {
    for (const scratch of scratches) await scratch.drop()
  })

  /** A scratch database holding `setup`'s tables, and a connection to it. */
  async function database(setup: string): Promise<{ url: string; sql: Sql }> {
    const scratch = await createScratchDatabase(serverUrl as string)
    scratches.push(scratch)
    const sql = postgres(scratch.url, { max: 1, onnotice: () => {} })
    try {
      for (const statement of setup.split(';')) await sql.unsafe(statement)
    } catch (error) {
      await sql.end({ timeout: 5 })
      throw error
    }
    return { url: scratch.url, sql }
  }

  const tables = async (sql: Sql) =>
    (
      await sql<{ name: string }[]>`
        SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`
    ).map((row) => row.name)

  it("beside another tool's schema_migrations, the engine makes every one of its tables", async () => {
    const { url, sql } = await database(
      `CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL);
       INSERT INTO schema_migrations SELECT v, false FROM generate_series(1, 6) AS v`
    )
    try {
      const theirs = await sql`SELECT * FROM schema_migrations ORDER BY version`
      const store = new PostgresEngineStore({ url })
      try {
        await store.migrate()
      } finally {
        await store.close()
      }
      expect(await sql`SELECT * FROM schema_migrations ORDER BY version`).toEqual(theirs)
      expect(await tables(sql)).toEqual(expect.arrayContaining(tablesOf(ENGINE_POSTGRES_SCHEMA)))
      expect(await sql`SELECT min(version) AS first, max(version) AS last FROM mcp_schema`).toEqual(
        [EVERY_STEP]
      )
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

  it("a user's schema starts from step 1 in a database an older deployment made", async () => {
    const { sql } = await database(
      `CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL);
       CREATE TABLE used_keys (once_key text PRIMARY KEY, used_at bigint NOT NULL);
       INSERT INTO schema_migrations SELECT v, 0 FROM generate_series(1, 8) AS v`
    )
    try {
      await migratePostgresSchema(sql, {
        table: 'bookmarks_schema',
        steps: [
          { version: 1, statements: ['CREATE TABLE bookmarks (id serial PRIMARY KEY, url text)'] },
        ],
      })
      expect(await tables(sql)).toContain('bookmarks')
      expect(await sql`SELECT version FROM bookmarks_schema`).toEqual([{ version: 1 }])
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
})
