/**
 * @module scripts/loadtest/processes
 * The processes a load-test run starts: Node replicas (`src/node.ts` with `npm start`'s Node flags,
 * {@link SERVER_NODE_FLAGS}, each on a fixed loopback port so a replica killed mid-run restarts
 * where nginx and the clients expect it; with the `held-imports` entry, the same server through
 * `scripts/support/held-import-replica.ts`, whose imports the run can hold mid-way over the IPC
 * channel, `hold`; with `sampled`, through `scripts/support/sampled-replica.ts`
 * with `--expose-gc`, which a soak samples, `sample`: `/proc/<pid>` and the IPC channel) and nginx
 * (foreground, `-p <run dir> -c <generated config>`). A replica ends as a fault wants it: `kill`
 * (SIGKILL), or `terminate` (SIGTERM and its own drain, reporting how it exited), and `start` again
 * may change its environment (a new release's key ring). Every child is remembered until it exits:
 * `stopAll` ends them gracefully on the way out, `killAllNow` is the synchronous SIGKILL of last
 * resort for `process.on('exit')`. Only processes started here are ever signalled, by their own
 * pid.
 *
 * Free ports and the store's data directory come from `scripts/support/local-resources.ts`; readiness
 * of a replica is its "listening on" line, of nginx a TCP connect to its port.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process'
import { connect } from 'node:net'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { IPC_STDIO, ImportHold } from '../support/import-hold.ts'
import { sampleReplica, type ReplicaSample } from '../support/replica-sampling.ts'

const root = join(import.meta.dirname, '../..')

const STARTUP_TIMEOUT_MS = 20_000
const STOP_GRACE_MS = 3_000
const OUTPUT_LIMIT = 32 * 1024

/**
 * How a replica runs: `src/node.ts` as deployed, or one of the harness entries around the same
 * server that talk over an IPC channel: an import hold, or memory and handle sampling.
 */
export type ReplicaEntry = 'server' | 'held-imports' | 'sampled'

/**
 * The Node flags of `npm start` (package.json's `start`, and the container image's command): V8's
 * young generation capped at 16 MiB a semi-space, whatever the host. Left to V8, its cap follows the
 * heap limit, itself a share of the host's memory (32 to 64 MiB a semi-space on a 24 GiB machine,
 * 1 MiB in a 512 MiB container), and a replica's resident set grows by up to three times that under
 * load and keeps it: a soak would measure another process than a container runs.
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=16']

/** Each entry's script and the flags it needs besides {@link SERVER_NODE_FLAGS}. */
const ENTRIES: Record<ReplicaEntry, { script: string; nodeFlags: string[] }> = {
  server: { script: 'src/node.ts', nodeFlags: [] },
  'held-imports': { script: 'scripts/support/held-import-replica.ts', nodeFlags: [] },
  sampled: { script: 'scripts/support/sampled-replica.ts', nodeFlags: ['--expose-gc'] },
}

const live = new Set<ChildProcess>()
/** Children that lead their own process group (nginx: its workers outlive a SIGKILLed master). */
const groupLeaders = new WeakSet<ChildProcess>()

function track(child: ChildProcess, group = false): void {
  live.add(child)
  if (group) groupLeaders.add(child)
  child.once('exit', () => live.delete(child))
}

function running(child: ChildProcess | undefined): child is ChildProcess {
  return child !== undefined && child.exitCode === null && child.signalCode === null
}

/** Ends a child with `signal`, then SIGKILL after the grace period; resolves once it exited. */
function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (!running(child)) return resolve()
    const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
    child.once('exit', () => {
      clearTimeout(force)
      resolve()
    })
    child.kill(signal)
  })
}

/** Keeps the last `OUTPUT_LIMIT` characters a child wrote. */
class OutputTail {
  text = ''
  append = (chunk: Buffer) => {
    this.text = (this.text + chunk.toString()).slice(-OUTPUT_LIMIT)
  }
}

export class ReplicaProcess {
  readonly id: string
  readonly port: number
  #env: Record<string, string>
  readonly #entry: ReplicaEntry
  readonly #output = new OutputTail()
  #child: ChildProcess | undefined
  #hold: ImportHold | undefined
  /** How many times the process was (re)started. */
  starts = 0

  /** `held-imports`: {@link hold} is there; `sampled`: {@link sample} is. */
  constructor(
    id: string,
    port: number,
    env: Record<string, string>,
    entry: ReplicaEntry = 'server'
  ) {
    this.id = id
    this.port = port
    this.#env = { ...env, REPLICA_ID: id, HOST: '127.0.0.1', PORT: String(port) }
    this.#entry = entry
  }

