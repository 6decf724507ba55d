/**
 * Two notes replicas on one PostgreSQL database whose event bus is a Redis Cluster (EVENT_BUS_URL
 * `redis+cluster://…`, three masters with a replica each, started by the test), behind a proxy
 * that sends each HTTP request to the other replica: the GET stream one replica holds hears a note
 * changed through the other, and a 2025 interactive answer POSTed to one replica reaches the
 * tools/call the other holds. Each replica subscribes only the channels of the streams and flows it
 * holds (read back from the cluster). Skipped, visibly, without PostgreSQL or `redis-server` (fails
 * under CI).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  startAlternatingProxy,
  type AlternatingProxy,
  type ProxyEntry,
} from '../support/alternating-proxy.ts'
import { OpenHosts, createNote, noteExists, resultText } from '../support/legacy-host.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { redisTestsRun, startRedisCluster, until, type RedisCluster } from '../support/redis.ts'
import {
  startPostgresReplicas,
  type PostgresReplicas,
  type ServerProcess,
} from '../support/server-process.ts'

const REPLICAS = ['redis-bus-a', 'redis-bus-b']
const serverUrl = await testDatabaseUrl()
const runs = redisTestsRun('Redis bus replicas') && serverUrl !== undefined
const hosts = new OpenHosts()
let cluster: RedisCluster | undefined
let deployment: PostgresReplicas | undefined
let proxy: AlternatingProxy | undefined

beforeAll(async () => {
  if (!runs) return
  cluster = await startRedisCluster()
  deployment = await startPostgresReplicas(serverUrl, REPLICAS, [], { EVENT_BUS_URL: cluster.url })
  proxy = await startAlternatingProxy(deployment.servers.map((server) => server.baseUrl))
}, 60_000)

afterEach(() => hosts.closeAll())

afterAll(async () => {
  await proxy?.close()
  await deployment?.stop()
  await cluster?.stop()
})

/** The notes replicas' channels subscribed on the cluster now (`notes_mcp_events:…`). */
async function notesChannels(): Promise<string[]> {
  return (await cluster!.shardChannels()).filter((channel) =>
    channel.startsWith('notes_mcp_events:')
  )
}

describe.skipIf(!runs)('two notes replicas on a Redis Cluster bus', () => {
  it('hears on the GET stream one replica holds a note changed through the other', async () => {
    const since = proxy!.log.length
    const watcher = await hosts.connectBehind(proxy!)
    const stream = proxy!.log.find(
      (entry) => entry.seq >= since && entry.httpMethod === 'GET'
    ) as ProxyEntry
    // The stream's principal channel and the everyone channel, subscribed before anything changes.
    await until(async () => (await notesChannels()).length >= 2)
    const channels = await notesChannels()
    expect(channels.some((channel) => channel.endsWith(':all'))).toBe(true)
    expect(channels.some((channel) => channel.includes(':p:'))).toBe(true)
    const other = deployment!.servers[
      REPLICAS.indexOf(stream.replica!) === 0 ? 1 : 0
    ] as ServerProcess
    const writer = await hosts.connect(other.url)
    const id = await createNote(writer, 'Watched across a Redis bus')
    await watcher.client.subscribeResource({ uri: `note://${id}` })
    await writer.callTool('update_note', { id, expectedVersion: 1, body: 'Changed elsewhere.' })
    const updated = await watcher.hear('notifications/resources/updated')
    expect(updated.params).toEqual({ uri: `note://${id}` })
    await hosts.close(writer)
    await hosts.close(watcher)
  })

  it('carries a 2025 answer POSTed to one replica to the tools/call the other holds', async () => {
    const host = await hosts.connectBehind(proxy!, { elicitation: {} })
    const id = await createNote(host, 'Deleted across a Redis bus')
    host.person = { elicit: () => ({ action: 'accept', content: { confirm: true } }) }
    const since = proxy!.log.length
    const result = await host.callTool('delete_note', { id })
    expect(resultText(result)).toContain('Deleted the note')
    const entries = proxy!.log.slice(since)
    const call = entries.find((entry) => entry.message?.kind === 'request') as ProxyEntry
    const answer = entries.find((entry) => entry.message?.kind === 'response') as ProxyEntry
    expect(call.message).toMatchObject({ method: 'tools/call' })
    expect(answer.replica).not.toBe(call.replica)
    expect(await noteExists(host, id)).toBe(false)
    await hosts.close(host)
    // Every stream and flow gone: the replicas hold no session or principal channel any more.
    await until(async () => (await notesChannels()).length === 0)
  })
})
