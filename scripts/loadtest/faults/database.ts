/**
 * @module scripts/loadtest/faults/database
 * `--fault pg-restart` and `--fault pg-kill`: the PostgreSQL server goes away mid-run and comes back.
 * The run's store is then a scratch database on a private server of the run's own
 * (`scripts/support/private-postgres.ts`, handed over as the store's `server`, see `store.ts`), never
 * the shared one. At {@link FAULT_AT} of the duration the server is stopped cleanly (`pg-restart`:
 * `stop('fast')`, as `pg_ctl restart -m fast` stops it) or crashes (`pg-kill`: the postmaster and every
 * backend SIGKILLed), stays down {@link OUTAGE_MS}, and is started again (`pg-kill`: with crash
 * recovery). Then every replica is probed directly, each with a request that needs the store
 * (`search_notes`), until it answers one (bounded by {@link RECOVERY_BOUND_MS}): that is its time
 * to recover, and when all have, the fleet is whole again (`restartedAt`). The fault stays in
 * progress {@link FAULT_GRACE_MS} more, the window in which the outage's answers still count, and
 * reports how many requests the replicas refused with it.
 *
 * While the store is down a request that needs it is refused cleanly (HTTP 503, `Retry-After`,
 * JSON-RPC -32030: `routing.ts`'s `storeOutageAnswer`): the one failure kind each group of users may
 * end a flow with in the fault window ({@link STORE_UNAVAILABLE_KIND}). The fault's own verdict:
 * requests did meet the outage (at least one refusal) and every replica recovered, without a restart.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { McpClient } from '../../../src/client/index.ts'
import { FAULT_GRACE_MS } from '../metrics.ts'
import type { ReplicaProcess } from '../processes.ts'
import { STORE_UNAVAILABLE_KIND } from '../routing.ts'
import {
  secondsSince,
  type Fault,
  type FaultContext,
  type FaultOutcome,
  type FaultReportBase,
} from './fault.ts'

export type DatabaseFaultKind = 'pg-restart' | 'pg-kill'

/** The fault happens at this share of the duration (and not before 1 s). */
const FAULT_AT = 0.4
/**
 * How long the server stays down: longer than the modern driver re-sends a round for (about 4.6 s,
 * `modern-agent.ts`), so that requests do meet the outage rather than ride it out.
 */
export const OUTAGE_MS = 6_000
/** Bound on a replica serving a request that needs the store again, once the server is back. */
const RECOVERY_BOUND_MS = 30_000
/** Bound on one probe, and the pause between a replica's probes. */
const PROBE_TIMEOUT_MS = 3_000
const PROBE_EVERY_MS = 100
/** Bound on stopping, killing and starting the server (the controller bounds each itself too). */
const SERVER_BOUND_MS = 60_000

/** One replica's recovery: how long after the server was back it served a store request. */
export interface ReplicaRecovery {
  replica: string
  /** `null`: not within {@link RECOVERY_BOUND_MS}. */
  recovered_ms: number | null
}

export interface DatabaseReport extends FaultReportBase {
  kind: DatabaseFaultKind
  down_at_s: number
  back_at_s: number
  /** From the stop (or kill) until the server accepted connections again. */
  outage_s: number
  /** Requests the replicas refused with the outage answer in the fault window. */
  refused: number
  recovery: ReplicaRecovery[]
  /** When the last replica recovered; `null` when one did not. */
  recovered_at_s: number | null
}

/**
 * The fault's own verdict: requests did meet the outage (at least one was refused with its answer)
 * and every replica served the store again within the bound.
 */
export function databaseFaultPassed(
  refused: number,
  recovery: readonly ReplicaRecovery[]
): boolean {
  return refused > 0 && recovery.every((replica) => replica.recovered_ms !== null)
}

