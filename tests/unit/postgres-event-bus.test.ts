/**
 * The LISTEN/NOTIFY event bus (`stateless-mcp/postgres`, `src/mcp/buses/postgres.ts`): an event published on one bus
 * reaches the listeners of every bus on the same database (its own included), the 2025-era session
 * signals too; a malformed payload on the channel is dropped, and an event outside the bus's bounds is
 * delivered on its own replica only; a channel name that is not a plain identifier is refused. A
 * listening connection the server ends is logged lost, LISTENed again and logged back, and the bus
 * then tells its own listeners that every list may have changed (what was notified meanwhile is lost).
 * While its server is down (a private one, stopped), the bus tries to LISTEN again no faster than
 * the pool tries to reconnect: counted on the driver's diagnostics channels, attempts against
 * attempts, so no clock is read (the driver refuses a query at once between two reconnects, and a
 * bus that tried again at once spun, starving the event loop).
 * Without a PostgreSQL server (for the outage test, its binaries): fails under `CI=true`, skipped
 * (visibly) elsewhere.
 */
import dc from 'node:diagnostics_channel'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  privatePostgresAvailable,
  startPrivatePostgres,
} from '../../scripts/support/private-postgres.ts'
import { MAX_EVENT_ID_CHARS, type ServerEvent } from '../../src/mcp/event-bus.ts'
import { PostgresEventBus } from 'stateless-mcp/postgres'
import { serviceTestsRun } from '../support/ci.ts'
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

/**
 * What a bus that lost its listening connection and got it back has done: told its own listeners
 * (`hint`: their first three events) that every list may have changed, and logged the loss and the
 * return (`warnings`).
 */
async function expectHeardAgain(hint: Promise<ServerEvent[]>, warnings: string[]): Promise<void> {
  expect(await hint).toEqual([
    { kind: 'tools_list_changed' },
    { kind: 'prompts_list_changed' },
    { kind: 'resources_list_changed' },
  ])
  expect(warnings).toEqual([
    'event bus lost its database connection; events of other replicas go unheard until it is back',
    'event bus hears again; streams are told to re-read their lists',
  ])
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
      await expectHeardAgain(hint, warnings)
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

const binariesFound = serviceTestsRun(
  'PostgresEventBus outage test',
  privatePostgresAvailable(),
  'no PostgreSQL server binaries (initdb, postgres) are installed'
)

/** A count of the starts of one tracing channel of the driver (those whose context `counts`). */
class StartCount {
  value = 0
  #waiting: { count: number; resolve: () => void } | undefined
  readonly #channel: dc.TracingChannel<string, Record<string, unknown>>
  readonly #handlers: dc.TracingChannelSubscribers<Record<string, unknown>>

  constructor(name: string, counts: (context: Record<string, unknown>) => boolean) {
    const ignore = () => {}
    this.#handlers = {
      start: (context) => {
        if (!counts(context)) return
        this.value++
        if (this.#waiting !== undefined && this.value >= this.#waiting.count)
          this.#waiting.resolve()
      },
      end: ignore,
      asyncStart: ignore,
      asyncEnd: ignore,
      error: ignore,
    }
    this.#channel = dc.tracingChannel(name)
    this.#channel.subscribe(this.#handlers)
  }

  /** Resolves once the count reaches `count`. */
  reached(count: number): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting = { count, resolve }
      if (this.value >= count) resolve()
    })
  }

  stop(): void {
    this.#channel.unsubscribe(this.#handlers)
  }
}

/** Reconnect attempts of the listening pool that the outage test waits for. */
const RECONNECTS = 4
/** Most LISTEN attempts per reconnect attempt: each of the bus's waits as long as the pool's. */
const LISTENS_PER_RECONNECT = 10

describe.skipIf(!binariesFound)('PostgresEventBus while its server is down', () => {
  it('tries to LISTEN again no faster than the pool reconnects, and hears again once it is back', async () => {
    const server = await startPrivatePostgres()
    const warnings: string[] = []
    const bus = await PostgresEventBus.start({
      url: server.url,
      channel: 'events_outage',
      logger: { warn: (message) => warnings.push(message), error: () => {} },
    })
    const port = Number(new URL(server.url).port)
    const listens = new StartCount('postgres:query', (c) => c.query === 'LISTEN events_outage')
    const reconnects = new StartCount('postgres:connect', (c) => c.port === port)
    try {
      const hint = heard(bus, 3)
      await server.stop('fast')
      // Both counts start at the stop: the listening pool is the only one of the bus connecting.
      listens.value = reconnects.value = 0
      await reconnects.reached(RECONNECTS)
      expect(listens.value).toBeGreaterThan(0)
      expect(listens.value).toBeLessThanOrEqual(LISTENS_PER_RECONNECT * reconnects.value)
      await server.start()
      await expectHeardAgain(hint, warnings)
    } finally {
      listens.stop()
      reconnects.stop()
      await bus.close()
      await server.dispose()
    }
    // A private server is made (initdb), stopped and started within the test: bounded as the
    // private server's own steps are, not by the default test timeout.
  }, 180_000)
})
