/**
 * @module tests/unit/sqlite-group-commit
 * The node:sqlite driver's group commit (`src/mcp/stores/sqlite/node-sqlite.ts`): the statements
 * asked for in one turn of the event loop run in one transaction when the turn ends, and each
 * caller is answered as if its statement had run alone. Tries to break it: a constraint failure beside good writes, a
 * failed batch, a full disk (a failure that ends the transaction), a failed commit, a read asked
 * for after a write, `close()` with a group pending, and another process's connection wanting the
 * write lock while a group waits for its turn to end (it must not wait for the turn).
 */
import { DatabaseSync } from 'node:sqlite'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeSqliteDriver } from '../../src/mcp/sqlite.ts'
import { tempDataDir } from '../../scripts/support/local-resources.ts'

let directory: string
let driver: NodeSqliteDriver
/** A second connection to the same file, as another server process would hold. */
let other: DatabaseSync

type Settled = { ok: unknown } | { error: string }
const settle = (promise: Promise<unknown>): Promise<Settled> =>
  promise.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) })
  )
/** A statement's failure, as `settle` answers it, whose message contains `text`. */
const failedWith = (text: string) => ({ error: expect.stringContaining(text) as string })
/** Asks the driver to insert the row `key`, `value` into `t`. */
const insert = (key: string, value = 'x') => driver.run('INSERT INTO t VALUES (?, ?)', [key, value])
const keys = (): string[] =>
  other
    .prepare('SELECT k FROM t ORDER BY k')
    .all()
    .map((row) => String(row.k))

beforeEach(async () => {
  directory = await tempDataDir('notes-mcp-group-commit-')
  const path = join(directory, 'notes.db')
  driver = new NodeSqliteDriver({ path })
  await driver.migrate()
  await driver.run('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)', [])
  await insert('taken')
  other = new DatabaseSync(path, { timeout: 0 })
})

afterEach(async () => {
  other.close()
  await driver.close()
  rmSync(directory, { recursive: true, force: true })
})

describe('group commit (node:sqlite driver)', () => {
  it('answers a constraint failure to its caller alone and commits the rest of the turn', async () => {
    const results = await Promise.all(
      [insert('a', '1'), insert('taken', '2'), insert('c', '3')].map(settle)
    )
    expect(results).toEqual([{ ok: 1 }, failedWith('UNIQUE constraint failed'), { ok: 1 }])
    expect(keys()).toEqual(['a', 'c', 'taken'])
  })

  it('undoes a failed batch alone: none of its statements apply, its neighbours do', async () => {
    const results = await Promise.all(
      [
        insert('before'),
        driver.batch([
          { sql: "INSERT INTO t VALUES ('in-batch', 'x')", params: [] },
          { sql: "INSERT INTO t VALUES ('taken', 'x')", params: [] },
        ]),
        insert('after'),
      ].map(settle)
    )
    expect(results.map((result) => 'ok' in result)).toEqual([true, false, true])
    expect(keys()).toEqual(['after', 'before', 'taken'])
  })

  it('hands out a read asked for after a write of the same turn with that write, once committed', async () => {
    const write = insert('r', 'fresh')
    const read = driver.get("SELECT v FROM t WHERE k = 'r'", []).then((row) => ({
      row: row?.v,
      // What another connection sees when the read is answered: the write is committed.
      elsewhere: other.prepare("SELECT v FROM t WHERE k = 'r'").get()?.v,
    }))
    expect(await read).toEqual({ row: 'fresh', elsewhere: 'fresh' })
    expect(await write).toBe(1)
  })

  it('does not hold the write lock while the turn goes on: another connection takes it at once', async () => {
    const write = insert('queued')
    // Still this turn: the write is queued, and the file's write lock is free (busy timeout 0).
    other.exec('BEGIN IMMEDIATE')
    other.exec("INSERT INTO t VALUES ('other', 'x')")
    other.exec('COMMIT')
    expect(await write).toBe(1)
    expect(keys()).toEqual(['other', 'queued', 'taken'])
  })

  it('when one statement ends the transaction (a full disk), fails that one and runs the others again alone', async () => {
    await driver.run('CREATE TABLE big (b BLOB)', [])
    const pages = Number(other.prepare('PRAGMA page_count').get()?.page_count)
    const limit = driver.run(`PRAGMA max_page_count = ${pages + 5}`, [])
    const results = await Promise.all(
      [
        insert('small'),
        driver.run('INSERT INTO big VALUES (zeroblob(10000000))', []),
        insert('later'),
      ].map(settle)
    )
    await limit
    expect(results).toEqual([{ ok: 1 }, failedWith('full'), { ok: 1 }])
    expect(keys()).toEqual(['later', 'small', 'taken'])
    expect(other.prepare('SELECT count(*) AS n FROM big').get()?.n).toBe(0)
  })

  it('when the commit fails, answers the statement that made it fail with its error and commits the others', async () => {
    await driver.run('CREATE TABLE parent (id INTEGER PRIMARY KEY)', [])
    await driver.run(
      'CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)',
      []
    )
    const results = await Promise.all(
      [
        insert('good'),
        driver.run('INSERT INTO child VALUES (99)', []),
        driver.get("SELECT k FROM t WHERE k = 'good'", []),
      ].map(settle)
    )
    expect(results).toEqual([
      { ok: 1 },
      failedWith('FOREIGN KEY constraint failed'),
      { ok: { k: 'good' } },
    ])
    expect(keys()).toEqual(['good', 'taken'])
    expect(await insert('next')).toBe(1)
  })

  it('commits a pending group on close() and answers its callers', async () => {
    const write = settle(insert('closing'))
    await driver.close()
    expect(await write).toEqual({ ok: 1 })
    expect(keys()).toEqual(['closing', 'taken'])
  })
})
