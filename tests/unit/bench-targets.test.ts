/**
 * The benchmark's targets (`scripts/bench/report.ts` `formatTargets`): each is judged from the
 * report's own figures, ours against every peer of a scenario and, for the listen streams, our p99
 * from a change to every stream against the SDK's at the same number of streams, and our CPU per
 * notification and memory per stream against issue 36's aims; a missed one says MISSED, a
 * disturbed run is not judged, and a run the load generator bounded says so.
 */
import { describe, expect, it } from 'vitest'
import { formatTargets, LISTEN_BASELINE, type BenchReport } from '../../scripts/bench/report.ts'

const streams = (p99: number, opened = 1000) => ({
  opened,
  allDeliveredMs: { p50: p99 / 2, p99 },
  cpuUsPerDelivery: 4.5,
  rssPerStreamKiB: 24,
  limit: 'server',
  serverCores: 0.9,
  loadgenCores: 0.4,
})

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
        baseline: LISTEN_BASELINE,
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
      'listen_scale: change → every stream p99 ours 40 ms at 1000 streams, SDK 38 ms at 1000 ' +
        '(target: no higher at the same count) MISSED'
    )
  })

  it('does not judge the fan-out time against the SDK at another number of streams', () => {
    const run = report()
    Object.assign(run.scenarios.listen_scale!, { ours: streams(40, 10_000) })
    expect(formatTargets(run)).toContain(
      'listen_scale: change → every stream p99 ours 40 ms at 10000 streams, SDK 38 ms at 1000 ' +
        '(target: no higher at the same count) n/a'
    )
  })

  it("judges our CPU per notification and memory per stream against issue 36's aims", () => {
    const text = formatTargets(report())
    expect(text).toContain(
      'listen_scale: our server CPU per notification 4.5 µs at 1000 streams (target ≤ 5; before: 30) met'
    )
    expect(text).toContain(
      'listen_scale: our memory per stream 24 KiB at 1000 streams (target ≤ 20; before: 28.8) MISSED'
    )
    expect(text).not.toContain('load generator')
  })

  it('says when the load generator, not the server, bounded the delivery times', () => {
    const run = report()
    Object.assign(run.scenarios.listen_scale!, {
      ours: { ...streams(40), limit: 'load generator', serverCores: 0.3, loadgenCores: 0.98 },
    })
    expect(formatTargets(run)).toContain(
      'listen_scale: the load generator, not the server, bounded the delivery times ' +
        '(generator 0.98 cores, server 0.3 during the fan-out)'
    )
  })

  it('judges nothing in a disturbed run', () => {
    const text = formatTargets(report(true))
    expect(text).not.toMatch(/\bmet\b|MISSED/)
    expect(text).toContain('not judged (disturbed run)')
  })
})
