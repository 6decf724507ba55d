/**
 * @module scripts/bench/bus-fanout
 * The `bus_fanout` measurement (`npm run bench -- --only bus_fanout`): how the event buses a Node
 * fleet shares carry events between replica processes. For each bus (PostgreSQL LISTEN/NOTIFY;
 * Redis sharded pub/sub when `stateless-mcp/redis` exists and `redis-server` is installed) and each
 * fleet size (1, 4 and 16 replicas; 1 and 2 with `--quick`), it starts that many replica processes
 * (`fleet-replica.ts` with `npm start`'s Node flags, each with an IPC channel to its agent,
 * `bus-agent.ts`), has every replica but the first hold one listener as a listen stream of the
 * principal registers it (the first itself in a fleet of one), and has the first publish `events`
 * events for that principal, at most `IN_FLIGHT` awaiting the bus at once. Figures: events per
 * second that reached every listener, end to end, and publish → delivery percentiles
 * (`bus-fanout-report.ts`). Then, in the first fleet of two replicas or more, the 2025 interactive
 * flow (`legacy-flow.ts`) with the call held by the first replica and every answer POSTed to the
 * second, which reaches the call only through the bus.
 *
 * Where things run: PostgreSQL is the server of `TEST_DATABASE_URL` (or `DATABASE_URL`, else a local
 * one on 127.0.0.1:5432), on a scratch database of this run (the replicas' engine state, and the
 * channel); Redis is a `redis-server` this module starts on a free loopback port, without
 * persistence, and stops. Nothing is pinned: on a small machine the replicas, the bus's server and
 * this driver share the cores, which `machineCores` shows. Bounded: a fixed number of events, a
 * delivery deadline per run, a short flow window; every process is stopped on the way out.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { formatKeyRing, generateKey } from 'stateless-mcp/compose'
import { PostgresEngineStore } from 'stateless-mcp/postgres'
import { SERVER_NODE_FLAGS } from '../loadtest/processes.ts'
import { freePort } from '../support/local-resources.ts'
import {
  createScratchDatabase,
  findPostgresServer,
  LOCAL_POSTGRES_CANDIDATES,
} from '../support/postgres.ts'
import type { AgentCommand, AgentReply, BenchBus } from './bus-agent.ts'
import {
  summarizeFanOut,
  type BusFanOutReport,
  type BusOutcome,
  type FanOutRun,
  type FleetFailure,
  type InteractiveRun,
} from './bus-fanout-report.ts'
import { runLegacyFlows } from './legacy-flow.ts'
import { machineBusyMicros, startServer, stopChild, type ServerProcess } from './server-process.ts'

export const FLEET_SIZES = [1, 4, 16] as const
export const QUICK_FLEET_SIZES = [1, 2] as const
const EVENTS = 5_000
const QUICK_EVENTS = 200
const IN_FLIGHT = 64
/** After the last publish, how long the listeners may take to hear every event. */
const DELIVERY_GRACE_MS = 15_000
const POLL_MS = 100
const COMMAND_TIMEOUT_MS = 60_000
const FLOW_CONNECTIONS = 10
const REDIS_START_TIMEOUT_MS = 10_000
/** Replicas started together, and how long each may take (16 Node processes share 2 cores here). */
const STARTING_AT_ONCE = 4
const REPLICA_START_TIMEOUT_MS = 90_000
/** Every listener is a stream of this one principal (the bench's local one). */
const PRINCIPAL = 'local'

export interface BusFanOutOptions {
  root: string
  quick: boolean
  /** Events per run; default 5,000 (200 with `quick`). */
  events?: number
  log(line: string): void
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Sends `command` to a replica's agent and waits for its reply (one command at a time). */
function command(replica: ServerProcess, sent: AgentCommand): Promise<AgentReply> {
  const child = replica.ipc
  if (!child) return Promise.reject(new Error(`${replica.kind} has no IPC channel`))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', onMessage)
      reject(new Error(`${replica.kind}: no answer to ${sent.op} within ${COMMAND_TIMEOUT_MS} ms`))
    }, COMMAND_TIMEOUT_MS)
    const onMessage = (reply: AgentReply) => {
      clearTimeout(timer)
      if (reply.op === 'error') reject(new Error(`${replica.kind}: ${reply.message}`))
      else resolve(reply)
    }
    child.once('message', onMessage)
    child.send(sent)
  })
}

async function expect<T extends AgentReply['op']>(
  replica: ServerProcess,
  sent: AgentCommand,
  op: T
): Promise<Extract<AgentReply, { op: T }>> {
  const reply = await command(replica, sent)
  if (reply.op !== op) throw new Error(`${replica.kind} answered ${reply.op} to ${sent.op}`)
  return reply as Extract<AgentReply, { op: T }>
}

interface Fleet {
  bus: BenchBus
  busUrl: string
  storeUrl: string
  stateKeys: string
}

