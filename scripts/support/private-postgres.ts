/**
 * @module scripts/support/private-postgres
 * A throw-away PostgreSQL server of our own, for the tests and the load test's database faults
 * (`scripts/loadtest/faults/database.ts`): a fresh cluster (`initdb`) in a temporary directory, one
 * `postgres` postmaster this process spawned, on a free loopback port, that the caller may stop,
 * start, restart and kill (a crash, then crash recovery on the next start) without touching any
 * other server (the shared one on 127.0.0.1:5432 is never signalled).
 *
 * Binaries: the newest `/usr/lib/postgresql/<version>/bin` (`initdb`, `postgres`), else `initdb` and
 * `postgres` on PATH. `initdb` and `postgres` refuse to run as root, so as root they run as the
 * `postgres` OS user (spawned with its uid and gid; the cluster's directory is chowned to it); as
 * anyone else they run as that user.
 *
 * Settings: `listen_addresses=127.0.0.1`, trust authentication (loopback only), its unix socket in
 * the data directory, small `shared_buffers`, `fsync=off`. Crash recovery stays meaningful with
 * `fsync=off`: a SIGKILL ends the processes, not the operating system, so every WAL record written
 * before the kill is in the OS page cache and `start()` replays it; only an OS crash would lose it.
 *
 * `stop('fast' | 'immediate')` sends the postmaster SIGINT or SIGQUIT, as `pg_ctl stop -m` does;
 * `restart()` is `pg_ctl restart -m fast` (stop fast, then start). The postmaster is spawned
 * directly, not through `pg_ctl`, so that it is this process's child: its output is kept for error
 * messages, its exit is seen, and `process.on('exit')` SIGKILLs it (and its backends) when this
 * process ends with it still running. Every wait is bounded.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { chown, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort, tempDataDir } from './local-resources.ts'
import { postgresAnswers } from './postgres.ts'

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication on loopback). */
  url: string
  /** Stops the server (`fast`: SIGINT, sessions are ended; `immediate`: SIGQUIT, no checkpoint). */
  stop(mode: 'fast' | 'immediate'): Promise<void>
  /** Starts it again on the same port; resolves once it answers a query. */
  start(): Promise<void>
  /** A clean restart: `stop('fast')` then `start()`. */
  restart(): Promise<void>
  /** SIGKILLs the postmaster and all its backends (a crash); `start()` then crash-recovers. */
  kill(): Promise<void>
  /** Stops it and removes its data directory. */
  dispose(): Promise<void>
}

interface PostgresBinaries {
  initdb: string
  postgres: string
}

/** Bound on `initdb` of a fresh cluster. */
const INITDB_TIMEOUT_MS = 60_000
/** Bound on a start (crash recovery included) until the server answers a query. */
const START_TIMEOUT_MS = 30_000
/** Bound on a stop until the postmaster exited; past it, it is SIGKILLed. */
const STOP_TIMEOUT_MS = 15_000
/** Bound on the processes of a killed server being gone. */
const KILL_TIMEOUT_MS = 10_000
const POLL_MS = 100
const OUTPUT_LIMIT = 16 * 1024

const POSTGRES_LIB = '/usr/lib/postgresql'

/** The `initdb` and `postgres` binaries, or `undefined` when PostgreSQL is not installed. */
function findBinaries(): PostgresBinaries | undefined {
  if (existsSync(POSTGRES_LIB)) {
    const versions = readdirSync(POSTGRES_LIB)
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number(b) - Number(a))
    for (const version of versions) {
      const bin = join(POSTGRES_LIB, version, 'bin')
      const found = { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres') }
      if (existsSync(found.initdb) && existsSync(found.postgres)) return found
    }
  }
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const found = { initdb: join(dir, 'initdb'), postgres: join(dir, 'postgres') }
    if (existsSync(found.initdb) && existsSync(found.postgres)) return found
  }
  return undefined
}

/** Whether the PostgreSQL server binaries {@link startPrivatePostgres} needs are installed. */
export function privatePostgresAvailable(): boolean {
  return findBinaries() !== undefined
}

