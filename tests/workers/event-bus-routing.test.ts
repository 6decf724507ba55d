/**
 * How the Durable Object event bus routes, inside workerd on real objects: a session's signals go to
 * that session's object and nowhere else; a principal's events to that principal's object and to
 * nobody else's subscribers; events without a key to every subscriber with a principal, and to none
 * that listens for a session; a subscriber without interest hears everything. Each key is fresh, so
 * its object has heard nothing before the test. Absence is shown by order: an event published later
 * that must arrive on the same socket arrives first instead.
 */
import { describe, expect, it } from 'vitest'
import type { EventInterest, ServerEvent } from '../../src/mcp/event-bus.ts'
import { DEFAULT_SHARDS, DurableObjectEventBus } from 'stateless-mcp/workers'
import {
  keyedObject,
  shardName,
  subscribeUrl,
  type BusChannel,
} from '../../src/mcp/workers/event-bus.ts'
import { stubOf } from '../../src/mcp/workers/durable-objects.ts'
import { Heard, namespace, publishTo, rawSubscriber, unreachableNamespace } from './bus-sockets.ts'

const fresh = () => crypto.randomUUID()

const updatedFor = (principal: string, label: string): ServerEvent => ({
  kind: 'resource_updated',
  uri: `test://${label}/${fresh()}`,
  principal,
})
const updatedForAll = (label: string): ServerEvent => ({
  kind: 'resource_updated',
  uri: `test://${label}/${fresh()}`,
})
const delivered = (session: string, requestId: string): ServerEvent => ({
  kind: 'input_delivered',
  session,
  requestId,
})

/** Subscribes a recording listener to `bus` with `interest`. */
function listener(bus: DurableObjectEventBus, interest?: EventInterest) {
  const heard = new Heard()
  const stop = bus.subscribe((event) => heard.add(event), interest)
  return { heard, stop }
}

/** What of `ours` a recording heard, in order. */
const only = (heard: unknown[], ours: ServerEvent[]) =>
  heard.filter((event) => ours.some((mine) => JSON.stringify(mine) === JSON.stringify(event)))

