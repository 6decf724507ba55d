/**
 * @module scripts/bench/report
 * The shape of `bench-results/*.json` and the tables printed at the end of a run. Per scenario: the
 * figures of `ours`, `sdk` and `bare` (null where a server does not run the scenario) and of each
 * peer that runs it (keyed by its kind: `fastmcp`, `tmcp`, ...), the ratios ours/SDK and ours/bare
 * (null where either side is missing), and per peer `ratios` (throughput) and `cpu_ratios`, always
 * "how many times better ours is":
 * - load scenarios (requests or flows per second): throughput ours ÷ other, and the same in server
 *   CPU per request (per flow), other ÷ ours;
 * - the scale scenario (streams held open): the time until a change reached every stream, other ÷
 *   ours (`ratio_vs_sdk`), resident memory per stream, other ÷ ours (`memory_ratio_vs_sdk`), and
 *   server CPU per delivered notification, other ÷ ours.
 * The targets of the performance issue are checked here too (`formatTargets`).
 */
import type { BusFanOutReport } from './bus-fanout-report.ts'
import type { ColdStartReport } from './cold-start.ts'
import { round, type LoadResult } from './load.ts'
import {
  isPeer,
  PEERS,
  type LoadScenario,
  type PeerKind,
  type ScaleScenario,
  type ServerKind,
} from './scenarios.ts'

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
  /**
   * With `--passes N` (N > 1): the throughput of each pass, in the order measured. The other figures
   * are those of the median pass.
   */
  passes?: number[]
}

type Percentiles = LoadResult['latencyMs']

export interface ScaleFigures {
  /** Streams asked for and acknowledged. */
  streams: number
  opened: number
  openSeconds: number
  /** Resident memory of the server process before the streams and with them all open (VmRSS). */
  rssBeforeMiB: number | null
  rssWithStreamsMiB: number | null
  rssPerStreamKiB: number | null
  changes: number
  deliveries: number
  missed: number
  /** From sending a change to its notification arriving on one stream, over every stream and change. */
  deliveryMs: Percentiles
  /** From sending a change to its notification arriving on the last of the streams, per change. */
  allDeliveredMs: Percentiles
  /** Server CPU while the changes were made and delivered, per notification delivered. */
  cpuUsPerDelivery: number | null
  peakRssMiB: number | null
  errors: number
  backgroundCores: number | null
  /** Summed over the changes: from sending each until its last stream heard it. */
  fanOutSeconds: number
  /** CPU the server and the load generator used over those seconds, in cores (1 = one core busy). */
  serverCores: number | null
  loadgenCores: number | null
  /** Which side bounded the delivery times (`fanOutLimit`). */
  limit: FanOutLimit
  firstError?: string
}

/**
 * What bounded a fan-out's delivery times: the side that kept its core busy most of the time
 * (`BUSY_CORE` or more) and more than the other; when both waited, `other load` if other processes
 * used more than `DISTURBED_CORES` meanwhile (the two sides waited for a core), else `neither`;
 * `null` when the CPU figures are missing.
 */
export type FanOutLimit = 'server' | 'load generator' | 'other load' | 'neither' | null

/** A side using this much of a core or more during a fan-out is what the other waits on. */
export const BUSY_CORE = 0.75

export function fanOutLimit(
  serverCores: number | null,
  loadgenCores: number | null,
  backgroundCores: number | null
): FanOutLimit {
  if (serverCores === null || loadgenCores === null) return null
  if (Math.max(serverCores, loadgenCores) < BUSY_CORE) {
    return (backgroundCores ?? 0) > DISTURBED_CORES ? 'other load' : 'neither'
  }
  return serverCores >= loadgenCores ? 'server' : 'load generator'
}

/**
 * Our listen streams as measured before the issue-36 work, at 10,000 streams on this machine (the
 * issue's own figures), printed beside every scale run for reference, and the issue's aims.
 */
export const LISTEN_BASELINE = {
  streams: 10_000,
  rssPerStreamKiB: 28.8,
  allDeliveredMs: { p50: 303, p99: 512 },
  cpuUsPerDelivery: 30,
  source: 'issue 36, measured before its work (2-core machine)',
} as const

