/**
 * The benchmark's targets (`scripts/bench/report.ts` `formatTargets`): each is judged from the
 * report's own figures, ours against every peer of a scenario and, for the listen streams, our p99
 * from a change to every stream against the SDK's; a missed one says MISSED, a disturbed run is not
 * judged.
 */
import { describe, expect, it } from 'vitest'
import { formatTargets, type BenchReport } from '../../scripts/bench/report.ts'

const streams = (p99: number) => ({ allDeliveredMs: { p50: p99 / 2, p99 } })

function report(disturbed = false): BenchReport {
  return {
    meta: {},
    scenarios: {
      tools_list: {
        unit: 'request',
        disturbed,
        ratios: { tmcp: 4.1, fastmcp: 0.9 },
        cpu_ratios: { tmcp: 3, fastmcp: 0.8 },
      },
      listen_scale: {
        unit: 'streams',
        disturbed,
        ours: streams(40),
        sdk: streams(38),
      },
    },
  } as unknown as BenchReport
}

describe('formatTargets', () => {
  it('judges ours against every peer of a scenario', () => {
    const text = formatTargets(report())
    expect(text).toContain(
      'tools_list: ours/tmcp 4.1 (target ≥ 1) met; CPU per request: tmcp uses 3× ours'
    )
    expect(text).toContain('tools_list: ours/fastmcp 0.9 (target ≥ 1) MISSED')
  })

  it('judges the p99 of a change reaching every listen stream against the SDK', () => {
    expect(formatTargets(report())).toContain(
      'listen_scale: change → every stream p99 ours 40 ms, SDK 38 ms (target: no higher) MISSED'
    )
  })

  it('judges nothing in a disturbed run', () => {
    const text = formatTargets(report(true))
    expect(text).not.toMatch(/\bmet\b|MISSED/)
    expect(text).toContain('not judged (disturbed run)')
  })
})
