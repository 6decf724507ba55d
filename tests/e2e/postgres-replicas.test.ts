/**
 * Replicas on PostgreSQL: two notes server processes share one database and one key ring. Rounds of a
 * flow alternate between them, and a listen stream on one replica hears the changes made through the
 * other (LISTEN/NOTIFY event bus), scoped to the caller. Skipped, visibly, without a PostgreSQL server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient, type JsonRpcNotification } from '../../src/client/index.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import {
  startPostgresReplicas,
  type PostgresReplicas,
  type ServerProcess,
} from '../support/server-process.ts'

const serverUrl = await testDatabaseUrl()
let deployment: PostgresReplicas | undefined
let replicas: ServerProcess[] = []

beforeAll(async () => {
  if (!serverUrl) return
  deployment = await startPostgresReplicas(serverUrl, ['pg-a', 'pg-b'])
  replicas = deployment.servers
})

afterAll(() => deployment?.stop())

describe.skipIf(!serverUrl)('two Node replicas on one PostgreSQL database', () => {
  it('serves the rounds of delete_note on alternating replicas', async () => {
    const created = await new McpClient({ url: replicas[0]!.url }).callTool('create_note', {
      title: 'Postgres flow',
    })
    const id = (created.structuredContent as { note: { id: string } }).note.id
    let next = 1
    const served: string[] = []
    const client = new McpClient({
      url: replicas[1]!.url,
      urls: () => replicas[next++ % 2]!.url,
      handlers: { elicit: async () => ({ action: 'accept', content: { confirm: true } }) },
      onRound: (info) => served.push(info.headers.get('x-replica') ?? '?'),
    })
    const result = await client.callTool('delete_note', { id })
    expect(JSON.stringify(result.content)).toContain('Deleted')
    expect(served).toEqual(['pg-b', 'pg-a'])
  })

  it('delivers a change made through one replica to a listen stream held by the other', async () => {
    const heard: JsonRpcNotification[] = []
    const stop = new AbortController()
    const acknowledged = Promise.withResolvers<void>()
    const firstHeard = Promise.withResolvers<void>()
    const listening = new McpClient({ url: replicas[0]!.url }).listen(
      { resourcesListChanged: true },
      {
        signal: stop.signal,
        onNotification: (notification) => {
          if (notification.method === 'notifications/subscriptions/acknowledged') {
            acknowledged.resolve()
          } else {
            heard.push(notification)
            firstHeard.resolve()
          }
        },
      }
    )
    await acknowledged.promise
    await new McpClient({ url: replicas[1]!.url }).callTool('create_note', {
      title: 'Heard across replicas',
    })
    // Never heard, the test fails at its timeout.
    await firstHeard.promise
    stop.abort()
    await listening
    expect(heard.map((notification) => notification.method)).toContain(
      'notifications/resources/list_changed'
    )
  })
})
