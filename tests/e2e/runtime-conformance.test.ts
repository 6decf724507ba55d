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
import { afterAll, beforeAll } from 'vitest'
import {
  REQUIREMENT_SETS,
  describeRefereeRun,
  runBothLegs,
  type RefereeRun,
  type RequirementSet,
} from '../support/conformance.ts'
import { createScratchDatabase, type ScratchDatabase } from '../../scripts/support/postgres.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { startServer, type Runtime, type ServerProcess } from '../support/server-process.ts'

const RUNTIMES: ReadonlyArray<Exclude<Runtime, 'node'>> = ['deno', 'bun', 'lambda', 'netlify']
const SUFFIX: Record<RequirementSet, string> = { '2026-07-28': '', '2025-11-25': '-2025' }

/** Netlify's bundle has no SQLite migration files: there the fixture keeps sessions in PostgreSQL. */
const IN_POSTGRES: ReadonlySet<Runtime> = new Set(['netlify'])
const serverUrl = await testDatabaseUrl()

for (const runtime of RUNTIMES) {
  if (IN_POSTGRES.has(runtime) && !serverUrl) continue
  let fixture: ServerProcess | undefined
  let database: ScratchDatabase | undefined
  let runs = new Map<RequirementSet, RefereeRun>()

  beforeAll(async () => {
    if (IN_POSTGRES.has(runtime)) database = await createScratchDatabase(serverUrl!)
    fixture = await startServer('fixture', database ? { DATABASE_URL: database.url } : {}, runtime)
    const outOf = (requirements: RequirementSet) =>
      `conformance-results/${runtime}${SUFFIX[requirements]}`
    runs = await runBothLegs(fixture.url, runtime, outOf, 240_000)
  }, 540_000)

  afterAll(async () => {
    await fixture?.stop()
    await database?.drop()
  })

  for (const requirements of REQUIREMENT_SETS) {
    describeRefereeRun(
      `official conformance referee, requirement set ${requirements}, on ${runtime}`,
      requirements,
      () => runs.get(requirements)
    )
  }
}
