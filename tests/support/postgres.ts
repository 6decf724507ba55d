/**
 * @module tests/support/postgres
 * Finds the PostgreSQL server for the tests: `TEST_DATABASE_URL` when set (`.ci/run` sets it after
 * starting one), else the usual local place (`LOCAL_POSTGRES_CANDIDATES`). The probe and the
 * throw-away databases on the server are `scripts/support/postgres.ts`'s (`findPostgresServer`,
 * `createScratchDatabase`), shared with the load test; what is the tests' own is the policy.
 *
 * When none answers: under `CI=true` {@link testDatabaseUrl} throws, so the test file fails (a CI run
 * must never pass by skipping its PostgreSQL tests); elsewhere it warns and answers `undefined`, and
 * the file skips its PostgreSQL tests, visibly.
 */

import { findPostgresServer, LOCAL_POSTGRES_CANDIDATES } from '../../scripts/support/postgres.ts'
import { IN_CI } from './ci.ts'

/**
 * The URL of a PostgreSQL server that answers, with rights to create databases or schemas, or
 * `undefined` when none does (outside CI only: under `CI=true` that throws). `TEST_DATABASE_URL`, when
 * set, is the only candidate.
 */
export async function testDatabaseUrl(): Promise<string | undefined> {
  const fromEnv = process.env.TEST_DATABASE_URL
  const url = await findPostgresServer(fromEnv ? [fromEnv] : LOCAL_POSTGRES_CANDIDATES)
  if (url !== undefined) return url
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
