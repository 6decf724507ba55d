/**
 * @module scripts/loadtest/report
 * The load test's results: the JSON summary other tools read (the table printed for people is
 * `report-table.ts`'s).
 * Top level: the totals over both eras (`flows_started`, `flows_completed`, `flows_failed_cleanly`,
 * `lost`, `duplicated`, `cross_replica_ratio`, `errors` by `era/kind`, `flows_per_s`), then the run's
 * setup and infrastructure counters, then `eras.modern` and `eras["2025"]`: each era's flows (ok,
 * failed cleanly, by kind), lost, duplicated, not deleted, half done, errors, clean failures by kind,
 * every failure by kind (clean or not) and the kinds the era may fail with, the 2025 streams resumed,
 * cross-replica share and latency percentiles. `cross_replica_ratio` is, for modern users, the share
 * of rounds 2 and later that a different replica served than the round before; for 2025 users, the
 * share of answer POSTs that reached another replica than the one holding the flow's stream.
 * `tasks` (null without task users) is the tasks scenario's own section: its flows, the tasks it
 * created and how they ended by `tasks/get` and in the store's census, polls, updates and answers,
 * the share of a task's polls and answers served by another replica than its request before,
 * lost, duplicated, stuck, orphaned and abandoned tasks, the tasks the killed replica was running
 * and how many of them ended, and latencies (per request, and from creation to the end).
 * `soak` (null unless `--soak`) is `soak.ts`'s judgement of every replica's memory and handles.
 *
 * Also decides whether the run passed. Per era: no error, nothing lost, duplicated or half done, and
 * every flow completed — except that a flow may fail cleanly in the fault window with a kind the
 * fault allows (`allowed`): under a kill, a 2025 flow with one that means the killed replica never
 * answered the request ({@link UNANSWERED_KINDS}: its `tools/call` POST before the first event, or an
 * answer POST, which the v1 SDK never sends again); under a database fault, a flow of either era
 * refused for the store outage (`store_unavailable`).
 * A 2025 stream that broke must have been resumed, on another replica, and its flow finished.
 * Modern flows must all complete: any replica can serve any of their rounds. Tasks: every flow
 * completed, except one whose import's creating call lost its answer in the fault window (it fails
 * cleanly: the task may exist, nobody knows its id); no error; nothing lost, duplicated or stuck;
 * no more tasks of unknown id than creating calls without an answer; the store agreeing with
 * `tasks/get`; every task the killed replica ran ended. For the run: flows were started, every era
 * and the tasks scenario passed, no stored note unaccounted for, no 5xx from a replica (the store
 * outage's refusals in the fault window are counted apart, `metrics.ts`), the fault's
 * own verdict and (a soak) no replica growing past a bound.
 */
import {
  ERAS,
  ERA_FLOWS,
  type Era,
  type EraMetrics,
  type Metrics,
  type Percentiles,
  type TaskMetrics,
} from './metrics.ts'
import type { DatabaseReport } from './faults/database.ts'
import type { RedisReport } from './faults/redis.ts'
import type { AllowedFailures } from './faults/fault.ts'
import type { KillReport } from './faults/kill.ts'
import type { RollingReport } from './faults/rolling.ts'
import type { SoakReport } from './soak.ts'
import type { Balancer, LoadtestOptions } from './options.ts'
import type { StoreKind } from './store.ts'
import type { FlowRecord } from './flows.ts'
import type { TaskFlowRecord } from './task-flow.ts'
import type { TaskVerification } from './task-verify.ts'
import type { EraVerification, Verification } from './verify.ts'

/** The fault's own section, by kind (`faults/*.ts`). */
export type FaultReport = KillReport | RollingReport | DatabaseReport | RedisReport

