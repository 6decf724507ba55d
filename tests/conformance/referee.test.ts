/**
 * Runs the official conformance referee (`npm run conformance`, requirement set 2026-07-28) against
 * the fixture and pins every scored scenario plus the three not-scored ones this project passes. The
 * scenario lists, the runner and the pinning tests are shared with the workerd run
 * (tests/e2e/worker-conformance.test.ts) in tests/support/conformance.ts.
 */
import { beforeAll } from 'vitest'
import { describeRefereeRun, runReferee, type RefereeRun } from '../support/conformance.ts'

let run: RefereeRun | undefined

beforeAll(async () => {
  // No URL: the script starts the fixture on Node itself.
  run = await runReferee(undefined, 'conformance-results/node', 120_000)
}, 150_000)

describeRefereeRun('official conformance referee, requirement set 2026-07-28, on Node', () => run)
