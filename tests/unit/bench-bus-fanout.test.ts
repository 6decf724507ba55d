/**
 * The bus fan-out measurement's judging and formatting (`scripts/bench/bus-fanout-report.ts`) and the
 * fan-out event's URI (`scripts/bench/bus-agent.ts`): a run's events per second count what reached
 * every listener, from the first publish to the last delivery; what was lost or refused, a fleet
 * that did not start and an interactive flow in error fail the bench; a bus that could not run is
 * printed as skipped with its reason, never as a failure.
 */
import { describe, expect, it } from 'vitest'
import { fanOutUri, readFanOutUri } from '../../scripts/bench/bus-agent.ts'
import {
  busFanoutFailures,
  formatBusFanout,
  summarizeFanOut,
  type BusFanOutReport,
  type FanOutRun,
} from '../../scripts/bench/bus-fanout-report.ts'

const START = 1_700_000_000_000

function run(overrides: Partial<FanOutRun> = {}): FanOutRun {
  return {
    ...summarizeFanOut({
      replicas: 4,
      events: 3,
      startedAtMs: START,
      failedPublishes: 0,
      machineCores: 1.5,
      listeners: [1, 2, 3].map(() => ({
        heard: 3,
        latenciesMs: [1, 2, 3],
        lastAtMs: START + 500,
      })),
    }),
    ...overrides,
  }
}

const flow = { replicas: 4, flowsPerSec: 40, latencyMs: run().latencyMs, flows: 200, errors: 0 }

describe('summarizeFanOut', () => {
  it('counts events that reached every listener per second, from the first publish to the last delivery', () => {
    const figures = summarizeFanOut({
      replicas: 3,
      events: 100,
      startedAtMs: START,
      failedPublishes: 0,
      machineCores: null,
      listeners: [
        { heard: 100, latenciesMs: Array(100).fill(5), lastAtMs: START + 1_000 },
        { heard: 98, latenciesMs: [...Array(97).fill(5), 40], lastAtMs: START + 2_000 },
      ],
    })
    expect(figures).toMatchObject({
      replicas: 3,
      listeners: 2,
      events: 100,
      delivered: 198,
      lost: 2,
      seconds: 2,
      eventsPerSecond: 49,
      deliveriesPerSecond: 99,
      machineCores: null,
    })
    expect(figures.latencyMs.p50).toBe(5)
    expect(figures.latencyMs.max).toBe(40)
  })

  it('answers zero rates, not infinities, when nothing was heard', () => {
    const figures = summarizeFanOut({
      replicas: 1,
      events: 10,
      startedAtMs: START,
      failedPublishes: 10,
      machineCores: 0.5,
      listeners: [{ heard: 0, latenciesMs: [], lastAtMs: null }],
    })
    expect(figures).toMatchObject({ delivered: 0, lost: 10, seconds: 0, eventsPerSecond: 0 })
  })
})

describe('busFanoutFailures', () => {
  it('passes clean runs and skipped buses', () => {
    const report: BusFanOutReport = {
      method: '',
      buses: {
        postgres: { runs: [run()], interactive: flow },
        redis: { skipped: 'redis-server is not installed' },
      },
    }
    expect(busFanoutFailures(report)).toEqual([])
  })

  it('names lost deliveries, failed fleets, failed buses and interactive flows in error', () => {
    const report: BusFanOutReport = {
      method: '',
      buses: {
        postgres: {
          runs: [run({ lost: 2 }), { replicas: 16, failure: 'replica 9 did not start\nmore' }],
          interactive: { ...flow, errors: 3, firstMismatch: 'answer: HTTP 404' },
        },
        redis: { failure: 'redis-server exited' },
      },
    }
    expect(busFanoutFailures(report)).toEqual([
      'postgres with 4 replicas: 2 deliveries lost, 0 publishes failed',
      'postgres with 16 replicas: replica 9 did not start',
      'postgres interactive flow: 200 flows, 3 errors (answer: HTTP 404)',
      'redis: redis-server exited',
    ])
  })
})

describe('formatBusFanout', () => {
  it('prints a row per bus and fleet size, the interactive flows, and why a bus was skipped', () => {
    const text = formatBusFanout({
      method: '',
      buses: {
        postgres: { runs: [run()], interactive: flow },
        redis: { skipped: 'stateless-mcp/redis (src/mcp/redis.ts) does not exist' },
      },
    })
    expect(text).toContain('| postgres | 4 | 3 | 3 | 6 | 18 | 2.00 / 3.00 | 0 | 1.50 |')
    expect(text).toContain('| postgres | 4 | 40.0 |')
    expect(text).toContain(
      'skipped bus_fanout on redis: stateless-mcp/redis (src/mcp/redis.ts) does not exist'
    )
  })
})

describe('fan-out event URIs', () => {
  it('carry the sequence number and publish time, and nothing else is read as one', () => {
    const uri = fanOutUri(42, START + 0.125)
    expect(readFanOutUri(uri)).toEqual({ seq: 42, sentAtMs: START + 0.125 })
    expect(readFanOutUri('notes://n/42')).toBeUndefined()
    expect(readFanOutUri('bench://fan-out/x/1')).toBeUndefined()
  })
})
