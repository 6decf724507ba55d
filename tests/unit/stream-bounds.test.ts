/**
 * The memory a held-open stream may take, in-process on the notes app (real in-memory SQLite store,
 * in-process event bus): a `subscriptions/listen` stream and a 2025 GET stream nobody reads hold at
 * most their queue's bound and are dropped, with the reason logged, once they fall too far behind
 * (their bodies error, as the runtime then resets the connection; `stream-connections.test.ts` has
 * the sockets); a store lookup per event (the GET stream's subscription check) never piles up; a
 * client that reads, even in bursts, keeps its stream and every event in order; and 40 unread
 * streams × 2,000 events stay within {@link MEMORY_BOUND_BYTES} of heap and array buffers. Also the
 * size of a listen filter, and bounds that are not positive integers, refused at construction. The
 * bus delivers synchronously and handling an event takes no I/O (but the one store lookup), so every
 * event has been handled when `publish` returns (the memory is read once the microtasks it queued
 * have run, as the code before the bound needed): no check waits for time, and every read ends with
 * the stream (the server closed or dropped it).
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { createApp, notesServer } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { parseConfig } from '../../src/config.ts'
import { RecordingLogger } from '../support/recording-logger.ts'
import { DEFAULT_MAX_BACKLOG_EVENTS, DEFAULT_MAX_QUEUED_BYTES } from '../../src/mcp/event-stream.ts'
import { InProcessEventBus, type ServerEvent } from '../../src/mcp/event-bus.ts'
import { createMcpHandler, type McpHandlerOptions } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { META_SUBSCRIPTION_ID } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { MAX_LISTEN_URI_CHARS } from '../../src/mcp/wire.ts'
import { noteUri } from '../../src/notes/format.ts'
import { sseEvent } from '../../src/mcp/streaming.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { SseReader, startSession } from '../support/legacy-request.ts'
import { expectError, postMcp, type JsonObject } from '../support/mcp-request.ts'

const INVALID_PARAMS = -32602
/** More events than any stream may hold back: an unread stream must end before the last. */
const FLOOD = 2_000
/**
 * What 40 unread streams (20 listen, 20 GET) may add to the heap and array buffers after 2,000
 * events each (README "Limits"): their queues (16 KiB of messages each, plus the objects holding
 * them) come to about 2.7 MiB. Before the queues were bounded the same run added about 26 MiB.
 */
const MEMORY_BOUND_BYTES = 6 * 1024 * 1024
const ENDED = 'stream ended: the client fell too far behind'
/** What reading a dropped stream's body rejects with. */
const DROPPED = { name: 'StreamDroppedError' }

/** The engine's store, counting the GET stream's subscription lookups. */
class CountingStore extends SqliteEngineStore {
  subscriptionLookups = 0
  override isSubscribed(sid: string, uri: string): Promise<boolean> {
    this.subscriptionLookups += 1
    return super.isSubscribed(sid, uri)
  }
}

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const store = new CountingStore({ path: ':memory:' })
await store.migrate()
const notes = new SqliteNotesStore({ path: ':memory:' })
await notes.migrate()

/** A notes app of its own (bus, logger), so one test's streams never hear another's events. */
function notesApp() {
  const bus = new InProcessEventBus()
  const logger = new RecordingLogger()
  const app = createApp(parseConfig({}), {
    store: notes,
    engineStore: store,
    sealer,
    bus,
    logger,
  })
  const publish = (count: number, event: (index: number) => ServerEvent) => {
    for (let index = 0; index < count; index++) bus.publish(event(index))
  }
  return { app, bus, logger, publish }
}

const listChanged = (): ServerEvent => ({
  kind: 'resources_list_changed',
  principal: LOCAL_PRINCIPAL,
})

function listenFor(app: ReturnType<typeof notesApp>['app'], id: string, notifications: JsonObject) {
  return postMcp(app, 'subscriptions/listen', { id, params: { notifications } })
}

