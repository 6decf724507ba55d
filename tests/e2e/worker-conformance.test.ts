/**
 * The official conformance referee (`scripts/conformance.ts --url`, requirement set 2026-07-28) against
 * the conformance fixture served by workerd through `wrangler dev` (local): every scored scenario must
 * pass on the Worker as it does on Node (tests/conformance/referee.test.ts), plus the three not-scored
 * ones the project passes. Results go to conformance-results/worker. The scenario lists, the runner and
 * the pinning tests are shared with the Node run in tests/support/conformance.ts.
 */
import { afterAll, beforeAll } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import {
  SCORED_SCENARIOS,
  describeRefereeRun,
  runReferee,
  type RefereeRun,
} from '../support/conformance.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

let worker: WorkerProcess | undefined
let run: RefereeRun | undefined

beforeAll(async () => {
  worker = await startWorker({ vars: { STATE_KEYS: formatKeyRing([generateKey()]) } })
  run = await runReferee(worker.url, '2026-07-28', 'conformance-results/worker', 240_000)
  const scored = SCORED_SCENARIOS['2026-07-28']
  const scoredPassing = scored.filter((scenario) => run?.summary.get(scenario)?.ok).length
  console.log(`Conformance on workerd: ${scoredPassing}/${scored.length} scored scenarios pass`)
}, 300_000)

afterAll(async () => {
  await worker?.stop()
})

describeRefereeRun(
  'official conformance referee, requirement set 2026-07-28, on workerd (wrangler dev)',
  '2026-07-28',
  () => run
)