export interface EraSummary {
  users: number
  flows_started: number
  flows_ok: number
  flows_failed_cleanly: number
  lost: number
  duplicated: number
  not_deleted: number
  half_done: number
  /** Errors that ended a flow uncleanly, by kind: any fails the run. */
  errors: Record<string, number>
  /** Transport failures that ended a flow cleanly, by kind. */
  failed_cleanly: Record<string, number>
  failed_cleanly_outside_fault: number
  /** Every failed flow by kind: the clean failures and the errors. */
  failed_by_kind: Record<string, number>
  /** The kinds of clean failure the era may end a flow with in the fault window (none: modern). */
  allowed_failure_kinds: string[]
  /** 2025: broken call streams the SDK reopened with `Last-Event-ID`. */
  streams_resumed: number
  cross_replica_ratio: number
  /** Modern: rounds 2 and later; 2025: answer POSTs. */
  rounds_after_first: number
  cross_replica_rounds: number
  flows: Record<string, { started: number; completed: number; failed_cleanly: number }>
  latency_ms: Record<string, Percentiles>
  create_transport_failures: number
  creates_recovered_by_search: number
  notes: { expected_present: number; expected_absent: number; unsettled: number }
  passed: boolean
}

export interface TasksSummary {
  users: number
  flows_started: number
  flows_ok: number
  flows_failed_cleanly: number
  tasks_created: number
  /** Creating calls that lost their answer (each may have made a task nobody knows the id of). */
  creations_unanswered: number
  /** Tasks whose id a flow learned, by their last status in `tasks/get`. */
  statuses: TaskVerification['statuses']
  /** Every task record in the store at the end, by status. */
  store_census: TaskVerification['census']
  polls: number
  updates: number
  answers: number
  /** Polls and answers of a task, and how many a different replica served than the request before. */
  requests_after_create: number
  cross_replica_requests: number
  cross_replica_ratio: number
  notes_expected: number
  exports_checked: number
  lost: number
  duplicated: number
  stuck: number
  orphaned: number
  abandoned: number
  store_mismatches: number
  /** Tasks the killed replica held the lease of at the SIGKILL, and how many of them ended. */
  killed_replica_tasks: { running: number; ended: number } | null
  errors: Record<string, number>
  failed_cleanly: Record<string, number>
  failed_cleanly_outside_fault: number
  /** From the creating call to the poll that saw the task end. */
  task_ms: Percentiles
  latency_ms: Record<string, Percentiles>
  problems: string[]
  passed: boolean
}

export interface LoadtestSummary {
  flows_started: number
  flows_completed: number
  flows_failed_cleanly: number
  lost: number
  duplicated: number
  cross_replica_ratio: number
  errors: Record<string, number>
  flows_per_s: number
  not_deleted: number
  half_done: number
  passed: boolean
  mode: LoadtestOptions['mode']
  balancer: Balancer | null
  store: StoreKind
  replicas: number
  users: number
  legacy_share: number
  duration_s: number
  elapsed_s: number
  requests: number
  max_requests: number
  request_cap_reached: boolean
  served_by: Record<string, number>
  http_5xx: { replica: number; gateway: number }
  failed_attempts: number
  retried_rounds: number
  retried_rounds_after_fault: number
  retried_by_round: Record<string, number>
  notes_stored_at_end: number
  unattributed_notes: number
  fault: FaultReport | null
  soak: SoakReport | null
  eras: Record<Era, EraSummary>
  tasks: TasksSummary | null
  problems: string[]
  failed_flow_samples: string[]
}

export interface SummaryInput {
  options: LoadtestOptions
  store: StoreKind
  metrics: Metrics
  ledger: FlowRecord[]
  verification: Verification
  /** The tasks scenario's ledger and check; absent without task users. */
  tasks?: { ledger: TaskFlowRecord[]; verification: TaskVerification }
  elapsedS: number
  fault: FaultReport | null
  /** The fault's clean failure kinds per era; none without a fault. */
  allowed?: AllowedFailures
  /** The soak's judgement; absent unless `--soak`. */
  soak?: SoakReport
}

const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits

function ratio(part: number, whole: number): number {
  return whole === 0 ? 0 : round(part / whole, 4)
}

function sum<T>(items: readonly T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0)
}

