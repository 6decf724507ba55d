/**
 * @module scripts/loadtest
 * `npm run loadtest`: proves under load, and under a fault, that any replica can serve any round of
 * an interactive flow and any request of a task, and that nothing is lost or done twice.
 *
 * One run: a fresh store (a scratch PostgreSQL database, or SQLite in a temporary DATA_DIR, see
 * `loadtest/store.ts`), one key ring generated for the run and given to every replica as
 * STATE_KEYS, R Node replicas (`src/node.ts`, REPLICA_ID r1…rR) on loopback ports, and in balanced
 * mode nginx in front of them with a generated configuration (`loadtest/nginx-config.ts`). V
 * virtual users (`loadtest/users.ts`), a share of them 2025-era users on the v1 SDK client and the
 * others 2026-07-28 users on the project's client, then run complete flows until the duration is
 * over; with `--fault NAME` a fault (`loadtest/faults/`: `kill`, also `--kill`, SIGKILLs one replica
 * and restarts it; `rolling` restarts every replica gracefully in turn, twice, rotating the key ring;
 * `pg-restart` and `pg-kill` stop or kill the PostgreSQL server, a private one of the run's, and
 * start it again) happens meanwhile, and the users go on until it is over. Afterwards the store is read back and held
 * against what every flow's answers asked for (`loadtest/verify.ts`), and the summary
 * (`loadtest/report.ts`), per era and with the fault's own section, is printed as tables
 * (`loadtest/report-table.ts`) and written as JSON. The exit status is the verdict's, whatever
 * happens after it (`loadtest/exit-status.ts`): 0 when it passed, 1 when it did not or the run
 * failed before it.
 *
 * The tasks scenario (`loadtest/task-flow.ts`) runs by default, with `--tasks 2` users besides the
 * others (`--tasks 0` leaves it out): the issue's claim that a task survives the replica running it
 * is what `npm run loadtest -- --kill` should prove without a flag to remember, and the scenario
 * costs the default run little: two users, one flow at a time, polling at the server's 1 s, so the
 * run ends a flow's length (a few seconds) after the others at most. With tasks, the kill is aimed
 * at a running task (`faults/kill.ts`).
 * With `--soak MINUTES` (no fault) the run lasts that long at a steady rate (`--rate`, 20 flows/s
 * by default, `loadtest/pacing.ts`), its replicas start sampled (`support/sampled-replica.ts`), and
 * every replica's memory and handles are sampled throughout (`loadtest/soak-sampler.ts`) and judged
 * (`loadtest/soak.ts`): a replica that grows past a bound fails the run.
 * After the users, every task is read with `tasks/get` until it is terminal or a takeover's bound
 * more has passed (`loadtest/task-verify.ts`): what is still running then is stuck.
 *
 * Bounds: users start no flow after `--duration` (or the fault's end) or once `--max-requests` requests were sent, and
 * flows in flight may send at most 200 requests per user more; every call, task and request has its
 * own timeout, and a watchdog aborts whatever is still running 45 s after the duration (and the
 * fault's own bound).
 * Loopback only. Every process started here (replicas, nginx) is stopped on the way out, on failure
 * and on Ctrl-C too; the scratch database and temporary directories are removed.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { McpClient } from '../src/client/index.ts'
import { formatKeyRing, generateKey } from '../src/mcp/key-ring.ts'
import { MAX_CAP } from '../src/mcp/options.ts'
import { DEFAULT_TASK_TTL_MS } from '../src/mcp/tasks/options.ts'
import { Metrics } from './loadtest/metrics.ts'
import { findNginx, nginxConfig } from './loadtest/nginx-config.ts'
import {
  isDatabaseFault,
  MIN_FLOWS_MAX_EXTRA_S,
  parseOptions,
  USAGE,
  UsageError,
  type LoadtestOptions,
} from './loadtest/options.ts'
import { killAllNow, NginxProcess, ReplicaProcess, stopAll } from './loadtest/processes.ts'
import { buildSummary, type FaultReport } from './loadtest/report.ts'
import type { Fault, FaultContext } from './loadtest/faults/fault.ts'
import { databaseFault } from './loadtest/faults/database.ts'
import { killFault } from './loadtest/faults/kill.ts'
import { redisFault } from './loadtest/faults/redis.ts'
import { DRAIN_GRACE_S, rollingFault } from './loadtest/faults/rolling.ts'
import { ExitDecision } from './loadtest/exit-status.ts'
import { formatTable } from './loadtest/report-table.ts'
import { prepareStore, type SharedStore } from './loadtest/store.ts'
import type { FlowRecord } from './loadtest/flows.ts'
import { CALL_TIMEOUT_MS, type Endpoint } from './loadtest/routing.ts'
import { TAKEOVER_BOUND_MS, taskFlowTagOf, type TaskFlowRecord } from './loadtest/task-flow.ts'
import { settleTasks, verifyTasks } from './loadtest/task-verify.ts'
import { erasOf, runVirtualUsers } from './loadtest/users.ts'
import { readAllNotes, verifyStore } from './loadtest/verify.ts'
import { SoakSampler } from './loadtest/soak-sampler.ts'
import { judgeSoak, sampleIntervalMs, type ReplicaSeries } from './loadtest/soak.ts'
import { freePort, tempDataDir } from './support/local-resources.ts'
import { startRedisCluster, type RedisCluster } from './support/redis.ts'

/** After the duration, how long flows in flight may take before the watchdog aborts them. */
const GRACE_MS = 45_000
const PROGRESS_EVERY_MS = 5_000
/**
 * After the users, how long a task may still take to end: a takeover (its runner may have died at
 * the very end) and a poll or two.
 */
