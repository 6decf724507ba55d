/**
 * Runs the official conformance referee (`npm run conformance`) against the fixture on Node, one leg
 * per requirement set (2026-07-28, then 2025-11-25 for 2025-era clients), and pins every scored
 * scenario plus the not-scored ones this project passes. The scenario lists, the runner and the pinning
 * tests are shared with the workerd run (tests/e2e/worker-conformance.test.ts) in
 * tests/support/conformance.ts.
 */
import { beforeAll } from 'vitest'
import { describeRefereeRun, runReferee, type RefereeRun } from '../support/conformance.ts'

let modern: RefereeRun | undefined
let legacy: RefereeRun | undefined

beforeAll(async () => {
  // No URL: the script starts the fixture on Node itself, once per leg.
  modern = await runReferee(undefined, '2026-07-28', 'conformance-results/node', 120_000)
  legacy = await runReferee(undefined, '2025-11-25', 'conformance-results/node', 120_000)
}, 270_000)

describeRefereeRun(
  'official conformance referee, requirement set 2026-07-28, on Node',
  '2026-07-28',
  () => modern
)
describeRefereeRun(
  'official conformance referee, requirement set 2025-11-25, on Node',
  '2025-11-25',
  () => legacy
)