/** Starts `size` replicas, `STARTING_AT_ONCE` at a time; stops those started if one fails. */
async function startFleet(fleet: Fleet, size: number, root: string): Promise<ServerProcess[]> {
  const replicas: ServerProcess[] = []
  for (let first = 0; first < size; first += STARTING_AT_ONCE) {
    const started = await Promise.allSettled(
      Array.from({ length: Math.min(STARTING_AT_ONCE, size - first) }, (_, offset) =>
        startServer({
          kind: `${fleet.bus} replica ${first + offset + 1}`,
          command: [
            process.execPath,
            ...SERVER_NODE_FLAGS,
            join(root, 'scripts', 'bench', 'fleet-replica.ts'),
          ],
          env: {
            BENCH_BUS: fleet.bus,
            BENCH_BUS_URL: fleet.busUrl,
            BENCH_STORE_URL: fleet.storeUrl,
            BENCH_STATE_KEYS: fleet.stateKeys,
          },
          cwd: root,
          ready: 'stdout',
          ipc: true,
          startupTimeoutMs: REPLICA_START_TIMEOUT_MS,
        })
      )
    )
    for (const result of started) if (result.status === 'fulfilled') replicas.push(result.value)
    const failed = started.find((result) => result.status === 'rejected')
    if (failed) {
      await Promise.all(replicas.map((replica) => replica.stop()))
      throw failed.reason
    }
  }
  return replicas
}

/** One fan-out run on a started fleet (module header). */
async function fanOut(replicas: ServerProcess[], events: number): Promise<FanOutRun> {
  const [publisher] = replicas as [ServerProcess, ...ServerProcess[]]
  const listeners = replicas.length === 1 ? replicas : replicas.slice(1)
  for (const listener of listeners) {
    await expect(listener, { op: 'listen', principal: PRINCIPAL }, 'listening')
  }
  const busyBefore = machineBusyMicros()
  const published = await expect(
    publisher,
    { op: 'publish', principal: PRINCIPAL, events, inFlight: IN_FLIGHT },
    'published'
  )
  const deadline = performance.now() + DELIVERY_GRACE_MS
  for (;;) {
    const counts = await Promise.all(
      listeners.map((listener) => expect(listener, { op: 'count' }, 'count'))
    )
    if (counts.every((count) => count.heard >= events) || performance.now() > deadline) break
    await sleep(POLL_MS)
  }
  const busyAfter = machineBusyMicros()
  const heard = await Promise.all(
    listeners.map((listener) => expect(listener, { op: 'report' }, 'report'))
  )
  const run = summarizeFanOut({
    replicas: replicas.length,
    events,
    startedAtMs: published.startedAtMs,
    failedPublishes: published.failed,
    listeners: heard,
    machineCores: null,
  })
  return {
    ...run,
    machineCores:
      busyBefore === undefined || busyAfter === undefined || run.seconds === 0
        ? null
        : Math.round(((busyAfter - busyBefore) / 1e6 / run.seconds) * 100) / 100,
  }
}

/** The 2025 interactive flow with the call on `holder` and every answer POSTed to `answerer`. */
async function interactiveAcross(
  holder: ServerProcess,
  answerer: ServerProcess,
  replicas: number,
  quick: boolean
): Promise<InteractiveRun> {
  const result = await runLegacyFlows(
    {
      origin: new URL(holder.url).origin,
      connections: FLOW_CONNECTIONS,
      durationSeconds: quick ? 1 : 5,
      maxRequests: 1_000_000,
    },
    undefined,
    new URL(answerer.url).origin
  )
  return {
    replicas,
    flowsPerSec: Math.round((result.flows / result.seconds) * 10) / 10,
    latencyMs: result.latencyMs,
    flows: result.flows,
    errors: result.mismatches + result.errors + result.timeouts,
    ...(result.firstMismatch !== undefined && { firstMismatch: result.firstMismatch }),
  }
}

