/**
 * The LISTEN/NOTIFY event bus: an event published on one bus reaches the listeners of every bus on the
 * same database (its own included); a malformed payload on the channel is dropped; a channel name that
 * is not a plain identifier is refused. Without a PostgreSQL server: fails under `CI=true`, skipped
 * (visibly) elsewhere.
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ServerEvent } from '../../src/mcp/events.ts'
import { PostgresEventBus } from '../../src/storage/postgres-events.ts'
import { testDatabaseUrl } from '../support/postgres.ts'

const url = await testDatabaseUrl()
const channel = `events_test_${Date.now().toString(36)}`
let buses: PostgresEventBus[] = []

beforeAll(async () => {
  if (!url) return
  buses = await Promise.all([
    PostgresEventBus.start({ url, channel }),
    PostgresEventBus.start({ url, channel }),
  ])
})

afterAll(async () => {
  await Promise.all(buses.map((bus) => bus.close()))
})

function collect(bus: PostgresEventBus): ServerEvent[] {
  const events: ServerEvent[] = []
  bus.subscribe((event) => events.push(event))
  return events
}

async function eventually(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 3000
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
}

describe.skipIf(!url)('PostgresEventBus', () => {
  it('delivers an event published on one bus to the listeners of every bus', async () => {
    const [first, second] = [collect(buses[0]!), collect(buses[1]!)]
    const event: ServerEvent = { kind: 'resource_updated', uri: 'note://n_1', principal: 'local' }
    await buses[0]!.publish(event)
    await eventually(() => first.length > 0 && second.length > 0)
    expect(first).toEqual([event])
    expect(second).toEqual([event])
  })

  it('drops a payload on the channel that is not a well-formed event', async () => {
    const heard = collect(buses[1]!)
    const sql = postgres(url!, { max: 1, onnotice: () => {} })
    await sql.notify(channel, 'not json')
    await sql.notify(channel, JSON.stringify({ kind: 'resource_updated' }))
    await sql.notify(channel, JSON.stringify({ kind: 'tools_list_changed', extra: true }))
    await sql.notify(channel, JSON.stringify({ kind: 'prompts_list_changed' }))
    await sql.end()
    await eventually(() => heard.length > 0)
    expect(heard).toEqual([{ kind: 'prompts_list_changed' }])
  })

  it('refuses a channel name that is not a plain identifier', async () => {
    await expect(
      PostgresEventBus.start({ url: url!, channel: 'x; DROP TABLE notes' })
    ).rejects.toThrow(TypeError)
  })
})
