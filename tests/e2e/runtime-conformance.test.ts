/**
 * The official conformance referee (`scripts/conformance.ts --url`) against the conformance fixture
 * served on the Deno and Bun binaries npm installs (`tests/conformance/fixture-server.ts`, the Node
 * entry as it is: `npm run start:fixture:deno`, `npm run start:fixture:bun`), on Lambda's Node.js
 * runtime as `lambda-local` runs it behind a local function URL (`fixture-lambda.ts`, the streaming
 * handler: `npm run start:fixture:lambda`) and on Netlify's, built as Netlify builds it
 * (`tests/conformance/netlify/`: `npm run start:fixture:netlify`; its 2025 sessions in a scratch
 * PostgreSQL database, skipped visibly without one outside CI): both legs, requirement set
 * 2026-07-28 and, through 2025-era sessions, 2025-11-25, one after the other on one process per
 * runtime. Every scored scenario must pass as on Node (tests/conformance/referee.test.ts), plus the
 * not-scored ones the project passes. Results go to conformance-results/<runtime> and
 * conformance-results/<runtime>-2025; the lists, the runner and the pinning tests are
 * tests/support/conformance.ts's.
 */
import { describeBothLegs, type RequirementSet } from '../support/conformance.ts'
import { createScratchDatabase } from '../../scripts/support/postgres.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { startServer, type Runtime } from '../support/server-process.ts'

const RUNTIMES: ReadonlyArray<Exclude<Runtime, 'node'>> = ['deno', 'bun', 'lambda', 'netlify']
const SUFFIX: Record<RequirementSet, string> = { '2026-07-28': '', '2025-11-25': '-2025' }

/** Netlify's bundle has no SQLite migration files: there the fixture keeps sessions in PostgreSQL. */
const IN_POSTGRES: ReadonlySet<Runtime> = new Set(['netlify'])
const serverUrl = await testDatabaseUrl()

/** The fixture on `runtime` (and its own scratch database, where it keeps sessions in one). */
async function startFixture(runtime: Runtime) {
  const database = IN_POSTGRES.has(runtime) ? await createScratchDatabase(serverUrl!) : undefined
  const fixture = await startServer(
    'fixture',
    database ? { DATABASE_URL: database.url } : {},
    runtime
  ).catch(async (error: unknown) => {
    await database?.drop()
    throw error
  })
  const stop = async () => {
    await fixture.stop()
    await database?.drop()
  }
  return { url: fixture.url, stop }
}

for (const runtime of RUNTIMES) {
  if (IN_POSTGRES.has(runtime) && !serverUrl) continue
  describeBothLegs(
    runtime,
    () => startFixture(runtime),
    (requirements) => `conformance-results/${runtime}${SUFFIX[requirements]}`
  )
}
