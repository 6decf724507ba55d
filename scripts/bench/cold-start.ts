/**
 * @module scripts/bench/cold-start
 * Cold starts and Worker bundle sizes, for `npm run bench` (which calls `measureColdStarts` and
 * prints `formatColdStarts`) or on its own: `node scripts/bench/cold-start.ts [--runs N] [--out FILE]`.
 *
 * On Node, each server is started as a fresh process pinned to one CPU (`taskset -c 1`, as the load
 * scenarios pin theirs), and timed from the spawn to its first correctly answered request, with its
 * resident memory (VmRSS) at that moment and, apart, the time to the line it prints once it
 * listens. Every Node server runs with `npm start`'s Node flags (`SERVER_NODE_FLAGS`), as the load
 * scenarios' servers do. The notes server (`src/node.ts`, what `npm start` runs) gets a temporary
 * `DATA_DIR` with its SQLite database and a port chosen beforehand, so the first request is sent at
 * once and retried while the port refuses connections; it is a `tools/call create_note`. It is
 * started twice over: with Node's compile cache, which its entry turns on (in a folder of this run,
 * filled by the unmeasured start as a replica's first start fills it), and without
 * (`NODE_DISABLE_COMPILE_CACHE`), as a first start is and as the other servers run (none turns the
 * cache on). The bench servers (`ours.ts`, `sdk.ts`, `bare.ts` and each `peer-*.ts`) listen on a
 * port the kernel picks and name it in their ready line, so their first request follows that line:
 * a 2026-07-28 `tools/call echo`, or for the peers, which speak the 2025 revisions only, a
 * stateless 2025-11-25 `tools/call echo`.
 *
 * On workerd, the size of each Worker bundle as `wrangler deploy --dry-run` builds it (raw and gzip
 * of every uploaded module, gzip at zlib's default level, as wrangler computes its "Total Upload"
 * line; for the notes Worker that line itself is parsed too), and the time from spawning
 * `workerd serve` with a bench Worker (`worker-ours.ts`, `worker-sdk.ts`, `worker-bare.ts`,
 * `worker-agents.ts`) to the first answered request of its fresh isolate. The notes
 * Worker needs D1 and two Durable Objects that a bare `workerd serve` does not provide, so only the
 * time until workerd listens with its bundle loaded is measured for it; the bench Worker
 * `worker-ours.ts` (the same engine and HTTP face) stands for it on the first answer.
 *
 * Every answer is verified (a wrong one fails the run of that server, with the answer quoted). Each
 * server gets one unmeasured start first (it warms the file cache and, for the notes server, creates
 * its database and key ring), then `runs` measured ones; the report gives the median, min and max.
 * Loopback only; every start is bounded in time and every process is stopped on the way out.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify, parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'
import { SERVER_NODE_FLAGS } from '../loadtest/processes.ts'
import { freePort, tempDataDir } from '../support/local-resources.ts'
import { WRANGLER_CLI, WRANGLER_ENV, workerdBinary } from '../support/wrangler.ts'
import { send } from './scenarios.ts'
import {
  killAllNow,
  memoryBytes,
  pinning,
  startServer,
  stopAll,
  stopChild,
} from './server-process.ts'
import {
  isCreated,
  isEchoResult,
  isLegacyEcho,
  legacyRequests,
  requests,
  type HttpRequest,
  type HttpResponse,
} from './wire.ts'
import { bundleWorker, workerdArgs, type WorkerKind } from './workerd.ts'

const run = promisify(execFile)

const SERVER_CPU = 1
/** Bound on one start: spawn to verified answer. */
const START_TIMEOUT_MS = 30_000
/** Pause between connection attempts while the notes server's port still refuses them. */
const CONNECT_RETRY_MS = 1
const NOTES_READY = /notes-mcp listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/

/** Median, lowest and highest of a series. */
export interface Summary {
  median: number
  min: number
  max: number
}

