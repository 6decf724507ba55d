/**
 * @module scripts/support/redis
 * Throw-away Redis servers on this machine for the tests and the load test, from Debian's
 * `redis-server` and `redis-cli` (Redis 7: sharded pub/sub), as plain processes on free loopback
 * ports in a temporary directory: one server ({@link startRedisServer}) or a Redis Cluster of three
 * masters, each with a replica ({@link startRedisCluster}, ready once every node reports
 * `cluster_state:ok` and every replica its link to its master up). Nodes can be killed and started
 * again (keeping their `nodes-P.conf`, so a restarted master rejoins as a replica). Node only.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { promisify } from 'node:util'
import { freePort, tempDataDir } from './local-resources.ts'

const run = promisify(execFile)

/** Most a node takes to be declared failed by its peers (short, so a failover comes soon). */
export const CLUSTER_NODE_TIMEOUT_MS = 1_000

/** Whether `redis-server` and `redis-cli` are installed. */
export function redisInstalled(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v redis-server && command -v redis-cli'], {
      stdio: 'ignore',
    })
    return true
  } catch {
    return false
  }
}

/** One `redis-server` process on 127.0.0.1. */
export class RedisNode {
  readonly port: number
  readonly #args: string[]
  readonly #dir: string
  #process: ChildProcess | undefined

  constructor(port: number, dir: string, args: string[]) {
    this.port = port
    this.#dir = dir
    this.#args = args
  }

  get address(): string {
    return `127.0.0.1:${this.port}`
  }

  /** Starts the server; resolves once it accepts connections. */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.#dir,
        ...this.#args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] }
    )
    this.#process = child
    let output = ''
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes('Ready to accept connections')) resolve()
      })
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
      child.once('exit', (code) =>
        reject(new Error(`redis-server on ${this.port} exited (${code}): ${output}`))
      )
      child.once('error', reject)
    })
  }

  /** Kills the process (SIGKILL: no goodbye to its clients or peers); resolves once it is gone. */
  async kill(): Promise<void> {
    const child = this.#process
    this.#process = undefined
    if (child === undefined || child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }

  /** `redis-cli` on this node (`-c`: following cluster redirects); answers its output, trimmed. */
  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(this.port), ...args])
    return stdout.trim()
  }
}

/** Two free ports that differ (a node's client port and its cluster bus port). */
async function portPair(): Promise<[number, number]> {
  for (;;) {
    const [port, busPort] = await Promise.all([freePort(), freePort()])
    if (port !== busPort) return [port, busPort]
  }
}

/** One server: its URL for the bus, and its stop. */
export interface RedisServer {
  node: RedisNode
  url: string
  stop(): Promise<void>
}

export async function startRedisServer(): Promise<RedisServer> {
  const dir = await tempDataDir('redis-test-')
  const node = new RedisNode(await freePort(), dir, [])
  await node.start()
  return {
    node,
    url: `redis://${node.address}`,
    async stop() {
      await node.kill()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** A cluster of three masters with a replica each: its nodes, its URL for the bus, its stop. */
export interface RedisCluster {
  nodes: RedisNode[]
  /** `redis+cluster://` naming every node. */
  url: string
  /** The node serving `channel`'s slot as its master now. */
  masterOf(channel: string): Promise<RedisNode>
  /** The shard channels with a subscriber on any live master now, sorted. */
  shardChannels(): Promise<string[]>
  /** Resolves once every live node reports `cluster_state:ok` and every live replica its link up. */
  settled(): Promise<void>
  stop(): Promise<void>
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await tempDataDir('redis-cluster-test-')
  const nodes: RedisNode[] = []
  for (let index = 0; index < 6; index++) {
    const [port, busPort] = await portPair()
    nodes.push(
      new RedisNode(port, dir, [
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(busPort),
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        String(CLUSTER_NODE_TIMEOUT_MS),
      ])
    )
  }
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.kill()))
    await rm(dir, { recursive: true, force: true })
  }
  try {
    await Promise.all(nodes.map((node) => node.start()))
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => node.address),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ])
  } catch (error) {
    await stop()
    throw error
  }
  const cluster: RedisCluster = {
    nodes,
    url: `redis+cluster://${nodes.map((node) => node.address).join(',')}`,
    async masterOf(channel) {
      const anyNode = await answering(nodes)
      const slot = Number(await anyNode.cli('CLUSTER', 'KEYSLOT', channel))
      const slots = JSON.parse(await anyNode.cli('--json', 'CLUSTER', 'SLOTS')) as [
        number,
        number,
        [string, number],
      ][]
      const range = slots.find(([from, to]) => slot >= from && slot <= to)
      const master = nodes.find((node) => node.port === range?.[2][1])
      if (master === undefined) throw new Error(`no master serves slot ${slot}`)
      return master
    },
    async shardChannels() {
      const channels = await Promise.all(
        nodes.map(async (node) => {
          const role = await node.cli('ROLE').catch(() => '')
          return role.startsWith('master')
            ? (await node.cli('PUBSUB', 'SHARDCHANNELS')).split('\n')
            : []
        })
      )
      return channels
        .flat()
        .filter((channel) => channel !== '')
        .sort()
    },
    async settled() {
      await until(async () => {
        for (const node of nodes) {
          const info = await node.cli('CLUSTER', 'INFO').catch(() => undefined)
          if (info === undefined) continue // a killed node
          if (!info.includes('cluster_state:ok')) return false
          const replication = await node.cli('INFO', 'replication')
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
            return false
        }
        return true
      })
    },
    stop,
  }
  await cluster.settled()
  return cluster
}

/** The first of `nodes` that answers PING. */
async function answering(nodes: RedisNode[]): Promise<RedisNode> {
  for (const node of nodes) {
    if ((await node.cli('PING').catch(() => '')) === 'PONG') return node
  }
  throw new Error('no node of the cluster answers')
}

/**
 * Resolves once `holds()` does, looking again after each short pause: for states a test can only
 * read by asking (a cluster's gossip); the test's own timeout bounds it.
 */
export async function until(holds: () => Promise<boolean>): Promise<void> {
  while (!(await holds())) await new Promise((resolve) => setTimeout(resolve, 100))
}
