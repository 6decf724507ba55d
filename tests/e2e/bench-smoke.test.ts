/**
 * @module tests/e2e/bench-smoke
 * Proves the benchmark works end to end (`node scripts/bench.ts --quick`): it starts the three
 * servers and the peers (fastmcp, tmcp, mcp-handler, @hono/mcp) on Node and the Worker builds
 * (agents' handler among them) on workerd, drives every scenario (2026-07-28 and 2025-era
 * requests and flows, listen streams at scale), verifies every answer, and writes a report with
 * figures and ratios for each scenario and server, every peer's ratio included, and the cold starts
 * (one measured start of each server, the Worker bundle sizes), and the event buses across fleets
 * of one and two replica processes (PostgreSQL, and Redis when `redis-server` is installed; under
 * CI=true both must run). The listen streams run at 100, never the 10,000 of the full scale run. No timing is
 * asserted — a CI machine's speed says nothing — only the structure of the report and zero
 * verification errors. Takes about five minutes.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusFanOutReport } from '../../scripts/bench/bus-fanout-report.ts'
import { IN_CI } from '../support/ci.ts'

const root = join(import.meta.dirname, '../..')

type Kind = 'ours' | 'sdk' | 'bare' | Peer
type Peer = 'fastmcp' | 'tmcp' | 'mcp-handler' | 'hono-mcp' | 'agents'
const PEERS: Peer[] = ['fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp', 'agents']

const REQUIRED: Record<string, Kind[]> = {
  tools_call: ['ours', 'sdk', 'bare', 'fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp'],
  tools_list: ['ours', 'sdk', 'bare', 'fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp'],
  mrtr_round1: ['ours', 'sdk'],
  mrtr_round2: ['ours', 'sdk'],
  mrtr_flow: ['ours', 'sdk'],
  sse_progress: ['ours', 'sdk'],
  notes_search: ['ours', 'sdk'],
  legacy_tools_call: ['ours', 'sdk'],
  legacy_session: ['ours', 'sdk', 'fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp'],
  legacy_mrtr_flow: ['ours', 'sdk', 'tmcp', 'hono-mcp'],
  workerd_tools_call: ['ours', 'sdk', 'bare', 'agents'],
  workerd_mrtr_flow: ['ours', 'sdk', 'agents'],
}

/** The scale scenario, `--quick`: 100 streams, 3 changes. */
const SCALE_STREAMS = 100
const SCALE_CHANGES = 3

interface Figures {
  throughput: number
  reqPerSec: number
  flowsPerSec: number | null
  latencyMs: { p50: number; p99: number }
  responses: number
  verified: number
  mismatches: number
  errors: number
  timeouts: number
}

interface ScaleFigures {
  streams: number
  opened: number
  rssPerStreamKiB: number | null
  changes: number
  deliveries: number
  missed: number
  deliveryMs: { p50: number; p99: number }
  allDeliveredMs: { p50: number; p99: number }
  errors: number
  limit: string | null
}

interface Start {
  failure?: string
  runs: number
  firstAnswerMs: { median: number } | null
}

interface Report {
  meta: Record<string, unknown>
  busFanout?: BusFanOutReport
  coldStarts?: {
    node: Array<Start & { server: string }>
    bundles: Array<{ worker: string; rawBytes: number; gzipBytes: number; measuredBy: string }>
    workerd: Array<Start & { worker: string }>
  }
  scenarios: Record<
    string,
    {
      unit: string
      runtime: string
      errors: number
      flagged: boolean
      ratio_vs_sdk: number | null
      ratio_vs_bare: number | null
      memory_ratio_vs_sdk?: number | null
      ratios?: Partial<Record<Peer, number | null>>
      cpu_ratios?: Partial<Record<Peer, number | null>>
    } & Partial<Record<Kind, ((Figures | ScaleFigures) & { failure?: string }) | null>>
  >
}

