/**
 * @module scripts/bench/server-process
 * Starts one benchmark server as its own process (pinned with `taskset -c <cpu>` when taskset exists
 * and the machine has a spare core; taskset execs the server, so the pid is the server's), waits
 * until it says where it listens — the ready line of the Node bench servers, or workerd's `listen`
 * message on its control descriptor — and reads what the report needs from `/proc/<pid>`: CPU time
 * (utime + stime, all threads) and memory (VmHWM, VmRSS). Every started process is remembered and
 * killed by `stopAll` — the driver calls it on success, failure and signals alike.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { SERVER_READY } from './wire.ts'

const STARTUP_TIMEOUT_MS = 30_000
const OUTPUT_LIMIT = 64 * 1024

export interface ServerProcess {
  kind: string
  pid: number
  url: string
  /** The last 64 KiB the process wrote (stdout and stderr). */
  output(): string
  /** The child, to talk to over its IPC channel, when started with `ipc`. */
  ipc?: ChildProcess
  stop(): Promise<void>
}

const live = new Set<ChildProcess>()

/** The affinity helper, or `undefined` when there is none or only one CPU to pin to. */
export function pinning(cpus: number): string | undefined {
  if (cpus < 2) return undefined
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    return 'taskset'
  } catch {
    return undefined
  }
}

export interface StartOptions {
  kind: string
  /** The program and its arguments. */
  command: [string, ...string[]]
  env: Record<string, string>
  /** CPU to pin the server to, or `undefined` to leave it unpinned. */
  cpu?: number
  cwd: string
  /**
   * How the server says it listens: `stdout`, the ready line of the Node bench servers (`serve.ts`);
   * `workerd`, the JSON `listen` message workerd writes on descriptor 3 (`--control-fd 3`).
   */
  ready: 'stdout' | 'workerd'
  /** Opens an IPC channel to a Node server (descriptor 3): `ServerProcess.ipc`. */
  ipc?: boolean
  /** How long it may take to say it listens; default 30 s. */
  startupTimeoutMs?: number
}

/** workerd's control message once socket `http` listens. */
function workerdPort(line: string): number | undefined {
  try {
    const message = JSON.parse(line) as { event?: unknown; socket?: unknown; port?: unknown }
    return message.event === 'listen' &&
      message.socket === 'http' &&
      typeof message.port === 'number'
      ? message.port
      : undefined
  } catch {
    return undefined
  }
}

export async function startServer(options: StartOptions): Promise<ServerProcess> {
  const [program, ...programArgs] = options.command
  const [command, args] =
    options.cpu === undefined
      ? [program, programArgs]
      : ['taskset', ['-c', String(options.cpu), program, ...programArgs]]
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: [
      'ignore',
      'pipe',
      'pipe',
      options.ready === 'workerd' ? 'pipe' : options.ipc ? 'ipc' : 'ignore',
    ],
  })
  live.add(child)
  child.once('exit', () => live.delete(child))
  // Both are pipes (stdio above): typed as nullable because descriptor 3 varies.
  const stdout = child.stdout as Readable
  const stderr = child.stderr as Readable
  let output = ''
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT)
  }
  stdout.on('data', append)
  stderr.on('data', append)

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${options.kind} server did not start in time:\n${output}`))
    }, options.startupTimeoutMs ?? STARTUP_TIMEOUT_MS)
    if (options.ready === 'workerd') {
      let control = ''
      const onControl = (chunk: Buffer) => {
        control += chunk.toString()
        const port = control
          .split('\n')
          .map(workerdPort)
          .find((found) => found !== undefined)
        if (port === undefined) return
        clearTimeout(timer)
        child.stdio[3]?.off('data', onControl)
        resolve(`http://127.0.0.1:${port}/mcp`)
      }
      child.stdio[3]?.on('data', onControl)
    } else {
      const onData = () => {
        const match = new RegExp(`${SERVER_READY} (http://127\\.0\\.0\\.1:\\d+/mcp)`).exec(output)
        if (!match) return
        clearTimeout(timer)
        stdout.off('data', onData)
        resolve(match[1] as string)
      }
      stdout.on('data', onData)
    }
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${options.kind} server exited (${code ?? signal}):\n${output}`))
    })
  })

  return {
    kind: options.kind,
    pid: child.pid as number,
    url,
    output: () => output,
    ...(options.ipc && { ipc: child }),
    stop: () => stopChild(child),
  }
}

/** Stops one child: SIGTERM, then SIGKILL if it is still alive after 2 s. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const force = setTimeout(() => child.kill('SIGKILL'), 2000)
    child.once('exit', () => {
      clearTimeout(force)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

/** Stops every server this process started (used on the way out, whatever happened). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map(stopChild))
}

/** Synchronous last resort for `process.on('exit')`: SIGKILL whatever is still alive. */
export function killAllNow(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
}

let ticksPerSecond: number | undefined

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
    } catch {
      ticksPerSecond = 100
    }
  }
  return ticksPerSecond
}

/** User and system CPU time of the whole process (all threads), in microseconds; `undefined` off Linux. */
export function cpuMicros(pid: number): { user: number; system: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const scale = 1e6 / clockTicks()
    return { user: Number(fields[11]) * scale, system: Number(fields[12]) * scale }
  } catch {
    return undefined
  }
}

/** CPU time all CPUs spent busy (not idle or iowait) since boot, in microseconds; `undefined` off Linux. */
export function machineBusyMicros(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] as string
    const ticks = line.trim().split(/\s+/).slice(1).map(Number)
    // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
    const busy = ticks
      .slice(0, 8)
      .reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0)
    return (busy / clockTicks()) * 1e6
  } catch {
    return undefined
  }
}

/** A `/proc/<pid>/status` size field (VmHWM, VmRSS) in bytes; `undefined` off Linux. */
export function memoryBytes(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)
    return match ? Number(match[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}
