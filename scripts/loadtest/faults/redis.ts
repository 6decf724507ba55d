/**
 * @module scripts/loadtest/faults/redis
 * `--fault redis-restart` (with `--bus redis`): a master of the run's Redis Cluster goes away mid-run,
 * its replica takes over, and the node comes back. At {@link FAULT_AT} of the duration the master
 * serving the channel of events for everyone (which every replica holding a stream subscribes) is
 * SIGKILLed; the cluster promotes its replica (within its node timeout,
 * `scripts/support/redis.ts`), and once every live node reports the cluster whole the node is
 * started again, rejoining as a replica of its shard. Meanwhile each notes replica's bus loses
 * Redis, subscribes its channels again and tells its streams that every list may have changed
 * (`src/mcp/buses/redis.ts`), logging that it hears again: the fault waits for that line from every
 * replica, after the kill ({@link RECOVERY_BOUND_MS}), so no replica is left deaf.
 *
 * No flow may fail: a 2025 answer whose bus signal was lost is read from the store by the waiting
 * call's poll, and a stream missing events is told to re-read. The fault's own verdict: every
 * replica heard again, and the killed node rejoined.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { until } from '../../support/redis.ts'
import type { ReplicaProcess } from '../processes.ts'
import {
  secondsSince,
  type Fault,
  type FaultContext,
  type FaultOutcome,
  type FaultReportBase,
} from './fault.ts'

/** The fault happens at this share of the duration (and not before 1 s). */
const FAULT_AT = 0.4
/** Bound on every replica hearing again, and on the cluster settling, after the kill. */
const RECOVERY_BOUND_MS = 60_000
/** How often a replica's log is read again while waiting for it to hear again. */
const READ_EVERY_MS = 100
/** What the bus logs once it subscribed its channels again (`src/mcp/buses/redis.ts`). */
const HEARS_AGAIN = 'event bus hears Redis again'
/** The channel of events for everyone of the notes replicas (their prefix, `src/node/replica.ts`). */
const EVERYONE_CHANNEL = 'notes_mcp_events:all'

export interface RedisReport extends FaultReportBase {
  kind: 'redis-restart'
  killed_node: number
  killed_at_s: number
  /** When every live node reported the cluster whole again (the replica promoted). */
  failed_over_at_s: number | null
  /** When the killed node was back, as a replica. */
  rejoined_at_s: number | null
  /** Each notes replica: how long after the kill its bus heard again (`null`: not within the bound). */
  heard_again: { replica: string; after_ms: number | null }[]
}

function timesHeardAgain(replica: ReplicaProcess): number {
  return replica.output().split(HEARS_AGAIN).length - 1
}

/** Milliseconds from `since` until `replica` logs once more than `before` that it hears again. */
async function timeToHearAgain(
  replica: ReplicaProcess,
  before: number,
  since: number
): Promise<number | null> {
  while (performance.now() - since < RECOVERY_BOUND_MS) {
    if (timesHeardAgain(replica) > before) return Math.round(performance.now() - since)
    await sleep(READ_EVERY_MS)
  }
  return null
}

/** `promise`, or `null` once {@link RECOVERY_BOUND_MS} passed first. */
async function bounded(promise: Promise<void>): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), RECOVERY_BOUND_MS)
  })
  return Promise.race([promise.then(() => performance.now()), late]).finally(() =>
    clearTimeout(timer)
  )
}

/** The fault (module header). */
export function redisFault(): Fault<RedisReport> {
  return {
    kind: 'redis-restart',
    describe:
      "a master of the run's Redis Cluster SIGKILLed mid-run, its replica promoted, the node started again as a replica",
    allowed: { modern: [], '2025': [] },
    holdImports: false,
    maxExtraMs: 3 * RECOVERY_BOUND_MS,
    async run(context: FaultContext): Promise<FaultOutcome<RedisReport>> {
      const { replicas, redis, metrics, start, durationMs, log } = context
      if (!redis) throw new Error('--fault redis-restart needs --bus redis')
      await sleep(Math.max(1000, durationMs * FAULT_AT))
      const master = await redis.masterOf(EVERYONE_CHANNEL)
      const before = replicas.map(timesHeardAgain)
      const killedAt = performance.now()
      metrics.faultAt = killedAt
      await master.kill()
      log(`Redis master ${master.port} SIGKILLed at ${secondsSince(start, killedAt)} s`)
      const heard = Promise.all(
        replicas.map((replica, i) => timeToHearAgain(replica, before[i] ?? 0, killedAt))
      )
      const promoted = until(
        async () => (await redis.masterOf(EVERYONE_CHANNEL)).port !== master.port
      )
      const failedOverAt = await bounded(promoted.then(() => redis.settled()))
      log(
        `the cluster whole again (replica promoted) by ${secondsSince(start, failedOverAt ?? performance.now())} s`
      )
      const rejoinedAt =
        failedOverAt === null ? null : await bounded(master.start().then(() => redis.settled()))
      metrics.restartedAt = performance.now()
      log(
        `the killed node back as a replica by ${rejoinedAt === null ? 'never' : `${secondsSince(start, rejoinedAt)} s`}`
      )
      const heardAgain = (await heard).map((after_ms, i) => ({
        replica: replicas[i]?.id ?? `r${i + 1}`,
        after_ms,
      }))
      log(
        `buses heard again after ${heardAgain.map(({ replica, after_ms }) => `${replica} ${after_ms ?? 'never'} ms`).join(', ')}`
      )
      const report: RedisReport = {
        kind: 'redis-restart',
        killed_node: master.port,
        killed_at_s: secondsSince(start, killedAt),
        failed_over_at_s: failedOverAt === null ? null : secondsSince(start, failedOverAt),
        rejoined_at_s: rejoinedAt === null ? null : secondsSince(start, rejoinedAt),
        heard_again: heardAgain,
        passed: rejoinedAt !== null && heardAgain.every(({ after_ms }) => after_ms !== null),
      }
      return { report }
    },
  }
}