function eraSummary(
  era: Era,
  m: EraMetrics,
  v: EraVerification,
  flows: FlowRecord[],
  allowedKinds: readonly string[]
): EraSummary {
  const ok = flows.filter((flow) => flow.completed).length
  const failedCleanly = flows.filter((flow) => flow.failedCleanly).length
  const cleanFailuresAllowed =
    m.cleanFailuresOutsideFault === 0 &&
    Object.keys(m.cleanFailures).every((kind) => allowedKinds.includes(kind))
  const failedByKind = { ...m.cleanFailures }
  for (const [kind, count] of Object.entries(m.errors)) {
    failedByKind[kind] = (failedByKind[kind] ?? 0) + count
  }
  const passed =
    (m.users === 0 || flows.length > 0) &&
    ok + failedCleanly === flows.length &&
    cleanFailuresAllowed &&
    Object.keys(m.errors).length === 0 &&
    v.lost === 0 &&
    v.duplicated === 0 &&
    v.halfDone === 0
  return {
    users: m.users,
    flows_started: flows.length,
    flows_ok: ok,
    flows_failed_cleanly: failedCleanly,
    lost: v.lost,
    duplicated: v.duplicated,
    not_deleted: v.notDeleted,
    half_done: v.halfDone,
    errors: { ...m.errors },
    failed_cleanly: { ...m.cleanFailures },
    failed_cleanly_outside_fault: m.cleanFailuresOutsideFault,
    failed_by_kind: failedByKind,
    allowed_failure_kinds: [...allowedKinds],
    streams_resumed: m.streamsResumed,
    cross_replica_ratio: ratio(m.crossReplicaRounds, m.laterRounds),
    rounds_after_first: m.laterRounds,
    cross_replica_rounds: m.crossReplicaRounds,
    flows: Object.fromEntries(
      ERA_FLOWS[era].map((kind) => {
        const counts = m.flows[kind]
        return [
          kind,
          {
            started: counts.started,
            completed: counts.completed,
            failed_cleanly: counts.failedCleanly,
          },
        ]
      })
    ),
    latency_ms: m.latencySummary(),
    create_transport_failures: m.createTransportFailures,
    creates_recovered_by_search: m.createsRecovered,
    notes: {
      expected_present: v.expected.present,
      expected_absent: v.expected.absent,
      unsettled: v.expected.unsettled,
    },
    passed,
  }
}

function tasksSummary(m: TaskMetrics, v: TaskVerification, flows: TaskFlowRecord[]): TasksSummary {
  const ok = flows.filter((flow) => flow.completed).length
  const failedCleanly = flows.filter((flow) => flow.failedCleanly).length
  const killed = v.killed && { running: v.killed.leased, ended: v.killed.ended }
  const passed =
    flows.length > 0 &&
    ok + failedCleanly === flows.length &&
    m.cleanFailuresOutsideFault === 0 &&
    Object.keys(m.errors).length === 0 &&
    v.lost === 0 &&
    v.duplicated === 0 &&
    v.stuck === 0 &&
    v.orphaned <= m.creationsUnanswered &&
    v.mismatched === 0 &&
    (killed === null || killed.ended === killed.running)
  return {
    users: m.users,
    flows_started: flows.length,
    flows_ok: ok,
    flows_failed_cleanly: failedCleanly,
    tasks_created: m.created,
    creations_unanswered: m.creationsUnanswered,
    statuses: v.statuses,
    store_census: v.census,
    polls: m.polls,
    updates: m.updates,
    answers: m.answers,
    requests_after_create: m.laterRounds,
    cross_replica_requests: m.crossReplicaRounds,
    cross_replica_ratio: ratio(m.crossReplicaRounds, m.laterRounds),
    notes_expected: v.notesExpected,
    exports_checked: v.exportsChecked,
    lost: v.lost,
    duplicated: v.duplicated,
    stuck: v.stuck,
    orphaned: v.orphaned,
    abandoned: v.abandoned,
    store_mismatches: v.mismatched,
    killed_replica_tasks: killed,
    errors: { ...m.errors },
    failed_cleanly: { ...m.cleanFailures },
    failed_cleanly_outside_fault: m.cleanFailuresOutsideFault,
    task_ms: m.durationSummary(),
    latency_ms: m.latencySummary(),
    problems: v.problems,
    passed,
  }
}