export interface NodeColdStart {
  server: string
  /** What is started (relative to the repository). */
  command: string
  /** The first request, verified. */
  request: string
  runs: number
  readyMs: Summary | null
  firstAnswerMs: Summary | null
  rssMiB: Summary | null
  /** Why a run failed (the server is then reported without figures). */
  failure?: string
}

export interface BundleSize {
  worker: string
  entry: string
  rawBytes: number
  gzipBytes: number
  /** `wrangler`: its "Total Upload" line; `zlib`: computed here from the built modules, as wrangler does. */
  measuredBy: 'wrangler' | 'zlib'
}

export interface WorkerColdStart {
  worker: string
  request: string | null
  runs: number
  /** Spawn of `workerd serve` to its `listen` message: the process up, the bundle loaded. */
  listeningMs: Summary | null
  firstAnswerMs: Summary | null
  rssMiB: Summary | null
  failure?: string
}

export interface ColdStartReport {
  meta: { date: string; runs: number; pinned: string | null; node: string; workerd?: string }
  node: NodeColdStart[]
  bundles: BundleSize[]
  workerd: WorkerColdStart[]
  /** First answer of `worker-ours` minus that of `worker-bare` (medians): what our isolate adds. */
  isolateOverBareMs: number | null
}

export interface ColdStartOptions {
  /** Measured starts per server (after one unmeasured start). */
  runs: number
  /** The repository; default this file's. */
  root?: string
  /** CPU to pin servers to; default 1 when `taskset` exists and there are two CPUs, else none. */
  cpu?: number | null
  /** Progress lines; default none. */
  log?: (line: string) => void
}

/** Median (the lower middle of an even count), min and max; `null` for an empty series. */
export function summarize(values: readonly number[]): Summary | null {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  return {
    median: sorted[Math.floor((sorted.length - 1) / 2)] as number,
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
  }
}

