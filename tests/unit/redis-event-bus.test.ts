/**
 * The Redis sharded pub/sub event bus (`stateless-mcp/redis`, `src/mcp/buses/redis.ts`), on real
 * servers the tests start (`tests/support/redis.ts`): one `redis-server`, and a cluster of three
 * masters with a replica each. Across two buses (two replicas): an event reaches the listeners its
 * scope names, on either bus; a replica subscribes only to the channels of the listeners it holds
 * (read back with `PUBSUB SHARDCHANNELS`), and unsubscribes a channel after its last listener
 * leaves; on the cluster, channels land on different shards and still carry their events. Losing
 * Redis (the subscriber's connection killed or cut for its output buffer, a master demoted by a
 * failover, a master killed and its replica promoted) is logged
 * once, healed, and the listeners are told that everything may have changed, then hear again.
 * Malformed payloads and events on the wrong channel are dropped; bad options are refused. Without
 * `redis-server`: fails under `CI=true`, skipped (visibly) elsewhere.
 */
import { createClient } from 'redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EVERYTHING_MAY_HAVE_CHANGED, type ServerEvent } from '../../src/mcp/event-bus.ts'
import { RedisEventBus } from 'stateless-mcp/redis'
import {
  redisTestsRun,
  startRedisCluster,
  startRedisServer,
  until,
  type RedisCluster,
  type RedisServer,
} from '../support/redis.ts'

const runs = redisTestsRun('Redis event bus tests')

/** What one listener heard so far, and a promise of its next `count` events. */
class Heard {
  readonly events: ServerEvent[] = []
  #waiting: { count: number; resolve: (events: ServerEvent[]) => void } | undefined

  readonly listener = (event: ServerEvent): void => {
    this.events.push(event)
    if (this.#waiting && this.events.length >= this.#waiting.count) {
      this.#waiting.resolve(this.events.splice(0, this.#waiting.count))
      this.#waiting = undefined
    }
  }

