/**
 * @module scripts/bench
 * `npm run bench`: throughput, latency, server CPU and memory of our server against the official SDK
 * (`@modelcontextprotocol/server` + `@modelcontextprotocol/hono`, same tools) and against bare Hono
 * (the ceiling), in one invocation, so every ratio compares figures taken minutes apart on the same
 * machine. For each scenario (see `bench/scenarios.ts`) it starts each server as its own process,
 * one at a time, pinned to CPU 1 (`taskset -c 1`), while this process — the load generator,
 * autocannon — is pinned to CPU 0; it probes the server, warms it up, measures, and stops it. Every
 * response is verified; a scenario with any wrong answer, socket error or timeout is flagged and the
 * command exits non-zero after writing its report.
 *
 * Output: a Markdown table on stdout and JSON at `--out` (default `bench-results/latest.json`):
 * `{ meta, scenarios: { <name>: { ours, sdk, bare, ratio_vs_sdk, ratio_vs_bare, ... } } }`.
 *
 * Usage: node scripts/bench.ts [--quick] [--out FILE] [--connections N] [--warmup S] [--duration S]
 *          [--only a,b] [--servers ours,sdk,bare] [--notes N] [--max-requests N] [--retries N]
 *          [--profile DIR]
 *   --quick        1 s warm-up, 2 s measured, 10 connections (CI smoke; no figure is meaningful)
 *   --retries N    measure a server again (up to N times, default 2, 0 with --quick) when other
 *                  processes used more than 0.25 of a core during its window; the least disturbed
 *                  attempt is kept and a scenario still disturbed is marked as such
 *   --profile DIR  profile our server instead (`node --cpu-prof`; other servers with --servers) on
 *                  tools_call and mrtr_flow (or --only), print where the time goes and keep the
 *                  .cpuprofile files in DIR
 *
 * Loopback only: servers listen on 127.0.0.1 with kernel-chosen ports. Each load run is bounded by
 * its duration, a request cap and a watchdog; every server process is killed on the way out, also
 * on failure or Ctrl-C.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { runLoad } from './bench/load.ts'
import { seedNotes, type SeedSummary } from './bench/notes-data.ts'
import { formatProfile, summarizeProfile } from './bench/profile.ts'
import {
  formatTable,
  formatTargets,
  isFigures,
  round,
  scenarioReport,
  type BenchReport,
  type ServerFigures,
  type ServerOutcome,
  DISTURBED_CORES,
  TARGETS,
} from './bench/report.ts'
import { SCENARIOS, type Scenario, type ServerKind } from './bench/scenarios.ts'
import {
  cpuMicros,
  killAllNow,
  machineBusyMicros,
  memoryBytes,
  pinning,
  startServer,
  stopAll,
  type ServerProcess,
} from './bench/server-process.ts'
import { SEARCH_QUERY } from './bench/wire.ts'

const root = join(import.meta.dirname, '..')
const SERVER_CPU = 1
const LOADGEN_CPU = 0

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench-results/latest.json' },
    connections: { type: 'string' },
    warmup: { type: 'string' },
    duration: { type: 'string' },
    only: { type: 'string' },
    servers: { type: 'string' },
    notes: { type: 'string', default: '10000' },
    'max-requests': { type: 'string', default: '3000000' },
    retries: { type: 'string' },
    profile: { type: 'string' },
  },
})

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`--${name} must be a positive number`)
  return value
}

const quick = values.quick
const connections = Math.round(positive('connections', values.connections, quick ? 10 : 50))
const warmupSeconds = positive('warmup', values.warmup, quick ? 1 : 5)
const durationSeconds = positive('duration', values.duration, quick ? 2 : 10)
const maxRequests = Math.round(positive('max-requests', values['max-requests'], 3_000_000))
const retries =
  values.retries === '0' ? 0 : Math.round(positive('retries', values.retries, quick ? 0 : 2))
const noteCount = Math.round(positive('notes', values.notes, 10_000))
const profileDir = values.profile === undefined ? undefined : resolve(values.profile)

const wanted = values.only?.split(',').map((name) => name.trim())
const unknown = wanted?.filter((name) => !SCENARIOS.some((s) => s.name === name)) ?? []
if (unknown.length > 0) {
  console.error(
    `Unknown scenario(s): ${unknown.join(', ')}. Known: ${SCENARIOS.map((s) => s.name).join(', ')}`
  )
  process.exit(2)
}
const KINDS: ServerKind[] = ['bare', 'ours', 'sdk']
const kinds =
  values.servers?.split(',').map((kind) => kind.trim()) ??
  (profileDir === undefined ? KINDS : ['ours'])
if (kinds.some((kind) => !KINDS.includes(kind as ServerKind))) {
  console.error(`--servers takes a comma-separated subset of ${KINDS.join(', ')}`)
  process.exit(2)
}
const PROFILED = ['tools_call', 'mrtr_flow']
const scenarios = SCENARIOS.filter((s) =>
  wanted ? wanted.includes(s.name) : profileDir === undefined || PROFILED.includes(s.name)
)
  .map((s) => ({ ...s, servers: s.servers.filter((kind) => kinds.includes(kind)) }))
  .filter((s) => s.servers.length > 0)

process.on('exit', killAllNow)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllNow()
    process.exit(130)
  })
}

/** Pins every thread of this process (the load generator) to CPU 0; returns whether it worked. */
function pinSelf(tool: string | undefined): boolean {
  if (tool === undefined) return false
  try {
    execFileSync(tool, ['-a', '-p', '-c', String(LOADGEN_CPU), String(process.pid)], {
      stdio: 'ignore',
    })
    return true
  } catch {
    return false
  }
}

