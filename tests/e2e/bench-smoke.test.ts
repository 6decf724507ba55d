/**
 * @module tests/e2e/bench-smoke
 * Proves the benchmark works end to end (`node scripts/bench.ts --quick`): it starts the three
 * servers, drives every scenario, verifies every answer, and writes a report with figures for each
 * scenario and server. No timing is asserted — a CI machine's speed says nothing — only the
 * structure of the report and zero verification errors. Takes about a minute and a half.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '../..')

const REQUIRED: Record<string, Array<'ours' | 'sdk' | 'bare'>> = {
  tools_call: ['ours', 'sdk', 'bare'],
  tools_list: ['ours', 'sdk', 'bare'],
  mrtr_round1: ['ours', 'sdk'],
  mrtr_round2: ['ours', 'sdk'],
  mrtr_flow: ['ours', 'sdk'],
  sse_progress: ['ours', 'sdk'],
  notes_search: ['ours', 'sdk'],
}

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

interface Report {
  meta: Record<string, unknown>
  scenarios: Record<
    string,
    {
      unit: string
      errors: number
      flagged: boolean
      ratio_vs_sdk: number | null
      ratio_vs_bare: number | null
    } & Record<'ours' | 'sdk' | 'bare', (Figures & { failure?: string }) | null>
  >
}

describe('npm run bench -- --quick', () => {
  let directory: string
  let run: ReturnType<typeof spawnSync>
  let report: Report

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'notes-mcp-bench-smoke-'))
    const out = join(directory, 'bench.json')
    run = spawnSync(process.execPath, ['scripts/bench.ts', '--quick', '--out', out], {
      cwd: root,
      encoding: 'utf8',
      timeout: 280_000,
      killSignal: 'SIGTERM',
    })
    report = JSON.parse(readFileSync(out, 'utf8')) as Report
  }, 300_000)

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
      for (const kind of servers) {
        const figures = scenario[kind]
        expect(figures?.failure, `${name} · ${kind}`).toBeUndefined()
        expect(figures, `${name} · ${kind}`).not.toBeNull()
        if (!figures) continue
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
    }
  })

  it('has no errors in optional scenarios either (the real notes server, when present)', () => {
    for (const [name, scenario] of Object.entries(report.scenarios)) {
      expect({ name, errors: scenario.errors }).toEqual({ name, errors: 0 })
    }
    expect(report.meta).toMatchObject({ quick: true, connections: 10 })
  })
})
