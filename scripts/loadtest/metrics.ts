/**
 * @module scripts/loadtest/metrics
 * What a load-test run counts while it runs, fed by the virtual users (`users.ts`) from the client
 * driver's `urls()` and `onRound` hooks: requests sent, latency of every answered attempt (by kind
 * of call and round), which replica served each round, transport failures and the rounds the driver
 * re-sent because of them (before and after the fault), HTTP 5xx from replicas and from the
 * gateway, and the errors that ended a flow, by kind. Plain counters: the virtual users share one
 * event loop.
 */

export const FLOW_KINDS = ['create_delete', 'bulk_delete', 'declined_delete'] as const
export type FlowKind = (typeof FLOW_KINDS)[number]

/** What a latency sample belongs to: a single-round call, or round N of an interactive flow. */
export type LatencyLabel = 'create_note' | 'search_notes' | `round_${number}`

export interface Percentiles {
  count: number
  p50: number
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
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? 0),
  }
}

export class Metrics {
  /** HTTP attempts sent (every round of every call, retries included). */
  requests = 0
  /** Attempts that got no replica's answer: connection refused/reset, or a gateway 502/503/504. */
  failedAttempts = 0
  /** 5xx answered by a replica (it names itself in `X-Replica`): always a failure. */
  replica5xx = 0
  /** 5xx answered by nginx (no replica behind it answered): the driver re-sends the round. */
  gateway5xx = 0
  /** Rounds re-sent after a transport failure, and how many of them after the injected fault. */
  retriedRounds = 0
  retriedRoundsAfterFault = 0
  /** Re-sent rounds by round number (a re-sent round 2 or 3 is usually a flow's final round). */
  retriedByRound: Record<string, number> = {}
  /** `create_note` calls whose transport failed, and how many of those the search found stored. */
  createTransportFailures = 0
  createsRecovered = 0
  /** Rounds 2 and later of interactive flows, and how many a different replica served. */
  laterRounds = 0
  crossReplicaRounds = 0
  servedBy: Record<string, number> = {}
  /** Errors that ended a flow (or made its outcome wrong), by kind. */
  errors: Record<string, number> = {}
  /** Delete actions that found their note already gone (a duplicated side effect). */
  repeatedDeletes = 0
  flows: Record<FlowKind, { started: number; completed: number }> = {
    create_delete: { started: 0, completed: 0 },
    bulk_delete: { started: 0, completed: 0 },
    declined_delete: { started: 0, completed: 0 },
  }
  /** `performance.now()` of the SIGKILL, when one was injected. */
  faultAt: number | undefined
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
    this.errors[kind] = (this.errors[kind] ?? 0) + 1
  }

  retried(round: number, at: number): void {
    this.retriedRounds += 1
    if (this.faultAt !== undefined && at >= this.faultAt) this.retriedRoundsAfterFault += 1
    const key = `round_${round}`
    this.retriedByRound[key] = (this.retriedByRound[key] ?? 0) + 1
  }

  served(replica: string): void {
    this.servedBy[replica] = (this.servedBy[replica] ?? 0) + 1
  }

  /** p50/p99 per label, rounds in order, plus every sample together as `all`. */
  latencySummary(): Record<string, Percentiles> {
    const labels = [...this.#latencies.keys()].sort((a, b) => labelOrder(a) - labelOrder(b))
    const summary: Record<string, Percentiles> = {
      all: percentiles([...this.#latencies.values()].flat()),
    }
    for (const label of labels) summary[label] = percentiles(this.#latencies.get(label) ?? [])
    return summary
  }
}

function labelOrder(label: LatencyLabel): number {
  if (label === 'create_note') return -2
  if (label === 'search_notes') return -1
  return Number(label.slice('round_'.length))
}