function packageVersion(name: string): string | undefined {
  try {
    const text = readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')
    return (JSON.parse(text) as { version?: string }).version
  } catch {
    return undefined
  }
}

function gitState(): { commit: string; dirty: boolean } | undefined {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root })
      .toString()
      .trim()
    const status = execFileSync('git', ['status', '--porcelain'], { cwd: root }).toString()
    return { commit, dirty: status.trim() !== '' }
  } catch {
    return undefined
  }
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

interface RunContext {
  database: string | undefined
  pinned: boolean
  nodeArgs?: (scenario: Scenario) => string[]
}

/** Starts one server for one scenario, probes it, warms it up, measures it and stops it. */
async function measure(
  scenario: Scenario,
  kind: ServerKind,
  context: RunContext
): Promise<ServerOutcome | { skipped: string }> {
  let server: ServerProcess
  try {
    server = await startServer({
      kind,
      script: join(root, 'scripts', 'bench', `${kind}.ts`),
      env: {
        ...(context.database && { BENCH_DB: context.database }),
        ...(kind === 'ours' && scenario.oursEnv),
      },
      cpu: context.pinned ? SERVER_CPU : undefined,
      nodeArgs: context.nodeArgs?.(scenario),
      cwd: root,
    })
  } catch (error) {
    if (scenario.requiresFile) return { skipped: `the server did not start: ${message(error)}` }
    return { failure: `the server did not start: ${message(error)}` }
  }
  try {
    const steps = await scenario.prepare(server.url)
    const origin = new URL(server.url).origin
    const load = { origin, connections, maxRequests, steps }
    const warm = await runLoad({ ...load, durationSeconds: warmupSeconds })
    const cpuBefore = cpuMicros(server.pid)
    const busyBefore = machineBusyMicros()
    const run = await runLoad({ ...load, durationSeconds })
    const cpuAfter = cpuMicros(server.pid)
    const busyAfter = machineBusyMicros()
    const peak = memoryBytes(server.pid, 'VmHWM')
    const split =
      cpuBefore === undefined || cpuAfter === undefined
        ? undefined
        : { user: cpuAfter.user - cpuBefore.user, system: cpuAfter.system - cpuBefore.system }
    const cpu = split === undefined ? undefined : split.user + split.system
    const background =
      cpu === undefined || busyBefore === undefined || busyAfter === undefined
        ? null
        : (busyAfter - busyBefore - cpu) / 1e6 / run.seconds - run.loadgenCores
    const reqPerSec = run.responses / run.seconds
    const flowsPerSec = scenario.unit === 'flow' ? run.flows / run.seconds : null
    return {
      throughput: round(flowsPerSec ?? reqPerSec, 1),
      reqPerSec: round(reqPerSec, 1),
      flowsPerSec: flowsPerSec === null ? null : round(flowsPerSec, 1),
      latencyMs: {
        p50: round(run.latencyMs.p50, 3),
        p90: round(run.latencyMs.p90, 3),
        p99: round(run.latencyMs.p99, 3),
        mean: round(run.latencyMs.mean, 3),
        max: round(run.latencyMs.max, 3),
      },
      cpuUsPerRequest:
        cpu === undefined || run.responses === 0 ? null : round(cpu / run.responses, 1),
      cpuSplitUsPerRequest:
        split === undefined || run.responses === 0
          ? null
          : {
              user: round(split.user / run.responses, 1),
              system: round(split.system / run.responses, 1),
            },
      cpuUsPerFlow:
        cpu === undefined || scenario.unit !== 'flow' || run.flows === 0
          ? null
          : round(cpu / run.flows, 1),
      peakRssMiB: peak === undefined ? null : round(peak / 2 ** 20, 1),
      responses: run.responses,
      verified: run.verified,
      mismatches: run.mismatches,
      errors: run.errors,
      timeouts: run.timeouts,
      warmup: {
        responses: warm.responses,
        mismatches: warm.mismatches,
        errors: warm.errors,
        timeouts: warm.timeouts,
      },
      seconds: round(run.seconds, 2),
      serverCores: cpu === undefined ? null : round(cpu / 1e6 / run.seconds, 2),
      loadgenCores: round(run.loadgenCores, 2),
      backgroundCores: background === null ? null : round(background, 2),
      ...((run.firstMismatch ?? warm.firstMismatch) !== undefined && {
        firstMismatch: run.firstMismatch ?? warm.firstMismatch,
      }),
    }
  } catch (error) {
    const tail = server.output().trim().split('\n').slice(-5).join('\n')
    return { failure: `${message(error)}${tail ? `\nserver output:\n${tail}` : ''}` }
  } finally {
    await server.stop()
  }
}

