/**
 * @module scripts/loadtest/options
 * The command line of `npm run loadtest`, parsed and bounded in one place. Every number has a
 * ceiling so that no flag can turn the run into an unbounded one; an unknown or malformed flag
 * stops the run with a message before anything starts.
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { FAULT_KINDS, type FaultKind } from './faults/fault.ts'
import type { StoreKind } from './store.ts'

export type Mode = 'direct' | 'balanced'
/** How nginx picks a replica: any but the one that served the flow's last round, or any. */
export type Balancer = 'avoid-previous' | 'round-robin'
/**
 * The replicas' event bus: `store`, the store's own (PostgreSQL's LISTEN/NOTIFY, or none across
 * processes on SQLite); `redis`, a private Redis Cluster of the run's (EVENT_BUS_URL).
 */
export type BusKind = 'store' | 'redis'

export interface LoadtestOptions {
  durationS: number
  replicas: number
  users: number
  /** Share of the users that are 2025-era users (the v1 SDK client over sessions), 0 to 1. */
  legacyShare: number
  /** Users of the tasks scenario, besides `users` (0: none). */
  taskUsers: number
  mode: Mode
  /** `undefined`: PostgreSQL when a server answers, else SQLite. */
  store: StoreKind | undefined
  bus: BusKind
  balancer: Balancer
  /** The fault injected mid-run (`--fault NAME`; `--kill` is `--fault kill`). */
  fault: FaultKind | undefined
  out: string
  maxRequests: number
  /** `--soak MINUTES`: the run's length, and its replicas' memory and handles are judged. */
  soakMinutes: number | undefined
  /** Flows per second the era users pace themselves to, all together; `undefined`: unpaced. */
  rate: number | undefined
  /**
   * `--min-flows N`: past the duration the users go on until every flow kind (and the task flow)
   * has completed N times, within `MIN_FLOWS_MAX_EXTRA_S`; 0: the duration alone ends the run.
   */
  minFlows: number
}

/** How long past its duration a run may go on to reach `--min-flows`. */
export const MIN_FLOWS_MAX_EXTRA_S = 180

/** The soak's default pace (`--rate`): well under what this 2-core machine serves unpaced. */
export const SOAK_DEFAULT_RATE = 20
/** A soak's default request cap allows this many requests per flow at its rate… */
const SOAK_REQUESTS_PER_FLOW = 10
/** …and this many per second for each task user. */
const SOAK_TASK_REQUESTS_PER_S = 2
const DEFAULT_MAX_REQUESTS = 200_000

export const USAGE = `Usage: npm run loadtest -- [options]
  --duration SECONDS        how long virtual users start new flows (default 30, at most 3600)
  --replicas N              Node replicas sharing one key ring and one store (default 3, 2-16)
  --users N                 concurrent virtual users (default 20, at most 500)
  --legacy-share S          share of the users that are 2025-era users (the v1 SDK client:
                            initialize, a session, questions as server→client requests on the
                            call's stream), spread evenly; the others speak 2026-07-28
                            (default 0.5, from 0 to 1)
  --tasks N                 users of the tasks scenario, besides --users: import_notes and
                            export_notes as tasks, polled across replicas, questions answered
                            with tasks/update (default 2, at most 50; 0: none)
  --mode direct|balanced    each round to another replica chosen by the client, or through
                            nginx (default balanced)
  --store postgres|sqlite   default: postgres when a server answers (DATABASE_URL,
                            TEST_DATABASE_URL or 127.0.0.1:5432), else sqlite in a temporary
                            DATA_DIR; either way a fresh store per run
  --bus store|redis         the replicas' event bus: the store's (LISTEN/NOTIFY on postgres;
                            default), or redis: a private Redis Cluster of the run's (three
                            masters with a replica each, on loopback; needs redis-server)
  --balancer avoid-previous|round-robin
                            nginx routing in balanced mode (default avoid-previous: round robin
                            over the replicas but the one that served the flow's previous round)
  --fault kill|rolling|pg-restart|pg-kill|redis-restart
                            a fault mid-run (see docs/operations.md, "Proving it"):
                            kill: SIGKILL one replica and restart it about 1.5 s later;
                            with task users, one seen running a task
                            rolling: two rolling deploys (SIGTERM, drain, restart each replica
                            in turn) that add, then promote, a new key; the users keep going
                            until both are done
                            pg-restart: the PostgreSQL server (a private one of the run's)
                            stopped cleanly and started again 6 s later
                            pg-kill: the same server SIGKILLed and started again 6 s later,
                            with crash recovery (both: postgres only)
                            redis-restart: a master of the run's Redis Cluster SIGKILLed,
                            its replica promoted, the node started again as a replica; every
                            replica's bus must hear again (needs --bus redis)
  --kill                    the same as --fault kill
  --soak MINUTES            a long run at a steady rate instead of --duration (0.5 to 1440,
                            fractions allowed; no fault): every replica's resident set, heap
                            after a full GC, active handles and open descriptors are sampled
                            throughout, and the run fails when one grows past its bound after
                            the warm-up (see docs/operations.md, "Proving it")
  --rate FLOWS_PER_S        the users pace themselves to this many flows per second overall,
                            task users to one flow each per 30 s (default with --soak ${SOAK_DEFAULT_RATE};
                            otherwise unpaced: as fast as the fleet answers)
  --min-flows N             past the duration, the users go on until every kind of flow of
                            each era (and the task flow) has completed N times, at most
                            ${MIN_FLOWS_MAX_EXTRA_S} s longer: a short run then proves every kind
                            however fast the machine is (default 0: the duration alone; not with
                            --soak)
  --out FILE                JSON summary (default loadtest-results/summary.json)
  --max-requests N          hard cap on HTTP requests sent (default ${DEFAULT_MAX_REQUESTS}; with
                            --soak, ${SOAK_REQUESTS_PER_FLOW} per flow at its rate and ${SOAK_TASK_REQUESTS_PER_S}/s per task user)`