const SETTLE_GRACE_MS = TAKEOVER_BOUND_MS + 2_000
/** Transport retries of the `tasks/get` that settle the tasks at the end. */
const SETTLE_RETRIES = 5

/**
 * Only what the replicas need: nothing of this shell's configuration leaks into them. Every virtual
 * user is the one local principal (the replicas run without auth), so its cap on held-open streams
 * (a GET stream and a waiting call per 2025 user) is lifted to the highest allowed, and so is its
 * cap on live tasks (each task user keeps starting tasks for the whole run). The run's check reads
 * every task's outcome at its end, so ended tasks are kept for their whole TTL.
 */
function replicaEnvironment(store: SharedStore, stateKeys: string): Record<string, string> {
  const env: Record<string, string> = {
    ...store.env,
    STATE_KEYS: stateKeys,
    SHUTDOWN_GRACE_SECONDS: String(DRAIN_GRACE_S),
    MAX_STREAMS_PER_PRINCIPAL: String(MAX_CAP),
    MAX_LIVE_TASKS_PER_PRINCIPAL: String(MAX_CAP),
    TASK_RESULT_TTL_SECONDS: String(DEFAULT_TASK_TTL_MS / 1000),
  }
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TZ']) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

/** The fault `options` name, if any, for replicas started with `stateKeys`. */
function chooseFault(options: LoadtestOptions, stateKeys: string): Fault<FaultReport> | undefined {
  switch (options.fault) {
    case 'kill':
      return killFault(options.taskUsers)
    case 'rolling':
      return rollingFault(stateKeys)
    case 'pg-restart':
    case 'pg-kill':
      return databaseFault(options.fault)
    case 'redis-restart':
      return redisFault()
    case undefined:
      return undefined
  }
}

/** One `tasks/get` client for the end of the run: each read to the next replica (or nginx). */
function settlingClient(endpoints: Endpoint[], balancer: string | undefined): McpClient {
  let next = 0
  return new McpClient({
    url: balancer ?? (endpoints[0] as Endpoint).url,
    urls: () => balancer ?? (endpoints[next++ % endpoints.length] as Endpoint).url,
    tasks: true,
    timeoutMs: CALL_TIMEOUT_MS,
    transportRetries: SETTLE_RETRIES,
    clientInfo: { name: 'notes-loadtest-check', version: '0.1.0' },
  })
}

async function run(
  options: LoadtestOptions,
  watchdog: AbortController,
  decision: ExitDecision
): Promise<void> {
  const runDir = await tempDataDir('notes-loadtest-')
  let store: SharedStore | undefined
  let redis: RedisCluster | undefined
  try {
    store = await prepareStore(options.store, isDatabaseFault(options.fault))
    const stateKeys = formatKeyRing([generateKey()])
    const env = replicaEnvironment(store, stateKeys)
    // --bus redis: the replicas' events on a private Redis Cluster instead of the store's bus.
    if (options.bus === 'redis') {
      redis = await startRedisCluster()
      env.EVENT_BUS_URL = redis.url
    }
    const fault = chooseFault(options, stateKeys)
    const replicas: ReplicaProcess[] = []
    for (let i = 1; i <= options.replicas; i++) {
      const entry = fault?.holdImports ? 'held-imports' : options.soakMinutes ? 'sampled' : 'server'
      replicas.push(new ReplicaProcess(`r${i}`, await freePort(), env, entry))
    }
    await Promise.all(replicas.map((replica) => replica.start()))
    await fault?.prepare?.(replicas)

    let balancer: { url: string; avoidPrevious: boolean } | undefined
    if (options.mode === 'balanced') {
      const binary = findNginx()
      if (!binary) throw new Error('nginx is not installed (Debian: apt-get install nginx)')
      const port = await freePort()
      const config = join(runDir, 'nginx.conf')
      const ports = replicas.map((replica) => ({ id: replica.id, port: replica.port }))
      await writeFile(
        config,
        nginxConfig({ port, replicas: ports, dir: runDir, balancer: options.balancer })
      )
      const nginx = new NginxProcess(binary, runDir, config, port)
      await nginx.start()
      balancer = { url: nginx.url, avoidPrevious: options.balancer === 'avoid-previous' }
    }

    console.log(
      `notes-mcp load test: ${options.mode}${balancer ? ` via nginx (${options.balancer})` : ''}, ` +
        `${store.kind} (${store.where})${redis ? ', events on a Redis Cluster' : ''}, ` +
        `${options.replicas} replicas, ${options.users} users ` +
        `(2025 share ${options.legacyShare}) and ${options.taskUsers} task users, ` +
        `${options.durationS} s${fault ? `, ${fault.describe}` : ''}` +
        `${options.rate ? `, paced to ${options.rate} flows/s` : ''}`
    )
    const metrics = new Metrics()
    const ledger: FlowRecord[] = []
    const taskLedger: TaskFlowRecord[] = []
    const endpoints = replicas.map((replica) => ({ id: replica.id, url: replica.url }))
    const start = performance.now()
    const durationMs = options.durationS * 1000
    const minFlowsUntil = start + durationMs + MIN_FLOWS_MAX_EXTRA_S * 1000
    const eras = erasOf(options.users, options.legacyShare)
    /** Past the duration, whether `--min-flows` still wants flows (within its bound). */
    const shortOfMinimum = () =>
      options.minFlows > 0 &&
      performance.now() < minFlowsUntil &&
      !metrics.completedAtLeast(options.minFlows, eras, options.taskUsers > 0)
    const hardStop = setTimeout(
      () => watchdog.abort(new Error('the load test overran its duration')),
      durationMs +
        GRACE_MS +
        (fault?.maxExtraMs ?? 0) +
        (options.minFlows > 0 ? MIN_FLOWS_MAX_EXTRA_S * 1000 : 0)
    )
    const progress = setInterval(() => {
      const done = ledger.filter((flow) => flow.completed).length
      const tasks = taskLedger.filter((flow) => flow.completed).length
      const seconds = ((performance.now() - start) / 1000).toFixed(0)
      console.log(
        `  ${seconds} s: ${done}/${ledger.length} flows and ${tasks}/${taskLedger.length} ` +
          `task flows ok, ${metrics.requests} requests`
      )
    }, PROGRESS_EVERY_MS)
    const context: FaultContext = {
      replicas,
      store,
      redis,
      metrics,
      start,
      durationMs,
      log: (line) => console.log(`  fault: ${line}`),
    }
    let faultInProgress = fault !== undefined
    const sampleEveryMs = sampleIntervalMs(options.durationS)
    const sampler = options.soakMinutes
      ? new SoakSampler(replicas, start, sampleEveryMs, durationMs + GRACE_MS)
      : undefined
    let soakSeries: ReplicaSeries[] | undefined
    const faultRun = fault?.run(context).then(
      (outcome) => outcome,
      (error: unknown) => ({ error })
    )
    void faultRun?.finally(() => (faultInProgress = false))
    try {
      await runVirtualUsers({
        runId: Date.now().toString(36),
        replicas: endpoints,
        balancer,
        deadline: start + durationMs,
        busyWhile: () => faultInProgress || shortOfMinimum(),
        maxRequests: options.maxRequests,
        users: options.users,
        legacyShare: options.legacyShare,
        taskUsers: options.taskUsers,
        rate: options.rate,
        signal: watchdog.signal,
        metrics,
        ledger,
        taskLedger,
      })
    } finally {
      clearInterval(progress)
      soakSeries = await sampler?.stop()
    }
    if (
      options.minFlows > 0 &&
      !metrics.completedAtLeast(options.minFlows, eras, options.taskUsers > 0)
    ) {
      console.log(
        `  --min-flows ${options.minFlows}: not every kind of flow completed that often within ` +
          `${MIN_FLOWS_MAX_EXTRA_S} s past the duration`
      )
    }
    const elapsedS = (performance.now() - start) / 1000
    const faultOutcome = faultRun ? await faultRun : undefined
    clearTimeout(hardStop)
    if (faultOutcome && 'error' in faultOutcome) throw faultOutcome.error

    if (options.taskUsers > 0) {
      const client = settlingClient(endpoints, balancer?.url)
      await settleTasks(
        (taskId, signal) => client.getTask(taskId, { signal }),
        taskLedger,
        SETTLE_GRACE_MS,
        watchdog.signal
      )
    }
    const checked = await store.open()
    const notes = await readAllNotes(checked).finally(() => checked.close())
    const repeatedDeletes = {
      modern: metrics.eras.modern.repeatedDeletes,
      '2025': metrics.eras['2025'].repeatedDeletes,
    }
    const ofTasks = (title: string) => taskFlowTagOf(title) !== undefined
    const verification = verifyStore(
      notes.filter((note) => !ofTasks(note.title)),
      ledger,
      repeatedDeletes
    )
    const tasks =
      options.taskUsers > 0
        ? {
            ledger: taskLedger,
            verification: verifyTasks({
              notes: notes.filter((note) => ofTasks(note.title)),
              ledger: taskLedger,
              census: await store.taskRecords(),
              leasedAtKill: faultOutcome?.interruptedTasks,
              creationsUnanswered: metrics.tasks.creationsUnanswered,
            }),
          }
        : undefined
    const summary = buildSummary({
      options,
      store: store.kind,
      metrics,
      ledger,
      verification,
      tasks,
      elapsedS,
      fault: faultOutcome?.report ?? null,
      allowed: fault?.allowed,
      soak:
        soakSeries &&
        judgeSoak({
          durationS: Math.min(options.durationS, elapsedS),
          rate: options.rate ?? 0,
          intervalMs: sampleEveryMs,
          series: soakSeries,
        }),
    })
    await mkdir(dirname(options.out), { recursive: true })
    await writeFile(options.out, `${JSON.stringify(summary, null, 2)}\n`)
    console.log(`\n${formatTable(summary)}\n\nSummary written to ${options.out}`)
    decision.verdict(summary.passed)
  } finally {
    await stopAll()
    await redis?.stop()
    await store?.dispose().catch((error: unknown) => {
      console.error(`could not remove the scratch store: ${String(error)}`)
    })
    await rm(runDir, { recursive: true, force: true })
  }
}

/** Runs the load test and answers its exit status (`loadtest/exit-status.ts`). */
async function main(): Promise<number> {
  const decision = new ExitDecision((line) => console.error(line))
  process.on('unhandledRejection', (reason) =>
    decision.failure('a promise rejected with no handler', reason)
  )
  let options: LoadtestOptions
  try {
    options = parseOptions(process.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    if (error.message) console.error(error.message)
    console.error(USAGE)
    decision.usage(!error.message)
    return decision.status()
  }
  const watchdog = new AbortController()
  process.on('exit', killAllNow)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (watchdog.signal.aborted) {
        killAllNow()
        process.exit(130)
      }
      console.error(`${signal}: stopping (again to stop at once)`)
      watchdog.abort(new Error(`stopped by ${signal}`))
    })
  }
  try {
    await run(options, watchdog, decision)
  } catch (error) {
    decision.failure('the run', error)
  }
  console.log(decision.finalLine())
  return decision.status()
}

// Exits at once with the verdict's status: a timer or socket a cleanup step left open neither delays
// the exit nor, settling later, changes its code.
process.exit(await main())
