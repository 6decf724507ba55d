/**
 * The LISTEN/NOTIFY event bus (`stateless-mcp/postgres`, `src/mcp/buses/postgres.ts`): an event published on one bus
 * reaches the listeners of every bus on the same database (its own included), the 2025-era session
 * signals too; a malformed payload on the channel is dropped, and an event outside the bus's bounds is
 * delivered on its own replica only; a channel name that is not a plain identifier is refused. A
 * listening connection the server ends is logged lost, LISTENed again and logged back, and the bus
 * then tells its own listeners that every list may have changed (what was notified meanwhile is lost).
 * Without a PostgreSQL server: fails under `CI=true`, skipped (visibly) elsewhere.
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_EVENT_ID_CHARS, type ServerEvent } from '../../src/mcp/event-bus.ts'
import { PostgresEventBus } from 'stateless-mcp/postgres'
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

/**
 * The next `count` events the bus's listeners hear, in order (subscribed at once: call it before
 * publishing). A missing event leaves the promise pending and the test fails by its timeout.
 */
function heard(bus: PostgresEventBus, count: number): Promise<ServerEvent[]> {
  return new Promise((resolve) => {
    const events: ServerEvent[] = []
    const stop = bus.subscribe((event) => {
      events.push(event)
      if (events.length === count) {
        stop()
        resolve(events)
      }
    })
  })
}

describe.skipIf(!url)('PostgresEventBus', () => {
  it('delivers an event published on one bus to the listeners of every bus', async () => {
    const [first, second] = [heard(buses[0]!, 1), heard(buses[1]!, 1)]
    const event: ServerEvent = { kind: 'resource_updated', uri: 'note://n_1', principal: 'local' }
    await buses[0]!.publish(event)
    expect(await first).toEqual([event])
    expect(await second).toEqual([event])
  })

  it('carries the 2025-era session signals to the listeners of every bus', async () => {
    const [first, second] = [heard(buses[0]!, 2), heard(buses[1]!, 2)]
    const events: ServerEvent[] = [
      { kind: 'input_delivered', session: 'sid-1', requestId: 'srv-7' },
      { kind: 'request_cancelled', session: 'sid-1', requestId: 'r-42' },
    ]
    for (const event of events) await buses[1]!.publish(event)
    expect(await first).toEqual(events)
    expect(await second).toEqual(events)
  })

  /** Sends raw payloads on the channel, then one well-formed event: what a bus hears first. */
  async function firstHeardAfter(payloads: string[], event: ServerEvent): Promise<ServerEvent[]> {
    const next = heard(buses[1]!, 1)
    const sql = postgres(url!, { max: 1, onnotice: () => {} })
    try {
      // One connection: PostgreSQL delivers its notifications in the order they were sent.
      for (const payload of payloads) await sql.notify(channel, payload)
      await sql.notify(channel, JSON.stringify(event))
    } finally {
      await sql.end()
    }
    return next
  }

  it('drops a session signal that is malformed or carries an oversized id', async () => {
    const longest = 'x'.repeat(MAX_EVENT_ID_CHARS)
    const bad = [
      { kind: 'input_delivered', session: 'sid-1' },
      { kind: 'input_delivered', session: 'sid-1', requestId: 7 },
      { kind: 'input_delivered', session: '', requestId: 'r' },
      { kind: 'request_cancelled', session: 'sid-1', requestId: `${longest}x` },
      { kind: 'request_cancelled', session: `${longest}x`, requestId: 'r' },
      { kind: 'request_cancelled', session: 'sid-1', requestId: 'r', principal: 'p' },
    ]
    const good: ServerEvent = { kind: 'input_delivered', session: longest, requestId: longest }
    expect(
      await firstHeardAfter(
        bad.map((event) => JSON.stringify(event)),
        good
      )
    ).toEqual([good])
  })

  it('drops a payload on the channel that is not a well-formed event', async () => {
    const bad = [
      'not json',
      JSON.stringify({ kind: 'resource_updated' }),
      JSON.stringify({ kind: 'tools_list_changed', extra: true }),
    ]
    const good: ServerEvent = { kind: 'prompts_list_changed' }
    expect(await firstHeardAfter(bad, good)).toEqual([good])
  })

  it('delivers an event outside the bounds of the bus on its own replica only, and logs', async () => {
    const warnings: string[] = []
    const logging = await PostgresEventBus.start({
      url: url!,
      channel,
      logger: { warn: (message) => warnings.push(message), error: () => {} },
    })
    try {
      const oversized: ServerEvent = {
        kind: 'input_delivered',
        session: 'sid-1',
        requestId: 'x'.repeat(MAX_EVENT_ID_CHARS + 1),
      }
      const [own, other] = [heard(logging, 1), heard(buses[1]!, 1)]
      await logging.publish(oversized)
      expect(await own).toEqual([oversized])
      // Sent after it: the other replica hears this first, since the oversized one was never sent.
      const sentinel: ServerEvent = { kind: 'tools_list_changed' }
      await logging.publish(sentinel)
      expect(await other).toEqual([sentinel])
      expect(warnings).toEqual(['event fan-out failed; delivered on this replica only'])
    } finally {
      await logging.close()
    }
  })

  it('when its listening connection is cut (57P01), logs it lost, LISTENs again, logs it back and tells its streams to re-read', async () => {
    // A channel of its own: its LISTEN connection is the one backend whose last query names it.
    const own = `${channel}_cut`
    const warnings: string[] = []
    const cut = await PostgresEventBus.start({
      url: url!,
      channel: own,
      logger: { warn: (message) => warnings.push(message), error: () => {} },
    })
    const sender = await PostgresEventBus.start({ url: url!, channel: own })
    const sql = postgres(url!, { max: 1, onnotice: () => {} })
    try {
      const hint = heard(cut, 3)
      await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE pid <> pg_backend_pid() AND query = ${`LISTEN ${own}`}`
      expect(await hint).toEqual([
        { kind: 'tools_list_changed' },
        { kind: 'prompts_list_changed' },
        { kind: 'resources_list_changed' },
      ])
      expect(warnings).toEqual([
        'event bus lost its database connection; events of other replicas go unheard until it is back',
        'event bus hears again; streams are told to re-read their lists',
      ])
      // And it hears the other replicas again.
      const after = heard(cut, 1)
      const event: ServerEvent = { kind: 'resource_updated', uri: 'note://n_after' }
      await sender.publish(event)
      expect(await after).toEqual([event])
    } finally {
      await sql.end({ timeout: 1 })
      await Promise.all([cut.close(), sender.close()])
    }
  })

  it('refuses a channel name that is not a plain identifier', async () => {
    await expect(
      PostgresEventBus.start({ url: url!, channel: 'x; DROP TABLE notes' })
    ).rejects.toThrow(TypeError)
  })
})
