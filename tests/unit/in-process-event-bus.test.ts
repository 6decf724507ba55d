/**
 * @module tests/unit/in-process-event-bus
 * The in-process bus indexes its listeners by what they listen for: each event reaches exactly the
 * listeners `concerns` says need it (every interest against every kind of event, principals and
 * sessions matching and not), each once; removing a listener leaves no index entry behind; one
 * listener that throws keeps the event from no other.
 */
import { describe, expect, it } from 'vitest'
import {
  InProcessEventBus,
  concerns,
  type EventInterest,
  type ServerEvent,
} from '../../src/mcp/event-bus.ts'

const INTERESTS: Array<EventInterest | undefined> = [
  undefined,
  {},
  { principal: 'alice' },
  { principal: 'bob' },
  { session: 's1' },
  { session: 's2' },
  { principal: 'alice', session: 's1' },
  { principal: 'bob', session: 's1' },
]

const EVENTS: ServerEvent[] = [
  { kind: 'tools_list_changed' },
  { kind: 'prompts_list_changed' },
  { kind: 'resources_list_changed' },
  { kind: 'resources_list_changed', principal: 'alice' },
  { kind: 'resources_list_changed', principal: 'carol' },
  { kind: 'resource_updated', uri: 'notes://n/1' },
  { kind: 'resource_updated', uri: 'notes://n/1', principal: 'bob' },
  { kind: 'input_delivered', session: 's1', requestId: '7' },
  { kind: 'request_cancelled', session: 's2', requestId: '7' },
  { kind: 'stream_appended', session: 's3', stream: 'c1' },
]

describe('InProcessEventBus', () => {
  it('delivers each event exactly to the listeners whose interest concerns it, once each', () => {
    const bus = new InProcessEventBus()
    const heard = INTERESTS.map(() => [] as ServerEvent[])
    INTERESTS.forEach((interest, index) =>
      bus.subscribe((event) => heard[index]?.push(event), interest)
    )
    for (const event of EVENTS) bus.publish(event)
    INTERESTS.forEach((interest, index) => {
      expect(heard[index], JSON.stringify(interest)).toEqual(
        EVENTS.filter((event) => concerns(interest, event))
      )
    })
    // A principal-only listener does not hear another session's signal; a session-only one no list.
    expect(heard[2]).not.toContainEqual(EVENTS[7])
    expect(heard[4]).toEqual([EVENTS[7]])
  })

  it('leaves no index entry behind once every listener is removed, and removing twice is harmless', () => {
    const bus = new InProcessEventBus()
    const removals = INTERESTS.map((interest) => bus.subscribe(() => {}, interest))
    expect(bus.size).toEqual({ listeners: INTERESTS.length, principals: 2, sessions: 2 })
    for (const remove of removals) {
      remove()
      remove()
    }
    expect(bus.size).toEqual({ listeners: 0, principals: 0, sessions: 0 })
    let calls = 0
    bus.subscribe(() => (calls += 1), { session: 's9' })
    for (const event of EVENTS) bus.publish(event)
    expect(calls).toBe(0)
  })

  it('counts the same function subscribed twice as two listeners, removed one at a time', () => {
    const bus = new InProcessEventBus()
    let calls = 0
    const listener = () => void (calls += 1)
    const first = bus.subscribe(listener, { principal: 'alice' })
    bus.subscribe(listener, { principal: 'alice' })
    bus.publish({ kind: 'tools_list_changed' })
    expect(calls).toBe(2)
    first()
    bus.publish({ kind: 'resources_list_changed', principal: 'alice' })
    expect(calls).toBe(3)
  })

  it('keeps an event from no listener when another throws', () => {
    const bus = new InProcessEventBus()
    const heard: string[] = []
    bus.subscribe(() => heard.push('before'), { principal: 'alice' })
    bus.subscribe(
      () => {
        throw new Error('broken stream')
      },
      { principal: 'alice' }
    )
    bus.subscribe(() => heard.push('after'), { principal: 'alice' })
    bus.subscribe(() => heard.push('everything'))
    bus.publish({ kind: 'resources_list_changed', principal: 'alice' })
    expect(heard.sort()).toEqual(['after', 'before', 'everything'])
  })
})
