/**
 * What the engine's subscribers tell the event bus they need (`EventInterest`), on the in-process
 * bus, which keeps the promise strictly: it delivers each subscriber only what its interest names, as
 * every bus routing by key does (the Workers bus). A listen stream and a 2025 GET stream name the principal the handlers
 * tag their events with, so they still hear their notes change; a waiting 2025 flow and its request's
 * cancellation name their session, so an answer (the store checks turned off) and a cancellation
 * still reach them. In-process, on real in-memory SQLite, waits are the next SSE message.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { parseConfig } from '../../src/config.ts'
import {
  InProcessEventBus,
  type EventInterest,
  type EventListener,
} from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { noteUri } from '../../src/notes/format.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'
import { SseReaders, TEST_AUTH_ENV, bearer, startSession } from '../support/legacy-request.ts'
import { expectResult, postMcp, type JsonObject } from '../support/mcp-request.ts'

/** The in-process bus, keeping every interest named. */
class RecordingBus extends InProcessEventBus {
  readonly interests: Array<EventInterest | undefined> = []

  override subscribe(listener: EventListener, interest?: EventInterest): () => void {
    this.interests.push(interest)
    return super.subscribe(listener, interest)
  }
}

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const { store, engineStore } = await sqliteStores()
const bus = new RecordingBus()
const app = createApp(parseConfig(TEST_AUTH_ENV), { store, engineStore, sealer, bus })
/** The conformance fixture without store checks: a 2025 answer can only arrive by the bus. */
const fixture = createFixtureApp(parseConfig({}), {
  sealer,
  bus,
  sessions: engineStore,
  answerPollMs: Infinity,
})
const principalOf = (subject: string) => tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, subject)

const streams = new SseReaders()
afterEach(() => streams.cancelAll())

async function createNote(
  subject: string,
  title: string
): Promise<{ id: string; version: number }> {
  const response = await postMcp(app, 'tools/call', {
    params: { name: 'create_note', arguments: { title, body: 'body', tags: [] } },
    headers: await bearer(subject),
  })
  const result = await expectResult(response)
  expect(result.isError).toBeFalsy()
  return result.structuredContent.note
}

const ELICITATION = { name: 'test_elicitation', arguments: { message: 'Who are you?' } }

describe('what subscribers tell the bus', () => {
  it("a listen stream names its caller's principal and hears that principal's changes", async () => {
    const listen = streams.open(
      await postMcp(app, 'subscriptions/listen', {
        id: 'listen',
        params: { notifications: { resourcesListChanged: true } },
        headers: await bearer('alice'),
      })
    )
    expect((await listen.next())?.method).toBe('notifications/subscriptions/acknowledged')
    expect(bus.interests).toContainEqual({ principal: principalOf('alice') })

    await createNote('alice', 'Heard by her stream')

    expect(await listen.next()).toMatchObject({ method: 'notifications/resources/list_changed' })
  })

  it("a 2025 GET stream names its session's principal and hears updates of its note", async () => {
    const note = await createNote('bob', 'Watched by a 2025 client')
    const { session } = await startSession(app, { headers: await bearer('bob') })
    const subscribed = await session.request('resources/subscribe', { uri: noteUri(note.id) })
    expect(subscribed.status).toBe(200)
    const stream = streams.open(await session.get())

    const update = await session.request(
      'tools/call',
      {
        name: 'update_note',
        arguments: { id: note.id, expectedVersion: note.version, body: 'changed' },
      },
      { id: 'update' }
    )
    expect((await expectResult(update, 'update')).isError).toBeFalsy()

    expect(bus.interests).toContainEqual({ principal: principalOf('bob') })
    expect(await stream.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: noteUri(note.id) },
    })
  })

  it('a waiting 2025 flow names its session and is woken by the answer', async () => {
    const before = bus.interests.length
    const { session } = await startSession(fixture, { capabilities: { elicitation: {} } })
    const flow = streams.open(await session.request('tools/call', ELICITATION, { id: 'e' }))
    const ask = (await flow.next()) as JsonObject
    expect(ask).toMatchObject({ method: 'elicitation/create' })
    // The request's cancellation, the wait for its answer and the session's end
    // (`legacy/session-end.ts`), each for the session alone.
    expect(bus.interests.slice(before)).toEqual([
      { session: expect.any(String) },
      { session: expect.any(String) },
      { session: expect.any(String) },
    ])

    const answered = await session.answer(ask.id, {
      action: 'accept',
      content: { username: 'ada', email: 'ada@example.com' },
    })
    expect(answered.status).toBe(202)

    const result = (await flow.next()) as JsonObject
    expect(result).toMatchObject({ jsonrpc: '2.0', id: 'e' })
    expect(result.result.content[0].text).toMatch(/^User response: .*accept.*ada/)
  })

  it('a 2025 request names its session and is ended by its cancellation', async () => {
    const { session } = await startSession(fixture, { capabilities: { elicitation: {} } })
    const flow = streams.open(await session.request('tools/call', ELICITATION, { id: 'c' }))
    expect((await flow.next())?.method).toBe('elicitation/create')

    const cancelled = await session.notify('notifications/cancelled', { requestId: 'c' })
    expect(cancelled.status).toBe(202)

    // A cancelled 2025 request gets no response: its stream just ends.
    expect(await flow.rest()).toEqual([])
  })
})