describe('npm run bench -- --quick', () => {
  let directory: string
  let run: SpawnSyncReturns<string>
  let report: Report

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'notes-mcp-bench-smoke-'))
    const out = join(directory, 'bench.json')
    run = spawnSync(process.execPath, ['scripts/bench.ts', '--quick', '--out', out], {
      cwd: root,
      encoding: 'utf8',
      timeout: 600_000,
      killSignal: 'SIGTERM',
    })
    report = JSON.parse(readFileSync(out, 'utf8')) as Report
  }, 620_000)

  afterAll(() => rmSync(directory, { recursive: true, force: true }))

  it('exits 0 after verifying every answer', () => {
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0)
  })

  it('reports figures for every scenario and server, with zero verification errors', () => {
    for (const [name, servers] of Object.entries(REQUIRED)) {
      const scenario = report.scenarios[name]
      expect(scenario, `scenario ${name}`).toBeDefined()
      if (!scenario) continue
      expect({ name, errors: scenario.errors, flagged: scenario.flagged }).toEqual({
        name,
        errors: 0,
        flagged: false,
      })
      expect(scenario.runtime).toBe(name.startsWith('workerd_') ? 'workerd' : 'node')
      for (const kind of servers) {
        const outcome = scenario[kind]
        expect(outcome?.failure, `${name} · ${kind}`).toBeUndefined()
        expect(outcome, `${name} · ${kind}`).not.toBeNull()
        if (!outcome) continue
        const figures = outcome as Figures
        expect(figures.throughput).toBeGreaterThan(0)
        expect(figures.responses).toBeGreaterThan(0)
        expect(figures.verified).toBe(figures.responses)
        expect(figures.mismatches + figures.errors + figures.timeouts).toBe(0)
        expect(Number.isFinite(figures.latencyMs.p50)).toBe(true)
        expect(Number.isFinite(figures.latencyMs.p99)).toBe(true)
        if (scenario.unit === 'flow') expect(figures.flowsPerSec).toBeGreaterThan(0)
      }
      expect(typeof scenario.ratio_vs_sdk).toBe('number')
      if (servers.includes('bare')) expect(typeof scenario.ratio_vs_bare).toBe('number')
      else expect(scenario.ratio_vs_bare).toBeNull()
      const peers = PEERS.filter((kind) => servers.includes(kind))
      expect(Object.keys(scenario.ratios ?? {}).sort(), `${name} peers`).toEqual([...peers].sort())
      for (const peer of peers) {
        expect(typeof scenario.ratios?.[peer], `${name} · ours/${peer}`).toBe('number')
        expect(typeof scenario.cpu_ratios?.[peer], `${name} · CPU ${peer}/ours`).toBe('number')
      }
    }
  })

  it('holds listen streams open on ours and the SDK and delivers every change to every one of them', () => {
    const scenario = report.scenarios.listen_scale
    expect(scenario, 'scenario listen_scale').toBeDefined()
    if (!scenario) return
    expect({ errors: scenario.errors, flagged: scenario.flagged }).toEqual({
      errors: 0,
      flagged: false,
    })
    for (const kind of ['ours', 'sdk'] as const) {
      const outcome = scenario[kind]
      expect(outcome?.failure, `listen_scale · ${kind}`).toBeUndefined()
      const figures = outcome as ScaleFigures
      expect(figures).toMatchObject({
        streams: SCALE_STREAMS,
        opened: SCALE_STREAMS,
        changes: SCALE_CHANGES,
        deliveries: SCALE_STREAMS * SCALE_CHANGES,
        missed: 0,
        errors: 0,
      })
      expect(figures.rssPerStreamKiB).not.toBeNull()
      expect(['server', 'load generator', 'other load', 'neither']).toContain(figures.limit)
      expect(Number.isFinite(figures.allDeliveredMs.p99)).toBe(true)
      expect(figures.allDeliveredMs.p50).toBeGreaterThanOrEqual(figures.deliveryMs.p50)
    }
    expect(typeof scenario.ratio_vs_sdk).toBe('number')
    expect(typeof scenario.memory_ratio_vs_sdk).toBe('number')
    expect(scenario.bare).toBeNull()
  })

  it('times the first answer of a fresh process of every Node server and isolate of every Worker, with bundle sizes', () => {
    const cold = report.coldStarts
    expect(cold, 'coldStarts').toBeDefined()
    if (!cold) return
    const answered = (start: Start) => start.firstAnswerMs?.median ?? 0
    expect(cold.node.map((start) => start.server)).toEqual([
      'npm start',
      'npm start, no compile cache',
      'ours',
      'sdk',
      'bare',
      'peer-fastmcp',
      'peer-tmcp',
      'peer-mcp-handler',
      'peer-hono-mcp',
    ])
    for (const start of cold.node) {
      expect(start.failure, start.server).toBeUndefined()
      expect(start.runs, start.server).toBe(1)
      expect(answered(start), start.server).toBeGreaterThan(0)
    }
    expect(cold.workerd.map((start) => start.worker)).toEqual([
      'notes (src/worker.ts)',
      'bench ours',
      'bench sdk',
      'bench bare',
      'bench agents',
    ])
    for (const start of cold.workerd) expect(start.failure, start.worker).toBeUndefined()
    for (const start of cold.workerd.slice(1))
      expect(answered(start), start.worker).toBeGreaterThan(0)
    const wrangler = cold.bundles.find((bundle) => bundle.measuredBy === 'wrangler')
    expect(wrangler?.worker).toBe('notes (src/worker.ts)')
    for (const bundle of cold.bundles) {
      expect(bundle.gzipBytes, bundle.worker).toBeGreaterThan(0)
      expect(bundle.rawBytes, bundle.worker).toBeGreaterThan(bundle.gzipBytes)
    }
  })

  it('carries events between replica processes on each bus, none lost, and the 2025 interactive flow across two replicas', () => {
    const buses = report.busFanout?.buses
    expect(buses, 'busFanout').toBeDefined()
    for (const bus of ['postgres', 'redis'] as const) {
      const outcome = buses?.[bus]
      expect(outcome, bus).toBeDefined()
      if (!outcome) continue
      if ('skipped' in outcome) {
        // Under CI=true every service is there: a skipped bus fails.
        expect(IN_CI, `${bus} skipped under CI: ${outcome.skipped}`).toBe(false)
        console.warn(`bench smoke: bus_fanout on ${bus} skipped: ${outcome.skipped}`)
        continue
      }
      expect('failure' in outcome ? outcome.failure : undefined, bus).toBeUndefined()
      if ('failure' in outcome) continue
      expect(outcome.runs.map((run) => run.replicas)).toEqual([1, 2])
      for (const run of outcome.runs) {
        expect(
          'failure' in run ? run.failure : undefined,
          `${bus} × ${run.replicas}`
        ).toBeUndefined()
        if ('failure' in run) continue
        expect(run).toMatchObject({ lost: 0, failedPublishes: 0, delivered: run.events })
        expect(run.eventsPerSecond).toBeGreaterThan(0)
        expect(Number.isFinite(run.latencyMs.p99)).toBe(true)
      }
      const flow = outcome.interactive
      expect('failure' in flow ? flow.failure : undefined, `${bus} interactive`).toBeUndefined()
      if (!('failure' in flow)) expect(flow).toMatchObject({ replicas: 2, errors: 0 })
      if (!('failure' in flow)) expect(flow.flows).toBeGreaterThan(0)
    }
  })

  it('has no errors in optional scenarios either (the real notes server, when present)', () => {
    for (const [name, scenario] of Object.entries(report.scenarios)) {
      expect({ name, errors: scenario.errors }).toEqual({ name, errors: 0 })
    }
    expect(report.meta).toMatchObject({ quick: true, connections: 10 })
  })
})