/** The uid and gid to run the binaries as: the `postgres` OS user when this process is root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'))
  if (line === undefined) {
    throw new Error(
      'private PostgreSQL: running as root, and initdb/postgres refuse root, but there is no ' +
        '`postgres` OS user to run them as (create one, or run as another user)'
    )
  }
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

/** Keeps the last `OUTPUT_LIMIT` characters a process wrote. */
class OutputTail {
  text = ''
  append = (chunk: Buffer) => {
    this.text = (this.text + chunk.toString()).slice(-OUTPUT_LIMIT)
  }
}

/** Servers not disposed of: the `exit` hook SIGKILLs each (with its backends) and removes its files. */
const undisposed = new Set<PostgresServer>()
let exitHookInstalled = false

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const server of undisposed) server.abandonNow()
  })
}

/** The pids whose parent is `parent` (from `/proc/<pid>/stat`). */
function childPids(parent: number): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = procStat(Number(entry))
    if (stat?.ppid === parent) found.push(Number(entry))
  }
  return found
}

/** State and parent of a process, or `undefined` when it is gone. */
function procStat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { state: state!, ppid: Number(ppid) }
  } catch {
    return undefined
  }
}

/** Whether `pid` is gone (a zombie counts: it holds no memory and no socket). */
function gone(pid: number): boolean {
  const stat = procStat(pid)
  return stat === undefined || stat.state === 'Z' || stat.state === 'X'
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // already gone
  }
}

/**
 * SIGKILLs the postmaster `pid` and its backends, synchronously: the postmaster is stopped first
 * (SIGSTOP) so that it forks no backend between the census of its children and the kill.
 */
function killTreeNow(pid: number): number[] {
  signal(pid, 'SIGSTOP')
  const all = [pid, ...childPids(pid)]
  for (const each of all) signal(each, 'SIGKILL')
  return all
}

/** Polls `done` every `POLL_MS` until it holds or `timeoutMs` passed; answers whether it held. */
async function waitUntil(done: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await done()) return true
    if (Date.now() >= deadline) return false
    await sleep(POLL_MS)
  }
}

/** Runs `command` to its end within `timeoutMs`; rejects with its output when it fails. */
function runToEnd(
  command: string,
  args: string[],
  options: { user: { uid: number; gid: number } | undefined; cwd: string; timeoutMs: number }
): Promise<void> {
  return new Promise((resolve, reject) => {
    const output = new OutputTail()
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...options.user,
    })
    child.stdout.on('data', output.append)
    child.stderr.on('data', output.append)
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('exit', (code, signalName) => {
      clearTimeout(timer)
      if (code === 0) return resolve()
      const why = signalName
        ? `was killed (${signalName}, bound ${options.timeoutMs} ms)`
        : `exited ${code}`
      reject(new Error(`${command} ${why}:\n${output.text}`))
    })
  })
}

