/**
 * Two Worker instances on two workerd runtimes: the conformance fixture Worker under one `wrangler dev`
 * process, and a second instance of it (tests/workers/wrangler.fixture-peer.toml) under another, which
 * reaches the first one's `EventBusObject`s by script name through the dev registry they share — as
 * isolates on different machines of a deployment reach the same objects. A `subscriptions/listen`
 * stream held by either instance hears a list change published through the other: only the Durable
 * Object bus can carry it (a stream that never hears it fails the test at its timeout).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient } from '../../src/client/index.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

const PEER_CONFIG = join(import.meta.dirname, '../workers/wrangler.fixture-peer.toml')

let registry: string | undefined
const instances: Record<'first' | 'peer', WorkerProcess | undefined> = {
  first: undefined,
  peer: undefined,
}

beforeAll(async () => {
  registry = await mkdtemp(join(tmpdir(), 'notes-dev-registry-'))
  const vars = { STATE_KEYS: formatKeyRing([generateKey()]) }
  // The objects' Worker first: the peer connects its binding to it when it starts.
  instances.first = await startWorker({ vars, registry })
  instances.peer = await startWorker({ vars, registry, config: PEER_CONFIG })
}, 180_000)

afterAll(async () => {
  await Promise.all([instances.first?.stop(), instances.peer?.stop()])
  if (registry) await rm(registry, { recursive: true, force: true })
})

function url(name: 'first' | 'peer'): string {
  const instance = instances[name]
  if (!instance) throw new Error(`the ${name} Worker did not start`)
  return instance.url
}

/** One direction per kind of change, so neither test can hear the other's. */
const DIRECTIONS = [
  {
    listener: 'first',
    publisher: 'peer',
    filter: { toolsListChanged: true },
    trigger: 'test_trigger_tool_change',
    method: 'notifications/tools/list_changed',
  },
  {
    listener: 'peer',
    publisher: 'first',
    filter: { promptsListChanged: true },
    trigger: 'test_trigger_prompt_change',
    method: 'notifications/prompts/list_changed',
  },
] as const

describe('events between two Worker instances through the Durable Object bus', () => {
  it.each(DIRECTIONS)(
    'a listen stream on the $listener instance hears $method made through the $publisher one',
    async ({ listener, publisher, filter, trigger, method }) => {
      const stop = new AbortController()
      const acknowledged = Promise.withResolvers<void>()
      const heard = Promise.withResolvers<string>()
      const listening = new McpClient({ url: url(listener) }).listen(filter, {
        signal: stop.signal,
        onNotification: (notification) => {
          if (notification.method === 'notifications/subscriptions/acknowledged') {
            acknowledged.resolve()
          } else heard.resolve(notification.method)
        },
      })
      await acknowledged.promise
      const result = await new McpClient({ url: url(publisher) }).callTool(trigger, {})
      expect(result.isError).toBeFalsy()
      expect(await heard.promise).toBe(method)
      stop.abort()
      await listening
    }
  )
})