  /** The next `count` events (those heard already first); a missing one fails by the test timeout. */
  next(count = 1): Promise<ServerEvent[]> {
    if (this.events.length >= count) return Promise.resolve(this.events.splice(0, count))
    return new Promise((resolve) => (this.#waiting = { count, resolve }))
  }
}

function recordingLogger(warnings: string[]) {
  return { warn: (message: string) => warnings.push(message), error: () => {} }
}

/** The shard channels a server has subscribers for now. */
async function shardChannels(url: string): Promise<string[]> {
  const client = createClient({ url })
  await client.connect()
  try {
    return (await client.sendCommand<string[]>(['PUBSUB', 'SHARDCHANNELS'])).sort()
  } finally {
    await client.close()
  }
}

const principalEvent = (principal: string): ServerEvent => ({
  kind: 'resource_updated',
  uri: 'note://n_1',
  principal,
})

describe.skipIf(!runs)('RedisEventBus on one redis-server', () => {
  let server: RedisServer
  let buses: RedisEventBus[]

  beforeAll(async () => {
    server = await startRedisServer()
    buses = await Promise.all([
      RedisEventBus.start({ url: server.url }),
      RedisEventBus.start({ url: server.url }),
    ])
  })

  afterAll(async () => {
    await Promise.all((buses ?? []).map((bus) => bus.close()))
    await server?.stop()
  })

  it('delivers by scope across replicas: a principal, everyone, a session', async () => {
    const [alice, bob, session] = [new Heard(), new Heard(), new Heard()]
    const stops = [
      buses[1]!.subscribe(alice.listener, { principal: 'alice' }),
      buses[1]!.subscribe(bob.listener, { principal: 'bob' }),
      buses[0]!.subscribe(session.listener, { session: 'sid-1' }),
    ]
    await Promise.all(stops.map((stop) => stop.ready))
    await buses[0]!.publish(principalEvent('alice'))
    await buses[0]!.publish({ kind: 'tools_list_changed' })
    await buses[1]!.publish({ kind: 'input_delivered', session: 'sid-1', requestId: 'r-1' })
    expect(await alice.next(2)).toEqual([principalEvent('alice'), { kind: 'tools_list_changed' }])
    expect(await bob.next()).toEqual([{ kind: 'tools_list_changed' }])
    expect(await session.next()).toEqual([
      { kind: 'input_delivered', session: 'sid-1', requestId: 'r-1' },
    ])
    for (const stop of stops) stop()
  })

  it('subscribes only the channels of listeners it holds, and unsubscribes after the last leaves', async () => {
    const bus = buses[0]!
    expect(await shardChannels(server.url)).toEqual([])
    const first = bus.subscribe(() => {}, { principal: 'carol' })
    const second = bus.subscribe(() => {}, { principal: 'carol' })
    await Promise.all([first.ready, second.ready])
    const carol = bus.channels
    expect(carol).toHaveLength(2) // carol's channel and the everyone channel
    expect(await shardChannels(server.url)).toEqual([...carol].sort())
    first()
    // Still held by the second listener: nothing is unsubscribed.
    const session = bus.subscribe(() => {}, { session: 'sid-2' })
    await session.ready
    expect(await shardChannels(server.url)).toEqual([...carol, ...bus.channels.slice(2)].sort())
    second()
    session()
    expect(bus.channels).toEqual([])
    await until(async () => (await shardChannels(server.url)).length === 0)
  })

  it('drops malformed payloads and events sent on another channel than their own', async () => {
    const heard = new Heard()
    const stop = buses[1]!.subscribe(heard.listener, { principal: 'dave' })
    await stop.ready
    const [daveChannel, everyone] = buses[1]!.channels
    const raw = createClient({ url: server.url })
    await raw.connect()
    try {
      await raw.sPublish(daveChannel!, 'not json')
      await raw.sPublish(daveChannel!, JSON.stringify({ kind: 'tools_list_changed', extra: 1 }))
      await raw.sPublish(daveChannel!, JSON.stringify(principalEvent('erin')))
      await raw.sPublish(everyone!, JSON.stringify(principalEvent('dave')))
      await raw.sPublish(daveChannel!, JSON.stringify(principalEvent('dave')))
    } finally {
      await raw.close()
    }
    expect(await heard.next()).toEqual([principalEvent('dave')])
    stop()
  })

  it('when its subscriber connection is killed: logs once, subscribes again, tells its listeners, hears again', async () => {
    const warnings: string[] = []
    const cut = await RedisEventBus.start({ url: server.url, logger: recordingLogger(warnings) })
    try {
      const heard = new Heard()
      const stop = cut.subscribe(heard.listener, { principal: 'frank' })
      await stop.ready
      const admin = createClient({ url: server.url })
      await admin.connect()
      await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub'])
      await admin.close()
      expect(await heard.next(3)).toEqual([...EVERYTHING_MAY_HAVE_CHANGED])
      await buses[0]!.publish(principalEvent('frank'))
      expect(await heard.next()).toEqual([principalEvent('frank')])
      expect(warnings).toEqual([
        'event bus lost Redis; events of other replicas go unheard until it is back',
        'event bus hears Redis again; streams are told to re-read their lists',
      ])
      stop()
    } finally {
      await cut.close()
    }
  })

  it('when Redis cuts its subscriber for its output buffer: tells its listeners, hears again', async () => {
    const heard = new Heard()
    const stop = buses[1]!.subscribe(heard.listener, { principal: 'heidi' })
    await stop.ready
    const admin = createClient({ url: server.url })
    await admin.connect()
    try {
      // A hard limit below one event: the subscriber is cut as soon as the event is queued to it.
      await admin.configSet('client-output-buffer-limit', 'pubsub 1kb 0 0')
      const large: ServerEvent = {
        kind: 'resource_updated',
        uri: `note://${'n'.repeat(2_000)}`,
        principal: 'heidi',
      }
      await buses[0]!.publish(large)
      await admin.configSet('client-output-buffer-limit', 'pubsub 32mb 8mb 60')
    } finally {
      await admin.close()
    }
    expect(await heard.next(3)).toEqual([...EVERYTHING_MAY_HAVE_CHANGED])
    await buses[0]!.publish(principalEvent('heidi'))
    expect(await heard.next()).toEqual([principalEvent('heidi')])
    stop()
  })

  it('refuses a listener naming nothing, and URLs and prefixes it cannot use', async () => {
    expect(() => buses[0]!.subscribe(() => {})).toThrow(/must name a principal or a session/)
    await expect(RedisEventBus.start({ url: 'http://127.0.0.1:6379' })).rejects.toThrow(
      /redis:\/\/host:port/
    )
    await expect(RedisEventBus.start({ url: 'redis://a:1,b:2' })).rejects.toThrow(
      /several hosts need redis\+cluster/
    )
    await expect(RedisEventBus.start({ url: server.url, channelPrefix: 'a b' })).rejects.toThrow(
      /channelPrefix/
    )
  })
})

describe.skipIf(!runs)('RedisEventBus on a Redis Cluster (three masters, three replicas)', () => {
  let cluster: RedisCluster
  let buses: RedisEventBus[]
  const warnings: string[] = []

  beforeAll(async () => {
    cluster = await startRedisCluster()
    buses = await Promise.all([
      RedisEventBus.start({ url: cluster.url, logger: recordingLogger(warnings) }),
      RedisEventBus.start({ url: cluster.url }),
    ])
  }, 60_000)

  afterAll(async () => {
    await Promise.all((buses ?? []).map((bus) => bus.close()))
    await cluster?.stop()
  })

  it('carries events on channels spread over the shards, each subscribed on its own master', async () => {
    const principals = Array.from({ length: 12 }, (_, index) => `user-${index}`)
    const listeners = principals.map(() => new Heard())
    const stops = principals.map((principal, index) =>
      buses[1]!.subscribe(listeners[index]!.listener, { principal })
    )
    await Promise.all(stops.map((stop) => stop.ready))
    const channels = buses[1]!.channels
    const masters = new Set(
      await Promise.all(channels.map(async (channel) => (await cluster.masterOf(channel)).port))
    )
    expect(masters.size).toBe(3)
    for (const channel of channels) {
      const master = await cluster.masterOf(channel)
      expect(await master.cli('PUBSUB', 'SHARDCHANNELS', channel)).toBe(channel)
    }
    for (const principal of principals) await buses[0]!.publish(principalEvent(principal))
    for (const [index, principal] of principals.entries()) {
      expect(await listeners[index]!.next()).toEqual([principalEvent(principal)])
    }
    for (const stop of stops) stop()
    await until(async () => {
      for (const channel of channels) {
        if ((await (await cluster.masterOf(channel)).cli('PUBSUB', 'SHARDCHANNELS')) !== '')
          return false
      }
      return true
    })
  })

  it('when its replica takes a master over (CLUSTER FAILOVER; the demoted master sends sunsubscribe): listeners are told, then hear again', async () => {
    const heard = new Heard()
    const stop = buses[0]!.subscribe(heard.listener, { principal: 'ivan' })
    await stop.ready
    const ivanChannel = buses[0]!.channels.find((channel) => channel.includes(':p:'))!
    const master = await cluster.masterOf(ivanChannel)
    let replica: (typeof cluster.nodes)[number] | undefined
    for (const node of cluster.nodes) {
      const role = await node.cli('ROLE').catch(() => '')
      if (role.startsWith('slave') && role.split('\n').includes(String(master.port))) replica = node
    }
    expect(await replica!.cli('CLUSTER', 'FAILOVER')).toBe('OK')
    expect(await heard.next(3)).toEqual([...EVERYTHING_MAY_HAVE_CHANGED])
    await until(async () => (await cluster.masterOf(ivanChannel)).port === replica!.port)
    await buses[1]!.publish(principalEvent('ivan'))
    expect(await heard.next()).toEqual([principalEvent('ivan')])
    await cluster.settled()
    stop()
  }, 60_000)

  it('when a master is killed and its replica promoted: listeners are told everything may have changed, then hear again', async () => {
    const [onFirst, onSecond] = [new Heard(), new Heard()]
    const stops = [
      buses[0]!.subscribe(onFirst.listener, { principal: 'grace' }),
      buses[1]!.subscribe(onSecond.listener, { principal: 'grace' }),
    ]
    await Promise.all(stops.map((stop) => stop.ready))
    const warnedBefore = warnings.length
    const graceChannel = buses[1]!.channels.find((channel) => channel.includes(':p:'))!
    const master = await cluster.masterOf(graceChannel)
    await master.kill()
    // Both replicas heal (each subscribed on the promoted replica): then an event goes through.
    expect(await onFirst.next(3)).toEqual([...EVERYTHING_MAY_HAVE_CHANGED])
    expect(await onSecond.next(3)).toEqual([...EVERYTHING_MAY_HAVE_CHANGED])
    expect((await cluster.masterOf(graceChannel)).port).not.toBe(master.port)
    await buses[0]!.publish(principalEvent('grace'))
    expect(await onSecond.next()).toEqual([principalEvent('grace')])
    expect(await onFirst.next()).toEqual([principalEvent('grace')])
    expect(warnings.slice(warnedBefore)).toEqual([
      'event bus lost Redis; events of other replicas go unheard until it is back',
      'event bus hears Redis again; streams are told to re-read their lists',
    ])
    // The killed master comes back as a replica of its shard.
    await master.start()
    await cluster.settled()
    for (const stop of stops) stop()
  }, 60_000)
})