/** A measurement during which other processes used a noticeable share of the machine. */
function isDisturbed(outcome: ServerOutcome | { skipped: string }): boolean {
  return (
    !('skipped' in outcome) &&
    isFigures(outcome) &&
    (outcome.backgroundCores ?? 0) > DISTURBED_CORES
  )
}

function describeOutcome(outcome: ServerOutcome | { skipped: string }, unit: string): string {
  if ('skipped' in outcome) return `skipped: ${outcome.skipped.split('\n')[0]}`
  if (!isFigures(outcome)) return `FAILED: ${outcome.failure.split('\n')[0]}`
  const rate =
    unit === 'flow'
      ? `${outcome.flowsPerSec} flows/s (${outcome.reqPerSec} req/s)`
      : `${outcome.reqPerSec} req/s`
  const bad = outcome.mismatches + outcome.errors + outcome.timeouts
  return (
    `${rate}, p50 ${outcome.latencyMs.p50} ms, p99 ${outcome.latencyMs.p99} ms, ` +
    `${outcome.cpuUsPerRequest} µs CPU/req (user ${outcome.cpuSplitUsPerRequest?.user}, ` +
    `kernel ${outcome.cpuSplitUsPerRequest?.system}), peak RSS ${outcome.peakRssMiB} MiB, ` +
    `cores: server ${outcome.serverCores}, loadgen ${outcome.loadgenCores}, other ${outcome.backgroundCores}` +
    `${bad > 0 ? `, ${bad} ERRORS (${outcome.firstMismatch ?? 'socket errors'})` : ''}`
  )
}

