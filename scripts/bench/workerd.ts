/**
 * @module scripts/bench/workerd
 * The Worker builds of the bench servers on workerd, the runtime of Cloudflare Workers and of
 * `wrangler dev`: each entry (`worker-ours.ts`, `worker-sdk.ts`, `worker-bare.ts`,
 * `worker-agents.ts`) is bundled exactly as `wrangler deploy` bundles it (`--dry-run`, offline, with
 * wrangler's outbound traffic off), then served by the workerd binary wrangler itself runs, directly
 * (`workerd serve`, one process, a socket on 127.0.0.1 with a kernel-chosen port reported on its
 * control descriptor). No proxy sits in front of it, unlike `wrangler dev`, whose proxy Worker would
 * add a second hop to every request of both servers alike. Bundles are built once per benchmark run.
 *
 * Each process gets a fresh `STATE_KEYS` ring as a text binding (our Worker seals with it; the SDK's
 * and agents' draw their own HMAC key on first use). No build needs a compatibility flag: the
 * `nodejs_compat` agents' guide asks for is the default at our compatibility date.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import { readCompatibilityDate, WRANGLER_CLI, WRANGLER_ENV } from '../support/wrangler.ts'

const run = promisify(execFile)

/** wrangler.toml's, within the range of the workerd wrangler pins. */
const COMPATIBILITY_DATE = readCompatibilityDate()

export const WORKER_KINDS = ['ours', 'sdk', 'bare', 'agents'] as const
export type WorkerKind = (typeof WORKER_KINDS)[number]

export function isWorkerKind(kind: string): kind is WorkerKind {
  return (WORKER_KINDS as readonly string[]).includes(kind)
}

/** Bundles `scripts/bench/worker-<kind>.ts` as `wrangler deploy` would; answers the module's path. */
export async function bundleWorker(
  root: string,
  kind: WorkerKind,
  directory: string
): Promise<string> {
  const outdir = join(directory, kind)
  mkdirSync(outdir, { recursive: true })
  const config = join(directory, `${kind}.wrangler.toml`)
  writeFileSync(
    config,
    [
      `name = "notes-mcp-bench-${kind}"`,
      `main = ${JSON.stringify(join(root, 'scripts', 'bench', `worker-${kind}.ts`))}`,
      `compatibility_date = "${COMPATIBILITY_DATE}"`,
      'send_metrics = false',
      '',
    ].join('\n')
  )
  await run(
    process.execPath,
    [WRANGLER_CLI, 'deploy', '--dry-run', '--config', config, '--outdir', outdir],
    { cwd: root, env: { ...process.env, ...WRANGLER_ENV }, timeout: 120_000 }
  )
  return join(outdir, `worker-${kind}.js`)
}

/**
 * Writes the workerd configuration serving `module` on socket `http` (its address is given on the
 * command line) and answers the arguments of `workerd serve`.
 */
export function workerdArgs(module: string, directory: string, kind: WorkerKind): string[] {
  const stateKeys = `kbench:${randomBytes(32).toString('base64url')}`
  const config = join(directory, `${kind}.capnp`)
  writeFileSync(
    config,
    [
      'using Workerd = import "/workerd/workerd.capnp";',
      'const config :Workerd.Config = (',
      '  services = [ (name = "main", worker = .bench) ],',
      '  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],',
      ');',
      'const bench :Workerd.Worker = (',
      // embed paths are read relative to the configuration's directory.
      `  modules = [ (name = "worker.js", esModule = embed ${JSON.stringify(relative(directory, module))}) ],`,
      `  compatibilityDate = "${COMPATIBILITY_DATE}",`,
      `  bindings = [ (name = "STATE_KEYS", text = "${stateKeys}") ],`,
      ');',
      '',
    ].join('\n'),
    { mode: 0o600 }
  )
  return ['serve', config, '--control-fd', '3']
}
