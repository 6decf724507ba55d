/**
 * @module tests/workers/wrangler-dev
 * Node-side helper (not a workerd test): starts `wrangler dev` in local mode for an end-to-end test —
 * workerd on 127.0.0.1, a free port, a free inspector port, a private `--persist-to` directory whose
 * local D1 database `DB` has `migrations/` applied first (as `wrangler d1 migrations apply DB --local`),
 * and the given secrets through an `--env-file`, with wrangler's outbound traffic switched off, and
 * a dev registry of its own unless the test shares one between the Workers that bind each other's
 * Durable Objects (`registry`). Resolves once `/healthz` answers; `stop()` ends wrangler and its
 * workerd processes (one process group).
 * The command line of such a `wrangler dev` is {@link wranglerDevArgs}, for a test that starts
 * wrangler its own way (the README example's Worker).
 * The tests' one import for running wrangler too: its CLI, offline environment and wrangler.toml's
 * compatibility date are the scripts' (`scripts/support/wrangler.ts`), re-exported so tests never
 * reach into `scripts/` for them.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WRANGLER_CLI, WRANGLER_ENV } from '../../scripts/support/wrangler.ts'
import { freePort } from '../support/server-process.ts'

export {
  readCompatibilityDate,
  WRANGLER_CLI,
  WRANGLER_ENV,
} from '../../scripts/support/wrangler.ts'

const root = join(import.meta.dirname, '../..')

export const FIXTURE_WORKER_CONFIG = join(root, 'tests/workers/wrangler.fixture.toml')

/** What {@link wranglerDevArgs} serves, where, and with which state. */
export interface WranglerDevOptions {
  /** The wrangler.toml. */
  config: string
  /** The port it serves on, on 127.0.0.1. */
  port: number
  /** A dotenv file of the Worker's variables, if any. */
  envFile?: string
  /** The folder of its local state (D1, KV…). */
  persistTo: string
}

/**
 * The command line (after the Node executable) of `wrangler dev` serving a Worker offline, on
 * loopback, with an inspector port of its own and no interactive session.
 */
export async function wranglerDevArgs(options: WranglerDevOptions): Promise<string[]> {
  return [
    WRANGLER_CLI,
    'dev',
    '--config',
    options.config,
    '--local',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--inspector-port',
    String(await freePort()),
    '--show-interactive-dev-session=false',
    ...(options.envFile === undefined ? [] : ['--env-file', options.envFile]),
    '--persist-to',
    options.persistTo,
  ]
}

export interface WorkerProcess {
  url: string
  baseUrl: string
  output(): string
  stop(): Promise<void>
}

export interface StartWorkerOptions {
  /** The wrangler configuration file; default the fixture Worker's. */
  config?: string
  /** Secrets and vars, written to the `--env-file` (values must be single-line). */
  vars?: Record<string, string>
  startTimeoutMs?: number
  /**
   * The dev registry directory (`WRANGLER_REGISTRY_PATH`) through which `wrangler dev` processes
   * reach each other's Durable Objects (`script_name` bindings); default a private one, so tests
   * running at the same time never connect to each other's Workers.
   */
  registry?: string
}

/** Runs one wrangler command to its end; rejects with its output when it fails. */
function wrangler(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawn(process.execPath, [WRANGLER_CLI, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  return new Promise((resolve, reject) =>
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`wrangler ${args[0]} failed:\n${output}`))
    )
  )
}

export async function startWorker(options: StartWorkerOptions = {}): Promise<WorkerProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'notes-wrangler-dev-'))
  const config = options.config ?? FIXTURE_WORKER_CONFIG
  const state = join(dir, 'state')
  const env = {
    ...process.env,
    ...WRANGLER_ENV,
    NO_COLOR: '1',
    WRANGLER_REGISTRY_PATH: options.registry ?? join(dir, 'registry'),
  }
  const envFile = join(dir, 'worker.env')
  const lines = Object.entries(options.vars ?? {}).map(([name, value]) => {
    if (/[\r\n]/.test(value)) throw new TypeError(`${name} must be a single line`)
    return `${name}=${value}`
  })
  await writeFile(envFile, `${lines.join('\n')}\n`, { mode: 0o600 })

  try {
    await wrangler(
      ['d1', 'migrations', 'apply', 'DB', '--local', '--config', config, '--persist-to', state],
      env
    )
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  }

  const port = await freePort()
  const args = await wranglerDevArgs({ config, port, envFile, persistTo: state })
  const child = spawn(process.execPath, args, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  let exited = false
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true
      resolve()
    })
  )

  const stop = async () => {
    if (!exited && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGTERM')
      } catch {
        // Already gone.
      }
      const killer = setTimeout(() => {
        try {
          process.kill(-(child.pid as number), 'SIGKILL')
        } catch {
          // Already gone.
        }
      }, 5000)
      await exit
      clearTimeout(killer)
    }
    await rm(dir, { recursive: true, force: true })
  }

  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000)
  for (;;) {
    if (exited) {
      await stop()
      throw new Error(`wrangler dev exited before serving:\n${output}`)
    }
    try {
      const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) })
      if (response.ok) break
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`wrangler dev did not serve within the deadline:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return { url: `${baseUrl}/mcp`, baseUrl, output: () => output, stop }
}