describe('an unread stream', () => {
  it('drops a listen stream that falls too far behind, having held at most its queue, and logs why', async () => {
    const { app, logger, publish } = notesApp()
    const response = await listenFor(app, 'behind', { resourcesListChanged: true })
    expect(response.status).toBe(200)

    publish(FLOOD, listChanged)
    expect(logger.warnings).toEqual([
      {
        message: ENDED,
        fields: {
          stream: 'listen',
          reason: 'backlog_full',
          backlogEvents: DEFAULT_MAX_BACKLOG_EVENTS,
          queuedBytes: expect.any(Number),
          maxBacklogEvents: DEFAULT_MAX_BACKLOG_EVENTS,
          maxQueuedBytes: DEFAULT_MAX_QUEUED_BYTES,
        },
      },
    ])

    // Held unread: the queue's bound, crossed by at most the one message that filled it.
    const notification = sseEvent({
      jsonrpc: '2.0',
      method: 'notifications/resources/list_changed',
      params: { _meta: { [META_SUBSCRIPTION_ID]: 'behind' } },
    })
    const held = logger.warnings[0]?.fields?.queuedBytes as number
    expect(held).toBeGreaterThan(DEFAULT_MAX_QUEUED_BYTES - notification.byteLength)
    expect(held).toBeLessThan(DEFAULT_MAX_QUEUED_BYTES + notification.byteLength)
    // Nothing of it is left to read: the body errors, and the runtime resets the connection.
    await expect(response.text()).rejects.toMatchObject(DROPPED)
  })

  it('drops a 2025 GET stream that falls too far behind, and logs its session', async () => {
    const { app, logger, publish } = notesApp()
    const { session } = await startSession(app)
    const response = await session.get()
    expect(response.status).toBe(200)

    publish(FLOOD, listChanged)
    expect(logger.warnings).toEqual([
      {
        message: ENDED,
        fields: expect.objectContaining({
          stream: 'get',
          session: expect.stringMatching(/^[A-Za-z0-9_-]{8}$/),
          reason: 'backlog_full',
        }),
      },
    ])
    await expect(response.text()).rejects.toMatchObject(DROPPED)
  })

  it('looks up no more subscriptions than it sends: a GET stream behind on lookups is dropped instead', async () => {
    const { app, logger, publish } = notesApp()
    const noteId = (
      await notes.create(LOCAL_PRINCIPAL, { title: 'Watched', body: '', tags: [] }, 1)
    ).id
    const { session } = await startSession(app)
    const subscribed = await session.request('resources/subscribe', { uri: noteUri(noteId) })
    expect(subscribed.status).toBe(200)
    const response = await session.get()
    const before = store.subscriptionLookups

    // Every event needs a store lookup, one at a time; they arrive faster than any lookup ends.
    publish(FLOOD, () => ({
      kind: 'resource_updated',
      uri: noteUri(noteId),
      principal: LOCAL_PRINCIPAL,
    }))
    expect(logger.warnings.map((warning) => warning.message)).toEqual([ENDED])
    expect(store.subscriptionLookups - before).toBe(1)
    await expect(response.text()).rejects.toMatchObject(DROPPED)
    expect(store.subscriptionLookups - before).toBe(1)
  })

  it('keeps the stream of a client that reads, in bursts, and sends every event in order', async () => {
    const { app, logger, publish } = notesApp()
    const uris = Array.from({ length: 100 }, (_, index) => `note://n_burst${String(index)}`)
    const stream = new SseReader(await listenFor(app, 'reader', { resourceSubscriptions: uris }))
    expect(await stream.next()).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
    })
    const burst = DEFAULT_MAX_BACKLOG_EVENTS // each burst alone fills the queue and most of the backlog
    for (let round = 0; round < 4; round++) {
      publish(burst, (index) => ({
        kind: 'resource_updated',
        uri: uris[index % uris.length] as string,
        principal: LOCAL_PRINCIPAL,
      }))
      for (let index = 0; index < burst; index++) {
        expect((await stream.next())?.params?.uri).toBe(uris[index % uris.length])
      }
    }
    expect(logger.warnings).toEqual([])
    await stream.cancel()
  })
})