/** The sizes of wrangler's `Total Upload: X KiB / gzip: Y KiB` line (colours allowed), in bytes. */
export function parseUploadSize(output: string): { rawBytes: number; gzipBytes: number } | null {
  const plain = output.replace(/\u001b\[[0-9;]*m/g, '')
  const match = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(plain)
  if (!match) return null
  return {
    rawBytes: Math.round(Number(match[1]) * 1024),
    gzipBytes: Math.round(Number(match[2]) * 1024),
  }
}

/** Raw and gzip size of the modules wrangler uploads from an `--outdir` (not its maps or README). */
function modulesSize(outdir: string): { rawBytes: number; gzipBytes: number } {
  const modules = readdirSync(outdir)
    .filter((name) => /\.(?:m?js|cjs|wasm)$/.test(name))
    .sort()
    .map((name) => readFileSync(join(outdir, name)))
  const all = Buffer.concat(modules)
  return { rawBytes: all.byteLength, gzipBytes: gzipSync(all).byteLength }
}

interface Probe {
  label: string
  request: HttpRequest
  check(response: HttpResponse): boolean
}

const MODERN_ECHO: Probe = {
  label: '2026-07-28 tools/call echo',
  request: requests.echo(),
  check: isEchoResult,
}
const LEGACY_ECHO: Probe = {
  label: '2025-11-25 stateless tools/call echo',
  request: legacyRequests.echo(undefined),
  check: (response) => isLegacyEcho(response),
}
const CREATE_NOTE: Probe = {
  label: '2026-07-28 tools/call create_note (SQLite)',
  request: requests.createNote(1),
  check: (response) => isCreated(response, 1),
}

/** The notes server's command line as the report names it: `npm start`'s. */
const NOTES_COMMAND = `node ${SERVER_NODE_FLAGS.join(' ')} src/node.ts`

/** The Node bench servers by file, and how each is asked. */
const NODE_BENCH: ReadonlyArray<{ server: string; probe: Probe }> = [
  { server: 'ours', probe: MODERN_ECHO },
  { server: 'sdk', probe: MODERN_ECHO },
  { server: 'bare', probe: MODERN_ECHO },
  { server: 'peer-fastmcp', probe: LEGACY_ECHO },
  { server: 'peer-tmcp', probe: LEGACY_ECHO },
  { server: 'peer-mcp-handler', probe: LEGACY_ECHO },
  { server: 'peer-hono-mcp', probe: LEGACY_ECHO },
]

/** The bench Worker builds (`worker-<kind>.ts`), and how each is asked. */
const WORKERS: ReadonlyArray<{ kind: WorkerKind; probe: Probe }> = [
  { kind: 'ours', probe: MODERN_ECHO },
  { kind: 'sdk', probe: MODERN_ECHO },
  { kind: 'bare', probe: MODERN_ECHO },
  { kind: 'agents', probe: LEGACY_ECHO },
]

function describeAnswer(response: HttpResponse): string {
  return `HTTP ${response.status} ${response.contentType}: ${response.body.slice(0, 300)}`
}

async function verify(url: string, probe: Probe): Promise<void> {
  const response = await send(url, probe.request)
  if (!probe.check(response)) throw new Error(`wrong answer: ${describeAnswer(response)}`)
}

/** A refused or reset connection: the server is not listening yet. */
function notListening(error: unknown): boolean {
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code
  return code === 'ECONNREFUSED' || code === 'ECONNRESET'
}

interface Sample {
  readyMs: number | undefined
  firstAnswerMs: number
  rssBytes: number | undefined
}

function pinned(command: string[], cpu: number | null): [string, string[]] {
  const [program, ...args] = command as [string, ...string[]]
  return cpu === null ? [program, args] : ['taskset', ['-c', String(cpu), program, ...args]]
}

/** Processes this module spawned itself (the notes server), stopped on the way out. */
const ownChildren = new Set<ChildProcess>()

/**
 * One start of the notes server: spawned on a port chosen here, asked at once and again every
 * millisecond while the port refuses, its ready line timed on the side.
 */
async function startNotesServer(
  root: string,
  dataDir: string,
  cpu: number | null,
  cache: Record<string, string>
) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}/mcp`
  const [command, args] = pinned(
    [process.execPath, ...SERVER_NODE_FLAGS, join(root, 'src', 'node.ts')],
    cpu
  )
  const started = performance.now()
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...cache, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  ownChildren.add(child)
  child.once('exit', () => ownChildren.delete(child))
  let output = ''
  let readyMs: number | undefined
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) =>
      reject(new Error(`exited (${code ?? signal}) before answering:\n${output.slice(-2000)}`))
    )
  })
  exited.catch(() => {})
  const watch = (chunk: Buffer) => {
    output += chunk.toString()
    if (readyMs === undefined && NOTES_READY.test(output)) readyMs = performance.now() - started
  }
  child.stdout.on('data', watch)
  child.stderr.on('data', watch)
  const deadline = started + START_TIMEOUT_MS
  try {
    const answer = (async () => {
      for (;;) {
        try {
          return await send(url, CREATE_NOTE.request)
        } catch (error) {
          const exitedAlready = child.exitCode !== null || child.signalCode !== null
          if (!notListening(error) || exitedAlready || performance.now() > deadline) throw error
          await sleep(CONNECT_RETRY_MS)
        }
      }
    })()
    const response = await Promise.race([answer, exited])
    const firstAnswerMs = performance.now() - started
    const rssBytes = memoryBytes(child.pid as number, 'VmRSS')
    if (!CREATE_NOTE.check(response)) throw new Error(`wrong answer: ${describeAnswer(response)}`)
    return { readyMs, firstAnswerMs, rssBytes }
  } finally {
    await stopChild(child)
  }
}

/** One start of a server that names its address when ready (a Node bench server or workerd). */
async function startAndAsk(
  kind: string,
  command: [string, ...string[]],
  ready: 'stdout' | 'workerd',
  probe: Probe,
  root: string,
  cpu: number | null
): Promise<Sample> {
  const started = performance.now()
  const server = await startServer({
    kind,
    command,
    env: {},
    ...(cpu !== null && { cpu }),
    cwd: root,
    ready,
  })
  try {
    const readyMs = performance.now() - started
    await verify(server.url, probe)
    const firstAnswerMs = performance.now() - started
    return { readyMs, firstAnswerMs, rssBytes: memoryBytes(server.pid, 'VmRSS') }
  } finally {
    await server.stop()
  }
}

/** One unmeasured start, then `runs` measured ones; the first failure ends the series. */
async function series(
  runs: number,
  once: () => Promise<Sample>
): Promise<{ samples: Sample[]; failure?: string }> {
  const samples: Sample[] = []
  try {
    await once()
    for (let index = 0; index < runs; index++) samples.push(await once())
    return { samples }
  } catch (error) {
    return { samples: [], failure: error instanceof Error ? error.message : String(error) }
  }
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
const ms = (value: number) => Math.round(value * 10) / 10

function figures(samples: Sample[]) {
  const defined = (values: Array<number | undefined>) =>
    values.filter((value): value is number => value !== undefined)
  const rounded = (summary: Summary | null, by: (value: number) => number) =>
    summary && { median: by(summary.median), min: by(summary.min), max: by(summary.max) }
  return {
    readyMs: rounded(summarize(defined(samples.map((s) => s.readyMs))), ms),
    firstAnswerMs: rounded(summarize(samples.map((s) => s.firstAnswerMs)), ms),
    rssMiB: rounded(summarize(defined(samples.map((s) => s.rssBytes))), mib),
  }
}

/** Builds the notes Worker with the repository's `wrangler.toml`; answers its module and size. */
async function buildNotesWorker(root: string, outdir: string) {
  const { stdout, stderr } = await run(
    process.execPath,
    [WRANGLER_CLI, 'deploy', '--dry-run', '--outdir', outdir],
    { cwd: root, env: { ...process.env, ...WRANGLER_ENV }, timeout: 120_000 }
  )
  const reported = parseUploadSize(`${stdout}\n${stderr}`)
  if (reported === null)
    throw new Error(`no "Total Upload" line from wrangler:\n${stdout}${stderr}`)
  return { module: join(outdir, 'worker.js'), reported, computed: modulesSize(outdir) }
}

/** Measures everything this module reports (see the module header). */
export async function measureColdStarts(options: ColdStartOptions): Promise<ColdStartReport> {
  const root = options.root ?? join(import.meta.dirname, '..', '..')
  const cpu =
    options.cpu !== undefined
      ? options.cpu
      : pinning(cpus().length) === undefined
        ? null
        : SERVER_CPU
  const log = options.log ?? (() => {})
  const { runs } = options
  const work = await tempDataDir('notes-mcp-cold-start-')
  const report: ColdStartReport = {
    meta: {
      date: new Date().toISOString(),
      runs,
      pinned: cpu === null ? null : `taskset -c ${cpu}`,
      node: process.version,
    },
    node: [],
    bundles: [],
    workerd: [],
    isolateOverBareMs: null,
  }
  try {
    // The first fetch of this process loads its HTTP client: paid once here, not by the first server.
    await send(`http://127.0.0.1:${await freePort()}/mcp`, MODERN_ECHO.request).catch(() => {})

    const dataDir = join(work, 'data')
    mkdirSync(dataDir)
    // The entry turns Node's compile cache on: a cache of this run's own, filled by the unmeasured
    // start (as by a replica's first start), and, apart, every start without it (a first start).
    const compileCache = join(work, 'compile-cache')
    for (const [server, cache] of [
      ['npm start', { NODE_COMPILE_CACHE: compileCache }],
      ['npm start, no compile cache', { NODE_DISABLE_COMPILE_CACHE: '1' }],
    ] as const) {
      log(`${NOTES_COMMAND} (${server}) …`)
      const notes = await series(runs, () => startNotesServer(root, dataDir, cpu, cache))
      report.node.push({
        server,
        command: NOTES_COMMAND,
        request: CREATE_NOTE.label,
        runs: notes.samples.length,
        ...figures(notes.samples),
        ...(notes.failure !== undefined && { failure: notes.failure }),
      })
    }

    for (const { server, probe } of NODE_BENCH) {
      const file = join('scripts', 'bench', `${server}.ts`)
      log(`${file} …`)
      const command: [string, ...string[]] = [
        process.execPath,
        ...SERVER_NODE_FLAGS,
        join(root, file),
      ]
      const measured = await series(runs, () =>
        startAndAsk(server, command, 'stdout', probe, root, cpu)
      )
      report.node.push({
        server,
        command: `node ${SERVER_NODE_FLAGS.join(' ')} ${file}`,
        request: probe.label,
        runs: measured.samples.length,
        ...figures(measured.samples),
        ...(measured.failure !== undefined && { failure: measured.failure }),
      })
    }

    const workerd = workerdBinary()
    report.meta.workerd = (await run(workerd, ['--version'])).stdout.trim()
    log('src/worker.ts (wrangler.toml) bundle …')
    const notesWorker = await buildNotesWorker(root, join(work, 'notes-worker'))
    report.bundles.push(
      {
        worker: 'notes (src/worker.ts)',
        entry: 'src/worker.ts',
        ...notesWorker.reported,
        measuredBy: 'wrangler',
      },
      {
        worker: 'notes (src/worker.ts)',
        entry: 'src/worker.ts',
        ...notesWorker.computed,
        measuredBy: 'zlib',
      }
    )
    // workerdArgs names its configuration by kind: the notes Worker's goes to a folder of its own.
    const notesConfigDir = join(work, 'notes-workerd')
    mkdirSync(notesConfigDir)
    const notesListening = await series(runs, async () => {
      const started = performance.now()
      const server = await startServer({
        kind: 'notes-worker',
        command: [workerd, ...workerdArgs(notesWorker.module, notesConfigDir, 'ours')],
        env: {},
        ...(cpu !== null && { cpu }),
        cwd: root,
        ready: 'workerd',
      })
      const readyMs = performance.now() - started
      const rssBytes = memoryBytes(server.pid, 'VmRSS')
      await server.stop()
      return { readyMs, firstAnswerMs: readyMs, rssBytes }
    })
    const notesFigures = figures(notesListening.samples)
    report.workerd.push({
      worker: 'notes (src/worker.ts)',
      request: null,
      runs: notesListening.samples.length,
      listeningMs: notesFigures.readyMs,
      firstAnswerMs: null,
      rssMiB: notesFigures.rssMiB,
      ...(notesListening.failure !== undefined && { failure: notesListening.failure }),
    })

    for (const { kind, probe } of WORKERS) {
      const entry = join('scripts', 'bench', `worker-${kind}.ts`)
      log(`${entry} bundle and workerd …`)
      const module = await bundleWorker(root, kind, work)
      report.bundles.push({
        worker: `bench ${kind}`,
        entry,
        ...modulesSize(dirname(module)),
        measuredBy: 'zlib',
      })
      const command: [string, ...string[]] = [workerd, ...workerdArgs(module, work, kind)]
      const measured = await series(runs, () =>
        startAndAsk(`worker-${kind}`, command, 'workerd', probe, root, cpu)
      )
      const { readyMs, ...rest } = figures(measured.samples)
      report.workerd.push({
        worker: `bench ${kind}`,
        request: probe.label,
        runs: measured.samples.length,
        listeningMs: readyMs,
        ...rest,
        ...(measured.failure !== undefined && { failure: measured.failure }),
      })
    }
    const firstAnswer = (worker: string) =>
      report.workerd.find((start) => start.worker === worker)?.firstAnswerMs?.median
    const ours = firstAnswer('bench ours')
    const bare = firstAnswer('bench bare')
    report.isolateOverBareMs = ours === undefined || bare === undefined ? null : ms(ours - bare)
    return report
  } finally {
    await Promise.all([...ownChildren].map(stopChild))
    await stopAll()
    rmSync(work, { recursive: true, force: true })
  }
}

