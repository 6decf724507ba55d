/**
 * The Durable Object event bus inside workerd, across isolates: the notes Worker under test (the
 * tests' own isolate) and `notes-replica` (another isolate of the same Worker), the conformance
 * fixture as `fixture-a` and `fixture-b` (two more isolates, where a waiting 2025 flow never checks
 * the store by itself), all on real Durable Objects and a real local D1 (see vitest.config.ts). Each
 * test sends a request to one isolate and waits, by the next message of a stream, for its effect in
 * another: what only the `EventBusObject` carries. No wait outlasts the test: each is bounded by
 * `within`, naming what never came (an in-process bus, or none, carries nothing across requests
 * here, so nothing may be waited for unbounded). Where order can show a missing event at once, a
 * later event must come on the same socket after it: a stream's test makes a second change, through
 * the stream's own isolate, after the one that must cross, and the object's replay and relay are
 * followed by an event published later to the same socket; an event that went astray is then seen
 * missing when the later one comes first. Then the object itself, through its namespace:
 * validation, replay to a socket that connects late, relay between shards, and subscribers that
 * send; and the bus client's own guarantees.
 */
import type { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { noteUri } from '../../src/notes/format.ts'
import { DEFAULT_SHARDS, DurableObjectEventBus, type BusNamespace } from 'stateless-mcp/workers'
import { publishUrl, shardName, subscribeUrl } from '../../src/mcp/workers/event-bus.ts'
import { stubOf } from '../../src/mcp/workers/durable-objects.ts'
import { namespace, publishTo, rawSubscriber, unreachableNamespace } from './bus-sockets.ts'
import { fixtureA, fixtureB, notesA, notesB, type Fetcher } from './isolates.ts'
import {
  LegacySession,
  SseReaders,
  startSession,
  type SseReader,
} from '../support/legacy-request.ts'
import {
  MCP_URL,
  expectResult,
  mcpInit,
  type JsonObject,
  type McpRequestOptions,
} from '../support/mcp-request.ts'
import type { ServerEvent } from '../../src/mcp/event-bus.ts'
import { within } from '../support/within.ts'

/**
 * One isolate as the in-process 2025 helpers see an app: they only call `request(url, init)`, which
 * here goes to that isolate's Worker through its binding.
 */
function isolate(fetcher: Fetcher): Hono {
  return { request: (url: string, init?: RequestInit) => fetcher.fetch(url, init) } as Hono
}

function post(target: Fetcher, method: string, options: McpRequestOptions = {}) {
  return target.fetch(new Request(MCP_URL, mcpInit(method, options)))
}

async function callTool(target: Fetcher, name: string, args: JsonObject): Promise<JsonObject> {
  const result = await expectResult(
    await post(target, 'tools/call', { params: { name, arguments: args } })
  )
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy()
  return result
}

async function createNote(target: Fetcher, title: string) {
  const result = await callTool(target, 'create_note', { title, body: 'body', tags: [] })
  return result.structuredContent.note as { id: string; version: number }
}

/** The same session, its requests sent to another isolate. */
function onIsolate(session: LegacySession, app: Hono): LegacySession {
  return new LegacySession(app, session.id, session.protocolVersion, session.headers)
}

/** The next message of `stream`, or a failure naming `what` never came. */
function nextOf(stream: SseReader, what: string): Promise<JsonObject | undefined> {
  return within(stream.next(), what)
}

/** Opens a listen stream on `target` for updates of `uris`, past its acknowledgment. */
async function listenFor(target: Fetcher, id: string, uris: string[]) {
  const listen = streams.open(
    await post(target, 'subscriptions/listen', {
      id,
      params: { notifications: { resourceSubscriptions: uris } },
    })
  )
  expect((await nextOf(listen, 'the acknowledgment'))?.method).toBe(
    'notifications/subscriptions/acknowledged'
  )
  return listen
}

async function updateNote(target: Fetcher, note: { id: string; version: number }, body: string) {
  await callTool(target, 'update_note', { id: note.id, expectedVersion: note.version, body })
}

const updatedOf = (uri: string, subscriptionId: string) => ({
  jsonrpc: '2.0',
  method: 'notifications/resources/updated',
  params: { uri, _meta: { 'io.modelcontextprotocol/subscriptionId': subscriptionId } },
})

/** The fixture's form elicitation: one server→client request, then the result. */
const ELICITATION = { name: 'test_elicitation', arguments: { message: 'Who are you?' } }

const streams = new SseReaders()
afterEach(() => streams.cancelAll())

/** A form-capable 2025 session in fixture-a, and its `test_elicitation` call (request `id`). */
async function elicitingFlow(id: string) {
  const { session } = await startSession(isolate(fixtureA), { capabilities: { elicitation: {} } })
  const flow = streams.open(await session.request('tools/call', ELICITATION, { id }))
  return { session, flow }
}

/** `person`'s answer to the fixture's question: accepted, with a user name and an email. */
const answerOf = (person: string) => ({
  action: 'accept',
  content: { username: person, email: `${person}@example.com` },
})

/** `message` is the result of the call `id`, reporting the answer of `person`. */
function expectAnsweredBy(message: JsonObject | undefined, id: string, person: string): void {
  expect(message).toMatchObject({ jsonrpc: '2.0', id })
  expect(message!.result.content[0].text).toMatch(new RegExp(`^User response: .*accept.*${person}`))
}

describe('events cross isolates through the EventBusObject', () => {
  it.each([
    {
      test: 'a listen stream held by one isolate hears a note changed through another',
      streamOn: notesA,
      elsewhere: notesB,
      createdOn: [notesA, notesA],
      listenId: 'listen',
      subscribedLocalFirst: false,
    },
    {
      test: 'a listen stream hears changes made through its own isolate and another, in their order',
      streamOn: notesB,
      elsewhere: notesA,
      createdOn: [notesA, notesB],
      listenId: 'both',
      subscribedLocalFirst: true,
    },
  ])('$test', async ({ streamOn, elsewhere, createdOn, listenId, subscribedLocalFirst }) => {
    const crossing = await createNote(createdOn[0]!, 'Changed first, elsewhere')
    const local = await createNote(createdOn[1]!, 'Changed second, where the stream is')
    const uris = [noteUri(crossing.id), noteUri(local.id)]
    const listen = await listenFor(streamOn, listenId, subscribedLocalFirst ? uris.reverse() : uris)

    await updateNote(elsewhere, crossing, 'changed through the other isolate')
    // Changed later through the stream's own isolate: had the first change not crossed, this
    // one would be heard first.
    await updateNote(streamOn, local, 'changed where the stream is')

    expect(await nextOf(listen, 'the change made through the other isolate')).toEqual(
      updatedOf(noteUri(crossing.id), listenId)
    )
    expect(await nextOf(listen, 'the change made here')).toEqual(
      updatedOf(noteUri(local.id), listenId)
    )
  })

  it("a 2025 session's GET stream on one isolate hears an update of its note made through another", async () => {
    const note = await createNote(notesB, 'Watched from a 2025 client')
    const after = await createNote(notesA, 'Watched too, changed afterwards')
    const { session } = await startSession(isolate(notesA))
    for (const watched of [note, after]) {
      const subscribed = await session.request('resources/subscribe', { uri: noteUri(watched.id) })
      expect(subscribed.status).toBe(200)
    }
    const stream = streams.open(await session.get())

    await updateNote(notesB, note, 'changed on the replica')
    // Changed later through the stream's own isolate: had the first change not crossed, this
    // one would be heard first.
    await updateNote(notesA, after, 'changed where the stream is')

    // The creations may be replayed first, as list changes: they happened just before the stream.
    const updates: JsonObject[] = []
    while (updates.length < 2) {
      const message = await nextOf(stream, 'the changes made through both isolates')
      expect(message, 'the GET stream ended').toBeDefined()
      if (message!.method !== 'notifications/resources/list_changed') updates.push(message!)
    }
    expect(updates).toEqual(
      [note, after].map((changed) => ({
        jsonrpc: '2.0',
        method: 'notifications/resources/updated',
        params: { uri: noteUri(changed.id) },
      }))
    )
  })

  it('a 2025 answer POSTed to one isolate completes the flow waiting in another, by the bus alone', async () => {
    const { session, flow } = await elicitingFlow('e')
    const ask = (await nextOf(flow, 'the question')) as JsonObject
    expect(ask).toMatchObject({ method: 'elicitation/create', id: expect.stringMatching(/^s2c-/) })

    const answered = await onIsolate(session, isolate(fixtureB)).answer(ask.id, answerOf('ada'))
    expect(answered.status).toBe(202)

    // fixture-a never checks the store by itself: only the bus can have woken the flow.
    const result = await nextOf(
      flow,
      'the result of the flow, woken in fixture-a by the answer given to fixture-b'
    )
    expectAnsweredBy(result, 'e', 'ada')
  })

  it('a 2025 call whose stream dropped in one isolate is resumed in another: Last-Event-ID replays the question and brings the result', async () => {
    const { session, flow } = await elicitingFlow('r')
    const ask = (await nextOf(flow, 'the question')) as JsonObject
    const [priming] = flow.ids as [string]
    await flow.cancel()

    const elsewhere = onIsolate(session, isolate(fixtureB))
    const resumed = streams.open(await elsewhere.get({ 'last-event-id': priming }))
    expect(await nextOf(resumed, 'the question again, from the store')).toStrictEqual(ask)
    const answered = await elsewhere.answer(ask.id, answerOf('grace'))
    expect(answered.status).toBe(202)
    // Driven on in fixture-a, or taken over once its lease ran out if the drop ended it there.
    expectAnsweredBy(await nextOf(resumed, 'the result on the resumed stream'), 'r', 'grace')
  })

  it('a cancellation POSTed to one isolate ends the 2025 request running in another', async () => {
    const { session, flow } = await elicitingFlow('c')
    expect((await nextOf(flow, 'the question'))?.method).toBe('elicitation/create')

    const cancelled = await onIsolate(session, isolate(fixtureB)).notify(
      'notifications/cancelled',
      { requestId: 'c' }
    )
    expect(cancelled.status).toBe(202)

    // A cancelled 2025 request gets no response: its stream just ends.
    expect(
      await within(flow.rest(), 'the end of the flow in fixture-a cancelled through fixture-b')
    ).toEqual([])
  })
})

/** Publishes `event` to `shard`, relayed to every other shard, as the bus publishes a broadcast. */
function publish(shard: number, event: unknown, shards = DEFAULT_SHARDS) {
  const peers = Array.from({ length: shards }, (_, index) => index).filter((i) => i !== shard)
  return publishTo(shardName(shard), 'broadcast', event, peers)
}

describe('EventBusObject', () => {
  const updated = (uri: string): ServerEvent => ({ kind: 'resource_updated', uri })

  it('replays to a socket that connects after an event what arrived since it started', async () => {
    const since = Date.now()
    expect((await publish(0, updated('test://early'), 1)).status).toBe(204)
    const late = await rawSubscriber(shardName(0), since)
    // Published once the socket is open, so after the replay its opening sent.
    const after = updated('test://after-the-replay')
    expect((await publish(0, after, 1)).status).toBe(204)
    expect(await within(late.until(after), 'the event after the replay')).toContainEqual(
      updated('test://early')
    )
    late.socket.close(1000)
  })

  it('relays an event published to one shard to the sockets of the others', async () => {
    const since = Date.now()
    const far = await rawSubscriber(shardName(DEFAULT_SHARDS - 1), since)
    expect((await publish(0, updated('test://relayed'))).status).toBe(204)
    // Published to the far shard itself once the relay was answered (its 204 waits for the relay).
    const after = updated('test://after-the-relay')
    expect((await publishTo(shardName(DEFAULT_SHARDS - 1), 'broadcast', after)).status).toBe(204)
    expect(await within(far.until(after), 'the event after the relay')).toContainEqual(
      updated('test://relayed')
    )
    far.socket.close(1000)
  })

  it('refuses what is not an event of the bus, and does not relay or keep it', async () => {
    const since = Date.now()
    const refused = [
      'not json',
      { kind: 'tools_list_changed', extra: true },
      { kind: 'input_delivered', session: '', requestId: 'r' },
      { kind: 'resource_updated', uri: 'x'.repeat(3000) },
      { kind: 'something_else' },
    ]
    for (const body of refused) expect((await publish(1, body)).status).toBe(400)
    expect((await publishTo(shardName(2), 'broadcast', '{}')).status).toBe(400)
    // Replayed from before the refusals, the subscriber hears none of them.
    const subscriber = await rawSubscriber(shardName(1), since)
    expect((await publish(1, { kind: 'tools_list_changed' })).status).toBe(204)
    const before = await within(
      subscriber.until({ kind: 'tools_list_changed' }),
      'the event after the refusals'
    )
    for (const body of refused) expect(before).not.toContainEqual(body)
    subscriber.socket.close(1000)
  })

  it('answers 426 to a subscription that is not a WebSocket upgrade, 404 elsewhere', async () => {
    const shard = stubOf(namespace, shardName(0))
    expect((await shard.fetch(subscribeUrl(Date.now(), ['broadcast']))).status).toBe(426)
    expect((await shard.fetch(publishUrl('broadcast'))).status).toBe(404)
  })

  it('closes a subscriber that sends', async () => {
    const subscriber = await rawSubscriber(shardName(0), Date.now())
    subscriber.socket.send('hello')
    await within(subscriber.closed, 'the object to close a subscriber that sent')
  })
})

describe('DurableObjectEventBus', () => {
  it('delivers an event published through one bus to the listeners of another', async () => {
    const publisher = new DurableObjectEventBus({ namespace })
    const subscriber = new DurableObjectEventBus({ namespace })
    const heard = new Promise<ServerEvent>((resolve) => {
      const stop = subscriber.subscribe((event) => {
        if (event.kind === 'resource_updated' && event.uri === 'test://bus') {
          stop()
          resolve(event)
        }
      })
    })
    // Published at once, before the subscription has connected: the shard replays it.
    await publisher.publish({ kind: 'resource_updated', uri: 'test://bus' })
    expect(await within(heard, 'the event published through the other bus')).toEqual({
      kind: 'resource_updated',
      uri: 'test://bus',
    })
  })

  it('keeps delivering to the other listeners when one throws', async () => {
    const bus = new DurableObjectEventBus({ namespace })
    const stopThrowing = bus.subscribe(() => {
      throw new Error('broken listener')
    })
    const heard = new Promise<ServerEvent>((resolve) => {
      const stop = bus.subscribe((event) => {
        if (event.kind === 'prompts_list_changed') {
          stop()
          resolve(event)
        }
      })
    })
    await bus.publish({ kind: 'prompts_list_changed' })
    expect(await within(heard, 'the event, past the listener that throws')).toEqual({
      kind: 'prompts_list_changed',
    })
    stopThrowing()
  })

  it('delivers on this isolate and logs when the object cannot be reached', async () => {
    const warnings: string[] = []
    const bus = new DurableObjectEventBus({
      namespace: unreachableNamespace,
      logger: { warn: (message) => warnings.push(message), error: () => {} },
    })
    const heard: ServerEvent[] = []
    const stop = bus.subscribe((event) => heard.push(event))
    await bus.publish({ kind: 'tools_list_changed' })
    stop()
    expect(heard).toEqual([{ kind: 'tools_list_changed' }])
    expect(warnings).toContain('event fan-out failed; delivered on this isolate only')
  })

  it('refuses a binding that is not a namespace and shard counts out of range', () => {
    expect(() => new DurableObjectEventBus({ namespace: {} as BusNamespace })).toThrow(TypeError)
    for (const shards of [0, 1.5, 65]) {
      expect(() => new DurableObjectEventBus({ namespace, shards })).toThrow(RangeError)
    }
  })
})