describe('memory', () => {
  it(`keeps 40 unread streams × ${FLOOD} events within ${MEMORY_BOUND_BYTES / 2 ** 20} MiB`, async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const used = () => {
      gc()
      gc()
      const { heapUsed, external } = process.memoryUsage()
      return heapUsed + external // array buffers (the queued messages) count in `external`
    }
    const { app, logger, publish } = notesApp()
    const sessions = await Promise.all(
      Array.from({ length: 20 }, async () => (await startSession(app)).session)
    )
    const responses: Response[] = []
    const before = used()
    for (let index = 0; index < 20; index++) {
      responses.push(await listenFor(app, `memory-${index}`, { resourcesListChanged: true }))
    }
    for (const session of sessions) responses.push(await session.get())
    expect(responses.map((response) => response.status)).toEqual(Array(40).fill(200))

    publish(FLOOD, listChanged)
    // Handling an event takes no I/O: once the microtasks it queued have run (by the next turn of
    // the event loop), every stream has handled all of them.
    await new Promise((resolve) => setImmediate(resolve))
    const grown = used() - before
    expect(grown).toBeLessThan(MEMORY_BOUND_BYTES)
    // Each fell behind and was dropped.
    expect(logger.warnings).toHaveLength(40)
    for (const response of responses) await expect(response.text()).rejects.toMatchObject(DROPPED)
  })
})

describe('the size of a listen filter', () => {
  it('refuses URIs that total more than the bound with -32602', async () => {
    const { app } = notesApp()
    const uris = Array.from({ length: 100 }, (_, index) => `note://${'x'.repeat(200)}${index}`)
    const error = await expectError(await listenFor(app, 'big', { resourceSubscriptions: uris }), {
      status: 200,
      code: INVALID_PARAMS,
      id: 'big',
    })
    const total = uris.reduce((sum, uri) => sum + uri.length, 0)
    expect(error.message).toBe(
      `Invalid params: notifications.resourceSubscriptions: the URIs total ${total} characters; at most ${MAX_LISTEN_URI_CHARS} are accepted in one filter — watch fewer or shorter URIs`
    )
  })

  it('refuses one URI longer than an event can carry with -32602', async () => {
    const { app } = notesApp()
    const error = await expectError(
      await listenFor(app, 'long', { resourceSubscriptions: [`note://${'y'.repeat(2_100)}`] }),
      { status: 200, code: INVALID_PARAMS, id: 'long' }
    )
    expect(error.message).toMatch(
      /^Invalid params: notifications\.resourceSubscriptions\.0: a URI longer than 2048 characters is never notified/
    )
  })

  it('accepts a filter exactly at the bound and acknowledges it', async () => {
    const { app } = notesApp()
    const uris = Array.from(
      { length: 8 },
      (_, index) => `note://${String(index).padEnd(MAX_LISTEN_URI_CHARS / 8 - 7, 'z')}`
    )
    expect(uris.reduce((sum, uri) => sum + uri.length, 0)).toBe(MAX_LISTEN_URI_CHARS)
    const stream = new SseReader(await listenFor(app, 'edge', { resourceSubscriptions: uris }))
    expect(await stream.next()).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { resourceSubscriptions: uris } },
    })
    await stream.cancel()
  })
})

describe('the bounds of a stream', () => {
  it('are refused at construction when not positive integers, naming the option', () => {
    const bus = new InProcessEventBus()
    const deps = { notes, bus, baseUrl: 'http://127.0.0.1', now: Date.now }
    const build = (options: Pick<McpHandlerOptions<typeof deps>, 'listen' | 'legacy'>) => () =>
      createMcpHandler({ server: notesServer, deps, sealer, bus, ...options })
    const zero = build({ listen: { maxQueuedBytes: 0 } })
    expect(zero).toThrow(RangeError)
    expect(zero).toThrow('listen.maxQueuedBytes must be a whole number from 1 to 1073741824, got 0')
    const fraction = build({ legacy: { sessions: store, stream: { maxBacklogEvents: 1.5 } } })
    expect(fraction).toThrow(RangeError)
    expect(fraction).toThrow(
      'stream.maxBacklogEvents must be a whole number from 1 to 1073741824, got 1.5'
    )
  })
})
