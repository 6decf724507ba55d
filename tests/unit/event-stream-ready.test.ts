/**
 * A held-open stream acknowledges only once its bus hears for it: on a bus whose subscription
 * takes a round trip (Redis: `subscribe` returns `ready`), the opening messages wait for `ready`,
 * and an event published between the subscription and `ready` still reaches the client, after the
 * opening. On a bus without `ready` the opening goes out at once, as before.
 */
import { describe, expect, it } from 'vitest'
import {
  InProcessEventBus,
  type EventBus,
  type EventInterest,
  type EventListener,
  type ServerEvent,
  type Unsubscribe,
} from '../../src/mcp/event-bus.ts'
import { eventStream } from '../../src/mcp/event-stream.ts'
import { parseSse } from '../support/mcp-request.ts'

/** The in-process bus, whose subscriptions are ready only when the test says so. */
class SlowSubscriptions implements EventBus {
  readonly #bus = new InProcessEventBus()
  readonly #ready: Array<() => void> = []

  publish(event: ServerEvent): void {
    this.#bus.publish(event)
  }

  subscribe(listener: EventListener, interest?: EventInterest): Unsubscribe {
    const stop = this.#bus.subscribe(listener, interest)
    const ready = new Promise<void>((resolve) => this.#ready.push(resolve))
    return Object.assign(() => stop(), { ready })
  }

  /** Settles every subscription's `ready`. */
  settle(): void {
    for (const resolve of this.#ready.splice(0)) resolve()
  }
}

function stream(bus: EventBus, abort: AbortController): Response {
  return eventStream({
    bus,
    interest: { principal: 'ada' },
    signal: abort.signal,
    opening: [{ jsonrpc: '2.0', method: 'acknowledged' }],
    map: (event) => ({ jsonrpc: '2.0', method: event.kind }),
    logger: { warn: () => undefined, error: () => undefined },
    logFields: { stream: 'test' },
  })
}

/** Reads the stream until `count` messages arrived, then cancels it. */
async function messages(response: Response, count: number): Promise<string[]> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  try {
    for (;;) {
      const read = parseSse(text).map((message) => message.method as string)
      if (read.length >= count) return read
      const { value, done } = await reader.read()
      if (done) return read
      text += decoder.decode(value, { stream: true })
    }
  } finally {
    await reader.cancel()
  }
}

describe('a held-open stream on a bus whose subscription takes a round trip', () => {
  it('acknowledges once ready, and delivers what was published meanwhile after it', async () => {
    const bus = new SlowSubscriptions()
    const abort = new AbortController()
    const response = stream(bus, abort)
    const read = messages(response, 2)
    bus.publish({ kind: 'tools_list_changed' })
    let settled = false
    void read.then(() => (settled = true))
    // Everything here is in memory: once a macrotask has passed, every read that could happen has.
    await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toBe(false)
    bus.settle()
    expect(await read).toEqual(['acknowledged', 'tools_list_changed'])
    abort.abort()
  })

  it('acknowledges at once on a bus without ready', async () => {
    const abort = new AbortController()
    expect(await messages(stream(new InProcessEventBus(), abort), 1)).toEqual(['acknowledged'])
    abort.abort()
  })
})