export class UsageError extends Error {
  override name = 'UsageError'
}

function bounded(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got ${raw}`)
  }
  return value
}

function decimal(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new UsageError(`--${name} must be a number from ${min} to ${max}, got ${raw}`)
  }
  return value
}

function share(name: string, raw: string): number {
  const value = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new UsageError(`--${name} must be a number from 0 to 1, got ${raw}`)
  }
  return value
}

function oneOf<T extends string>(name: string, raw: string, values: readonly T[]): T {
  if (!(values as readonly string[]).includes(raw)) {
    throw new UsageError(`--${name} must be one of ${values.join(', ')}, got ${raw}`)
  }
  return raw as T
}

function faultOf(named: string | undefined, kill: boolean): FaultKind | undefined {
  const fault = named === undefined ? undefined : oneOf('fault', named, FAULT_KINDS)
  if (kill && fault !== undefined && fault !== 'kill') {
    throw new UsageError(`--kill and --fault ${fault} cannot be combined: one fault per run`)
  }
  return kill ? 'kill' : fault
}

/** The faults that take the PostgreSQL server down (`faults/database.ts`). */
export function isDatabaseFault(fault: string | undefined): boolean {
  return fault === 'pg-restart' || fault === 'pg-kill'
}

function readArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      duration: { type: 'string' },
      replicas: { type: 'string', default: '3' },
      users: { type: 'string', default: '20' },
      'legacy-share': { type: 'string', default: '0.5' },
      tasks: { type: 'string', default: '2' },
      mode: { type: 'string', default: 'balanced' },
      store: { type: 'string' },
      bus: { type: 'string', default: 'store' },
      balancer: { type: 'string', default: 'avoid-previous' },
      fault: { type: 'string' },
      kill: { type: 'boolean', default: false },
      out: { type: 'string', default: 'loadtest-results/summary.json' },
      'max-requests': { type: 'string' },
      soak: { type: 'string' },
      rate: { type: 'string' },
      'min-flows': { type: 'string', default: '0' },
      help: { type: 'boolean', default: false },
    },
  }).values
}

/** A database fault restarts PostgreSQL: it cannot run on SQLite. */
function refuseSqliteWithDatabaseFault(fault: string | undefined, store: string | undefined): void {
  if (isDatabaseFault(fault) && store === 'sqlite') {
    throw new UsageError(
      `--fault ${fault} restarts the PostgreSQL server: it needs --store postgres (the default), ` +
        'not --store sqlite'
    )
  }
}

/** Throws {@link UsageError} (with an empty message for `--help`). */
export function parseOptions(argv: string[]): LoadtestOptions {
  let values: ReturnType<typeof readArgs>
  try {
    values = readArgs(argv)
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
  if (values.help) throw new UsageError('')
  refuseSqliteWithDatabaseFault(values.fault, values.store)
  if (values.fault === 'redis-restart' && values.bus !== 'redis') {
    throw new UsageError(
      '--fault redis-restart restarts a node of the Redis bus: it needs --bus redis'
    )
  }
  const fault = faultOf(values.fault, values.kill)
  const soakMinutes =
    values.soak === undefined ? undefined : decimal('soak', values.soak, 0.5, 1440)
  if (soakMinutes !== undefined && values.duration !== undefined) {
    throw new UsageError("--soak MINUTES is the run's length: give it or --duration, not both")
  }
  const minFlows = bounded('min-flows', values['min-flows'], 0, 1000)
  if (soakMinutes !== undefined && minFlows > 0) {
    throw new UsageError(
      '--soak runs at a steady rate for its length: --min-flows cannot extend it'
    )
  }
  if (soakMinutes !== undefined && fault !== undefined) {
    throw new UsageError(
      `--soak and --fault ${fault} cannot be combined: a soak measures a steady fleet, and a ` +
        'restarted replica starts its memory again'
    )
  }
  const durationS =
    soakMinutes === undefined
      ? bounded('duration', values.duration ?? '30', 1, 3600)
      : Math.round(soakMinutes * 60)
  const rate =
    values.rate !== undefined
      ? decimal('rate', values.rate, 0.1, 1000)
      : soakMinutes === undefined
        ? undefined
        : SOAK_DEFAULT_RATE
  const taskUsers = bounded('tasks', values.tasks, 0, 50)
  const maxRequests =
    values['max-requests'] !== undefined
      ? bounded('max-requests', values['max-requests'], 1, 10_000_000)
      : soakMinutes === undefined || rate === undefined
        ? DEFAULT_MAX_REQUESTS
        : Math.max(
            DEFAULT_MAX_REQUESTS,
            Math.ceil(
              durationS * (rate * SOAK_REQUESTS_PER_FLOW + taskUsers * SOAK_TASK_REQUESTS_PER_S)
            )
          )
  return {
    durationS,
    replicas: bounded('replicas', values.replicas, 2, 16),
    users: bounded('users', values.users, 1, 500),
    legacyShare: share('legacy-share', values['legacy-share']),
    taskUsers,
    mode: oneOf('mode', values.mode, ['direct', 'balanced'] as const),
    store:
      values.store === undefined
        ? undefined
        : oneOf('store', values.store, ['postgres', 'sqlite'] as const),
    bus: oneOf('bus', values.bus, ['store', 'redis'] as const),
    balancer: oneOf('balancer', values.balancer, ['avoid-previous', 'round-robin'] as const),
    fault,
    out: resolve(values.out),
    maxRequests,
    soakMinutes,
    rate,
    minFlows,
  }
}
