/**
 * The load test, short (about 4 s of load per run): `scripts/loadtest.ts` with two replicas, four
 * virtual users, two of them 2026-07-28 users (the project's client) and two 2025-era users (the v1
 * SDK client: initialize, a session, questions as server→client requests on the call's stream, answer
 * POSTs to any replica), and the tasks scenario's two users (by default): `import_notes` twice (the
 * second one's conflict questions answered through `tasks/update`) and `export_notes`, all as tasks
 * polled across replicas. Three runs: through nginx (balanced mode; skipped, visibly, when nginx is
 * not installed, failing instead under `CI=true`) with every replica up and again with one replica
 * SIGKILLed and restarted mid-run (again with the replicas' events on a private Redis Cluster,
 * `--bus redis`; skipped, visibly, without `redis-server`, failing under `CI=true`), and in direct
 * mode with the kill. On the Redis bus, a master of the cluster killed, its replica promoted and
 * the node started again (`--fault redis-restart`): no flow fails, and every replica's bus hears
 * again. Each run must end with, for
 * both eras, nothing lost, duplicated, left undeleted or half done and no error; every modern flow
 * completed (any replica serves any of its rounds), every 2025 flow completed or failed cleanly
 * while the replica was down and only because the killed replica never answered one of its requests
 * (its `tools/call` POST before the first event, or an answer POST): a stream the kill broke was
 * resumed on the other replica and its flow finished; no 5xx from a replica. The
 * tasks: no error, no note of an import missing from the store or an export, none twice, no task
 * left unfinished (by `tasks/get` and the store), and with the kill, which lands on the replica
 * where the load test holds an import mid-way, every task the killed replica ran finished
 * elsewhere. Without a fault, later rounds, answers and polls cross replicas through nginx, and no
 * flow fails at all; in direct mode every later modern round and every poll and answer of a task
 * crosses. Through nginx across two rolling deploys (every replica SIGTERMed in turn, twice, adding
 * then promoting a key): every replica drained and exited 0, and no flow of either era or the tasks
 * failed, not even cleanly.
 * Through nginx with the PostgreSQL server (a private one, `scripts/support/private-postgres.ts`)
 * stopped cleanly, and again SIGKILLed, mid-run and started again after 6 s: the same soundness,
 * requests met the outage and were refused with its clean answer, a flow may fail only so and only
 * in the fault window, and every replica served the store again without a restart.
 * A short soak through nginx (`--soak 0.75`: 45 s at the default 20 flows/s): no flow fails,
 * nothing lost, duplicated or half done, and every replica sampled throughout (RSS, heap after GC,
 * handles, descriptors), no sample missed, judged by its growth over the window after the warm-up,
 * and passed.
 */
import { spawn } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseFaultKind } from '../../scripts/loadtest/faults/database.ts'
import { findNginx } from '../../scripts/loadtest/nginx-config.ts'
import type { Era } from '../../scripts/loadtest/metrics.ts'
import type { EraSummary, LoadtestSummary, TasksSummary } from '../../scripts/loadtest/report.ts'
import { MIN_JUDGED_SAMPLES } from '../../scripts/loadtest/soak.ts'
import { STORE_UNAVAILABLE_KIND } from '../../scripts/loadtest/routing.ts'
import { privatePostgresAvailable } from '../../scripts/support/private-postgres.ts'
import { redisInstalled } from '../../scripts/support/redis.ts'
import { IN_CI, serviceTestsRun } from '../support/ci.ts'
import { tempDataDir } from '../support/server-process.ts'

const root = join(import.meta.dirname, '../..')
const RUN_TIMEOUT_MS = 300_000
/** Per test: the run, its startup and shutdown, under a busy machine. */
const TEST_TIMEOUT_MS = 330_000
const nginx = findNginx()
const NO_NGINX = 'no nginx on PATH, /usr/sbin or /sbin'
const RUN_BALANCED = serviceTestsRun('Balanced load test', nginx !== undefined, NO_NGINX)
const RUN_DATABASE_FAULTS = serviceTestsRun(
  'Load test database faults',
  nginx !== undefined && privatePostgresAvailable(),
  `${NO_NGINX}, or no PostgreSQL server binaries (initdb, postgres)`
)

