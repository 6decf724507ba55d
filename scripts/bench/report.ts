/**
 * @module scripts/bench/report
 * The shape of `bench-results/*.json` and the table printed at the end of a run. Per scenario: the
 * figures of `ours`, `sdk` and `bare` (null where a server does not run the scenario), and the
 * throughput ratios ours/SDK and ours/bare (null where either side is missing). The headline
 * `throughput` is requests per second, or completed flows per second for a flow scenario.
 */
import type { LoadResult } from './load.ts'
import type { Scenario, ServerKind } from './scenarios.ts'

export interface ServerFigures {
  /** Requests/s, or flows/s for a flow scenario: the number the ratios compare. */
  throughput: number
  reqPerSec: number
  flowsPerSec: number | null
  latencyMs: LoadResult['latencyMs']
  /** Server CPU (user + system, all threads) per request; per flow it is twice this for two rounds. */
  cpuUsPerRequest: number | null
  /** The same, split into user space (JavaScript, V8, libuv) and kernel (socket reads and writes). */
  cpuSplitUsPerRequest: { user: number; system: number } | null
  cpuUsPerFlow: number | null
  /** Peak resident set size of the server process over its life (VmHWM). */
  peakRssMiB: number | null
  /** Responses in the measured window and how they fared. */
  responses: number
  verified: number
  mismatches: number
  errors: number
  timeouts: number
  /** The same counters for the warm-up window (all must be zero as well). */
  warmup: { responses: number; mismatches: number; errors: number; timeouts: number }
  seconds: number
  /** CPU used during the measured window, in cores: the server, this load generator, everything else. */
  serverCores: number | null
  loadgenCores: number
  backgroundCores: number | null
  firstMismatch?: string
}

export interface ServerFailure {
  failure: string
}

export type ServerOutcome = ServerFigures | ServerFailure

export interface ScenarioReport {
  description: string
  unit: 'request' | 'flow'
  ours: ServerOutcome | null
  sdk: ServerOutcome | null
  bare: ServerOutcome | null
  ratio_vs_sdk: number | null
  ratio_vs_bare: number | null
  /**
   * The same comparison in server CPU per request (per flow for a flow scenario): other CPU per
   * unit ÷ ours. Less sensitive to background load on the machine than the throughput ratios.
   */
  cpu_ratio_vs_sdk: number | null
  cpu_ratio_vs_bare: number | null
  /** Verification errors of every server of this scenario (measured and warm-up windows, probes). */
  errors: number
  flagged: boolean
  /** Some server's window had other processes using more than `DISTURBED_CORES`: ratios are suspect. */
  disturbed: boolean
}

export interface BenchReport {
  meta: Record<string, unknown>
  scenarios: Record<string, ScenarioReport>
}

/** Background load (cores used by other processes) above which a measured window counts as disturbed. */
export const DISTURBED_CORES = 0.25

export function isFigures(outcome: ServerOutcome | null): outcome is ServerFigures {
  return outcome !== null && !('failure' in outcome)
}

function errorCount(outcome: ServerOutcome | null): number {
  if (outcome === null) return 0
  if (!isFigures(outcome)) return 1
  const { mismatches, errors, timeouts, warmup } = outcome
  return mismatches + errors + timeouts + warmup.mismatches + warmup.errors + warmup.timeouts
}

function ratio(a: ServerOutcome | null, b: ServerOutcome | null): number | null {
  if (!isFigures(a) || !isFigures(b) || b.throughput === 0) return null
  return round(a.throughput / b.throughput, 2)
}

function cpuPerUnit(outcome: ServerFigures): number | null {
  return outcome.flowsPerSec === null ? outcome.cpuUsPerRequest : outcome.cpuUsPerFlow
}

function cpuRatio(ours: ServerOutcome | null, other: ServerOutcome | null): number | null {
  if (!isFigures(ours) || !isFigures(other)) return null
  const mine = cpuPerUnit(ours)
  const theirs = cpuPerUnit(other)
  return mine === null || theirs === null || mine === 0 ? null : round(theirs / mine, 2)
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}

