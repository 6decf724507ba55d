/**
 * The official conformance referee (`scripts/conformance.ts --url`) against the conformance fixture
 * (`tests/conformance/fixture-server.ts`, the Node entry as it is) served on the Deno and Bun binaries
 * npm installs (`npm run start:fixture:deno`, `npm run start:fixture:bun`): both legs, requirement set
 * 2026-07-28 and, through 2025-era sessions, 2025-11-25, one after the other on one process per
 * runtime. Every scored scenario must pass as on Node (tests/conformance/referee.test.ts), plus the
 * not-scored ones the project passes. Results go to conformance-results/<runtime> and
 * conformance-results/<runtime>-2025; the lists, the runner and the pinning tests are
 * tests/support/conformance.ts's.
 */
import { afterAll, beforeAll } from 'vitest'
import {
  SCORED_SCENARIOS,
  describeRefereeRun,
  runReferee,
  type RefereeRun,
  type RequirementSet,
} from '../support/conformance.ts'
import { startServer, type Runtime, type ServerProcess } from '../support/server-process.ts'

const RUNTIMES: ReadonlyArray<Exclude<Runtime, 'node'>> = ['deno', 'bun']
const LEGS: ReadonlyArray<{ requirements: RequirementSet; suffix: string }> = [
  { requirements: '2026-07-28', suffix: '' },
  { requirements: '2025-11-25', suffix: '-2025' },
]

for (const runtime of RUNTIMES) {
  let fixture: ServerProcess | undefined
  const runs = new Map<RequirementSet, RefereeRun>()

  beforeAll(async () => {
    fixture = await startServer('fixture', {}, runtime)
    for (const { requirements, suffix } of LEGS) {
      const out = `conformance-results/${runtime}${suffix}`
      const run = await runReferee(fixture.url, requirements, out, 240_000)
      runs.set(requirements, run)
      const scored = SCORED_SCENARIOS[requirements]
      const passing = scored.filter((scenario) => run.summary.get(scenario)?.ok).length
      console.log(
        `Conformance ${requirements} on ${runtime}: ${passing}/${scored.length} scored pass`
      )
    }
  }, 540_000)

  afterAll(async () => {
    await fixture?.stop()
  })

  for (const { requirements } of LEGS) {
    describeRefereeRun(
      `official conformance referee, requirement set ${requirements}, on ${runtime}`,
      requirements,
      () => runs.get(requirements)
    )
  }
}