async function prepareNotes(directory: string): Promise<{ path: string; seed: SeedSummary }> {
  const path = join(directory, 'notes.db')
  process.stdout.write(`Seeding ${noteCount} notes into ${path} … `)
  const seed = await seedNotes(path, noteCount)
  console.log(`${seed.seconds.toFixed(1)} s, ${seed.matches} match "${SEARCH_QUERY}"`)
  return { path, seed }
}

async function benchmark(tool: string | undefined, pinned: boolean): Promise<number> {
  const workDir = mkdtempSync(join(tmpdir(), 'notes-mcp-bench-'))
  const git = gitState()
  try {
    const notes = scenarios.some((s) => s.needsNotes) ? await prepareNotes(workDir) : undefined
    const context: RunContext = { database: notes?.path, pinned }
    const skipped: Array<{ scenario: string; reason: string }> = []
    const report: BenchReport = { meta: {}, scenarios: {} }
    const runs = scenarios.flatMap((s) => s.servers.map((kind) => ({ scenario: s, kind })))
    let index = 0
    for (const scenario of scenarios) {
      if (scenario.requiresFile && !existsSync(join(root, scenario.requiresFile))) {
        skipped.push({ scenario: scenario.name, reason: `${scenario.requiresFile} does not exist` })
        index += scenario.servers.length
        continue
      }
      const outcomes: Partial<Record<ServerKind, ServerOutcome>> = {}
      let skip: string | undefined
      for (const kind of scenario.servers) {
        index += 1
        process.stdout.write(`[${index}/${runs.length}] ${scenario.name} · ${kind}: `)
        let outcome = await measure(scenario, kind, context)
        console.log(describeOutcome(outcome, scenario.unit))
        for (let attempt = 1; attempt <= retries && isDisturbed(outcome); attempt++) {
          process.stdout.write(
            `    disturbed by other load; measuring again (${attempt}/${retries}): `
          )
          const again = await measure(scenario, kind, context)
          console.log(describeOutcome(again, scenario.unit))
          if ('skipped' in again || !isFigures(again)) continue
          if ((again.backgroundCores ?? 0) < ((outcome as ServerFigures).backgroundCores ?? 0)) {
            outcome = again
          }
        }
        if ('skipped' in outcome) skip = outcome.skipped
        else outcomes[kind] = outcome
      }
      if (skip !== undefined) {
        skipped.push({ scenario: scenario.name, reason: skip })
        continue
      }
      report.scenarios[scenario.name] = scenarioReport(scenario, outcomes)
    }

    const cpuList = cpus()
    report.meta = {
      date: new Date().toISOString(),
      quick,
      connections,
      warmupSeconds,
      durationSeconds,
      maxRequestsPerRun: maxRequests,
      retriesWhenDisturbed: retries,
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpus: cpuList.length,
      cpuModel: cpuList[0]?.model,
      pinning: pinned
        ? {
            servers: `${tool} -c ${SERVER_CPU}`,
            loadGenerator: `${tool} -a -p -c ${LOADGEN_CPU} (this process)`,
          }
        : 'none: taskset missing or fewer than 2 CPUs; figures are not comparable with pinned runs',
      versions: Object.fromEntries(
        [
          'hono',
          '@hono/node-server',
          'zod',
          'jose',
          '@modelcontextprotocol/server',
          '@modelcontextprotocol/hono',
          'autocannon',
        ].map((name) => [name, packageVersion(name)])
      ),
      git,
      notes: notes && {
        count: notes.seed.notes,
        query: SEARCH_QUERY,
        matches: notes.seed.matches,
        seedSeconds: round(notes.seed.seconds, 1),
      },
      method: {
        loadGenerator:
          'autocannon (programmatic, pipelining 1) in the driver process; one fresh server process per scenario and server',
        latency:
          "autocannon's per-request timer, kept at µs resolution (its own histogram rounds to whole ms)",
        cpu: 'server utime+stime (all threads) from /proc/<pid>/stat over the measured window, divided by responses',
        cores:
          'serverCores, loadgenCores (process.cpuUsage) and backgroundCores (/proc/stat busy time of everything else) over the measured window; background load above ~0.1 core disturbs the figures',
        memory:
          'VmHWM of the server process at the end of the measured window (peak over its life)',
        flow: "autocannon per-connection context: round 1's requestState goes into round 2's body; flows/s = verified round-2 answers per second",
        verification:
          'every response: HTTP 200, content type, JSON-RPC id and result shape (identical bytes to an already verified deterministic answer pass without re-parsing)',
      },
      targets: TARGETS,
      skipped,
    }

    const out = resolve(root, values.out as string)
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
    console.log(`\n${formatTable(report)}\n`)
    const targets = formatTargets(report)
    if (targets) console.log(`${targets}\n`)
    for (const { scenario, reason } of skipped) console.log(`skipped ${scenario}: ${reason}`)
    console.log(`Wrote ${out}`)
    const flagged = Object.entries(report.scenarios).filter(([, s]) => s.flagged)
    if (flagged.length > 0) {
      console.error(`Verification errors in: ${flagged.map(([name]) => name).join(', ')}`)
      return 1
    }
    return 0
  } finally {
    await stopAll()
    rmSync(workDir, { recursive: true, force: true })
  }
}

