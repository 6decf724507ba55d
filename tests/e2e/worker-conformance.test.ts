/**
 * The official conformance referee (`scripts/conformance.ts --url`) against the conformance fixture
 * served by workerd through `wrangler dev` (local, its D1 database migrated, the Durable Object event
 * bus bound), both legs one after the other on the same Worker: requirement set 2026-07-28 and, through
 * 2025-era sessions, 2025-11-25. Every scored scenario must pass on the Worker as it does on Node
 * (tests/conformance/referee.test.ts), plus the not-scored ones the project passes. Results go to
 * conformance-results/worker and conformance-results/worker-2025. The scenario lists, the runner and
 * the pinning tests are shared with the Node run in tests/support/conformance.ts.
 */
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { describeBothLegs, type RequirementSet } from '../support/conformance.ts'
import { startWorker } from '../workers/wrangler-dev.ts'

const OUT: Record<RequirementSet, string> = {
  '2026-07-28': 'conformance-results/worker',
  '2025-11-25': 'conformance-results/worker-2025',
}

describeBothLegs(
  'workerd (wrangler dev)',
  () => startWorker({ vars: { STATE_KEYS: formatKeyRing([generateKey()]) } }),
  (requirements) => OUT[requirements]
)
