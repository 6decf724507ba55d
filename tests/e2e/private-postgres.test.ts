/**
 * The private PostgreSQL controller (`scripts/support/private-postgres.ts`) that the database faults
 * of the load test and the outage tests use: a server of our own that answers, restarts cleanly,
 * survives a SIGKILL of its postmaster and backends with crash recovery (a committed row is still
 * there), and leaves nothing behind. Skipped, visibly, without the PostgreSQL server binaries; under
 * `CI=true` their absence fails the file.
 */
import { existsSync, readFileSync } from 'node:fs'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import {
  privatePostgresAvailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../scripts/support/private-postgres.ts'
import { serviceTestsRun } from '../support/ci.ts'

const binariesFound = serviceTestsRun(
  'private PostgreSQL tests',
  privatePostgresAvailable(),
  'no PostgreSQL server binaries (initdb, postgres) are installed'
)

let server: PrivatePostgres | undefined

afterAll(() => server?.dispose())

/** One short connection: the rows of `query`. */
async function rows(url: string, query: string): Promise<Record<string, unknown>[]> {
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    return [...(await sql.unsafe(query))]
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Whether process `pid` runs (a zombie does not). */
function runs(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!)
  } catch {
    return false
  }
}

/** The parent of process `pid`. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
}

describe.skipIf(!binariesFound)('a private PostgreSQL server', () => {
  it('answers, restarts, crash-recovers after a kill and is removed on dispose', async () => {
    server = await startPrivatePostgres()
    expect(server.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/)
    await rows(server.url, 'CREATE TABLE kept (value text)')
    await rows(server.url, "INSERT INTO kept VALUES ('before restart')")

    await server.restart()
    expect(await rows(server.url, 'SELECT value FROM kept')).toEqual([{ value: 'before restart' }])

    await rows(server.url, "INSERT INTO kept VALUES ('before kill')")
    const held = postgres(server.url, { max: 1, onnotice: () => {} })
    const [row] = await held`SELECT pg_backend_pid() AS pid`
    const backend = Number(row!.pid)
    const postmaster = parentOf(backend)
    await server.kill()
    expect([runs(postmaster), runs(backend)]).toEqual([false, false])
    await expect(held`SELECT 1`).rejects.toThrow()
    await held.end({ timeout: 1 }).catch(() => {})
    await expect(rows(server.url, 'SELECT 1')).rejects.toThrow()

    await server.start()
    expect(await rows(server.url, 'SELECT value FROM kept ORDER BY value')).toEqual([
      { value: 'before kill' },
      { value: 'before restart' },
    ])

    await server.stop('immediate')
    await expect(rows(server.url, 'SELECT 1')).rejects.toThrow()
    await server.start()
    expect(await rows(server.url, 'SELECT count(*)::int AS n FROM kept')).toEqual([{ n: 2 }])

    const dataDir = (await rows(server.url, 'SHOW data_directory'))[0]!.data_directory as string
    await server.dispose()
    server = undefined
    expect(existsSync(dataDir)).toBe(false)
  }, 120_000)
})
