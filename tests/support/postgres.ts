/**
 * @module tests/support/postgres
 * Finds a PostgreSQL server for the tests and hands out throw-away databases on it. A server is taken
 * from `TEST_DATABASE_URL` when set (`.ci/run` sets it after starting one), else from the usual local
 * place (TCP on 127.0.0.1:5432 as `postgres`, with password `postgres` or without: the store takes a URL
 * only, and the driver cannot name a unix socket in one).
 *
 * When none answers: under `CI=true` {@link testDatabaseUrl} throws, so the test file fails (a CI run
 * must never pass by skipping its PostgreSQL tests); elsewhere it warns and answers `undefined`, and
 * the file skips its PostgreSQL tests, visibly.
 */

import postgres from 'postgres'
import { IN_CI } from './ci.ts'

const CANDIDATES = [
  'postgres://postgres:postgres@127.0.0.1:5432/postgres',
  'postgres://postgres@127.0.0.1:5432/postgres',
]

/** Seconds to wait for a candidate server to answer. */
const PROBE_TIMEOUT_S = 3

/**
 * The URL of a PostgreSQL server that answers, with rights to create databases or schemas, or
 * `undefined` when none does (outside CI only: under `CI=true` that throws). `TEST_DATABASE_URL`, when
 * set, is the only candidate.
 */
export async function testDatabaseUrl(): Promise<string | undefined> {
  const fromEnv = process.env.TEST_DATABASE_URL
  const candidates = fromEnv ? [fromEnv] : CANDIDATES
  for (const url of candidates) {
    if (await answers(url)) return url
  }
  const missing = fromEnv
    ? `TEST_DATABASE_URL (${redacted(fromEnv)}) does not answer`
    : `no PostgreSQL server answers on 127.0.0.1:5432 and TEST_DATABASE_URL is not set`
  if (IN_CI) {
    throw new Error(`${missing}; under CI=true the PostgreSQL tests must run, not skip`)
  }
  console.warn(`PostgreSQL tests skipped: ${missing} (set TEST_DATABASE_URL or run .ci/run)`)
  return undefined
}

/** The URL without its password, for messages. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.href
  } catch {
    return 'not a URL'
  }
}

async function answers(url: string): Promise<boolean> {
  const sql = postgres(url, {
    max: 1,
    connect_timeout: PROBE_TIMEOUT_S,
    onnotice: () => {},
  })
  try {
    await sql`SELECT 1`
    return true
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {})
  }
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
