/**
 * The load test, short (about 10 s of load in all): `scripts/loadtest.ts` with two replicas and
 * four virtual users, once through nginx (balanced mode; skipped, visibly, when nginx is not
 * installed, failing instead under `CI=true`) and once in direct mode with one replica SIGKILLed
 * and restarted mid-run. Each run must end with every flow completed as its answers asked, nothing
 * lost or duplicated, no error and no 5xx from a replica; rounds the driver re-sent after the fault
 * are fine and are reported. In direct mode every later round must have crossed replicas; in
 * balanced mode nginx decides (with the load test's avoid-previous rule).
 */
import { spawn } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findNginx } from '../../scripts/loadtest/nginx-config.ts'
import type { LoadtestSummary } from '../../scripts/loadtest/report.ts'
import { tempDataDir } from '../support/server-process.ts'

const root = join(import.meta.dirname, '../..')
const RUN_TIMEOUT_MS = 90_000
/** Per test: the run, its startup and shutdown, under a busy machine. */
const TEST_TIMEOUT_MS = 120_000
const nginx = findNginx()
const inCi = process.env.CI === 'true'
const NO_NGINX = 'no nginx on PATH, /usr/sbin or /sbin'
if (!nginx && !inCi) console.warn(`Balanced load test skipped: ${NO_NGINX}`)

let dir: string

beforeAll(async () => {
  dir = await tempDataDir('notes-loadtest-smoke-')
})

afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Runs the load test to its end (SIGTERM, then SIGKILL, if it overruns) and reads its summary. */
function loadtest(
  name: string,
  args: string[]
): Promise<{ code: number | null; output: string; summary: LoadtestSummary }> {
  const out = join(dir, `${name}.json`)
  const child = spawn(
    process.execPath,
    [
      join(root, 'scripts/loadtest.ts'),
      '--duration',
      '4',
      '--replicas',
      '2',
      '--users',
      '4',
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
    child.once('exit', async (code) => {
      clearTimeout(stop)
      try {
        const summary = JSON.parse(await readFile(out, 'utf8')) as LoadtestSummary
        resolve({ code, output, summary })
      } catch {
        reject(new Error(`the load test wrote no summary (exit ${code}):\n${output}`))
      }
    })
  })
}

function expectSound(run: { code: number | null; output: string; summary: LoadtestSummary }) {
  const { summary } = run
  expect(summary.flows_started, run.output).toBeGreaterThan(0)
  expect(summary.flows_completed, run.output).toBe(summary.flows_started)
  expect(summary.lost, run.output).toBe(0)
  expect(summary.duplicated, run.output).toBe(0)
  expect(summary.not_deleted, run.output).toBe(0)
  expect(summary.errors, run.output).toEqual({})
  expect(summary.http_5xx.replica, run.output).toBe(0)
  for (const kind of ['create_delete', 'bulk_delete', 'declined_delete']) {
    expect(summary.flows[kind]?.completed, kind).toBeGreaterThan(0)
  }
  expect(summary.passed).toBe(true)
  expect(run.code).toBe(0)
}

describe('the load test (2 replicas, 4 users, 4 s per mode)', () => {
  it.skipIf(!nginx && !inCi)(
    'balanced through nginx: nothing lost or duplicated, rounds cross replicas',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      if (!nginx) throw new Error(`${NO_NGINX} (CI=true: this fails instead of skipping)`)
      const run = await loadtest('balanced', ['--mode', 'balanced'])
      expectSound(run)
      expect(run.summary.mode).toBe('balanced')
      expect(run.summary.cross_replica_ratio).toBeGreaterThanOrEqual(0.9)
      console.info(
        `balanced: ${run.summary.flows_completed} flows, ${run.summary.flows_per_s}/s, ` +
          `cross-replica ${run.summary.cross_replica_ratio}, gateway 5xx ${run.summary.http_5xx.gateway}`
      )
    }
  )

  it(
    'direct with one replica killed and restarted: nothing lost or duplicated, every round on another replica',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const run = await loadtest('direct-kill', ['--mode', 'direct', '--kill'])
      expectSound(run)
      expect(run.summary.mode).toBe('direct')
      expect(run.summary.cross_replica_ratio).toBe(1)
      expect(run.summary.fault?.replica).toBe('r2')
      console.info(
        `direct --kill: ${run.summary.flows_completed} flows, ${run.summary.retried_rounds_after_fault} ` +
          `rounds re-sent after the fault, ${run.summary.failed_attempts} failed attempts, ` +
          `${run.summary.creates_recovered_by_search} creates found stored after a lost answer`
      )
    }
  )
})