export function buildSummary(input: SummaryInput): LoadtestSummary {
  const { options, metrics, ledger, verification: v } = input
  const eras = Object.fromEntries(
    ERAS.map((era) => [
      era,
      eraSummary(
        era,
        metrics.eras[era],
        v.eras[era],
        ledger.filter((flow) => flow.era === era),
        input.allowed?.[era] ?? []
      ),
    ])
  ) as Record<Era, EraSummary>
  const all = ERAS.map((era) => eras[era])
  const errors: Record<string, number> = {}
  for (const era of ERAS) {
    for (const [kind, count] of Object.entries(eras[era].errors)) errors[`${era}/${kind}`] = count
  }
  const tasks = input.tasks
    ? tasksSummary(metrics.tasks, input.tasks.verification, input.tasks.ledger)
    : null
  for (const [kind, count] of Object.entries(tasks?.errors ?? {})) errors[`tasks/${kind}`] = count
  const completed = sum(all, (era) => era.flows_ok) + (tasks?.flows_ok ?? 0)
  const passed =
    ledger.length > 0 &&
    all.every((era) => era.passed) &&
    (tasks === null || tasks.passed) &&
    v.unattributed === 0 &&
    metrics.replica5xx === 0 &&
    (input.fault === null || input.fault.passed) &&
    (input.soak === undefined || input.soak.passed)
  return {
    flows_started: ledger.length + (tasks?.flows_started ?? 0),
    flows_completed: completed,
    flows_failed_cleanly:
      sum(all, (era) => era.flows_failed_cleanly) + (tasks?.flows_failed_cleanly ?? 0),
    lost: sum(all, (era) => era.lost) + (tasks?.lost ?? 0),
    duplicated: sum(all, (era) => era.duplicated) + v.unattributed + (tasks?.duplicated ?? 0),
    cross_replica_ratio: ratio(
      sum(all, (era) => era.cross_replica_rounds),
      sum(all, (era) => era.rounds_after_first)
    ),
    errors,
    flows_per_s: round(completed / Math.max(input.elapsedS, 0.001), 1),
    not_deleted: sum(all, (era) => era.not_deleted),
    half_done: sum(all, (era) => era.half_done),
    passed,
    mode: options.mode,
    balancer: options.mode === 'balanced' ? options.balancer : null,
    store: input.store,
    replicas: options.replicas,
    users: options.users,
    legacy_share: options.legacyShare,
    duration_s: options.durationS,
    elapsed_s: round(input.elapsedS, 2),
    requests: metrics.requests,
    max_requests: options.maxRequests,
    request_cap_reached: metrics.requests >= options.maxRequests,
    served_by: Object.fromEntries(
      Object.entries(metrics.servedBy).sort(([a], [b]) => a.localeCompare(b))
    ),
    http_5xx: { replica: metrics.replica5xx, gateway: metrics.gateway5xx },
    failed_attempts: metrics.failedAttempts,
    retried_rounds: metrics.retriedRounds,
    retried_rounds_after_fault: metrics.retriedRoundsAfterFault,
    retried_by_round: metrics.retriedByRound,
    notes_stored_at_end: v.storedNotes,
    unattributed_notes: v.unattributed,
    fault: input.fault,
    soak: input.soak ?? null,
    eras,
    tasks,
    problems: v.problems,
    failed_flow_samples: [
      ...ledger
        .filter((flow) => !flow.completed)
        .map((flow) => `${flow.era} ${flow.kind} ${flow.tag}: ${flow.error ?? 'unknown'}`),
      ...(input.tasks?.ledger ?? [])
        .filter((flow) => !flow.completed)
        .map((flow) => `tasks ${flow.tag}: ${flow.error ?? 'unknown'}`),
    ].slice(0, 10),
  }
}