const RUN_REDIS_BUS = serviceTestsRun(
  'Load test on a Redis bus',
  nginx !== undefined && redisInstalled(),
  `${NO_NGINX}, or no redis-server and redis-cli`
)

let dir: string

beforeAll(async () => {
  dir = await tempDataDir('notes-loadtest-smoke-')
})

afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Runs the load test to its end (SIGTERM, then SIGKILL, if it overruns) and reads its summary. */
function loadtest(name: string, args: string[]): Promise<Run> {
  const out = join(dir, `${name}.json`)
  const child = spawn(
    process.execPath,
    [
      join(root, 'scripts/loadtest.ts'),
      // A soak gives its own length (--soak MINUTES, refused with --duration). Any other run goes on
      // past its 4 s until every kind of flow has completed once, so no assertion below that a kind
      // came round depends on how fast the machine is.
      ...(args.includes('--soak') ? [] : ['--duration', '4', '--min-flows', '1']),
      '--replicas',
      '2',
      '--users',
      '4',
      '--legacy-share',
      '0.5',
      ...args,
      '--out',
      out,
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  return new Promise((resolve, reject) => {
    const stop = setTimeout(() => {
      child.kill('SIGTERM')
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref()
    }, RUN_TIMEOUT_MS)
    child.once('error', reject)
    child.once('exit', (code) => {
      clearTimeout(stop)
      readFile(out, 'utf8')
        .then((text) => resolve({ code, output, summary: JSON.parse(text) as LoadtestSummary }))
        .catch(() => reject(new Error(`the load test wrote no summary (exit ${code}):\n${output}`)))
    })
  })
}

type Run = { code: number | null; output: string; summary: LoadtestSummary }

/** `loadtest` balanced through nginx (`--mode balanced`, then `args`); fails without nginx. */
async function balancedLoadtest(name: string, args: string[] = []): Promise<Run> {
  if (!nginx) throw new Error(`${NO_NGINX} (CI=true: this fails instead of skipping)`)
  return loadtest(name, ['--mode', 'balanced', ...args])
}

/**
 * One era's flows sound; `allowed`, the clean failures it may have: by default those of a kill
 * (2025 requests the dead replica never answered), none without a fault or under a rolling deploy.
 */
function expectSoundEra(
  run: Run,
  era: Era,
  allowed: readonly string[] = era === '2025' && run.summary.fault?.kind === 'kill'
    ? ['call_post_unanswered', 'answer_post_unanswered']
    : []
): void {
  const summary = run.summary.eras[era]
  const context = `${era}:\n${run.output}`
  expect(summary.users, context).toBe(2)
  expect(summary.flows_started, context).toBeGreaterThan(0)
  expect(summary.lost, context).toBe(0)
  expect(summary.duplicated, context).toBe(0)
  expect(summary.not_deleted, context).toBe(0)
  expect(summary.half_done, context).toBe(0)
  expect(summary.errors, context).toEqual({})
  expect(summary.failed_cleanly_outside_fault, context).toBe(0)
  expect(summary.allowed_failure_kinds, context).toEqual(allowed)
  const disallowed = Object.keys(summary.failed_cleanly).filter(
    (kind) => !summary.allowed_failure_kinds.includes(kind)
  )
  expect(disallowed, context).toEqual([])
  expect(summary.failed_by_kind, context).toEqual(summary.failed_cleanly)
  expect(summary.flows_ok + summary.flows_failed_cleanly, context).toBe(summary.flows_started)
  expect(summary.flows_ok, context).toBeGreaterThan(0)
  expect(summary.passed, context).toBe(true)
}

function expectSoundTasks(run: Run): TasksSummary {
  const tasks = run.summary.tasks
  const context = `tasks:\n${run.output}`
  expect(tasks, context).not.toBeNull()
  expect(tasks!.users, context).toBe(2)
  expect(tasks!.flows_ok, context).toBeGreaterThan(0)
  expect(tasks!.flows_ok + tasks!.flows_failed_cleanly, context).toBe(tasks!.flows_started)
  expect(tasks!.failed_cleanly_outside_fault, context).toBe(0)
  expect(tasks!.errors, context).toEqual({})
  expect(tasks!.exports_checked, context).toBeGreaterThan(0)
  expect(tasks!.answers, context).toBeGreaterThan(0)
  expect(tasks!.lost, context).toBe(0)
  expect(tasks!.duplicated, context).toBe(0)
  expect(tasks!.stuck, context).toBe(0)
  expect(tasks!.orphaned, context).toBeLessThanOrEqual(tasks!.creations_unanswered)
  expect(tasks!.store_mismatches, context).toBe(0)
  expect(tasks!.passed, context).toBe(true)
  return tasks!
}

/**
 * With the kill, aimed at the replica an import was held on mid-way (the load test holds the first
 * import that wrote a batch until the kill, so one is running then whatever the machine's speed):
 * that task, and any other the replica ran, ended on another replica.
 */
function expectTakenOver(run: Run): void {
  const killed = run.summary.tasks?.killed_replica_tasks
  const fault = run.summary.fault
  if (fault?.kind !== 'kill') throw new Error(`not a kill: ${run.output}`)
  expect(fault.replica, run.output).toMatch(/^r[12]$/)
  expect(run.output).toMatch(
    /fault: SIGKILL r[12] at .*, one an import held after [1-9]\d* notes\)/
  )
  expect(killed, run.output).not.toBeNull()
  expect(killed!.running, run.output).toBeGreaterThan(0)
  expect(killed!.ended, run.output).toBe(killed!.running)
  expect(fault.tasks_running, run.output).toBe(killed!.running)
}

/** `allowed`: the clean failure kinds each era may have in the fault window (default: a kill's). */
function expectSound(run: Run, allowed?: Record<Era, readonly string[]>): void {
  const { summary } = run
  // The load test falls back to SQLite when no PostgreSQL answers; under CI it must have one.
  if (IN_CI) expect(summary.store, 'CI=true: the load test runs on PostgreSQL').toBe('postgres')
  expectSoundEra(run, 'modern', allowed?.modern)
  expectSoundEra(run, '2025', allowed?.['2025'])
  expectSoundTasks(run)
  const modern = summary.eras.modern
  const modernFailures = Object.values(modern.failed_cleanly).reduce((sum, n) => sum + n, 0)
  expect(modern.flows_ok + modernFailures, run.output).toBe(modern.flows_started)
  for (const [kind, counts] of Object.entries(modern.flows)) {
    expect(counts.completed, `modern ${kind}`).toBeGreaterThan(0)
  }
  for (const [kind, counts] of Object.entries(summary.eras['2025'].flows)) {
    expect(counts.completed, `2025 ${kind}`).toBeGreaterThan(0)
  }
  expect(summary.lost, run.output).toBe(0)
  expect(summary.duplicated, run.output).toBe(0)
  expect(summary.errors, run.output).toEqual({})
  expect(summary.http_5xx.replica, run.output).toBe(0)
  expect(summary.passed, run.output).toBe(true)
  expect(run.code).toBe(0)
}

/** A database fault's run: sound, with the outage met, refused cleanly and recovered from. */
function expectDatabaseFault(run: Run, kind: DatabaseFaultKind): void {
  const outage = [STORE_UNAVAILABLE_KIND]
  expectSound(run, { modern: outage, '2025': outage })
  expect(run.summary.store).toBe('postgres')
  const fault = run.summary.fault
  if (fault?.kind !== kind) throw new Error(`not ${kind}: ${run.output}`)
  expect(fault.refused, run.output).toBeGreaterThan(0)
  expect(fault.outage_s, run.output).toBeGreaterThan(0)
  expect(fault.recovery.map((replica) => replica.replica)).toEqual(['r1', 'r2'])
  for (const replica of fault.recovery) expect(replica.recovered_ms, run.output).not.toBeNull()
  expect(fault.passed, run.output).toBe(true)
  console.info(
    `${describeRun(`balanced --fault ${kind}`, run.summary)}; ${fault.outage_s} s down, ` +
      `${fault.refused} refused, recovered in ${fault.recovery.map((r) => `${r.recovered_ms} ms`).join(', ')}`
  )
}

function describeRun(name: string, summary: LoadtestSummary): string {
  const era = (e: EraSummary | TasksSummary) =>
    `${e.flows_ok} ok, ${e.flows_failed_cleanly} failed cleanly, cross-replica ${e.cross_replica_ratio}`
  const killed = summary.tasks?.killed_replica_tasks
  return (
    `${name} (${summary.store}): modern ${era(summary.eras.modern)}; 2025 ${era(summary.eras['2025'])}; ` +
    `tasks ${summary.tasks ? era(summary.tasks) : 'none'}` +
    `${killed ? ` (${killed.running} running on the killed replica, ${killed.ended} ended)` : ''}; ` +
    `gateway 5xx ${summary.http_5xx.gateway}, ${summary.retried_rounds_after_fault} modern rounds ` +
    `re-sent after the fault, ${summary.eras['2025'].streams_resumed} 2025 streams resumed`
  )
}

describe('the load test (2 replicas, 2 modern, 2 2025-era and 2 task users, 4 s per run, the soak 45 s)', () => {
  it.skipIf(!RUN_BALANCED)(
    'balanced through nginx: nothing lost or duplicated in either era or the tasks, none stuck; rounds, answers and polls cross replicas',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await balancedLoadtest('balanced')
      expectSound(run)
      expect(run.summary.mode).toBe('balanced')
      expect(run.summary.fault).toBeNull()
      expect(run.summary.flows_failed_cleanly, run.output).toBe(0)
      expect(run.summary.eras.modern.cross_replica_ratio).toBeGreaterThanOrEqual(0.9)
      expect(run.summary.eras['2025'].rounds_after_first).toBeGreaterThan(0)
      expect(run.summary.eras['2025'].cross_replica_ratio).toBeGreaterThanOrEqual(0.9)
      expect(run.summary.tasks?.cross_replica_ratio).toBeGreaterThanOrEqual(0.9)
      console.info(describeRun('balanced', run.summary))
    }
  )

  it.skipIf(!RUN_BALANCED)(
    'balanced through nginx with one replica killed and restarted: each flow of either era completes or fails cleanly, nothing lost or duplicated; the tasks it ran finish elsewhere, none lost, duplicated or stuck',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await balancedLoadtest('balanced-kill', ['--kill'])
      expectSound(run)
      expect(run.summary.mode).toBe('balanced')
      expectTakenOver(run)
      console.info(describeRun('balanced --kill', run.summary))
    }
  )

  it.skipIf(!RUN_REDIS_BUS)(
    "balanced through nginx, the events on a Redis Cluster, one replica killed and restarted: the same soundness as on the store's bus",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await balancedLoadtest('balanced-redis-kill', ['--bus', 'redis', '--kill'])
      expect(run.output).toContain('events on a Redis Cluster')
      expectSound(run)
      expectTakenOver(run)
      console.info(describeRun('balanced --bus redis --kill', run.summary))
    }
  )

  it.skipIf(!RUN_REDIS_BUS)(
    "balanced through nginx with a master of the Redis Cluster killed, its replica promoted and the node back: no flow fails, nothing lost or duplicated, every replica's bus hears again",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await balancedLoadtest('balanced-redis-restart', [
        '--bus',
        'redis',
        '--fault',
        'redis-restart',
      ])
      expectSound(run)
      const fault = run.summary.fault
      if (fault?.kind !== 'redis-restart') throw new Error(`not a Redis restart: ${run.output}`)
      expect(fault.passed, run.output).toBe(true)
      expect(fault.heard_again.map(({ after_ms }) => after_ms !== null)).toEqual([true, true])
      expect(run.summary.flows_failed_cleanly, run.output).toBe(0)
      console.info(describeRun('balanced --bus redis --fault redis-restart', run.summary))
    }
  )

  it.skipIf(!RUN_BALANCED)(
    'balanced through nginx across two rolling deploys that add, then promote, a new key: every replica drains and exits 0, no flow of either era or the tasks fails, nothing lost or duplicated',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await balancedLoadtest('balanced-rolling', ['--fault', 'rolling'])
      expectSound(run)
      const fault = run.summary.fault
      if (fault?.kind !== 'rolling') throw new Error(`not a rolling deploy: ${run.output}`)
      expect(
        fault.restarts.map(
          (restart) => `${restart.deploy} ${restart.replica} ${restart.exit_code}`
        ),
        run.output
      ).toEqual(['add r1 0', 'add r2 0', 'promote r1 0', 'promote r2 0'])
      expect(fault.restarts.some((restart) => restart.forced)).toBe(false)
      expect(fault.key_rotation.promoted_at_s).toBeGreaterThan(fault.key_rotation.added_at_s)
      expect(run.summary.flows_failed_cleanly, run.output).toBe(0)
      console.info(describeRun('balanced --fault rolling', run.summary))
    }
  )

  it(
    'direct with one replica killed and restarted: each flow of either era completes or fails cleanly, nothing lost or duplicated, every modern round and task poll on another replica; the tasks it ran finish elsewhere, none lost, duplicated or stuck',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await loadtest('direct-kill', ['--mode', 'direct', '--kill'])
      expectSound(run)
      expect(run.summary.mode).toBe('direct')
      expect(run.summary.eras.modern.cross_replica_ratio).toBe(1)
      expect(run.summary.tasks?.cross_replica_ratio).toBe(1)
      expectTakenOver(run)
      console.info(describeRun('direct --kill', run.summary))
    }
  )

  it.skipIf(!RUN_DATABASE_FAULTS).each(['pg-restart', 'pg-kill'] as const)(
    'balanced through nginx with --fault %s: requests meet the outage and are refused cleanly, every replica serves the store again, nothing lost or duplicated',
    { timeout: TEST_TIMEOUT_MS },
    async (kind) => {
      const run = await balancedLoadtest(`balanced-${kind}`, ['--fault', kind])
      expectDatabaseFault(run, kind)
    }
  )

  it.skipIf(!RUN_BALANCED)(
    'a 45-second soak through nginx at a steady rate: every replica sampled throughout, none growing past its bound, nothing lost or duplicated',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await balancedLoadtest('balanced-soak', ['--soak', '0.75'])
      // Without a fault no flow may fail at all: the run's own verdict says every era and the
      // tasks passed (nothing lost, duplicated or half done, no error, no 5xx) and so did the soak.
      const { summary } = run
      if (IN_CI) expect(summary.store, 'CI=true: the load test runs on PostgreSQL').toBe('postgres')
      expect(summary.flows_failed_cleanly, run.output).toBe(0)
      expect(summary.lost + summary.duplicated + summary.half_done, run.output).toBe(0)
      expect(summary.errors, run.output).toEqual({})
      expect(summary.passed, run.output).toBe(true)
      expect(run.code, run.output).toBe(0)
      const soak = summary.soak
      expect(soak, run.output).not.toBeNull()
      expect(soak!.rate_flows_per_s).toBe(20)
      expect(soak!.judged_by).toBe('growth_over_window')
      expect(soak!.replicas.map((replica) => replica.id)).toEqual(['r1', 'r2'])
      for (const replica of soak!.replicas) {
        const context = `${replica.id}: ${replica.problems.join('; ')}\n${run.output}`
        expect(replica.judged_samples, context).toBeGreaterThanOrEqual(MIN_JUDGED_SAMPLES)
        expect(replica.samples, context).toBeGreaterThan(replica.judged_samples)
        expect(replica.failed_samples, context).toBe(0)
        expect(replica.heap, context).not.toBeNull()
        expect(replica.rss, context).not.toBeNull()
        expect(replica.handles, context).not.toBeNull()
        if (process.platform === 'linux') expect(replica.fds, context).not.toBeNull()
        expect(replica.passed, context).toBe(true)
      }
      expect(soak!.passed, run.output).toBe(true)
      expect(run.output).toMatch(/\n {2}soak: 0\.75 min at 20 flows\/s/)
      console.info(
        `soak 45 s: ${soak!.replicas
          .map(
            (r) =>
              `${r.id} heap ${r.heap?.first}→${r.heap?.last} MiB, handles ${r.handles?.first}→${r.handles?.last}`
          )
          .join('; ')}`
      )
    }
  )
})
