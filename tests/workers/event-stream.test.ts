/**
 * The held-open stream (`src/mcp/event-stream.ts`) on workerd's own streams implementation, in the
 * tests' isolate with an in-process bus: when its end is given back to the caller (`onEnd`, where
 * the stream slot is released) depends on what the runtime's `ReadableStream` says of its queue
 * (`desiredSize` back at the high-water mark, `pull` after a read), so it is checked here as on
 * Node: a stream ended at shutdown gives its slot back once its end is read and not before, one
 * whose end nobody reads once the grace period drops it, and one that falls behind at once (the
 * body of either errors, on which Workers abort the response). Every wait is for the stream's own
 * end, bounded by `within`.
 */
import { describe, expect, it } from 'vitest'
import {
  DEFAULT_MAX_BACKLOG_EVENTS,
  eventStream,
  type EventStreamOptions,
} from '../../src/mcp/event-stream.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { parseSse } from '../support/mcp-request.ts'
import { within } from '../support/within.ts'

const PRINCIPAL = 'workerd'
const DROPPED = { name: 'StreamDroppedError' }

/** A stream of its own: its bus, shutdown, log, and whether (and when) its end was given back. */
function openStream(bounds: Partial<EventStreamOptions> = {}) {
  const bus = new InProcessEventBus()
  const shutdown = new AbortController()
  const warnings: string[] = []
  let ended = false
  let markEnded = () => {}
  const endedOnce = new Promise<void>((resolve) => (markEnded = resolve))
  const response = eventStream({
    bus,
    interest: { principal: PRINCIPAL },
    signal: new AbortController().signal,
    shutdown: shutdown.signal,
    opening: [{ jsonrpc: '2.0', method: 'opened' }],
    map: () => ({ jsonrpc: '2.0', method: 'changed' }),
    closing: () => ({ jsonrpc: '2.0', id: 1, result: {} }),
    logger: { warn: (message) => warnings.push(message), error() {} },
    logFields: { stream: 'test' },
    onEnd: () => {
      ended = true
      markEnded()
    },
    ...bounds,
  })
  return {
    response,
    bus,
    shutdown,
    warnings,
    ended: () => ended,
    endGivenBack: (what: string) => within(endedOnce, what),
    publish(count: number) {
      for (let index = 0; index < count; index++) {
        bus.publish({ kind: 'resources_list_changed', principal: PRINCIPAL })
      }
    },
  }
}

describe('a held-open stream on workerd', () => {
  it('gives its end back once the end of a stream ended at shutdown is read, not before', async () => {
    const stream = openStream()
    stream.shutdown.abort()
    expect(stream.ended()).toBe(false)
    const text = await stream.response.text()
    expect(parseSse(text)).toEqual([
      { jsonrpc: '2.0', method: 'opened' },
      { jsonrpc: '2.0', id: 1, result: {} },
    ])
    expect(stream.ended()).toBe(true)
    expect(stream.warnings).toEqual([])
  })

  it('drops a stream whose end nobody reads when the grace period runs out, and only then gives it back', async () => {
    const stream = openStream({ endGraceMs: 1 })
    stream.shutdown.abort()
    expect(stream.ended()).toBe(false)
    await stream.endGivenBack('the grace period to drop the unread end')
    expect(stream.warnings).toEqual(['stream ended: the client did not read the end of its stream'])
    await expect(stream.response.text()).rejects.toMatchObject(DROPPED)
  })

  it('drops a stream that falls too far behind at once, its body errored', async () => {
    const stream = openStream()
    stream.publish(DEFAULT_MAX_BACKLOG_EVENTS * 2)
    expect(stream.ended()).toBe(true)
    expect(stream.warnings).toEqual(['stream ended: the client fell too far behind'])
    await expect(stream.response.text()).rejects.toMatchObject(DROPPED)
  })
})