describe('routing by key', () => {
  it("sends a session's signals to that session's object only", async () => {
    const [mine, other] = [fresh(), fresh()]
    const since = Date.now()
    const mineObject = await rawSubscriber(
      (await keyedObject({ session: mine }, DEFAULT_SHARDS)).name,
      since,
      ['keyed']
    )
    const otherObject = await rawSubscriber(
      (await keyedObject({ session: other }, DEFAULT_SHARDS)).name,
      since,
      ['keyed']
    )
    const shards = await Promise.all(
      Array.from({ length: DEFAULT_SHARDS }, (_, index) =>
        rawSubscriber(shardName(index), since, ['broadcast'])
      )
    )
    const bus = new DurableObjectEventBus({ namespace })

    const signal = delivered(mine, 'r-1')
    await bus.publish(signal)
    const otherSignal = delivered(other, 'r-2')
    await bus.publish(otherSignal)
    const forAll = updatedForAll('after-the-signals')
    await bus.publish(forAll)
    // Published last, so anything wrongly sent to this session's object would have come before it.
    const sentinel = delivered(mine, 'r-3')
    await bus.publish(sentinel)

    expect(await mineObject.until(signal)).toEqual([])
    expect(await otherObject.until(otherSignal)).toEqual([])
    for (const shard of shards) {
      expect(only(await shard.until(forAll), [signal, otherSignal])).toEqual([])
    }
    await mineObject.until(sentinel)
    expect(mineObject.heard.events).toEqual([signal, sentinel])
    for (const socket of [mineObject, otherObject, ...shards]) socket.socket.close(1000)
  })

  it("sends a principal's events to its own subscribers, and events without one to every stream", async () => {
    const [alice, bob, session] = [fresh(), fresh(), fresh()]
    const since = Date.now()
    const aliceObject = await rawSubscriber(
      (await keyedObject({ principal: alice }, DEFAULT_SHARDS)).name,
      since,
      ['keyed']
    )
    const bob1 = new DurableObjectEventBus({ namespace })
    const bob2 = new DurableObjectEventBus({ namespace })
    const aliceStream = listener(new DurableObjectEventBus({ namespace }), { principal: alice })
    const bobStreams = [listener(bob1, { principal: bob }), listener(bob2, { principal: bob })]
    const waiting = listener(bob1, { session })
    const publisher = new DurableObjectEventBus({ namespace })

    const forAlice = updatedFor(alice, 'alice')
    const forBob = updatedFor(bob, 'bob')
    const forAll = updatedForAll('everyone')
    const signal = delivered(session, 'r-1')
    const events = [forAlice, forBob, forAll, signal]
    for (const event of events) await publisher.publish(event)
    // Published last: what else a subscriber would hear on its sockets arrives before these.
    const [aliceLast, bobLast, allLast, signalLast] = [
      updatedFor(alice, 'alice-last'),
      updatedFor(bob, 'bob-last'),
      updatedForAll('everyone-last'),
      delivered(session, 'r-last'),
    ]
    for (const event of [aliceLast, bobLast, allLast, signalLast]) await publisher.publish(event)
    const ours = [...events, aliceLast, bobLast, allLast, signalLast]

    await aliceStream.heard.all(aliceLast, allLast)
    expect(only(aliceStream.heard.events, ours)).toEqual(
      expect.arrayContaining([forAlice, forAll, aliceLast, allLast])
    )
    expect(only(aliceStream.heard.events, ours)).toHaveLength(4)
    for (const bobStream of bobStreams) {
      await bobStream.heard.all(bobLast, allLast)
      expect(only(bobStream.heard.events, ours)).toEqual(
        expect.arrayContaining([forBob, forAll, bobLast, allLast])
      )
      expect(only(bobStream.heard.events, ours)).toHaveLength(4)
    }
    await waiting.heard.all(signalLast)
    expect(only(waiting.heard.events, ours)).toEqual([signal, signalLast])
    // Alice's object heard her events, and nobody else's.
    await aliceObject.until(aliceLast)
    expect(aliceObject.heard.events).toEqual([forAlice, aliceLast])

    for (const { stop } of [aliceStream, ...bobStreams, waiting]) stop()
    aliceObject.socket.close(1000)
  })

  it('gives a subscriber without interest every event, each once', async () => {
    const bus = new DurableObjectEventBus({ namespace })
    const everything = listener(bus)
    const [principal, session] = [fresh(), fresh()]
    const events = [
      updatedFor(principal, 'keyed'),
      updatedForAll('broadcast'),
      delivered(session, 'r-1'),
    ]
    const publisher = new DurableObjectEventBus({ namespace })
    for (const event of events) await publisher.publish(event)

    await everything.heard.all(...events)
    expect(only(everything.heard.events, events)).toHaveLength(events.length)
    everything.stop()
  })

  it('relays a keyed event to one shard, where only sockets hearing keyed events get it', async () => {
    const principal = fresh()
    const object = await keyedObject({ principal }, DEFAULT_SHARDS)
    const since = Date.now()
    const keyedSocket = await rawSubscriber(shardName(object.shard), since, ['keyed'])
    const broadcastSocket = await rawSubscriber(shardName(object.shard), since, ['broadcast'])

    const event = updatedFor(principal, 'relayed')
    expect((await publishTo(object.name, 'keyed', event, [object.shard])).status).toBe(204)
    const forAll = updatedForAll('after-the-relay')
    expect((await publishTo(shardName(object.shard), 'broadcast', forAll)).status).toBe(204)

    await keyedSocket.until(event)
    expect(only(await broadcastSocket.until(forAll), [event])).toEqual([])
    // Replayed later, each channel again only to the sockets that hear it.
    const late = await rawSubscriber(shardName(object.shard), since, ['keyed'])
    await late.until(event)
    // A keyed event after everything else: a wrongly replayed `forAll` would have come before it.
    const sentinel = updatedFor(principal, 'after-the-replay')
    expect((await publishTo(shardName(object.shard), 'keyed', sentinel)).status).toBe(204)
    await late.until(sentinel)
    expect(late.heard.events).not.toContainEqual(forAll)
    for (const socket of [keyedSocket, broadcastSocket, late]) socket.socket.close(1000)
  })

  it('refuses an event on the channel that is not its own, and malformed channels and relays', async () => {
    const principal = fresh()
    const { name } = await keyedObject({ principal }, DEFAULT_SHARDS)
    const refusals: Array<[string, Parameters<typeof publishTo>[1], ServerEvent, number[]]> = [
      [shardName(0), 'broadcast', updatedFor(principal, 'keyed-as-broadcast'), []],
      [name, 'keyed', updatedForAll('broadcast-as-keyed'), []],
      [name, 'keyed', { kind: 'tools_list_changed' }, []],
      [shardName(0), 'broadcast', { kind: 'tools_list_changed' }, [64]],
      [shardName(0), 'broadcast', { kind: 'tools_list_changed' }, [1, 1]],
    ]
    for (const [object, channel, event, relay] of refusals) {
      expect((await publishTo(object, channel, event, relay)).status).toBe(400)
    }
    const unknown = await publishTo(shardName(0), 'everything' as 'keyed', {
      kind: 'tools_list_changed',
    })
    expect(unknown.status).toBe(400)
    for (const hear of [[], ['everything'], ['keyed', 'keyed']] as BusChannel[][]) {
      const response = await stubOf(namespace, name).fetch(subscribeUrl(0, hear), {
        headers: { upgrade: 'websocket' },
      })
      expect(response.status).toBe(400)
    }
  })

  it('carries the event of a principal whose subject is as long as OpenID Connect allows', async () => {
    const principal = JSON.stringify(['https://issuer.example', `${fresh()}`.padEnd(255, 's')])
    const { name } = await keyedObject({ principal }, DEFAULT_SHARDS)
    const object = await rawSubscriber(name, Date.now(), ['keyed'])
    const event = updatedFor(principal, 'long-subject')
    await new DurableObjectEventBus({ namespace }).publish(event)
    expect(await object.until(event)).toEqual([])
    object.socket.close(1000)
  })

  it('names objects by a digest: no principal or session appears in a name', async () => {
    const principal = JSON.stringify(['https://issuer.example', 'ada@example.com'])
    const forPrincipal = await keyedObject({ principal }, DEFAULT_SHARDS)
    const forSession = await keyedObject({ session: principal }, DEFAULT_SHARDS)
    expect(forPrincipal.name).toMatch(/^principal-[A-Za-z0-9_-]{43}$/)
    expect(forSession.name).toMatch(/^session-[A-Za-z0-9_-]{43}$/)
    expect(forPrincipal.name).not.toContain('ada')
    expect(forPrincipal.name.slice('principal-'.length)).not.toBe(
      forSession.name.slice('session-'.length)
    )
  })
})

describe('when the object cannot be reached', () => {
  it('delivers on this isolate to the subscribers that need the event', async () => {
    const bus = new DurableObjectEventBus({ namespace: unreachableNamespace })
    const alice = listener(bus, { principal: 'alice' })
    const waiting = listener(bus, { session: 's-1' })
    const everything = listener(bus)
    const events: ServerEvent[] = [
      { kind: 'tools_list_changed' },
      { kind: 'resources_list_changed', principal: 'bob' },
      { kind: 'resources_list_changed', principal: 'alice' },
      delivered('s-2', 'r'),
      delivered('s-1', 'r'),
    ]
    for (const event of events) await bus.publish(event)
    for (const { stop } of [alice, waiting, everything]) stop()
    expect(alice.heard.events).toEqual([events[0], events[2]])
    expect(waiting.heard.events).toEqual([events[4]])
    expect(everything.heard.events).toEqual(events)
  })
})