/** Whether the replica of `client` answers a request that needs the store (one `search_notes`, not re-sent). */
async function servesStore(client: McpClient): Promise<boolean> {
  try {
    const result = await client.callTool(
      'search_notes',
      { query: '', limit: 1 },
      { transportRetries: 0 }
    )
    return result.isError !== true
  } catch {
    return false
  }
}

/** Milliseconds from `since` until `replica` serves a store request; `null` past the bound. */
async function timeToServeStore(replica: ReplicaProcess, since: number): Promise<number | null> {
  const client = new McpClient({
    url: replica.url,
    timeoutMs: PROBE_TIMEOUT_MS,
    transportRetries: 0,
    clientInfo: { name: 'notes-loadtest-probe', version: '0.1.0' },
  })
  while (performance.now() - since < RECOVERY_BOUND_MS) {
    if (await servesStore(client)) return Math.round(performance.now() - since)
    await sleep(PROBE_EVERY_MS)
  }
  return null
}

/** `promise`, or a rejection naming `what` once `ms` passed first. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** The database fault `kind` (module header). */
export function databaseFault(kind: DatabaseFaultKind): Fault<DatabaseReport> {
  const crash = kind === 'pg-kill'
  return {
    kind,
    describe: crash
      ? `the PostgreSQL server SIGKILLed (postmaster and backends) mid-run, started again ${OUTAGE_MS / 1000} s later with crash recovery`
      : `the PostgreSQL server stopped cleanly (fast) mid-run and started again ${OUTAGE_MS / 1000} s later`,
    allowed: { modern: [STORE_UNAVAILABLE_KIND], '2025': [STORE_UNAVAILABLE_KIND] },
    holdImports: false,
    maxExtraMs: 2 * SERVER_BOUND_MS + OUTAGE_MS + RECOVERY_BOUND_MS + FAULT_GRACE_MS,
    async run(context: FaultContext): Promise<FaultOutcome<DatabaseReport>> {
      const { replicas, store, metrics, start, durationMs, log } = context
      const server = store.server
      if (!server) throw new Error(`--fault ${kind} needs the run's store on a private server`)
      await sleep(Math.max(1000, durationMs * FAULT_AT))
      const downAt = performance.now()
      metrics.faultAt = downAt
      await within(
        crash ? server.kill() : server.stop('fast'),
        SERVER_BOUND_MS,
        `${kind}: stopping`
      )
      log(
        `PostgreSQL ${crash ? 'SIGKILLed' : 'stopped (fast)'} at ${secondsSince(start, downAt)} s`
      )
      await sleep(OUTAGE_MS)
      await within(server.start(), SERVER_BOUND_MS, `${kind}: starting the server again`)
      const backAt = performance.now()
      log(`PostgreSQL back at ${secondsSince(start, backAt)} s`)
      const recovered = await Promise.all(
        replicas.map((replica) => timeToServeStore(replica, backAt))
      )
      const allRecovered = recovered.every((ms) => ms !== null)
      metrics.restartedAt = performance.now()
      log(
        `replicas served the store again after ${recovered.map((ms, i) => `${replicas[i]?.id} ${ms ?? 'never'} ms`).join(', ')}`
      )
      for (const [i, replica] of replicas.entries()) {
        if (recovered[i] === null)
          log(`${replica.id}'s last output:\n${replica.output().slice(-3000)}`)
      }
      await sleep(FAULT_GRACE_MS)
      const refused = metrics.storeRefusals
      const recovery = replicas.map((replica, i) => ({
        replica: replica.id,
        recovered_ms: recovered[i] ?? null,
      }))
      const report: DatabaseReport = {
        kind,
        down_at_s: secondsSince(start, downAt),
        back_at_s: secondsSince(start, backAt),
        outage_s: Math.round(backAt - downAt) / 1000,
        refused,
        recovery,
        recovered_at_s: allRecovered ? secondsSince(start, metrics.restartedAt) : null,
        passed: databaseFaultPassed(refused, recovery),
      }
      return { report }
    },
  }
}
