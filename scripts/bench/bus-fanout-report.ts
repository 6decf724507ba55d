/**
 * @module scripts/bench/bus-fanout-report
 * The `bus_fanout` section of the bench JSON and its printed table: per bus (`postgres`, `redis`),
 * one run per fleet size (events per second end to end, publish → delivery percentiles, lost
 * deliveries, how busy the machine was) and the 2025 interactive flow across two replicas of one
 * fleet; a bus that could not run says why (`skipped`). `summarizeFanOut` turns what the replicas'
 * agents said into a run's figures; `busFanoutFailures` names what must fail the bench.
 */
import { Latencies, round, roundPercentiles, type LoadResult } from './load.ts'

type Percentiles = LoadResult['latencyMs']

/** One fleet size on one bus: `events` published on one replica, each heard by `listeners` others. */
export interface FanOutRun {
  replicas: number
  /** Replicas holding a listener (every replica but the publisher's; itself in a fleet of one). */
  listeners: number
  events: number
  /** Deliveries heard over every listener, of `events × listeners`. */
  delivered: number
  lost: number
  /** Publishes the bus refused (it then delivers on the publishing replica only). */
  failedPublishes: number
  /** From the first publish to the last delivery on the last listener. */
  seconds: number
  /** Events that reached every listener per second, end to end. */
  eventsPerSecond: number
  /** Deliveries per second over all listeners (`eventsPerSecond × listeners` when none was lost). */
  deliveriesPerSecond: number
  /** From `publish` on one replica to the listener on another hearing it, over every delivery. */
  latencyMs: Percentiles
  /** Cores the whole machine was busy during the run (the replicas, the bus's server, all else). */
  machineCores: number | null
}

/** The 2025 interactive flow in a fleet: the call held by one replica, its answer POSTed to another. */
export interface InteractiveRun {
  replicas: number
  flowsPerSec: number
  latencyMs: Percentiles
  flows: number
  errors: number
  firstMismatch?: string
}

/** A fleet size that could not be measured (its replicas did not start, an agent failed). */
export interface FleetFailure {
  replicas: number
  failure: string
}

export type BusOutcome =
  | { runs: Array<FanOutRun | FleetFailure>; interactive: InteractiveRun | { failure: string } }
  | { skipped: string }
  | { failure: string }

export interface BusFanOutReport {
  method: string
  buses: Record<string, BusOutcome>
}

/** What one listener's agent reported. */
export interface Heard {
  heard: number
  latenciesMs: readonly number[]
  lastAtMs: number | null
}

/** A fan-out run's figures from the publisher's start and every listener's report. */
export function summarizeFanOut(input: {
  replicas: number
  events: number
  startedAtMs: number
  failedPublishes: number
  listeners: readonly Heard[]
  machineCores: number | null
}): FanOutRun {
  const latencies = new Latencies()
  let delivered = 0
  let lastAtMs = input.startedAtMs
  for (const listener of input.listeners) {
    delivered += listener.heard
    for (const ms of listener.latenciesMs) latencies.record(Math.max(0, ms))
    if (listener.lastAtMs !== null) lastAtMs = Math.max(lastAtMs, listener.lastAtMs)
  }
  const seconds = (lastAtMs - input.startedAtMs) / 1000
  const everywhere = Math.min(...input.listeners.map((listener) => listener.heard))
  const rate = (count: number) => (seconds > 0 ? round(count / seconds, 1) : 0)
  return {
    replicas: input.replicas,
    listeners: input.listeners.length,
    events: input.events,
    delivered,
    lost: input.events * input.listeners.length - delivered,
    failedPublishes: input.failedPublishes,
    seconds: round(seconds, 3),
    eventsPerSecond: rate(everywhere),
    deliveriesPerSecond: rate(delivered),
    latencyMs: roundPercentiles(latencies.summary()),
    machineCores: input.machineCores === null ? null : round(input.machineCores, 2),
  }
}

/** Lines naming what must fail the bench: a bus that failed, lost deliveries, flows in error. */
export function busFanoutFailures(report: BusFanOutReport): string[] {
  const failures: string[] = []
  for (const [bus, outcome] of Object.entries(report.buses)) {
    if ('skipped' in outcome) continue
    if ('failure' in outcome) {
      failures.push(`${bus}: ${outcome.failure.split('\n')[0]}`)
      continue
    }
    for (const run of outcome.runs) {
      if ('failure' in run) {
        failures.push(`${bus} with ${run.replicas} replicas: ${run.failure.split('\n')[0]}`)
      } else if (run.lost > 0 || run.failedPublishes > 0) {
        failures.push(
          `${bus} with ${run.replicas} replicas: ${run.lost} deliveries lost, ` +
            `${run.failedPublishes} publishes failed`
        )
      }
    }
    const interactive = outcome.interactive
    if ('failure' in interactive) failures.push(`${bus} interactive flow: ${interactive.failure}`)
    else if (interactive.errors > 0 || interactive.flows === 0) {
      failures.push(
        `${bus} interactive flow: ${interactive.flows} flows, ${interactive.errors} errors` +
          (interactive.firstMismatch ? ` (${interactive.firstMismatch})` : '')
      )
    }
  }
  return failures
}

function cell(value: number | null, digits = 0): string {
  if (value === null) return '–'
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  })
}

/** The printed tables: one row per bus and fleet size, then the interactive flow per bus. */
export function formatBusFanout(report: BusFanOutReport): string {
  const lines = [
    'Event buses across replica processes (bus_fanout):',
    '',
    '| bus | replicas | listeners | events | events/s (to every listener) | deliveries/s | publish → delivery p50 / p99 ms | lost | machine busy (cores) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  const flows: string[] = []
  const skipped: string[] = []
  for (const [bus, outcome] of Object.entries(report.buses)) {
    if ('skipped' in outcome) {
      skipped.push(`skipped bus_fanout on ${bus}: ${outcome.skipped}`)
      continue
    }
    if ('failure' in outcome) {
      lines.push(`| ${bus} | failed: ${outcome.failure.split('\n')[0]} | | | | | | | |`)
      continue
    }
    for (const run of outcome.runs) {
      if ('failure' in run) {
        lines.push(
          `| ${bus} | ${run.replicas} | failed: ${run.failure.split('\n')[0]} | | | | | | |`
        )
        continue
      }
      lines.push(
        `| ${bus} | ${run.replicas} | ${run.listeners} | ${cell(run.events)} | ` +
          `${cell(run.eventsPerSecond)} | ${cell(run.deliveriesPerSecond)} | ` +
          `${cell(run.latencyMs.p50, 2)} / ${cell(run.latencyMs.p99, 2)} | ${cell(run.lost)} | ` +
          `${cell(run.machineCores, 2)} |`
      )
    }
    const interactive = outcome.interactive
    flows.push(
      'failure' in interactive
        ? `| ${bus} | – | failed: ${interactive.failure.split('\n')[0]} | | | |`
        : `| ${bus} | ${interactive.replicas} | ${cell(interactive.flowsPerSec, 1)} | ` +
            `${cell(interactive.latencyMs.p50, 2)} / ${cell(interactive.latencyMs.p99, 2)} | ` +
            `${cell(interactive.flows)} | ${cell(interactive.errors)} |`
    )
  }
  if (flows.length > 0) {
    lines.push(
      '',
      '2025 interactive flow across replicas (call held by one, answer POSTed to another):',
      '',
      '| bus | fleet | flows/s | request p50 / p99 ms | flows | errors |',
      '|---|---:|---:|---:|---:|---:|',
      ...flows
    )
  }
  if (skipped.length > 0) lines.push('', ...skipped)
  return lines.join('\n')
}