async function measureBus(
  fleet: Fleet,
  options: BusFanOutOptions
): Promise<Exclude<BusOutcome, { skipped: string }>> {
  const sizes = options.quick ? QUICK_FLEET_SIZES : FLEET_SIZES
  const events = options.events ?? (options.quick ? QUICK_EVENTS : EVENTS)
  const runs: Array<FanOutRun | FleetFailure> = []
  let interactive: InteractiveRun | { failure: string } = {
    failure: 'no fleet of two replicas or more',
  }
  for (const size of sizes) {
    let replicas: ServerProcess[] = []
    try {
      replicas = await startFleet(fleet, size, options.root)
      const run = await fanOut(replicas, events)
      runs.push(run)
      options.log(
        `${fleet.bus}, ${size} replica(s): ${run.eventsPerSecond} events/s to every listener, ` +
          `publish → delivery p50 ${run.latencyMs.p50} / p99 ${run.latencyMs.p99} ms, ` +
          `${run.lost} lost, machine busy ${run.machineCores} cores`
      )
      if (size >= 2 && 'failure' in interactive) {
        const [holder, answerer] = replicas as [ServerProcess, ServerProcess]
        interactive = await interactiveAcross(holder, answerer, size, options.quick).catch(
          (error: unknown) => ({ failure: message(error) })
        )
        options.log(
          'failure' in interactive
            ? `${fleet.bus}, interactive flow: FAILED: ${interactive.failure}`
            : `${fleet.bus}, 2025 interactive flow across ${size} replicas: ` +
                `${interactive.flowsPerSec} flows/s, p99 ${interactive.latencyMs.p99} ms, ` +
                `${interactive.errors} errors`
        )
      }
    } catch (error) {
      runs.push({ replicas: size, failure: message(error) })
      options.log(`${fleet.bus}, ${size} replica(s): FAILED: ${message(error).split('\n')[0]}`)
    } finally {
      await Promise.all(replicas.map((replica) => replica.stop()))
    }
  }
  return { runs, interactive }
}

/** The `redis-server` binary on PATH, if installed. */
function findRedisServer(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const candidate = join(dir, 'redis-server')
    if (existsSync(candidate)) return candidate
  }
  return undefined
}

/** Whether a Redis server answers PING on `port` (loopback). */
function redisAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    const done = (answer: boolean) => {
      socket.destroy()
      resolve(answer)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once('error', () => done(false))
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')))
    socket.once('connect', () => socket.write('PING\r\n'))
  })
}

/** A `redis-server` of this run on a free loopback port, without persistence. */
async function startRedis(binary: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort()
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' }
  )
  const kill = () => child.kill('SIGKILL')
  process.once('exit', kill)
  child.once('exit', () => process.off('exit', kill))
  const deadline = performance.now() + REDIS_START_TIMEOUT_MS
  while (performance.now() < deadline && child.exitCode === null) {
    if (await redisAnswers(port)) return { url: `redis://127.0.0.1:${port}`, child }
    await sleep(POLL_MS)
  }
  child.kill('SIGKILL')
  throw new Error(`redis-server on port ${port} did not answer within ${REDIS_START_TIMEOUT_MS} ms`)
}

export const BUS_FANOUT_METHOD =
  'per bus and fleet size: replica processes (scripts/bench/fleet-replica.ts, unpinned) sharing the bus; every replica but the first holds one listener with the interest of a listen stream of one principal (the first itself in a fleet of one), the first publishes N resource_updated events for that principal (64 awaiting the bus at most) carrying their publish time; events/s = N / (last delivery on the last listener − first publish); latency = delivery − publish (wall clock of one machine); the 2025 interactive flow: 10 clients, the call POSTed to replica 1 and every answer to replica 2; engine state in a scratch PostgreSQL database; Redis: a redis-server of the run on loopback'

/** Measures every bus it can (module header); a bus it cannot run is `skipped` with the reason. */
export async function measureBusFanout(options: BusFanOutOptions): Promise<BusFanOutReport> {
  const report: BusFanOutReport = { method: BUS_FANOUT_METHOD, buses: {} }
  const named = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL
  const server = await findPostgresServer(named ? [named] : LOCAL_POSTGRES_CANDIDATES)
  if (server === undefined) {
    const reason =
      'no PostgreSQL server answers (set TEST_DATABASE_URL): the replicas keep their engine state in it'
    report.buses = { postgres: { skipped: reason }, redis: { skipped: reason } }
    return report
  }
  const scratch = await createScratchDatabase(server)
  let redis: { url: string; child: ChildProcess } | undefined
  try {
    const schema = new PostgresEngineStore({ url: scratch.url, max: 1 })
    await schema.migrate().finally(() => schema.close())
    const stateKeys = formatKeyRing([generateKey()])
    const fleet = (bus: BenchBus, busUrl: string): Fleet => ({
      bus,
      busUrl,
      storeUrl: scratch.url,
      stateKeys,
    })
    report.buses.postgres = await measureBus(fleet('postgres', scratch.url), options).catch(
      (error: unknown) => ({ failure: message(error) })
    )
    const binary = findRedisServer()
    if (!existsSync(join(options.root, 'src', 'mcp', 'redis.ts'))) {
      report.buses.redis = { skipped: 'stateless-mcp/redis (src/mcp/redis.ts) does not exist' }
    } else if (binary === undefined) {
      report.buses.redis = {
        skipped: 'redis-server is not installed (Debian: apt-get install redis-server)',
      }
    } else {
      redis = await startRedis(binary)
      report.buses.redis = await measureBus(fleet('redis', redis.url), options).catch(
        (error: unknown) => ({ failure: message(error) })
      )
    }
    return report
  } finally {
    if (redis) await stopChild(redis.child)
    await scratch.drop()
  }
}
