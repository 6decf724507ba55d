/**
 * @module tests/support/server-process
 * Starts real server processes for end-to-end tests, on Node, Deno, Bun, Lambda or Netlify: the
 * notes server (its runtime's entry: `src/node.ts`, `src/deno.ts` under `deno serve` as
 * `npm run start:deno` runs it, `src/bun.ts`, `src/lambda.ts` behind a local function URL, the
 * Netlify function built as Netlify builds it), the notes server whose imports a test can hold
 * mid-way (`held-import`, Node only: `scripts/support/held-import-replica.ts`, spawned with its IPC
 * channel; `holdOf(server)` is that hold) or the conformance fixture, on 127.0.0.1 and a free port
 * (or the `PORT` the environment names, to restart a server where its clients expect it), with the
 * environment a test gives (data directory, key ring, replica id).
 * Resolves once the process prints its URL; `stop()` ends it.
 * `startPostgresReplicas` starts notes servers that share one scratch PostgreSQL database, one data
 * directory and one key ring, as replicas of one deployment do, each on the runtime a test names.
 * The tests' one import for local resources too: `freePort` and `tempDataDir` are the scripts'
 * (`scripts/support/local-resources.ts`), re-exported so tests never reach into `scripts/` for them.
 */
import { execFile, spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { IPC_STDIO, ImportHold } from '../../scripts/support/import-hold.ts'
import { freePort, tempDataDir } from '../../scripts/support/local-resources.ts'
import { createScratchDatabase } from '../../scripts/support/postgres.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'

export { freePort, tempDataDir } from '../../scripts/support/local-resources.ts'

const root = join(import.meta.dirname, '../..')
const run = promisify(execFile)

export interface ServerProcess {
  url: string
  baseUrl: string
  process: ChildProcess
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string
  stop(): Promise<void>
}

const ENTRIES = {
  notes: 'src/node.ts',
  'held-import': 'scripts/support/held-import-replica.ts',
  fixture: 'tests/conformance/fixture-server.ts',
} as const

/** The import hold of a server started as `held-import`. */
export function holdOf(server: ServerProcess): ImportHold {
  return new ImportHold(server.process)
}

/**
 * The runtimes a server can be started on: this Node, the Deno and Bun binaries npm installs,
 * Lambda's Node.js runtime as `lambda-local` runs it behind a local function URL, or Netlify's
 * functions, built as Netlify builds them and invoked the same way (`scripts/lambda-url.ts`).
 */
export type Runtime = 'node' | 'deno' | 'bun' | 'lambda' | 'netlify'

/**
 * The notes server's entry on each runtime: `npm start`, `npm run start:deno`, `npm run start:bun`,
 * `npm run start:lambda`; on Netlify, the folder of its function (`npm run start:netlify`).
 */
const NOTES_ENTRIES: Record<Runtime, string> = {
  node: 'src/node.ts',
  deno: 'src/deno.ts',
  bun: 'src/bun.ts',
  lambda: 'src/lambda.ts',
  netlify: 'netlify/functions',
}

/**
 * The fixture where it is not its server: its Lambda handler (`npm run start:fixture:lambda`) and
 * its Netlify function's folder (`npm run start:fixture:netlify`).
 */
const FIXTURE_FUNCTIONS = {
  lambda: 'tests/conformance/fixture-lambda.ts',
  netlify: 'tests/conformance/netlify',
} as const

const scripts = (
  JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
  }
).scripts

/**
 * `npm run start:deno`'s `deno serve` arguments as the script spells them, its `${HOST:-…}` and
 * `${PORT:-…}` filled in from `env`: the tests run the command users run.
 */
function denoServeArgs(env: Record<string, string>): string[] {
  const words = scripts['start:deno']!.split(' ')
  if (words[0] !== 'deno' || words[1] !== 'serve')
    throw new Error(`start:deno is not a deno serve command: ${scripts['start:deno']}`)
  return words
    .slice(1)
    .map((word) => word.replace(/^\$\{(\w+):-[^}]*\}$/, (_whole, name: string) => env[name]!))
}

/** The Netlify builds of this test file, by functions folder: each is built once, then served often. */
const netlifyBuilds = new Map<string, Promise<string>>()

/** The entry point of the one function in `folder`, built as Netlify builds it into a new folder. */
function netlifyEntryPoint(folder: string): Promise<string> {
  let built = netlifyBuilds.get(folder)
  if (!built) {
    built = (async () => {
      const { stdout } = await run(process.execPath, [
        join(root, 'scripts/netlify-build.ts'),
        join(root, folder),
        await tempDataDir(),
      ])
      const [entryPoint, ...more] = stdout.trim().split('\n')
      if (!entryPoint || more.length > 0) throw new Error(`not one Netlify function in ${folder}`)
      return entryPoint
    })()
    netlifyBuilds.set(folder, built)
  }
  return built
}