function cell(summary: Summary | null, unit = ''): string {
  if (summary === null) return '–'
  return `${summary.median}${unit} (${summary.min}–${summary.max})`
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] as string).length))
  )
  const line = (cells: string[]) =>
    `| ${cells.map((text, column) => text.padEnd(widths[column] as number)).join(' | ')} |`
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join(
    '\n'
  )
}

const kib = (bytes: number) => (bytes / 1024).toFixed(2)

/** The report as Markdown tables: Node starts, Worker bundles, workerd starts, then notes. */
export function formatColdStarts(report: ColdStartReport): string {
  const runs = `${report.meta.runs} runs each, median (min–max)`
  const node = table(
    ['Node cold start', 'ready line ms', 'first answer ms', 'RSS at answer MiB', 'first request'],
    report.node.map((start) => [
      start.failure === undefined ? start.server : `${start.server} (FAILED)`,
      cell(start.readyMs),
      cell(start.firstAnswerMs),
      cell(start.rssMiB),
      start.request,
    ])
  )
  const bundles = table(
    ['Worker bundle', 'raw KiB', 'gzip KiB', 'measured by'],
    report.bundles.map((bundle) => [
      bundle.worker,
      kib(bundle.rawBytes),
      kib(bundle.gzipBytes),
      bundle.measuredBy === 'wrangler'
        ? 'wrangler deploy --dry-run "Total Upload"'
        : 'zlib gzip (default level) of the built modules',
    ])
  )
  const workerd = table(
    ['workerd cold start', 'listening ms', 'first answer ms', 'RSS at answer MiB', 'first request'],
    report.workerd.map((start) => [
      start.failure === undefined ? start.worker : `${start.worker} (FAILED)`,
      cell(start.listeningMs),
      cell(start.firstAnswerMs),
      cell(start.rssMiB),
      start.request ?? 'none: needs D1 and Durable Objects (bench ours stands for it)',
    ])
  )
  const notes = [
    `${runs}, after one unmeasured start per server; servers pinned: ${report.meta.pinned ?? 'no'}; Node ${report.meta.node}${report.meta.workerd ? `, ${report.meta.workerd}` : ''}.`,
    ...(report.isolateOverBareMs === null
      ? []
      : [
          `Our isolate over bare Hono's on workerd (first answer, medians): ${report.isolateOverBareMs} ms.`,
        ]),
    ...[...report.node, ...report.workerd]
      .filter((start) => start.failure !== undefined)
      .map(
        (start) =>
          `FAILED ${'server' in start ? start.server : start.worker}: ${start.failure?.split('\n')[0]}`
      ),
  ]
  return [node, bundles, workerd, notes.join('\n')].join('\n\n')
}

/** Whether any server failed (a wrong answer, a start that did not finish). */
export function hasFailures(report: ColdStartReport): boolean {
  return [...report.node, ...report.workerd].some((start) => start.failure !== undefined)
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '5' }, out: { type: 'string' } },
  })
  const runs = Number(values.runs)
  if (!Number.isInteger(runs) || runs < 1) {
    console.error('--runs must be a positive whole number')
    process.exit(2)
  }
  process.on('exit', () => {
    killAllNow()
    for (const child of ownChildren) child.kill('SIGKILL')
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130))
  const report = await measureColdStarts({ runs, log: (line) => console.log(line) })
  console.log(`\n${formatColdStarts(report)}`)
  if (values.out !== undefined) {
    const out = resolve(values.out)
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
    console.log(`Wrote ${out}`)
  }
  process.exit(hasFailures(report) ? 1 : 0)
}