export interface ServerFailure {
  failure: string
}

export type ServerOutcome = ServerFigures | ServerFailure
export type ScaleOutcome = ScaleFigures | ServerFailure

interface ReportBase {
  description: string
  /** Where the servers ran: Node processes, or the Worker builds on workerd. */
  runtime: 'node' | 'workerd'
  ratio_vs_sdk: number | null
  ratio_vs_bare: number | null
  /** Verification errors of every server of this scenario (measured and warm-up windows, probes). */
  errors: number
  flagged: boolean
  /** Some server's window had other processes using more than `DISTURBED_CORES`: ratios are suspect. */
  disturbed: boolean
}

export interface LoadReport extends ReportBase, Partial<Record<PeerKind, ServerOutcome>> {
  unit: 'request' | 'flow'
  ours: ServerOutcome | null
  sdk: ServerOutcome | null
  bare: ServerOutcome | null
  /**
   * The same comparison in server CPU per request (per flow for a flow scenario): other CPU per
   * unit ÷ ours. Less sensitive to background load on the machine than the throughput ratios.
   */
  cpu_ratio_vs_sdk: number | null
  cpu_ratio_vs_bare: number | null
  /** Per peer of this scenario: throughput ours ÷ the peer (null where either side failed). */
  ratios: Partial<Record<PeerKind, number | null>>
  /** Per peer of this scenario: the peer's CPU per request (per flow) ÷ ours. */
  cpu_ratios: Partial<Record<PeerKind, number | null>>
}

export interface ScaleReport extends ReportBase {
  unit: 'streams'
  ours: ScaleOutcome | null
  sdk: ScaleOutcome | null
  bare: null
  memory_ratio_vs_sdk: number | null
  cpu_ratio_vs_sdk: number | null
  /** Our figures before the issue-36 work, for reference (`LISTEN_BASELINE`). */
  baseline: typeof LISTEN_BASELINE
}

export type ScenarioReport = LoadReport | ScaleReport

export interface BenchReport {
  meta: Record<string, unknown>
  scenarios: Record<string, ScenarioReport>
  /** Starts of fresh processes and isolates, and Worker bundle sizes (`cold-start.ts`). */
  coldStarts?: ColdStartReport
  /** The event buses across replica processes (`bus-fanout.ts`). */
  busFanout?: BusFanOutReport
}

/** Background load (cores used by other processes) above which a measured window counts as disturbed. */
export const DISTURBED_CORES = 0.25

export function isFigures<T extends object>(outcome: T | ServerFailure | null): outcome is T {
  return outcome !== null && !('failure' in outcome)
}

function errorCount(outcome: ServerOutcome | ScaleOutcome | null): number {
  if (outcome === null) return 0
  if (!isFigures(outcome)) return 1
  if ('streams' in outcome)
    return outcome.errors + outcome.missed + (outcome.streams - outcome.opened)
  const { mismatches, errors, timeouts, warmup } = outcome
  return mismatches + errors + timeouts + warmup.mismatches + warmup.errors + warmup.timeouts
}

/**
 * One server's outcome over several passes: the pass of median throughput (the lower middle for an
 * even count), carrying every pass's throughput; a failed pass fails the whole.
 */
export function medianPass(passes: readonly ServerOutcome[]): ServerOutcome {
  const failed = passes.find((outcome) => !isFigures(outcome))
  if (failed) return failed
  const figures = passes as readonly ServerFigures[]
  if (figures.length === 1) return figures[0] as ServerFigures
  const sorted = [...figures].sort((a, b) => a.throughput - b.throughput)
  const median = sorted[Math.floor((sorted.length - 1) / 2)] as ServerFigures
  return { ...median, passes: figures.map((outcome) => outcome.throughput) }
}

/** `better ÷ worse` as "times better", null when either side is missing or zero. */
function quotient(numerator: number | null | undefined, denominator: number | null | undefined) {
  if (numerator === null || numerator === undefined || !denominator) return null
  return round(numerator / denominator, 2)
}

function cpuPerUnit(outcome: ServerFigures): number | null {
  return outcome.flowsPerSec === null ? outcome.cpuUsPerRequest : outcome.cpuUsPerFlow
}