async function profile(directory: string, pinned: boolean): Promise<number> {
  mkdirSync(directory, { recursive: true })
  const workDir = mkdtempSync(join(tmpdir(), 'notes-mcp-bench-'))
  try {
    const notes = scenarios.some((s) => s.needsNotes) ? await prepareNotes(workDir) : undefined
    let current: ServerKind = 'ours'
    const file = (scenario: Scenario) => `${current}-${scenario.name}.cpuprofile`
    const context: RunContext = {
      database: notes?.path,
      pinned,
      nodeArgs: (scenario) => [
        '--cpu-prof',
        `--cpu-prof-dir=${directory}`,
        `--cpu-prof-name=${file(scenario)}`,
        '--cpu-prof-interval=250',
      ],
    }
    const summaries: Record<string, unknown> = {}
    let status = 0
    for (const scenario of scenarios) {
      for (const kind of scenario.servers) {
        current = kind
        process.stdout.write(`profiling ${scenario.name} · ${kind}: `)
        const path = join(directory, file(scenario))
        rmSync(path, { force: true })
        const outcome = await measure(scenario, kind, context)
        console.log(describeOutcome(outcome, scenario.unit))
        if (!existsSync(path)) {
          console.error(`no profile written at ${path}`)
          status = 1
          continue
        }
        const summary = summarizeProfile(path)
        summaries[`${kind}-${scenario.name}`] = { outcome, profile: summary }
        console.log(`\n${formatProfile(`${scenario.name} (${kind})`, summary)}\n`)
      }
    }
    writeFileSync(
      join(directory, 'profile-summary.json'),
      `${JSON.stringify(summaries, null, 2)}\n`
    )
    console.log(`Profiles and profile-summary.json in ${directory}`)
    return status
  } finally {
    await stopAll()
    rmSync(workDir, { recursive: true, force: true })
  }
}

const tool = pinning(cpus().length)
const pinned = pinSelf(tool)
console.log(
  pinned
    ? `Load generator pinned to CPU ${LOADGEN_CPU}, servers to CPU ${SERVER_CPU}; ${connections} connections, ${warmupSeconds} s warm-up, ${durationSeconds} s measured.`
    : `Not pinned (no taskset or one CPU); ${connections} connections, ${warmupSeconds} s warm-up, ${durationSeconds} s measured.`
)
let status: number
try {
  status =
    profileDir === undefined ? await benchmark(tool, pinned) : await profile(profileDir, pinned)
} catch (error) {
  console.error(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`
  )
  status = 1
}
await stopAll()
process.exit(status)
