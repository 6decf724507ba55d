/**
 * The official conformance referee (`scripts/conformance.ts --url`) against the conformance fixture
 * served on the Deno and Bun binaries npm installs (`tests/conformance/fixture-server.ts`, the Node
 * entry as it is: `npm run start:fixture:deno`, `npm run start:fixture:bun`) and on Lambda's Node.js
 * runtime as `lambda-local` runs it behind a local function URL (`tests/conformance/fixture-lambda.ts`,
 * the streaming handler: `npm run start:fixture:lambda`): both legs, requirement set
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
import { startServer, type Runtime, type ServerProcess } from '../support/server-process.ts'

const RUNTIMES: ReadonlyArray<Exclude<Runtime, 'node'>> = ['deno', 'bun', 'lambda']
const SUFFIX: Record<RequirementSet, string> = { '2026-07-28': '', '2025-11-25': '-2025' }

for (const runtime of RUNTIMES) {
  let fixture: ServerProcess | undefined
  let runs = new Map<RequirementSet, RefereeRun>()

  beforeAll(async () => {
    fixture = await startServer('fixture', {}, runtime)
    const outOf = (requirements: RequirementSet) =>
      `conformance-results/${runtime}${SUFFIX[requirements]}`
    runs = await runBothLegs(fixture.url, runtime, outOf, 240_000)
  }, 540_000)

  afterAll(async () => {
    await fixture?.stop()
  })

  for (const requirements of REQUIREMENT_SETS) {
    describeRefereeRun(
      `official conformance referee, requirement set ${requirements}, on ${runtime}`,
      requirements,
      () => runs.get(requirements)
    )
  }
}