function isDisturbed(outcome: ServerOutcome | ScaleOutcome | null): boolean {
  return isFigures(outcome) && (outcome.backgroundCores ?? 0) > DISTURBED_CORES
}

export function scenarioReport(
  scenario: LoadScenario,
  outcomes: Partial<Record<ServerKind, ServerOutcome>>
): LoadReport {
  const pick = (kind: ServerKind) =>
    scenario.servers.includes(kind) ? (outcomes[kind] ?? null) : null
  const ours = pick('ours')
  const sdk = pick('sdk')
  const bare = pick('bare')
  const peers = scenario.servers.filter(isPeer)
  const peerOutcomes = peers.map((kind) => [kind, pick(kind)] as const)
  const figures = (outcome: ServerOutcome | null) => (isFigures(outcome) ? outcome : undefined)
  const all = [ours, sdk, bare, ...peerOutcomes.map(([, outcome]) => outcome)]
  const errors = all.reduce((sum, outcome) => sum + errorCount(outcome), 0)
  const mine = figures(ours)
  const throughputRatio = (other: ServerOutcome | null) =>
    quotient(mine?.throughput, figures(other)?.throughput)
  const cpuRatio = (other: ServerOutcome | null) => {
    const theirs = figures(other)
    return quotient(theirs && cpuPerUnit(theirs), mine && cpuPerUnit(mine))
  }
  return {
    description: scenario.description,
    unit: scenario.unit,
    runtime: scenario.runtime ?? 'node',
    ours,
    sdk,
    bare,
    ...Object.fromEntries(peerOutcomes),
    ratio_vs_sdk: throughputRatio(sdk),
    ratio_vs_bare: throughputRatio(bare),
    cpu_ratio_vs_sdk: cpuRatio(sdk),
    cpu_ratio_vs_bare: cpuRatio(bare),
    ratios: Object.fromEntries(
      peerOutcomes.map(([kind, outcome]) => [kind, throughputRatio(outcome)])
    ),
    cpu_ratios: Object.fromEntries(
      peerOutcomes.map(([kind, outcome]) => [kind, cpuRatio(outcome)])
    ),
    errors,
    flagged: errors > 0,
    disturbed: all.some(isDisturbed),
  }
}

export function scaleReport(
  scenario: ScaleScenario,
  outcomes: Partial<Record<ServerKind, ScaleOutcome>>
): ScaleReport {
  const ours = scenario.servers.includes('ours') ? (outcomes.ours ?? null) : null
  const sdk = scenario.servers.includes('sdk') ? (outcomes.sdk ?? null) : null
  const mine = isFigures(ours) ? ours : undefined
  const theirs = isFigures(sdk) ? sdk : undefined
  const errors = errorCount(ours) + errorCount(sdk)
  return {
    description: scenario.description,
    unit: 'streams',
    runtime: scenario.runtime ?? 'node',
    ours,
    sdk,
    bare: null,
    // Reaching every stream takes longer with more of them: compared only at the same count.
    ratio_vs_sdk:
      theirs?.opened === mine?.opened
        ? quotient(theirs?.allDeliveredMs.p50, mine?.allDeliveredMs.p50)
        : null,
    ratio_vs_bare: null,
    memory_ratio_vs_sdk: quotient(theirs?.rssPerStreamKiB, mine?.rssPerStreamKiB),
    cpu_ratio_vs_sdk: quotient(theirs?.cpuUsPerDelivery, mine?.cpuUsPerDelivery),
    baseline: LISTEN_BASELINE,
    errors,
    flagged: errors > 0,
    disturbed: [ours, sdk].some(isDisturbed),
  }
}

function cell(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined) return '–'
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  })
}

function mark(scenario: ScenarioReport): string {
  return scenario.flagged ? ' ⚠ errors' : scenario.disturbed ? ' (disturbed)' : ''
}

/** Every server kind of a load scenario's rows, in the order the tables show them. */
const ROW_ORDER = ['ours', 'sdk', 'bare', ...PEERS] as const

