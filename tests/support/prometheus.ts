/**
 * @module tests/support/prometheus
 * A real Prometheus server for the metrics tests: Debian's `prometheus` binary (`.ci/run` installs
 * the package without starting its service), or `PROMETHEUS_PATH`, run on loopback from a generated
 * configuration that scrapes the given targets every second, with its storage in a temporary
 * directory. Without the binary the tests are skipped visibly; under `CI=true` they fail instead.
 * `waitForQuery` polls the HTTP API until an instant query answers what the test expects, within a
 * deadline that fails the test (no timing assertion).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serviceTestsRun } from './ci.ts'
import type { JsonValue } from './mcp-request.ts'
import { freePort } from './server-process.ts'

/** `PROMETHEUS_PATH`, else `prometheus` on PATH, when it runs (`--version`). */
function findPrometheus(): string | undefined {
  const command = process.env.PROMETHEUS_PATH ?? 'prometheus'
  return spawnSync(command, ['--version'], { stdio: 'ignore' }).error ? undefined : command
}

const PROMETHEUS = findPrometheus()
const MISSING = 'no Prometheus: install the prometheus package or set PROMETHEUS_PATH'

/** Whether a file's Prometheus tests run: with the binary, or under CI (where they then fail). */
export function prometheusTestsRun(suite: string): boolean {
  return serviceTestsRun(suite, PROMETHEUS !== undefined, MISSING)
}

/** One sample of an instant vector: its labels and value. */
export interface Sample {
  metric: Record<string, string>
  value: number
}

export interface PrometheusServer {
  url: string
  /** The instant vector `expr` evaluates to now. */
  query(expr: string): Promise<Sample[]>
  /** Polls `query(expr)` until `ready` holds for its samples; rejects after `deadlineMs`. */
  waitForQuery(
    expr: string,
    ready: (samples: Sample[]) => boolean,
    deadlineMs?: number
  ): Promise<Sample[]>
  /** The health of each scrape target (`up`, `down`, `unknown`) by its address. */
  targets(): Promise<Record<string, string>>
  stop(): Promise<void>
}

export async function startPrometheus(targets: string[]): Promise<PrometheusServer> {
  if (!PROMETHEUS) throw new Error(`${MISSING} (CI=true: this fails instead of skipping)`)
  const dir = await mkdtemp(join(tmpdir(), 'notes-prometheus-'))
  const config = join(dir, 'prometheus.yml')
  await writeFile(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: notes-mcp',
      '    metrics_path: /metrics',
      '    static_configs:',
      `      - targets: [${targets.map((target) => JSON.stringify(target)).join(', ')}]`,
      '',
    ].join('\n')
  )
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let output = ''
  child.stdout?.on('data', (chunk) => (output += chunk))
  child.stderr?.on('data', (chunk) => (output += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(killer)
    }
    await rm(dir, { recursive: true, force: true })
  }

  const api = async (path: string) => {
    const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(5000) })
    const body = (await response.json()) as { status: string; data: JsonValue; error?: string }
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error}`)
    return body.data
  }

  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) {
      await stop()
      throw new Error(`prometheus exited before serving:\n${output}`)
    }
    try {
      if ((await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`prometheus did not become ready:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }

  const query = async (expr: string): Promise<Sample[]> => {
    const data = await api(`/api/v1/query?query=${encodeURIComponent(expr)}`)
    return (data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map(
      (sample) => ({ metric: sample.metric, value: Number(sample.value[1]) })
    )
  }

  return {
    url,
    query,
    async waitForQuery(expr, ready, deadlineMs = 30_000) {
      const until = Date.now() + deadlineMs
      for (;;) {
        const last = await query(expr)
        if (ready(last)) return last
        if (Date.now() > until)
          throw new Error(`${expr} never answered as expected; last: ${JSON.stringify(last)}`)
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    },
    async targets() {
      const data = await api('/api/v1/targets')
      return Object.fromEntries(
        (data.activeTargets as Array<{ scrapeUrl: string; health: string }>).map((target) => [
          new URL(target.scrapeUrl).host,
          target.health,
        ])
      )
    },
    stop,
  }
}
