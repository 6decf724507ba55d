/**
 * @module scripts/loadtest/metrics
 * What a load-test run counts while it runs, fed by the virtual users' agents (`modern-agent.ts`,
 * `legacy-agent.ts`) and flows (`flows.ts`). For the whole run: requests sent, which replica served
 * them, attempts that got no replica's answer, HTTP 5xx from replicas and from the gateway, the rounds
 * the modern driver re-sent (before and after the fault), the requests refused because the store
 * could not be reached (in the fault window), and when the fault happened. Per era
 * (`modern`: 2026-07-28 through the project's driver; `2025`: the v1 SDK client over sessions):
 * flows by kind (started, completed, failed cleanly), the errors that ended a flow uncleanly, the
 * transport failures that ended one cleanly, latency by kind of call and round, the cross-replica
 * share of later rounds, the 2025 streams resumed, repeated deletes and `create_note` recoveries.
 * For the tasks scenario's users (`task-flow.ts`) the same per-group counters, plus tasks created,
 * creations left without an answer, polls, updates, answers and how long tasks took from creation
 * to their end.
 * Plain counters: the virtual users share one event loop.
 */

export const ERAS = ['modern', '2025'] as const

/**
 * A clean failure (and a store refusal) counts as caused by the fault when it happened between the
 * fault's start and this long after the fleet was whole again (nginx leaves a failed replica alone
 * for 1 s; streams break at a kill).
 */
export const FAULT_GRACE_MS = 5_000
/** `modern`: protocol 2026-07-28, stateless; `2025`: initialize, sessions, server→client requests. */
export type Era = (typeof ERAS)[number]

const FLOW_KINDS = ['create_delete', 'bulk_delete', 'declined_delete', 'template'] as const
export type FlowKind = (typeof FLOW_KINDS)[number]

/**
 * The flows each era runs. Modern users leave out `template`: their driver re-sends a round after a
 * transport failure, and the template's final round creates its note without a single-use key
 * (see `create_note_from_template`), so a re-sent final round would create it twice by design.
 */
export const ERA_FLOWS: Readonly<Record<Era, readonly FlowKind[]>> = {
  modern: ['create_delete', 'bulk_delete', 'declined_delete'],
  '2025': FLOW_KINDS,
}

/**
 * What a latency sample belongs to: a single-round call (`initialize` is the 2025 handshake), round N
 * of an interactive flow (from the message that starts it to the server's next question or the
 * result), the 2025 client's answer POST (sent until its 202), or one request of a task: the
 * `tools/call` that created it, a `tasks/get`, a `tasks/update`.
 */
export type LatencyLabel =
  | 'initialize'
  | 'create_note'
  | 'search_notes'
  | 'answer_post'
  | 'task_create'
  | 'task_get'
  | 'task_update'
  | `round_${number}`

export interface Percentiles {
  count: number
  p50: number
  p90: number
  p99: number
  max: number
}

/** Nearest-rank percentile of ascending `sorted` (0 when empty). */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] as number
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b)
  const round = (ms: number) => Math.round(ms * 10) / 10
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? 0),
  }
}

const LABEL_ORDER: Record<string, number> = {
  initialize: -7,
  create_note: -6,
  search_notes: -5,
  answer_post: -4,
  task_create: -3,
  task_get: -2,
  task_update: -1,
}

function labelOrder(label: LatencyLabel): number {
  return LABEL_ORDER[label] ?? Number(label.slice('round_'.length))
}

function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by
}

export interface FlowCounts {
  started: number
  completed: number
  failedCleanly: number
}

function noFlows(): FlowCounts {
  return { started: 0, completed: 0, failedCleanly: 0 }
}

/** What one group of virtual users' calls did: errors, clean failures, latencies, replica changes. */
export class CallMetrics {
  /** Virtual users of the group. */
  users = 0
  /** Errors that ended a flow uncleanly (or made its outcome wrong), by kind. */
  errors: Record<string, number> = {}
  /** Transport failures that ended a flow cleanly (the user saw an error), by kind. */
  cleanFailures: Record<string, number> = {}
  /** Clean failures that happened outside the fault window (they fail the run). */
  cleanFailuresOutsideFault = 0
  /**
   * Modern: rounds 2 and later of interactive flows, and how many a different replica served than
   * the round before. 2025: answer POSTs, and how many reached another replica than the one holding
   * the flow's stream. Tasks: the requests of a task after the one that created it (polls and
   * answers), and how many a different replica served than the request before.
   */
  laterRounds = 0
  crossReplicaRounds = 0
  /** 2025: resume GETs that reopened a call's broken stream (on any replica). */
  streamsResumed = 0
  readonly #latencies = new Map<LatencyLabel, number[]>()

  latency(label: LatencyLabel, ms: number): void {
    let samples = this.#latencies.get(label)
    if (!samples) {
      samples = []
      this.#latencies.set(label, samples)
    }
    samples.push(ms)
  }

  error(kind: string): void {
    bump(this.errors, kind)
  }

