/**
 * @module scripts/loadtest/faults/rolling
 * `--fault rolling`: two rolling deploys under load that rotate the key ring the way the README tells
 * operators to. From {@link ROLLING_AT} of the duration, every replica in turn gets SIGTERM, drains and
 * exits by itself, and is started again with the next release's `STATE_KEYS`; the next one goes once it
 * listens again and nginx has had {@link SETTLE_MS} to see it back. The first deploy adds a new key
 * (`old,new`: nothing seals with it yet), the second promotes it (`new,old`): new rounds, sessions and
 * streams are sealed with it from then on while every state sealed with the old one still opens.
 *
 * A graceful restart is not an excuse for a visible failure: no group of users may fail a flow cleanly
 * (`allowed` is empty), and the fault's own verdict (`passed`) requires every replica to have exited
 * with code 0 within its drain bound, never SIGKILLed. The users keep starting flows until both
 * deploys are done, even past `--duration`.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { formatKeyRing, generateKey, parseKeyRing, type RawKey } from '../../../src/mcp/key-ring.ts'
import type { ReplicaExit } from '../processes.ts'
import {
  secondsSince,
  type Fault,
  type FaultContext,
  type FaultOutcome,
  type FaultReportBase,
} from './fault.ts'

/** The first deploy starts at this share of the duration (and not before 1 s). */
const ROLLING_AT = 0.15
/**
 * After a replica is back, how long before the next one is stopped, as a deploy's "minimum ready
 * time": nginx leaves a replica that refused a connection alone for `fail_timeout` (1 s), so with
 * two replicas the next one going down sooner may find nginx with none it will try (a 502).
 */
const SETTLE_MS = 3_000
/** The drain bound every replica runs with (`SHUTDOWN_GRACE_SECONDS`), and the load test's margin. */
export const DRAIN_GRACE_S = 15
const EXIT_MARGIN_MS = 10_000
/** How long a replica may take to start again. */
const START_BOUND_MS = 20_000

/** One replica's restart in a deploy. */
export interface RestartReport {
  replica: string
  deploy: 'add' | 'promote'
  sigterm_at_s: number
  exit_code: number | null
  exit_signal: string | null
  /** SIGKILLed because it had not exited within its drain bound. */
  forced: boolean
  drain_ms: number
  back_at_s: number
}

export interface RollingReport extends FaultReportBase {
  kind: 'rolling'
  restarts: RestartReport[]
  key_rotation: { kid: string; added_at_s: number; promoted_at_s: number }
  /** Every restart exited with code 0 within its bound. */
  clean_exits: boolean
}

function cleanExit(exit: ReplicaExit): boolean {
  return exit.code === 0 && !exit.forced
}

/** The rolling-deploy fault; `stateKeys` is the ring the replicas started with. */
export function rollingFault(stateKeys: string): Fault<RollingReport> {
  const old: RawKey[] = parseKeyRing(stateKeys)
  const added = generateKey()
  const deploys = [
    { name: 'add', keys: formatKeyRing([...old, added]) },
    { name: 'promote', keys: formatKeyRing([added, ...old]) },
  ] as const
  return {
    kind: 'rolling',
    describe: `two rolling deploys (SIGTERM each replica in turn), adding then promoting key ${added.kid}`,
    allowed: { modern: [], '2025': [] },
    holdImports: false,
    maxExtraMs: 16 * 2 * (DRAIN_GRACE_S * 1000 + EXIT_MARGIN_MS + START_BOUND_MS + SETTLE_MS),
    async run({ replicas, metrics, start, durationMs, log }: FaultContext) {
      await sleep(Math.max(1000, durationMs * ROLLING_AT))
      metrics.faultAt = performance.now()
      const restarts: RestartReport[] = []
      const doneAt: number[] = []
      let clean = true
      for (const deploy of deploys) {
        for (const replica of replicas) {
          const sigtermAt = performance.now()
          const exit = await replica.terminate(DRAIN_GRACE_S * 1000 + EXIT_MARGIN_MS)
          await replica.start({ STATE_KEYS: deploy.keys })
          const backAt = performance.now()
          clean &&= cleanExit(exit)
          const how = exit.forced ? 'SIGKILLed' : `exit ${exit.code ?? exit.signal}`
          log(`${deploy.name}: ${replica.id} drained in ${exit.ms} ms (${how}), back`)
          if (!cleanExit(exit))
            log(`${replica.id}'s last output:\n${replica.output().slice(-2000)}`)
          restarts.push({
            replica: replica.id,
            deploy: deploy.name,
            sigterm_at_s: secondsSince(start, sigtermAt),
            exit_code: exit.code,
            exit_signal: exit.signal,
            forced: exit.forced,
            drain_ms: exit.ms,
            back_at_s: secondsSince(start, backAt),
          })
          await sleep(SETTLE_MS)
        }
        doneAt.push(performance.now())
      }
      metrics.restartedAt = performance.now()
      const report: RollingReport = {
        kind: 'rolling',
        restarts,
        key_rotation: {
          kid: added.kid,
          added_at_s: secondsSince(start, doneAt[0] as number),
          promoted_at_s: secondsSince(start, doneAt[1] as number),
        },
        clean_exits: clean,
        passed: clean,
      }
      return { report } satisfies FaultOutcome<RollingReport>
    },
  }
}