describe('npm run bench -- --quick --passes 3', () => {
  it('measures each server three times in alternating order and reports the median pass with the spread', () => {
    const directory = mkdtempSync(join(tmpdir(), 'notes-mcp-bench-passes-'))
    try {
      const out = join(directory, 'bench.json')
      const args = ['--quick', '--only', 'tools_call', '--servers', 'ours,bare', '--passes', '3']
      const run = spawnSync(process.execPath, ['scripts/bench.ts', ...args, '--out', out], {
        cwd: root,
        encoding: 'utf8',
        timeout: 120_000,
        killSignal: 'SIGTERM',
      })
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0)
      // Pass 1 runs bare then ours, pass 2 the other way round, pass 3 as pass 1.
      const order = [...run.stdout.matchAll(/^\[(\d)\/6\] tools_call · (\w+):/gm)].map(
        ([, index, kind]) => `${index} ${kind}`
      )
      expect(order).toEqual(['1 bare', '2 ours', '3 ours', '4 bare', '5 bare', '6 ours'])
      expect(run.stdout).toMatch(
        /^tools_call: ours [\d,]+–[\d,]+, bare [\d,]+–[\d,]+ \(requests\/s\)$/m
      )
      const report = JSON.parse(readFileSync(out, 'utf8')) as Report
      expect(report.meta).toMatchObject({ passes: 3 })
      const scenario = report.scenarios.tools_call
      for (const kind of ['ours', 'bare'] as const) {
        const figures = scenario?.[kind] as (Figures & { passes?: number[] }) | null | undefined
        expect(figures?.passes, kind).toHaveLength(3)
        const sorted = [...(figures?.passes ?? [])].sort((a, b) => a - b)
        expect(figures?.throughput, kind).toBe(sorted[1])
      }
      expect(scenario?.ratio_vs_bare).toBe(
        Math.round(
          ((scenario?.ours as Figures).throughput / (scenario?.bare as Figures).throughput) * 100
        ) / 100
      )
    } finally {
      rmSync(directory, { recursive: true, force: true })
    }
  }, 150_000)
})
