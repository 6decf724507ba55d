/**
 * @module scripts/loadtest/metrics
 * What a load-test run counts while it runs, fed by the virtual users' agents (`modern-agent.ts`,
 * `legacy-agent.ts`) and flows (`flows.ts`). For the whole run: requests sent, which replica served
 * them, attempts that got no replica's answer, HTTP 5xx from replicas and from the gateway, the rounds
 * the modern driver re-sent (before and after the fault), and when the fault happened. Per era
 * (`modern`: 2026-07-28 through the project's driver; `2025`: the v1 SDK client over sessions):
 * flows by kind (started, completed, failed cleanly), the errors that ended a flow uncleanly, the
 * transport failures that ended one cleanly, latency by kind of call and round, the cross-replica
 * share of later rounds, repeated deletes and `create_note` recoveries.
 * Plain counters: the virtual users share one event loop.
 */

export const ERAS = ['modern', '2025'] as const
/** `modern`: protocol 2026-07-28, stateless; `2025`: initialize, sessions, server→client requests. */
export type Era = (typeof ERAS)[number]

export const FLOW_KINDS = ['create_delete', 'bulk_delete', 'declined_delete', 'template'] as const
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
 * result), or the 2025 client's answer POST (sent until its 202).
 */
export type LatencyLabel =
  'initialize' | 'create_note' | 'search_notes' | 'answer_post' | `round_${number}`

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
  initialize: -4,
  create_note: -3,
  search_notes: -2,
  answer_post: -1,
}

function labelOrder(label: LatencyLabel): number {
  return LABEL_ORDER[label] ?? Number(label.slice('round_'.length))
}

function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by
}

interface FlowCounts {
  started: number
  completed: number
  failedCleanly: number
}

/** What one era's users did. */
export class EraMetrics {
  readonly era: Era
  /** Virtual users of this era. */
  users = 0
  flows: Record<FlowKind, FlowCounts>
  /** Errors that ended a flow uncleanly (or made its outcome wrong), by kind. */
  errors: Record<string, number> = {}
  /** Transport failures that ended a flow cleanly (the user saw an error), by kind. */
  cleanFailures: Record<string, number> = {}
  /** Clean failures that happened outside the fault window (they fail the run). */
  cleanFailuresOutsideFault = 0
  /**
   * Modern: rounds 2 and later of interactive flows, and how many a different replica served than
   * the round before. 2025: answer POSTs, and how many reached another replica than the one holding
   * the flow's stream.
   */
  laterRounds = 0
  crossReplicaRounds = 0
  /** Delete actions that found their note already gone (a duplicated side effect). */
  repeatedDeletes = 0
  /** `create_note` calls whose transport failed, and how many of those the search found stored. */
  createTransportFailures = 0
  createsRecovered = 0
  readonly #latencies = new Map<LatencyLabel, number[]>()

  constructor(era: Era) {
    this.era = era
    this.flows = Object.fromEntries(
      FLOW_KINDS.map((kind) => [kind, { started: 0, completed: 0, failedCleanly: 0 }])
    ) as Record<FlowKind, FlowCounts>
  }

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

export class Metrics {
  /** HTTP attempts sent (every round of every call, retries, answers and streams included). */
  requests = 0
  /** Attempts that got no replica's answer: connection refused/reset, or a gateway 502/503/504. */
  failedAttempts = 0
  /** 5xx answered by a replica (it names itself in `X-Replica`): always a failure. */
  replica5xx = 0
  /** 5xx answered by nginx (no replica behind it answered). */
  gateway5xx = 0
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
  /** `performance.now()` of the SIGKILL and of the restart, when a fault was injected. */
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

  /**
   * Whether `at` lies in the fault window: from the SIGKILL until `graceMs` after the restart (still
   * open while the replica is down).
   */
  inFaultWindow(at: number, graceMs: number): boolean {
    if (this.faultAt === undefined || at < this.faultAt) return false
    return this.restartedAt === undefined || at <= this.restartedAt + graceMs
  }
}