export function scenarioReport(
  scenario: Scenario,
  outcomes: Partial<Record<ServerKind, ServerOutcome>>
): ScenarioReport {
  const pick = (kind: ServerKind) =>
    scenario.servers.includes(kind) ? (outcomes[kind] ?? null) : null
  const ours = pick('ours')
  const sdk = pick('sdk')
  const bare = pick('bare')
  const errors = errorCount(ours) + errorCount(sdk) + errorCount(bare)
  return {
    description: scenario.description,
    unit: scenario.unit,
    ours,
    sdk,
    bare,
    ratio_vs_sdk: ratio(ours, sdk),
    ratio_vs_bare: ratio(ours, bare),
    cpu_ratio_vs_sdk: cpuRatio(ours, sdk),
    cpu_ratio_vs_bare: cpuRatio(ours, bare),
    errors,
    flagged: errors > 0,
    disturbed: [ours, sdk, bare].some(
      (outcome) => isFigures(outcome) && (outcome.backgroundCores ?? 0) > DISTURBED_CORES
    ),
  }
}

function cell(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined) return '–'
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  })
}

/** A Markdown table (also readable in a terminal), one row per scenario and server. */
export function formatTable(report: BenchReport): string {
  const lines = [
    '| scenario | server | req/s | flows/s | p50 ms | p99 ms | CPU µs/req | peak RSS MiB | errors | ours/SDK | ours/bare | other load (cores) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const [name, scenario] of Object.entries(report.scenarios)) {
    for (const kind of ['ours', 'sdk', 'bare'] as const) {
      const outcome = scenario[kind]
      if (outcome === null) continue
      const ratios =
        kind === 'ours'
          ? [cell(scenario.ratio_vs_sdk, 2), cell(scenario.ratio_vs_bare, 2)]
          : ['', '']
      const mark = scenario.flagged ? ' ⚠ errors' : scenario.disturbed ? ' (disturbed)' : ''
      const label = `${name}${kind === 'ours' ? mark : ''}`
      if (!isFigures(outcome)) {
        lines.push(
          `| ${label} | ${kind} | failed: ${outcome.failure.split('\n')[0]} | | | | | | 1 | | | |`
        )
        continue
      }
      lines.push(
        `| ${label} | ${kind} | ${cell(outcome.reqPerSec)} | ${cell(outcome.flowsPerSec)} | ` +
          `${cell(outcome.latencyMs.p50, 2)} | ${cell(outcome.latencyMs.p99, 2)} | ` +
          `${cell(outcome.cpuUsPerRequest)} | ${cell(outcome.peakRssMiB)} | ${errorCount(outcome)} | ` +
          `${ratios[0]} | ${ratios[1]} | ${cell(outcome.backgroundCores, 2)} |`
      )
    }
  }
  return lines.join('\n')
}

/** What issue 6 asks of a full run, per scenario: ours/SDK and ours/bare throughput at least. */
export const TARGETS: Record<string, { vsSdk?: number; vsBare?: number }> = {
  tools_call: { vsSdk: 10, vsBare: 0.7 },
  mrtr_flow: { vsSdk: 4 },
}

/** One line per target: the figure, the target, and whether it is met. */
export function formatTargets(report: BenchReport): string {
  const lines: string[] = []
  for (const [name, target] of Object.entries(TARGETS)) {
    const scenario = report.scenarios[name]
    if (!scenario) continue
    const check = (label: string, value: number | null, cpu: number | null, goal?: number) => {
      if (goal === undefined) return
      const verdict =
        value === null
          ? 'n/a'
          : scenario.disturbed
            ? 'not judged (disturbed run)'
            : value >= goal
              ? 'met'
              : 'MISSED'
      lines.push(
        `${name}: ours/${label} ${value ?? '–'} (target ≥ ${goal}) ${verdict}; ` +
          `CPU per ${scenario.unit}: ${label} uses ${cpu ?? '–'}× ours`
      )
    }
    check('SDK', scenario.ratio_vs_sdk, scenario.cpu_ratio_vs_sdk, target.vsSdk)
    check('bare', scenario.ratio_vs_bare, scenario.cpu_ratio_vs_bare, target.vsBare)
    if (scenario.disturbed) {
      lines.push(
        `${name}: other processes loaded the machine during this scenario; ratios are suspect`
      )
    }
  }
  return lines.join('\n')
}