/**
 * Markdown tables (also readable in a terminal): one row per load scenario and server, then scale.
 * Our row carries ours/SDK and ours/bare; a peer's row carries ours ÷ that peer (`ours/peer`).
 */
export function formatTable(report: BenchReport): string {
  const lines = [
    '| scenario | server | req/s | flows/s | p50 ms | p99 ms | CPU µs/req | peak RSS MiB | errors | ours/SDK | ours/bare | ours/peer | other load (cores) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  const scale: Array<[string, ScaleReport]> = []
  for (const [name, scenario] of Object.entries(report.scenarios)) {
    if (scenario.unit === 'streams') {
      scale.push([name, scenario])
      continue
    }
    for (const kind of ROW_ORDER) {
      const outcome = scenario[kind]
      if (outcome === null || outcome === undefined) continue
      const ratios =
        kind === 'ours'
          ? [cell(scenario.ratio_vs_sdk, 2), cell(scenario.ratio_vs_bare, 2), '']
          : ['', '', isPeer(kind) ? cell(scenario.ratios[kind], 2) : '']
      const label = `${name}${kind === 'ours' ? mark(scenario) : ''}`
      if (!isFigures(outcome)) {
        lines.push(
          `| ${label} | ${kind} | failed: ${outcome.failure.split('\n')[0]} | | | | | | 1 | | | | |`
        )
        continue
      }
      lines.push(
        `| ${label} | ${kind} | ${cell(outcome.reqPerSec)} | ${cell(outcome.flowsPerSec)} | ` +
          `${cell(outcome.latencyMs.p50, 2)} | ${cell(outcome.latencyMs.p99, 2)} | ` +
          `${cell(outcome.cpuUsPerRequest)} | ${cell(outcome.peakRssMiB)} | ${errorCount(outcome)} | ` +
          `${ratios.join(' | ')} | ${cell(outcome.backgroundCores, 2)} |`
      )
    }
  }
  if (scale.length === 0) return lines.join('\n')
  lines.push(
    '',
    '| scenario | server | streams | RSS/stream KiB | to one stream p50 / p99 ms | to every stream p50 / p99 ms | CPU µs/notification | missed | errors | ours/SDK (every stream) | ours/SDK (memory) | limit (server / generator cores) | other load (cores) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|'
  )
  for (const [name, scenario] of scale) {
    for (const kind of ['ours', 'sdk'] as const) {
      const outcome = scenario[kind]
      if (outcome === null) continue
      const label = `${name}${kind === 'ours' ? mark(scenario) : ''}`
      const ratios =
        kind === 'ours'
          ? [cell(scenario.ratio_vs_sdk, 2), cell(scenario.memory_ratio_vs_sdk, 2)]
          : ['', '']
      if (!isFigures(outcome)) {
        lines.push(
          `| ${label} | ${kind} | failed: ${outcome.failure.split('\n')[0]} | | | | | | 1 | | | | |`
        )
        continue
      }
      lines.push(
        `| ${label} | ${kind} | ${cell(outcome.opened)} | ${cell(outcome.rssPerStreamKiB, 1)} | ` +
          `${cell(outcome.deliveryMs.p50, 2)} / ${cell(outcome.deliveryMs.p99, 2)} | ` +
          `${cell(outcome.allDeliveredMs.p50, 2)} / ${cell(outcome.allDeliveredMs.p99, 2)} | ` +
          `${cell(outcome.cpuUsPerDelivery, 1)} | ${cell(outcome.missed)} | ${errorCount(outcome)} | ` +
          `${ratios[0]} | ${ratios[1]} | ${outcome.limit ?? '–'} (${cell(outcome.serverCores, 2)} / ` +
          `${cell(outcome.loadgenCores, 2)}) | ${cell(outcome.backgroundCores, 2)} |`
      )
    }
    const before = scenario.baseline
    lines.push(
      `| ${name} | ours before (${before.source}) | ${cell(before.streams)} | ` +
        `${cell(before.rssPerStreamKiB, 1)} | | ${cell(before.allDeliveredMs.p50)} / ` +
        `${cell(before.allDeliveredMs.p99)} | ${cell(before.cpuUsPerDelivery, 1)} | | | | | | |`
    )
  }
  return lines.join('\n')
}

interface Target {
  /** Ours ÷ the SDK in the scenario's headline ratio, at least. */
  vsSdk?: number
  /** Ours ÷ bare Hono in throughput, at least. */
  vsBare?: number
  /** Our CPU per request in this scenario ÷ our CPU per request in `reference`, at most. */
  cpuVs?: { reference: string; max: number }
  /** Ours ÷ each peer of the scenario in throughput, at least. */
  vsPeers?: number
  /** Listen streams: our p99 from a change to every stream no higher than the SDK's (same count). */
  fanOutP99?: true
  /** Listen streams: our server CPU per notification delivered, in µs, at most. */
  cpuPerNotificationMax?: number
  /** Listen streams: our resident memory per stream, in KiB, at most. */
  rssPerStreamMaxKiB?: number
}

/** What issues 14 and 23 ask of a full run. */
export const TARGETS: Record<string, Target> = {
  tools_call: { vsBare: 0.85, vsPeers: 1 },
  tools_list: { vsPeers: 1 },
  mrtr_flow: { vsSdk: 5, cpuVs: { reference: 'tools_call', max: 1.4 } },
  mrtr_round1: { cpuVs: { reference: 'tools_call', max: 1.4 } },
  mrtr_round2: { cpuVs: { reference: 'tools_call', max: 1.4 } },
  legacy_tools_call: { vsSdk: 1 },
  legacy_session: { vsSdk: 1, vsPeers: 1 },
  legacy_mrtr_flow: { vsSdk: 2, vsPeers: 1 },
  notes_search: { vsSdk: 1.5 },
  workerd_tools_call: { vsPeers: 1 },
  workerd_mrtr_flow: { vsPeers: 1 },
  listen_scale: { fanOutP99: true, cpuPerNotificationMax: 5, rssPerStreamMaxKiB: 20 },
}

function verdict(scenario: ScenarioReport, met: boolean | null): string {
  if (met === null) return 'n/a'
  if (scenario.disturbed) return 'not judged (disturbed run)'
  return met ? 'met' : 'MISSED'
}

/** Our CPU per request in a load scenario, if measured. */
function ourCpuPerRequest(scenario: ScenarioReport | undefined): number | null {
  if (!scenario || scenario.unit === 'streams' || !isFigures(scenario.ours)) return null
  return scenario.ours.cpuUsPerRequest
}

/** With several passes: each server's lowest and highest throughput, one line per load scenario. */
export function formatSpread(report: BenchReport): string {
  const lines: string[] = []
  for (const [name, scenario] of Object.entries(report.scenarios)) {
    if (scenario.unit === 'streams') continue
    const spans = ROW_ORDER.flatMap((kind) => {
      const outcome = scenario[kind] ?? null
      if (!isFigures(outcome) || !outcome.passes) return []
      const [low, high] = [Math.min(...outcome.passes), Math.max(...outcome.passes)].map((value) =>
        Math.round(value).toLocaleString('en-US')
      )
      return [`${kind} ${low}–${high}`]
    })
    if (spans.length > 0) lines.push(`${name}: ${spans.join(', ')} (${scenario.unit}s/s)`)
  }
  return lines.length > 0 ? `Spread over the passes (median shown):\n${lines.join('\n')}` : ''
}

/** One line per target: the figure, the target, and whether it is met. */
export function formatTargets(report: BenchReport): string {
  const lines: string[] = []
  for (const [name, target] of Object.entries(TARGETS)) {
    const scenario = report.scenarios[name]
    if (!scenario) continue
    const cpuNote = (label: string, cpu: number | null) =>
      scenario.unit === 'streams'
        ? ''
        : `; CPU per ${scenario.unit}: ${label} uses ${cpu ?? '–'}× ours`
    if (target.vsSdk !== undefined) {
      const value = scenario.ratio_vs_sdk
      lines.push(
        `${name}: ours/SDK ${value ?? '–'} (target ≥ ${target.vsSdk}) ` +
          `${verdict(scenario, value === null ? null : value >= target.vsSdk)}` +
          cpuNote('SDK', scenario.cpu_ratio_vs_sdk)
      )
    }
    if (target.vsBare !== undefined && scenario.unit !== 'streams') {
      const value = scenario.ratio_vs_bare
      lines.push(
        `${name}: ours/bare ${value ?? '–'} (target ≥ ${target.vsBare}) ` +
          `${verdict(scenario, value === null ? null : value >= target.vsBare)}` +
          cpuNote('bare', scenario.cpu_ratio_vs_bare)
      )
    }
    if (target.cpuVs !== undefined) {
      const reference = report.scenarios[target.cpuVs.reference]
      const mine = ourCpuPerRequest(scenario)
      const base = ourCpuPerRequest(reference)
      const value = mine === null || base === null || base === 0 ? null : round(mine / base, 2)
      lines.push(
        `${name}: our CPU per request ${mine ?? '–'} µs = ${value ?? '–'}× ours in ` +
          `${target.cpuVs.reference} (target ≤ ${target.cpuVs.max}) ` +
          verdict(
            reference && reference.disturbed ? reference : scenario,
            value === null ? null : value <= target.cpuVs.max
          )
      )
    }
    if (target.vsPeers !== undefined && scenario.unit !== 'streams') {
      for (const [peer, value] of Object.entries(scenario.ratios)) {
        lines.push(
          `${name}: ours/${peer} ${value ?? '–'} (target ≥ ${target.vsPeers}) ` +
            `${verdict(scenario, value === null ? null : value >= target.vsPeers)}` +
            cpuNote(peer, scenario.cpu_ratios[peer as PeerKind] ?? null)
        )
      }
    }
    if (target.fanOutP99 && scenario.unit === 'streams') {
      const p99 = (outcome: ScaleOutcome | null) =>
        isFigures(outcome) ? outcome.allDeliveredMs.p99 : null
      const [ours, sdk] = [p99(scenario.ours), p99(scenario.sdk)]
      const opened = (outcome: ScaleOutcome | null) => (isFigures(outcome) ? outcome.opened : null)
      const [mine, theirs] = [opened(scenario.ours), opened(scenario.sdk)]
      const comparable = ours !== null && sdk !== null && mine === theirs
      lines.push(
        `${name}: change → every stream p99 ours ${ours ?? '–'} ms at ${mine ?? '–'} streams, ` +
          `SDK ${sdk ?? '–'} ms at ${theirs ?? '–'} (target: no higher at the same count) ` +
          verdict(scenario, comparable ? ours <= sdk : null)
      )
    }
    const mine = scenario.unit === 'streams' && isFigures(scenario.ours) ? scenario.ours : null
    if (target.cpuPerNotificationMax !== undefined && scenario.unit === 'streams') {
      const value = mine?.cpuUsPerDelivery ?? null
      lines.push(
        `${name}: our server CPU per notification ${value ?? '–'} µs at ${mine?.opened ?? '–'} ` +
          `streams (target ≤ ${target.cpuPerNotificationMax}; before: ` +
          `${scenario.baseline.cpuUsPerDelivery}) ` +
          verdict(scenario, value === null ? null : value <= target.cpuPerNotificationMax)
      )
    }
    if (target.rssPerStreamMaxKiB !== undefined && scenario.unit === 'streams') {
      const value = mine?.rssPerStreamKiB ?? null
      lines.push(
        `${name}: our memory per stream ${value ?? '–'} KiB at ${mine?.opened ?? '–'} streams ` +
          `(target ≤ ${target.rssPerStreamMaxKiB}; before: ${scenario.baseline.rssPerStreamKiB}) ` +
          verdict(scenario, value === null ? null : value <= target.rssPerStreamMaxKiB)
      )
    }
    if (mine?.limit === 'load generator') {
      lines.push(
        `${name}: the load generator, not the server, bounded the delivery times ` +
          `(generator ${mine.loadgenCores} cores, server ${mine.serverCores} during the fan-out)`
      )
    }
    if (scenario.disturbed) {
      lines.push(
        `${name}: other processes loaded the machine during this scenario; ratios are suspect`
      )
    }
  }
  return lines.join('\n')
}
