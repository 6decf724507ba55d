/**
 * @module tests/workers/bus-sockets
 * The Durable Object event bus seen from outside, for the workerd tests: a raw subscriber socket on
 * one named object (what it hears, and a wait for one event with what came before it on that socket),
 * a raw publication to one object, a listener of a `DurableObjectEventBus` subscription that
 * records what it hears, and a namespace whose object cannot be reached. Every wait is for an event;
 * a test shows that something was *not* heard by waiting for one published after it that must
 * arrive on the same socket.
 */
import { env } from 'cloudflare:test'
import type { ServerEvent } from '../../src/mcp/event-bus.ts'
import { EVENT_BUS_BINDING, type BusNamespace, type BusSocket } from 'stateless-mcp/workers'
import { publishUrl, subscribeUrl, type BusChannel } from '../../src/mcp/workers/event-bus.ts'
import { stubOf } from '../../src/mcp/workers/durable-objects.ts'

export const namespace = env[EVENT_BUS_BINDING] as BusNamespace

/** A namespace whose object cannot be reached: every fetch of it throws, as when it is overloaded. */
export const unreachableNamespace: BusNamespace = {
  idFromName: (name) => name,
  get: () => ({
    fetch: async () => {
      throw new Error('Durable Object is overloaded')
    },
  }),
}

const same = (a: unknown) => (b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** What a listener or socket heard, and waits for what it has not heard yet. */
export class Heard {
  readonly events: unknown[] = []
  readonly #waiters: Array<() => void> = []

  add(event: unknown): void {
    this.events.push(event)
    this.#waiters.splice(0).forEach((wake) => wake())
  }

  /** Resolves once every one of `events` was heard. */
  async all(...events: ServerEvent[]): Promise<void> {
    while (!events.every((event) => this.events.some(same(event)))) {
      await new Promise<void>((wake) => this.#waiters.push(wake))
    }
  }

  /** Resolves once `event` was heard, with what was heard before it. */
  async until(event: ServerEvent): Promise<unknown[]> {
    await this.all(event)
    return this.events.slice(0, this.events.findIndex(same(event)))
  }
}

/** Opens a raw subscriber socket on the object `name`, hearing `hear`, replaying from `since`. */
export async function rawSubscriber(
  name: string,
  since: number,
  hear: readonly BusChannel[] = ['broadcast', 'keyed']
) {
  const response = await stubOf(namespace, name).fetch(subscribeUrl(since, hear), {
    headers: { upgrade: 'websocket' },
  })
  const socket = response.webSocket as BusSocket
  socket.accept()
  const heard = new Heard()
  let closed: (() => void) | undefined
  const closedOnce = new Promise<void>((resolve) => (closed = resolve))
  socket.addEventListener('message', ({ data }) => heard.add(JSON.parse(String(data))))
  socket.addEventListener('close', () => closed?.())
  return {
    socket,
    heard,
    closed: closedOnce,
    /**
     * Resolves once `event` was heard, with what was heard before it (an event of another test from
     * just before `since` may be replayed too: objects reach back by the allowed clock skew).
     */
    until: (event: ServerEvent) => heard.until(event),
  }
}

/** Publishes `event` (or a raw body) to the object `name` on `channel`, relayed to `relay`. */
export function publishTo(
  name: string,
  channel: BusChannel,
  event: unknown,
  relay: readonly number[] = []
) {
  return stubOf(namespace, name).fetch(publishUrl(channel, relay), {
    method: 'POST',
    body: typeof event === 'string' ? event : JSON.stringify(event),
  })
}
