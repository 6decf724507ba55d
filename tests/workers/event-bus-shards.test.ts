/**
 * The Durable Object event bus's shard count, inside workerd on real objects: with two counts (2
 * and 8), the keys of principals and sessions relay over exactly that many shards, an event without
 * a key reaches every one of those shards and no shard beyond them, and a subscriber joins only
 * those shards (one without interest every one of them). A count outside 1 to 64 is refused when the
 * bus is built, naming the fix, and the notes Worker reads its count from `EVENT_BUS_SHARDS` (a bad
 * one is a misconfiguration: 500, and the log names the variable). Absence is shown by order: an
 * event published later on the same socket arrives first instead.
 */
import { env } from 'cloudflare:test'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { DurableObjectEventBus, MAX_SHARDS, type BusNamespace } from 'stateless-mcp/workers'
import type { EventInterest, ServerEvent } from '../../src/mcp/event-bus.ts'
import { keyedObject, shardName } from '../../src/mcp/workers/event-bus.ts'
import worker from '../../src/worker.ts'
import { MCP_URL, mcpInit } from '../support/mcp-request.ts'
import { namespace, publishTo, rawSubscriber } from './bus-sockets.ts'

const COUNTS = [2, 8]

afterEach(() => vi.restoreAllMocks())

/** `namespace`, recording the name of every object it is asked for, and waits for a number of them. */
function recordingNamespace() {
  const names: string[] = []
  const waiters: Array<() => void> = []
  const recording: BusNamespace = {
    idFromName: (name) => {
      names.push(name)
      waiters.splice(0).forEach((wake) => wake())
      return namespace.idFromName(name)
    },
    get: (id) => namespace.get(id),
  }
  /** Resolves once `count` names were asked for, with the shard names among them. */
  const shardsAfter = async (count: number): Promise<Set<string>> => {
    while (names.length < count) await new Promise<void>((wake) => waiters.push(wake))
    return new Set(names.filter((name) => name.startsWith('shard-')))
  }
  return { recording, shardsAfter }
}

const shardNames = (count: number) =>
  new Set(Array.from({ length: count }, (_, index) => shardName(index)))

describe.each(COUNTS)('a bus of %i shards', (shards) => {
  it('relays the events of principals and sessions over exactly that many shards', async () => {
    const relays = new Set<number>()
    for (let index = 0; index < 64; index++) {
      relays.add((await keyedObject({ principal: `principal-${index}` }, shards)).shard)
      relays.add((await keyedObject({ session: `session-${index}` }, shards)).shard)
    }
    expect([...relays].sort((a, b) => a - b)).toEqual(
      Array.from({ length: shards }, (_, index) => index)
    )
  })

  it('sends an event without a key to every one of its shards, and to none beyond', async () => {
    const since = Date.now()
    const sockets = await Promise.all(
      Array.from({ length: shards + 1 }, (_, index) =>
        rawSubscriber(shardName(index), since, ['broadcast'])
      )
    )
    const forAll: ServerEvent = { kind: 'resource_updated', uri: `test://${crypto.randomUUID()}` }
    await new DurableObjectEventBus({ namespace, shards }).publish(forAll)

    for (const socket of sockets.slice(0, shards)) await socket.until(forAll)
    // Published to the shard past the count after the event: had it heard the event, it came first.
    const beyond = sockets[shards]!
    const sentinel: ServerEvent = { kind: 'resource_updated', uri: `test://${crypto.randomUUID()}` }
    expect((await publishTo(shardName(shards), 'broadcast', sentinel)).status).toBe(204)
    expect(await beyond.until(sentinel)).not.toContainEqual(forAll)
    for (const { socket } of sockets) socket.close(1000)
  })

  it('joins its subscribers to its shards only, one without interest to every one', async () => {
    const { recording, shardsAfter } = recordingNamespace()
    const bus = new DurableObjectEventBus({ namespace: recording, shards })
    const interests: EventInterest[] = Array.from({ length: 16 }, (_, index) => ({
      principal: `principal-${index}`,
    }))
    // Each subscriber with a principal opens two sockets: its principal's object and one shard.
    const stops = interests.map((interest) => bus.subscribe(() => {}, interest))
    const joined = await shardsAfter(2 * interests.length)
    expect([...joined].every((name) => shardNames(shards).has(name))).toBe(true)
    stops.forEach((stop) => stop())

    const everything = recordingNamespace()
    const stop = new DurableObjectEventBus({ namespace: everything.recording, shards }).subscribe(
      () => {}
    )
    expect(await everything.shardsAfter(shards)).toEqual(shardNames(shards))
    stop()
  })
})

describe('a shard count outside 1 to 64', () => {
  it('is refused when the bus is built, with the message naming the fix', () => {
    for (const shards of [0, -1, 1.5, MAX_SHARDS + 1, Number.NaN, '4' as unknown as number]) {
      expect(() => new DurableObjectEventBus({ namespace, shards }), String(shards)).toThrow(
        /shards must be an integer from 1 to 64, the same in every Worker bound to the namespace/
      )
    }
  })

  const bindings = {
    ALLOWED_HOSTS: '127.0.0.1,localhost',
    STATE_KEYS: env.STATE_KEYS,
    DB: env.DB,
    EVENT_BUS: env.EVENT_BUS,
    TASK_RUNNER: env.TASK_RUNNER,
  }
  const tools = () => new Request(MCP_URL, mcpInit('tools/list'))

  it('in EVENT_BUS_SHARDS is a misconfiguration of the notes Worker, named in its log', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    for (const value of ['0', '65', 'four']) {
      const response = await worker.fetch(tools(), { ...bindings, EVENT_BUS_SHARDS: value })
      expect(response.status, value).toBe(500)
    }
    const named = logged.mock.calls
      .map((call) => call.join(' '))
      .filter((line) => /EVENT_BUS_SHARDS: .*shards must be an integer from 1 to 64/.test(line))
    expect(named).toHaveLength(3)
  })

  it('is fixed without a restart: the Worker serves on the count it is given (a number var)', async () => {
    const response = await worker.fetch(tools(), { ...bindings, EVENT_BUS_SHARDS: 8 })
    expect(response.status).toBe(200)
  })
})