/**
 * Makes a fresh cluster and starts its server. Throws a clear Error when the PostgreSQL binaries are
 * not installed, or when the cluster cannot be made or the server does not start within its bound.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const binaries = findBinaries()
  if (binaries === undefined) {
    throw new Error(
      `private PostgreSQL: no PostgreSQL server binaries (initdb, postgres) under ${POSTGRES_LIB}/<version>/bin ` +
        'or on PATH; install the PostgreSQL server (e.g. apt-get install postgresql)'
    )
  }
  const user = serverUser()
  const base = await tempDataDir('notes-private-postgres-')
  if (user) await chown(base, user.uid, user.gid)
  const dataDir = join(base, 'data')
  try {
    await runToEnd(
      binaries.initdb,
      [
        '-D',
        dataDir,
        '-U',
        'postgres',
        '--auth=trust',
        '--encoding=UTF8',
        '--no-locale',
        '--no-sync',
      ],
      { user, cwd: base, timeoutMs: INITDB_TIMEOUT_MS }
    )
  } catch (error) {
    await rm(base, { recursive: true, force: true })
    throw new Error(`private PostgreSQL: initdb failed: ${(error as Error).message}`, {
      cause: error,
    })
  }
  const port = await freePort()
  const server = new PostgresServer(binaries.postgres, dataDir, base, port, user)
  try {
    await server.start()
  } catch (error) {
    await server.dispose()
    throw error
  }
  return server
}

class PostgresServer implements PrivatePostgres {
  readonly url: string
  readonly #binary: string
  readonly #dataDir: string
  readonly #base: string
  readonly #port: number
  readonly #user: { uid: number; gid: number } | undefined
  readonly #output = new OutputTail()
  #child: ChildProcess | undefined
  #exited: Promise<void> = Promise.resolve()

  constructor(
    binary: string,
    dataDir: string,
    base: string,
    port: number,
    user: { uid: number; gid: number } | undefined
  ) {
    this.#binary = binary
    this.#dataDir = dataDir
    this.#base = base
    this.#port = port
    this.#user = user
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`
  }

  #alive(): boolean {
    const child = this.#child
    return child !== undefined && child.exitCode === null && child.signalCode === null
  }

  async start(): Promise<void> {
    if (this.#alive()) return
    installExitHook()
    undisposed.add(this)
    const child = spawn(
      this.#binary,
      [
        '-D',
        this.#dataDir,
        '-p',
        String(this.#port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `unix_socket_directories=${this.#dataDir}`,
        '-c',
        'shared_buffers=16MB',
        '-c',
        'max_connections=200',
        '-c',
        'fsync=off',
        '-c',
        'logging_collector=off',
      ],
      {
        cwd: this.#base,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' },
        stdio: ['ignore', 'pipe', 'pipe'],
        ...this.#user,
      }
    )
    this.#child = child
    child.stdout.on('data', this.#output.append)
    child.stderr.on('data', this.#output.append)
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve())
      child.once('error', (error) => {
        this.#output.append(Buffer.from(`spawn failed: ${error.message}\n`))
        resolve()
      })
    })
    this.#exited = exited
    const ready = await waitUntil(
      async () => !this.#alive() || (await postgresAnswers(this.url)),
      START_TIMEOUT_MS
    )
    if (ready && this.#alive()) return
    const why = this.#alive() ? `did not answer within ${START_TIMEOUT_MS} ms` : 'exited'
    if (this.#alive()) await this.kill()
    throw new Error(`private PostgreSQL on port ${this.#port} ${why}:\n${this.#output.text}`)
  }

  async stop(mode: 'fast' | 'immediate'): Promise<void> {
    const child = this.#child
    if (!this.#alive() || child?.pid === undefined) return
    signal(child.pid, mode === 'fast' ? 'SIGINT' : 'SIGQUIT')
    const stopped = await Promise.race([
      this.#exited.then(() => true),
      sleep(STOP_TIMEOUT_MS).then(() => false),
    ])
    if (stopped) return
    await this.kill()
    throw new Error(
      `private PostgreSQL on port ${this.#port} did not stop (${mode}) within ${STOP_TIMEOUT_MS} ms; killed it`
    )
  }

  async restart(): Promise<void> {
    await this.stop('fast')
    await this.start()
  }

  async kill(): Promise<void> {
    const pid = (await this.#postmasterPid()) ?? this.#child?.pid
    if (pid === undefined || !this.#alive()) return
    const killed = killTreeNow(pid)
    const allGone = await waitUntil(() => killed.every(gone), KILL_TIMEOUT_MS)
    await Promise.race([this.#exited, sleep(KILL_TIMEOUT_MS)])
    if (!allGone || this.#alive()) {
      throw new Error(
        `private PostgreSQL on port ${this.#port}: processes ${killed.filter((each) => !gone(each)).join(', ')} ` +
          `still there ${KILL_TIMEOUT_MS} ms after SIGKILL`
      )
    }
  }

  /** The postmaster's pid: the first line of `postmaster.pid`, when there is one. */
  async #postmasterPid(): Promise<number | undefined> {
    try {
      const first = (await readFile(join(this.#dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]
      const pid = Number(first)
      return Number.isInteger(pid) && pid > 0 ? pid : undefined
    } catch {
      return undefined
    }
  }

  async dispose(): Promise<void> {
    try {
      await this.stop('fast')
    } finally {
      if (this.#alive()) await this.kill().catch(() => {})
      undisposed.delete(this)
      await rm(this.#base, { recursive: true, force: true })
    }
  }

  /** Synchronous last resort for `process.on('exit')`: SIGKILL whatever runs, remove the files. */
  abandonNow(): void {
    const pid = this.#child?.pid
    if (pid !== undefined && this.#alive()) killTreeNow(pid)
    rmSync(this.#base, { recursive: true, force: true })
  }
}
