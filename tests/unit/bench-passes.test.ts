/**
 * The benchmark's `--passes`: each server's median pass stands for it (by throughput, the lower middle
 * for an even count), carries every pass's throughput in the order measured, and a failed pass fails
 * the whole rather than being outvoted.
 */
import { describe, expect, it } from 'vitest'
import { medianPass, type ServerFigures, type ServerOutcome } from '../../scripts/bench/report.ts'

function figures(throughput: number, p50: number): ServerFigures {
  return {
    throughput,
    reqPerSec: throughput,
    flowsPerSec: null,
    latencyMs: { p50, p90: p50, p99: p50, mean: p50, max: p50 },
    cpuUsPerRequest: 1e6 / throughput,
    cpuSplitUsPerRequest: null,
    cpuUsPerFlow: null,
    peakRssMiB: 100,
    responses: throughput * 10,
    verified: throughput * 10,
    mismatches: 0,
    errors: 0,
    timeouts: 0,
    warmup: { responses: 1, mismatches: 0, errors: 0, timeouts: 0 },
    seconds: 10,
    serverCores: 1,
    loadgenCores: 0.5,
    backgroundCores: 0,
  }
}

describe('medianPass', () => {
  it('keeps the whole figures of the pass of median throughput, with every pass listed in order', () => {
    const median = medianPass([figures(300, 3), figures(100, 1), figures(200, 2)])
    expect(median).toMatchObject({
      throughput: 200,
      latencyMs: { p50: 2 },
      passes: [300, 100, 200],
    })
  })

  it('takes the lower middle of an even count, and leaves a single pass as it is', () => {
    expect(
      medianPass([figures(400, 4), figures(100, 1), figures(300, 3), figures(200, 2)])
    ).toMatchObject({ throughput: 200, passes: [400, 100, 300, 200] })
    const only = figures(100, 1)
    expect(medianPass([only])).toBe(only)
  })

  it('fails when any pass failed', () => {
    const failure: ServerOutcome = { failure: 'the server did not start' }
    expect(medianPass([figures(100, 1), failure, figures(300, 3)])).toBe(failure)
  })
})
