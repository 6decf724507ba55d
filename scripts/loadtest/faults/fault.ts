/**
 * @module scripts/loadtest/faults/fault
 * What a fault of `npm run loadtest -- --fault NAME` is to the run: a procedure started when the
 * users start (`run`), which marks its window in the metrics (`faultAt` when it begins, `restartedAt`
 * when the fleet is whole again) and answers its own section of the summary; the clean failures
 * each group of users may end a flow with inside that window (`allowed`: none for a fault the fleet
 * must absorb without a visible failure); and what the run must set up for it before any replica
 * starts (`holdImports`: the replicas start through the held-import entry). The faults themselves:
 * `kill.ts` (SIGKILL one replica), `rolling.ts` (a rolling deploy with a key rotation),
 * `database.ts` (the PostgreSQL server restarted or killed, then back), `redis.ts` (a master of the
 * run's Redis Cluster killed, its replica promoted, the node back).
 */
import type { Metrics } from '../metrics.ts'
import type { ReplicaProcess } from '../processes.ts'
import type { SharedStore } from '../store.ts'
import type { RedisCluster } from '../../support/redis.ts'

/** The faults a run can inject (`--fault NAME`; `--kill` is `--fault kill`). */
export const FAULT_KINDS = ['kill', 'rolling', 'pg-restart', 'pg-kill', 'redis-restart'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

/** What a fault sees of the run. */
export interface FaultContext {
  replicas: ReplicaProcess[]
  store: SharedStore
  /** The run's Redis Cluster, with `--bus redis`. */
  redis?: RedisCluster
  metrics: Metrics
  /** `performance.now()` when the users started. */
  start: number
  durationMs: number
  /** Prints one progress line of the fault. */
  log: (line: string) => void
}

/** A fault's section of the summary (`fault`), tagged with its kind. */
export interface FaultReportBase {
  kind: FaultKind
  /** The fault's own verdict (the run also needs every group of users to pass). */
  passed: boolean
}

export interface FaultOutcome<Report extends FaultReportBase = FaultReportBase> {
  report: Report
  /** Ids of the tasks the fault interrupted, each of which must have ended elsewhere. */
  interruptedTasks?: string[]
}

/** The clean failure kinds a group of users may end a flow with in the fault window. */
export interface AllowedFailures {
  modern: readonly string[]
  '2025': readonly string[]
}

export interface Fault<Report extends FaultReportBase = FaultReportBase> {
  readonly kind: FaultKind
  /** One line for the run's banner: what happens to the fleet. */
  readonly describe: string
  readonly allowed: AllowedFailures
  /** The replicas start through `scripts/support/held-import-replica.ts` (an import hold seam). */
  readonly holdImports: boolean
  /**
   * Besides `--duration`, the longest the fault may keep users busy (their deadline waits for the
   * fault to end when it ends later) and the watchdog waits.
   */
  readonly maxExtraMs: number
  /** Once the replicas started, before any user does (arming a hold, say). */
  prepare?(replicas: ReplicaProcess[]): Promise<void>
  run(context: FaultContext): Promise<FaultOutcome<Report>>
}

/** Seconds since the run's start, rounded to a millisecond, for a report. */
export function secondsSince(start: number, at: number): number {
  return Math.round(at - start) / 1000
}
