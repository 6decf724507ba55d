/**
 * The official conformance referee (`scripts/conformance.ts --url`) against the conformance fixture
 * served by workerd through `wrangler dev` (local, its D1 database migrated, the Durable Object event
 * bus bound), both legs one after the other on the same Worker: requirement set 2026-07-28 and, through
 * 2025-era sessions, 2025-11-25. Every scored scenario must pass on the Worker as it does on Node
 * (tests/conformance/referee.test.ts), plus the not-scored ones the project passes. Results go to
 * conformance-results/worker and conformance-results/worker-2025. The scenario lists, the runner and
 * the pinning tests are shared with the Node run in tests/support/conformance.ts.
 */
import { afterAll, beforeAll } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import {
  SCORED_SCENARIOS,
  describeRefereeRun,
  runReferee,
  type RefereeRun,
  type RequirementSet,
} from '../support/conformance.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

const LEGS: ReadonlyArray<{ requirements: RequirementSet; out: string }> = [
  { requirements: '2026-07-28', out: 'conformance-results/worker' },
  { requirements: '2025-11-25', out: 'conformance-results/worker-2025' },
]

let worker: WorkerProcess | undefined
const runs = new Map<RequirementSet, RefereeRun>()

beforeAll(async () => {
  worker = await startWorker({ vars: { STATE_KEYS: formatKeyRing([generateKey()]) } })
  for (const { requirements, out } of LEGS) {
    const run = await runReferee(worker.url, requirements, out, 240_000)
    runs.set(requirements, run)
    const scored = SCORED_SCENARIOS[requirements]
    const passing = scored.filter((scenario) => run.summary.get(scenario)?.ok).length
    console.log(`Conformance ${requirements} on workerd: ${passing}/${scored.length} scored pass`)
  }
}, 540_000)

afterAll(async () => {
  await worker?.stop()
})

for (const { requirements } of LEGS) {
  describeRefereeRun(
    `official conformance referee, requirement set ${requirements}, on workerd (wrangler dev)`,
    requirements,
    () => runs.get(requirements)
  )
}
