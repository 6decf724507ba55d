/**
 * @module scripts/loadtest/report
 * The load test's results: the JSON summary other tools read (top level: `flows_started`,
 * `flows_completed`, `lost`, `duplicated`, `cross_replica_ratio`, `errors` by kind, `flows_per_s`,
 * then the details) and the table printed for people. `cross_replica_ratio` is the share of rounds
 * 2 and later of interactive flows that a different replica served than the flow's previous round.
 * Also decides whether the run passed: every flow completed as its answers asked, nothing lost,
 * duplicated or left undeleted, no error, no 5xx from a replica.
 */
import { FLOW_KINDS, type Metrics, type Percentiles } from './metrics.ts'
import type { Balancer, LoadtestOptions, StoreKind } from './options.ts'
import type { FlowRecord } from './users.ts'
import type { Verification } from './verify.ts'

export interface FaultReport {
  replica: string
  killed_at_s: number
  restarted_at_s: number
  down_ms: number
}

export interface LoadtestSummary {
  flows_started: number
  flows_completed: number
  lost: number
  duplicated: number
  cross_replica_ratio: number
  errors: Record<string, number>
  flows_per_s: number
  not_deleted: number
  passed: boolean
  mode: LoadtestOptions['mode']
  balancer: Balancer | null
  store: StoreKind
  replicas: number
  users: number
  duration_s: number
  elapsed_s: number
  requests: number
  max_requests: number
  request_cap_reached: boolean
  rounds_after_first: number
  cross_replica_rounds: number
  served_by: Record<string, number>
  latency_ms: Record<string, Percentiles>
  flows: Record<string, { started: number; completed: number }>
  http_5xx: { replica: number; gateway: number }
  failed_attempts: number
  retried_rounds: number
  retried_rounds_after_fault: number
  retried_by_round: Record<string, number>
  create_transport_failures: number
  creates_recovered_by_search: number
  notes: {
    created: number
    expected_present: number
    expected_absent: number
    unsettled: number
    stored_at_end: number
  }
  fault: FaultReport | null
  problems: string[]
  failed_flow_samples: string[]
}

export interface SummaryInput {
  options: LoadtestOptions
  store: StoreKind
  metrics: Metrics
  ledger: FlowRecord[]
  verification: Verification
  elapsedS: number
  fault: FaultReport | null
}

const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits

export function buildSummary(input: SummaryInput): LoadtestSummary {
  const { options, metrics, ledger, verification: v } = input
  const started = ledger.length
  const completed = ledger.filter((flow) => flow.completed).length
  const ratio = metrics.laterRounds === 0 ? 0 : metrics.crossReplicaRounds / metrics.laterRounds
  const errors = { ...metrics.errors }
  const passed =
    started > 0 &&
    completed === started &&
    v.lost === 0 &&
    v.duplicated === 0 &&
    v.notDeleted === 0 &&
    Object.keys(errors).length === 0 &&
    metrics.replica5xx === 0
  return {
    flows_started: started,
    flows_completed: completed,
    lost: v.lost,
    duplicated: v.duplicated,
    cross_replica_ratio: round(ratio, 4),
    errors,
    flows_per_s: round(completed / Math.max(input.elapsedS, 0.001), 1),
    not_deleted: v.notDeleted,
    passed,
    mode: options.mode,
    balancer: options.mode === 'balanced' ? options.balancer : null,
    store: input.store,
    replicas: options.replicas,
    users: options.users,
    duration_s: options.durationS,
    elapsed_s: round(input.elapsedS, 2),
    requests: metrics.requests,
    max_requests: options.maxRequests,
    request_cap_reached: metrics.requests >= options.maxRequests,
    rounds_after_first: metrics.laterRounds,
    cross_replica_rounds: metrics.crossReplicaRounds,
    served_by: Object.fromEntries(
      Object.entries(metrics.servedBy).sort(([a], [b]) => a.localeCompare(b))
    ),
    latency_ms: metrics.latencySummary(),
    flows: Object.fromEntries(FLOW_KINDS.map((kind) => [kind, metrics.flows[kind]])),
    http_5xx: { replica: metrics.replica5xx, gateway: metrics.gateway5xx },
    failed_attempts: metrics.failedAttempts,
    retried_rounds: metrics.retriedRounds,
    retried_rounds_after_fault: metrics.retriedRoundsAfterFault,
    retried_by_round: metrics.retriedByRound,
    create_transport_failures: metrics.createTransportFailures,
    creates_recovered_by_search: metrics.createsRecovered,
    notes: {
      created: ledger.reduce((sum, flow) => sum + flow.notes.filter((n) => n.id).length, 0),
      expected_present: v.expected.present,
      expected_absent: v.expected.absent,
      unsettled: v.expected.unsettled,
      stored_at_end: v.storedNotes,
    },
    fault: input.fault,
    problems: v.problems,
    failed_flow_samples: ledger
      .filter((flow) => !flow.completed)
      .slice(0, 10)
      .map((flow) => `${flow.kind} ${flow.tag}: ${flow.error ?? 'unknown'}`),
  }
}

