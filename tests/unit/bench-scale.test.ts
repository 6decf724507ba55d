/**
 * The listen-scale scenario's judging (`scripts/bench/report.ts`): which side bounded a fan-out's
 * delivery times (`fanOutLimit`, from the cores the server and the load generator used during it),
 * the comparison with the SDK (fan-out time only at the same number of streams, memory and CPU per
 * stream and notification at any), and the table's row of our figures from before issue 36.
 */
import { describe, expect, it } from 'vitest'
import {
  fanOutLimit,
  formatTable,
  LISTEN_BASELINE,
  scaleReport,
  type ScaleFigures,
} from '../../scripts/bench/report.ts'
import { SCENARIOS, type ScaleScenario } from '../../scripts/bench/scenarios.ts'

const scenario = SCENARIOS.find((s) => s.name === 'listen_scale') as ScaleScenario
const percentiles = (p50: number, p99: number) => ({ p50, p90: p99, p99, mean: p50, max: p99 })

function figures(opened: number, overrides: Partial<ScaleFigures> = {}): ScaleFigures {
  return {
    streams: opened,
    opened,
    openSeconds: 1,
    rssBeforeMiB: 100,
    rssWithStreamsMiB: 300,
    rssPerStreamKiB: 20,
    changes: 20,
    deliveries: opened * 20,
    missed: 0,
    deliveryMs: percentiles(100, 200),
    allDeliveredMs: percentiles(200, 300),
    cpuUsPerDelivery: 10,
    peakRssMiB: 310,
    errors: 0,
    backgroundCores: 0,
    fanOutSeconds: 4,
    serverCores: 0.95,
    loadgenCores: 0.5,
    limit: 'server',
    ...overrides,
  }
}

describe('fanOutLimit', () => {
  it('names the side that kept its core busy, the busier of the two', () => {
    expect(fanOutLimit(0.95, 0.5, 0)).toBe('server')
    expect(fanOutLimit(0.6, 0.99, 0)).toBe('load generator')
    expect(fanOutLimit(0.9, 0.9, 1.5)).toBe('server')
  })

  it('names other load when both waited while other processes used the cores, else neither', () => {
    expect(fanOutLimit(0.22, 0.16, 1.69)).toBe('other load')
    expect(fanOutLimit(0.5, 0.6, 0.1)).toBe('neither')
    expect(fanOutLimit(0.5, 0.6, null)).toBe('neither')
  })

  it('names nothing without the CPU figures', () => {
    expect(fanOutLimit(null, 0.9, 0)).toBeNull()
    expect(fanOutLimit(0.9, null, 0)).toBeNull()
  })
})

describe('scaleReport', () => {
  it('runs the SDK at most at 1,000 streams, the most it holds', () => {
    expect(scenario.maxStreams?.sdk).toBe(1000)
  })

  it('compares the fan-out time with the SDK only at the same number of streams', () => {
    const same = scaleReport(scenario, { ours: figures(1000), sdk: figures(1000) })
    expect(same.ratio_vs_sdk).toBe(1)
    const other = scaleReport(scenario, {
      ours: figures(10_000, { rssPerStreamKiB: 10, cpuUsPerDelivery: 5 }),
      sdk: figures(1000),
    })
    expect(other.ratio_vs_sdk).toBeNull()
    expect(other.memory_ratio_vs_sdk).toBe(2)
    expect(other.cpu_ratio_vs_sdk).toBe(2)
    expect(other.baseline).toEqual(LISTEN_BASELINE)
  })

  it("prints the limit with both sides' cores and our figures from before issue 36", () => {
    const table = formatTable({
      meta: {},
      scenarios: {
        listen_scale: scaleReport(scenario, {
          ours: figures(10_000, { limit: 'load generator', serverCores: 0.4, loadgenCores: 1 }),
        }),
      },
    })
    expect(table).toContain('| load generator (0.40 / 1.00) |')
    expect(table).toContain(
      `| listen_scale | ours before (${LISTEN_BASELINE.source}) | 10,000 | 28.8 | | 303 / 512 | 30.0 |`
    )
  })
})