/**
 * The command that runs `entry` on `runtime` with `env`; on Lambda, its function URL invokes the
 * handler `env.LAMBDA_HANDLER` (default `handler`, the streaming one) of the module
 * `env.LAMBDA_MODULE` (default the entry's own: a bundle of it, say).
 */
async function runtimeCommand(
  runtime: Runtime,
  entry: keyof typeof ENTRIES,
  env: Record<string, string>
): Promise<[string, string[]]> {
  const file = join(root, entry === 'notes' ? NOTES_ENTRIES[runtime] : ENTRIES[entry])
  const lambdaUrl = join(root, 'scripts/lambda-url.ts')
  switch (runtime) {
    case 'node':
      return [process.execPath, [file]]
    case 'deno':
      return [
        join(root, 'node_modules/.bin/deno'),
        entry === 'notes' ? denoServeArgs(env) : ['run', '--allow-all', file],
      ]
    case 'bun':
      return [join(root, 'node_modules/.bin/bun'), [file]]
    case 'lambda':
      return [
        process.execPath,
        [
          lambdaUrl,
          env.LAMBDA_MODULE ?? (entry === 'fixture' ? join(root, FIXTURE_FUNCTIONS.lambda) : file),
          ...(env.LAMBDA_HANDLER ? ['--handler', env.LAMBDA_HANDLER] : []),
        ],
      ]
    case 'netlify': {
      const folder = entry === 'fixture' ? FIXTURE_FUNCTIONS.netlify : NOTES_ENTRIES.netlify
      return [process.execPath, [lambdaUrl, await netlifyEntryPoint(folder), '--event', 'netlify']]
    }
  }
}

export async function startServer(
  entry: keyof typeof ENTRIES,
  env: Record<string, string> = {},
  runtime: Runtime = 'node'
): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort()
  const processEnv = { HOST: '127.0.0.1', PORT: String(port), ...env }
  if (runtime !== 'node' && entry === 'held-import')
    throw new Error('the held-import replica runs on Node only')
  const [command, args] = await runtimeCommand(runtime, entry, processEnv)
  // Output piped either way (the IPC channel is a fourth descriptor): the cast says so to the types.
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...processEnv },
    stdio: entry === 'held-import' ? IPC_STDIO : ['ignore', 'pipe', 'pipe'],
  }) as ChildProcessByStdio<null, Readable, Readable>
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 20_000)
    const onData = () => {
      if (/listening on http/i.test(output)) {
        clearTimeout(timer)
        resolve()
      }
    }
    // `deno serve` prints its address on stderr.
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${output}`))
    })
  })

  const baseUrl = `http://127.0.0.1:${port}`
  return {
    url: `${baseUrl}/mcp`,
    baseUrl,
    process: child,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        // Exited on its own (exitCode) or killed by a signal, e.g. a test's SIGKILL (signalCode).
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
        setTimeout(() => child.kill('SIGKILL'), 3000).unref()
      }),
  }
}

/** Notes servers sharing one scratch PostgreSQL database. */
export interface PostgresReplicas {
  /** One server a replica id, in the order of the ids. */
  servers: ServerProcess[]
  /** The URL of their scratch database, for a test to look at what they stored. */
  databaseUrl: string
  /** Stops every server, then drops the database. */
  stop(): Promise<void>
}

/**
 * Starts one notes server a replica id (`REPLICA_ID`) on a scratch database of the PostgreSQL server
 * behind `serverUrl`, all with one data directory and one key ring, the replica of `replicaIds[i]` on
 * `runtimes[i]` (Node where none is named), each with `extraEnv` too. Should one fail to start, those
 * already started are stopped and the database dropped before the error is thrown again.
 */
export async function startPostgresReplicas(
  serverUrl: string,
  replicaIds: readonly string[],
  runtimes: readonly Runtime[] = [],
  extraEnv: Record<string, string> = {}
): Promise<PostgresReplicas> {
  const database = await createScratchDatabase(serverUrl)
  const env = {
    ...extraEnv,
    DATABASE_URL: database.url,
    DATA_DIR: await tempDataDir(),
    STATE_KEYS: formatKeyRing([generateKey()]),
  }
  const servers: ServerProcess[] = []
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await database.drop()
  }
  try {
    for (const [index, id] of replicaIds.entries())
      servers.push(await startServer('notes', { ...env, REPLICA_ID: id }, runtimes[index]))
  } catch (error) {
    await stop()
    throw error
  }
  return { servers, databaseUrl: database.url, stop }
}
