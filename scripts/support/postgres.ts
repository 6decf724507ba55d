/**
 * @module scripts/support/postgres
 * A PostgreSQL server to work on and throw-away databases on it, for the load test and the tests.
 * {@link findPostgresServer} answers the first of some candidate URLs whose server answers (by default
 * the usual local place: TCP on 127.0.0.1:5432 as `postgres`, with password `postgres` or without; the
 * store takes a URL only, and the driver cannot name a unix socket in one). {@link createScratchDatabase}
 * makes a uniquely named database, or a schema when the role may not create databases.
 *
 * Policy is the caller's: which variable names a server, whether a missing server is an error (the
 * tests under `CI=true`, `tests/support/postgres.ts`; the load test with `--store postgres`) or a
 * reason to use SQLite.
 */
import postgres from 'postgres'

/** Where a local development server usually answers. */
export const LOCAL_POSTGRES_CANDIDATES: readonly string[] = [
  'postgres://postgres:postgres@127.0.0.1:5432/postgres',
  'postgres://postgres@127.0.0.1:5432/postgres',
]

/** Seconds to wait for a candidate server to answer. */
const PROBE_TIMEOUT_S = 3

/** Whether the server behind `url` answers a query within a few seconds. */
export async function postgresAnswers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: PROBE_TIMEOUT_S, onnotice: () => {} })
  try {
    await sql`SELECT 1`
    return true
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {})
  }
}

/** The first of `candidates` whose server answers, or `undefined` when none does. */
export async function findPostgresServer(
  candidates: readonly string[] = LOCAL_POSTGRES_CANDIDATES
): Promise<string | undefined> {
  for (const url of candidates) {
    if (await postgresAnswers(url)) return url
  }
  return undefined
}

/** A throw-away database (or, without CREATEDB rights, schema) and the URL that reaches it. */
export interface ScratchDatabase {
  url: string
  drop(): Promise<void>
}

export interface ScratchOptions {
  /** Defaults to `UTF8`. */
  encoding?: 'UTF8' | 'SQL_ASCII'
  /** `LOCALE` of the new database (e.g. `C`); the server's default when absent. */
  locale?: 'C' | 'C.UTF-8'
}

/**
 * Creates a uniquely named database (UTF8 unless told otherwise) on the server behind `serverUrl`; when
 * the role may not create databases, a uniquely named schema made the connection's `search_path`
 * instead (then `options` are ignored).
 */
export async function createScratchDatabase(
  serverUrl: string,
  options: ScratchOptions = {}
): Promise<ScratchDatabase> {
  const name = `notes_test_${Date.now().toString(36)}_${randomHex(6)}`
  const encoding = options.encoding ?? 'UTF8'
  const locale = options.locale === undefined ? '' : ` LOCALE '${options.locale}'`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING '${encoding}'${locale}`)
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    return {
      url: url.href,
      drop: async () => {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await admin.end({ timeout: 5 })
      },
    }
  } catch (error) {
    if ((error as { code?: string }).code !== '42501') {
      await admin.end({ timeout: 5 })
      throw error
    }
    await admin.unsafe(`CREATE SCHEMA ${name}`)
    const url = new URL(serverUrl)
    url.searchParams.set('search_path', name)
    return {
      url: url.href,
      drop: async () => {
        await admin.unsafe(`DROP SCHEMA IF EXISTS ${name} CASCADE`)
        await admin.end({ timeout: 5 })
      },
    }
  }
}

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) =>
    b.toString(16).padStart(2, '0')
  ).join('')
}
