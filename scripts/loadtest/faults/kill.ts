/**
 * @module scripts/loadtest/faults/kill
 * `--fault kill` (`--kill`): at 40 % of the duration one replica is SIGKILLed and started again on the
 * same port {@link DOWN_MS} later. With task users, the fault is aimed at a task, for certain rather
 * than by luck: the replicas run with an import hold (`scripts/support/held-import-replica.ts`, armed
 * over each one's IPC channel before the users start), so the first import that writes its first
 * batch (100 notes) on any replica waits there, still running and holding its lease; the other
 * replicas are released at once and run on as usual. At the fault's moment the replica holding that
 * import is the one SIGKILLed (r2 if no import reached a hold within {@link HOLD_WAIT_MS} more), so a
 * running task is interrupted and must be taken over; the tasks it held the lease of when it was dead
 * are the fault's `interruptedTasks`.
 *
 * A 2025 flow may fail cleanly in the window only where the killed replica never answered one of its
 * requests, which the v1 SDK does not send again ({@link UNANSWERED_KINDS}); modern flows never.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { UNANSWERED_KINDS } from '../legacy-agent.ts'
import type { ReplicaProcess } from '../processes.ts'
import type { SharedStore } from '../store.ts'
import {
  secondsSince,
  type Fault,
  type FaultContext,
  type FaultOutcome,
  type FaultReportBase,
} from './fault.ts'

/** How long the killed replica stays down before it is started again. */
const DOWN_MS = 1_500
/** The fault happens at this share of the duration (and not before 1 s). */
const FAULT_AT = 0.4
/** With task users, the store calls of an import let through before the hold: its first batch. */
const CALLS_BEFORE_HOLD = 1
/**
 * With task users, how long past its moment the SIGKILL may wait for an import to reach a hold
 * (one normally did long before: the task users import first thing).
 */
const HOLD_WAIT_MS = 20_000

export interface KillReport extends FaultReportBase {
  kind: 'kill'
  replica: string
  killed_at_s: number
  restarted_at_s: number
  down_ms: number
  /** Tasks whose lease the replica held when it was killed. */
  tasks_running: number
}

/** The tasks each of `replicas` holds a live lease of (leases are `<REPLICA_ID>-<random>`). */
async function runningTasks(
  store: SharedStore,
  replicas: ReplicaProcess[]
): Promise<Map<ReplicaProcess, string[]>> {
  const now = Date.now()
  const running = new Map<ReplicaProcess, string[]>()
  for (const row of await store.taskRecords()) {
    if (row.status !== 'working' || (row.leaseExpiresAt ?? 0) <= now) continue
    const owner = replicas.find((replica) => row.leaseOwner?.startsWith(`${replica.id}-`))
    if (owner) running.set(owner, [...(running.get(owner) ?? []), row.id])
  }
  return running
}

/** A replica holding an import at its hold, and the notes that import wrote before it. */
interface HeldImport {
  replica: ReplicaProcess
  created: number
}

/**
 * Arms the import hold of every replica (resolving once all are armed, before any user starts),
 * and answers the first replica an import then reaches the hold on; the others are released at
 * once. `undefined` when every replica exited first.
 */
async function holdFirstImport(
  replicas: ReplicaProcess[]
): Promise<{ first: Promise<HeldImport | undefined> }> {
  await Promise.all(replicas.map((replica) => replica.hold.arm(CALLS_BEFORE_HOLD)))
  const first = Promise.any(
    replicas.map(async (replica) => ({ replica, ...(await replica.hold.held()) }))
  ).then(
    (held) => {
      for (const other of replicas) if (other !== held.replica) other.hold.release()
      return held
    },
    () => undefined
  )
  return { first }
}

/** `promise`, or `undefined` once `ms` passed first. */
function orAfter<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>(
    (resolve) => (timer = setTimeout(() => resolve(undefined), ms))
  )
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** The SIGKILL fault, aimed at a held import when the run has task users. */
export function killFault(taskUsers: number): Fault<KillReport> {
  const aimed = taskUsers > 0
  let held: Promise<HeldImport | undefined> | undefined
  return {
    kind: 'kill',
    describe: 'one replica killed mid-run',
    allowed: { modern: [], '2025': UNANSWERED_KINDS },
    holdImports: aimed,
    maxExtraMs: 0,
    async prepare(replicas: ReplicaProcess[]): Promise<void> {
      if (aimed) held = (await holdFirstImport(replicas)).first
    },
    async run(context: FaultContext): Promise<FaultOutcome<KillReport>> {
      const { replicas, metrics, start, durationMs, store, log } = context
      const fallback = replicas[1] as ReplicaProcess
      await sleep(Math.max(1000, durationMs * FAULT_AT))
      const aim = held && (await orAfter(held, HOLD_WAIT_MS))
      if (held && !aim) log(`no import reached a hold; SIGKILL ${fallback.id} instead`)
      const replica = aim?.replica ?? fallback
      // The fault window opens before the signal: streams may break before the exit is reported.
      const killedAt = performance.now()
      metrics.faultAt = killedAt
      await replica.kill()
      const leased = (aimed && (await runningTasks(store, replicas)).get(replica)) || []
      const heldImport = aim ? `, one an import held after ${aim.created} notes` : ''
      log(
        `SIGKILL ${replica.id} at ${secondsSince(start, killedAt)} s` +
          (aimed ? ` (running ${leased.length} tasks${heldImport})` : '')
      )
      await sleep(DOWN_MS)
      await replica.start()
      const restartedAt = performance.now()
      metrics.restartedAt = restartedAt
      log(`${replica.id} back at ${secondsSince(start, restartedAt)} s`)
      const report: KillReport = {
        kind: 'kill',
        replica: replica.id,
        killed_at_s: secondsSince(start, killedAt),
        restarted_at_s: secondsSince(start, restartedAt),
        down_ms: Math.round(restartedAt - killedAt),
        tasks_running: leased.length,
        passed: true,
      }
      return { report, interruptedTasks: aimed ? leased : undefined }
    },
  }
}
