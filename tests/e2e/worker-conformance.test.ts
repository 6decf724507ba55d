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
  REQUIREMENT_SETS,
  describeRefereeRun,
  runBothLegs,
  type RefereeRun,
  type RequirementSet,
} from '../support/conformance.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

const OUT: Record<RequirementSet, string> = {
  '2026-07-28': 'conformance-results/worker',
  '2025-11-25': 'conformance-results/worker-2025',
}

let worker: WorkerProcess | undefined
let runs = new Map<RequirementSet, RefereeRun>()

beforeAll(async () => {
  worker = await startWorker({ vars: { STATE_KEYS: formatKeyRing([generateKey()]) } })
  runs = await runBothLegs(worker.url, 'workerd', (requirements) => OUT[requirements], 240_000)
}, 540_000)

afterAll(async () => {
  await worker?.stop()
})

for (const requirements of REQUIREMENT_SETS) {
  describeRefereeRun(
    `official conformance referee, requirement set ${requirements}, on workerd (wrangler dev)`,
    requirements,
    () => runs.get(requirements)
  )
}