  /** The import hold of the running process (a restart starts unarmed); only with `held-imports`. */
  get hold(): ImportHold {
    if (!this.#hold) throw new Error(`replica ${this.id} was not started with an import hold`)
    return this.#hold
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`
  }

  get running(): boolean {
    return running(this.#child)
  }

  /** One sample of the running process's memory and handles; only with the `sampled` entry. */
  sample(timeoutMs: number): Promise<ReplicaSample> {
    const child = this.#child
    if (this.#entry !== 'sampled') throw new Error(`replica ${this.id} was not started sampled`)
    if (!running(child)) return Promise.reject(new Error(`replica ${this.id} is not running`))
    return sampleReplica(child, timeoutMs)
  }

  output(): string {
    return this.#output.text
  }

  /**
   * Spawns the replica and resolves once it listens; rejects (and kills it) if it does not.
   * `changes`: environment variables set for this start and every later one (a new release's
   * configuration, say a new key ring).
   */
  async start(changes: Record<string, string> = {}): Promise<void> {
    if (this.running) throw new Error(`replica ${this.id} is already running`)
    this.#env = { ...this.#env, ...changes }
    const { script, nodeFlags } = ENTRIES[this.#entry]
    // Output piped either way (the IPC channel is a fourth descriptor): the cast says so to the types.
    const flags = [...SERVER_NODE_FLAGS, ...nodeFlags]
    const child = spawn(process.execPath, [...flags, join(root, script)], {
      cwd: root,
      env: this.#env,
      stdio: this.#entry === 'server' ? ['ignore', 'pipe', 'pipe'] : IPC_STDIO,
    }) as ChildProcessByStdio<null, Readable, Readable>
    track(child)
    this.#child = child
    this.#hold = this.#entry === 'held-imports' ? new ImportHold(child) : undefined
    this.starts += 1
    child.stdout.on('data', this.#output.append)
    child.stderr.on('data', this.#output.append)
    await new Promise<void>((resolve, reject) => {
      const fail = (reason: string) => {
        cleanup()
        child.kill('SIGKILL')
        reject(new Error(`replica ${this.id} ${reason}:\n${this.#output.text}`))
      }
      const timer = setTimeout(() => fail('did not start in time'), STARTUP_TIMEOUT_MS)
      const onData = () => {
        if (!this.#output.text.includes(`listening on http://127.0.0.1:${this.port}/`)) return
        cleanup()
        resolve()
      }
      const onExit = (code: number | null, signal: string | null) =>
        fail(`exited during startup (${code ?? signal})`)
      const cleanup = () => {
        clearTimeout(timer)
        child.stdout.off('data', onData)
        child.off('exit', onExit)
      }
      child.stdout.on('data', onData)
      child.once('exit', onExit)
    })
  }

  /** The fault: SIGKILL, no goodbye. Resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.#child
    if (!running(child)) return
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve())
      child.kill('SIGKILL')
    })
  }

  /**
   * What a deploy does: SIGTERM, then the replica drains and exits by itself; SIGKILL only once
   * `boundMs` passed (`forced`). Resolves with how it ended.
   */
  async terminate(boundMs: number): Promise<ReplicaExit> {
    const child = this.#child
    if (!running(child)) throw new Error(`replica ${this.id} is not running`)
    const sent = performance.now()
    let forced = false
    const force = setTimeout(() => {
      forced = true
      child.kill('SIGKILL')
    }, boundMs)
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
      child.once('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal]))
      child.kill('SIGTERM')
    })
    clearTimeout(force)
    return { code, signal, forced, ms: Math.round(performance.now() - sent) }
  }

  stop(): Promise<void> {
    return this.#child ? stopChild(this.#child, 'SIGTERM') : Promise.resolve()
  }
}

/** How a replica ended after {@link ReplicaProcess.terminate}. */
export interface ReplicaExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** SIGKILLed because it had not exited within the bound. */
  forced: boolean
  /** From the SIGTERM to the exit. */
  ms: number
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

export class NginxProcess {
  readonly port: number
  readonly #binary: string
  readonly #dir: string
  readonly #config: string
  readonly #output = new OutputTail()
  #child: ChildProcess | undefined

  /** `config`: the generated configuration's path; `dir`: the run's directory (nginx's prefix). */
  constructor(binary: string, dir: string, config: string, port: number) {
    this.#binary = binary
    this.#dir = dir
    this.#config = config
    this.port = port
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`
  }

  output(): string {
    return this.#output.text
  }

  async start(): Promise<void> {
    const errorLog = join(this.#dir, 'nginx-error.log')
    const child = spawn(this.#binary, ['-p', this.#dir, '-c', this.#config, '-e', errorLog], {
      cwd: this.#dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so the last-resort SIGKILL reaches the workers too.
      detached: true,
    })
    track(child, true)
    this.#child = child
    child.stdout.on('data', this.#output.append)
    child.stderr.on('data', this.#output.append)
    const deadline = Date.now() + STARTUP_TIMEOUT_MS
    while (Date.now() < deadline) {
      if (!running(child)) break
      if (await portAnswers(this.port)) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await stopChild(child, 'SIGTERM')
    throw new Error(`nginx did not start on 127.0.0.1:${this.port}:\n${this.#output.text}`)
  }

  /** SIGQUIT: nginx's graceful shutdown (finishes open requests, then exits with its workers). */
  stop(): Promise<void> {
    return this.#child ? stopChild(this.#child, 'SIGQUIT') : Promise.resolve()
  }
}

/** Ends every process started here, gracefully (used on success and failure alike). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((child) => stopChild(child, 'SIGTERM')))
}

/** Synchronous last resort for `process.on('exit')`: SIGKILL whatever is still alive. */
export function killAllNow(): void {
  for (const child of live) {
    if (!running(child)) continue
    if (groupLeaders.has(child) && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL')
        continue
      } catch {
        // fall through to the leader alone
      }
    }
    child.kill('SIGKILL')
  }
}