function pct(part: number, whole: number): string {
  return whole === 0 ? '—' : `${((100 * part) / whole).toFixed(1)}%`
}

/** The summary as a plain-text table. */
export function formatTable(s: LoadtestSummary): string {
  const rows: Array<[string, string]> = [
    [
      'setup',
      `${s.mode}${s.balancer ? ` (nginx, ${s.balancer})` : ''}, ${s.store}, ${s.replicas} replicas, ` +
        `${s.users} users, ${s.duration_s} s`,
    ],
    [
      'flows completed',
      `${s.flows_completed} / ${s.flows_started} (${pct(s.flows_completed, s.flows_started)})`,
    ],
    ['flows/s', String(s.flows_per_s)],
    ['lost / duplicated', `${s.lost} / ${s.duplicated}`],
    ['not deleted', String(s.not_deleted)],
    [
      'cross-replica rounds',
      `${s.cross_replica_rounds} / ${s.rounds_after_first} (${pct(s.cross_replica_rounds, s.rounds_after_first)})`,
    ],
    [
      'served by',
      Object.entries(s.served_by)
        .map(([replica, count]) => `${replica} ${count}`)
        .join(', '),
    ],
    [
      'requests',
      `${s.requests}${s.request_cap_reached ? ` (cap ${s.max_requests} reached)` : ''} in ${s.elapsed_s} s`,
    ],
    ['HTTP 5xx', `replica ${s.http_5xx.replica}, gateway ${s.http_5xx.gateway}`],
    [
      'transport failures',
      `${s.failed_attempts} attempts; ${s.retried_rounds} rounds re-sent ` +
        `(${s.retried_rounds_after_fault} after the fault)`,
    ],
    [
      'create_note recovery',
      `${s.create_transport_failures} lost answers, ${s.creates_recovered_by_search} found stored`,
    ],
  ]
  if (s.fault) {
    rows.push([
      'fault',
      `SIGKILL ${s.fault.replica} at ${s.fault.killed_at_s} s, back at ${s.fault.restarted_at_s} s`,
    ])
  }
  const errors = Object.entries(s.errors)
  rows.push([
    'errors',
    errors.length === 0 ? 'none' : errors.map(([k, n]) => `${k} ${n}`).join(', '),
  ])
  const width = Math.max(...rows.map(([label]) => label.length))
  const lines = rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)

  lines.push('', '  flow kind         started  completed')
  for (const [kind, counts] of Object.entries(s.flows)) {
    lines.push(
      `  ${kind.padEnd(16)} ${String(counts.started).padStart(8)} ${String(counts.completed).padStart(10)}`
    )
  }
  lines.push('', '  latency (ms)         p50      p99      max    count')
  for (const [label, p] of Object.entries(s.latency_ms)) {
    lines.push(
      `  ${label.padEnd(14)} ${p.p50.toFixed(1).padStart(8)} ${p.p99.toFixed(1).padStart(8)} ` +
        `${p.max.toFixed(1).padStart(8)} ${String(p.count).padStart(8)}`
    )
  }
  if (s.problems.length > 0) lines.push('', '  problems:', ...s.problems.map((p) => `    ${p}`))
  if (s.failed_flow_samples.length > 0) {
    lines.push('', '  failed flows (first 10):', ...s.failed_flow_samples.map((f) => `    ${f}`))
  }
  lines.push('', `  ${s.passed ? 'PASSED' : 'FAILED'}`)
  return lines.join('\n')
}