  cleanFailure(kind: string, outsideFault: boolean): void {
    bump(this.cleanFailures, kind)
    if (outsideFault) this.cleanFailuresOutsideFault += 1
  }

  resumed(): void {
    this.streamsResumed += 1
  }

  laterRound(crossed: boolean): void {
    this.laterRounds += 1
    if (crossed) this.crossReplicaRounds += 1
  }

  /** p50/p90/p99 per label (single-round calls, then rounds in order), plus `all` samples. */
  latencySummary(): Record<string, Percentiles> {
    const labels = [...this.#latencies.keys()].sort((a, b) => labelOrder(a) - labelOrder(b))
    const summary: Record<string, Percentiles> = {
      all: percentiles([...this.#latencies.values()].flat()),
    }
    for (const label of labels) summary[label] = percentiles(this.#latencies.get(label) ?? [])
    return summary
  }
}

/** What one era's users did. */
export class EraMetrics extends CallMetrics {
  readonly era: Era
  readonly flows = Object.fromEntries(FLOW_KINDS.map((kind) => [kind, noFlows()])) as Record<
    FlowKind,
    FlowCounts
  >
  /** Delete actions that found their note already gone (a duplicated side effect). */
  repeatedDeletes = 0
  /** `create_note` calls whose transport failed, and how many of those the search found stored. */
  createTransportFailures = 0
  createsRecovered = 0

  constructor(era: Era) {
    super()
    this.era = era
  }
}

/** What the tasks scenario's users did (`task-flow.ts`), besides what every group counts. */
export class TaskMetrics extends CallMetrics {
  readonly flows = noFlows()
  /** Tasks created (a `CreateTaskResult` arrived). */
  created = 0
  /**
   * Attempts of a task-creating `tools/call` that got no answer (the replica died with it): each
   * may have created a task whose id nobody learned.
   */
  creationsUnanswered = 0
  /** `tasks/get` sent, and `tasks/update` sent with how many answers in all. */
  polls = 0
  updates = 0
  answers = 0
  /** Milliseconds from a task's creating call to the poll that saw it end. */
  readonly #durations: number[] = []

  ended(ms: number): void {
    this.#durations.push(ms)
  }

  durationSummary(): Percentiles {
    return percentiles(this.#durations)
  }
}

export class Metrics {
  /** HTTP attempts sent (every round of every call, retries, answers and streams included). */
  requests = 0
  /** Attempts that got no replica's answer: connection refused/reset, or a gateway 502/503/504. */
  failedAttempts = 0
  /** 5xx answered by a replica (it names itself in `X-Replica`): always a failure. */
  replica5xx = 0
  /** 5xx answered by nginx (no replica behind it answered). */
  gateway5xx = 0
  /**
   * A replica's clean refusal of a request that needed the store while it could not be reached
   * (`routing.ts`'s `storeOutageAnswer`), in the fault window; outside it, one counts as a replica 5xx.
   */
  storeRefusals = 0
  /** Modern rounds re-sent after a transport failure, and how many of them after the fault. */
  retriedRounds = 0
  retriedRoundsAfterFault = 0
  /** Re-sent rounds by round number (a re-sent round 2 or 3 is usually a flow's final round). */
  retriedByRound: Record<string, number> = {}
  servedBy: Record<string, number> = {}
  readonly eras: Record<Era, EraMetrics> = {
    modern: new EraMetrics('modern'),
    '2025': new EraMetrics('2025'),
  }
  readonly tasks = new TaskMetrics()

  /**
   * Whether every flow kind of each era in `eras` (the eras that have users), and the task flow when
   * `tasks`, has completed at least `minimum` times (`--min-flows`).
   */
  completedAtLeast(minimum: number, eras: readonly Era[], tasks: boolean): boolean {
    const kindsDone = eras.every((era) =>
      ERA_FLOWS[era].every((kind) => this.eras[era].flows[kind].completed >= minimum)
    )
    return kindsDone && (!tasks || this.tasks.flows.completed >= minimum)
  }
  /** `performance.now()` when the fault began and when the fleet was whole again, with a fault. */
  faultAt: number | undefined
  restartedAt: number | undefined

  retried(round: number, at: number): void {
    this.retriedRounds += 1
    if (this.faultAt !== undefined && at >= this.faultAt) this.retriedRoundsAfterFault += 1
    bump(this.retriedByRound, `round_${round}`)
  }

  served(replica: string): void {
    bump(this.servedBy, replica)
  }

  /** A replica answered with the store outage's refusal at `at`. */
  storeRefused(at: number): void {
    if (this.inFaultWindow(at)) this.storeRefusals += 1
    else this.replica5xx += 1
  }

  /**
   * Whether `at` lies in the fault window: from the fault's start until `graceMs` after the fleet
   * was whole again (still open while it is not).
   */
  inFaultWindow(at: number, graceMs = FAULT_GRACE_MS): boolean {
    if (this.faultAt === undefined || at < this.faultAt) return false
    return this.restartedAt === undefined || at <= this.restartedAt + graceMs
  }
}
