/**
 * The GET notification stream of a 2025-era session, in-process on the notes app (real in-memory
 * SQLite store, in-process event bus) and on the conformance fixture, trying to break it: no session
 * (405 with Allow), a wrong Accept (406), an ended session (404); `notifications/resources/updated`
 * only for the session's own subscriptions and only for its principal's changes (another principal's
 * note cannot be subscribed to at all), and nothing after unsubscribe; list changes when the server
 * advertises them. Every wait is the next SSE message; to show that something was *not* sent, a later
 * change the stream must carry comes first instead.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { noteUri } from '../../src/notes/format.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'
import {
  SseReaders,
  TEST_AUTH_ENV,
  bearer,
  postLegacy,
  startSession,
  type LegacySession,
} from '../support/legacy-request.ts'
import { expectError, expectResult, requestApp } from '../support/mcp-request.ts'

const INVALID_REQUEST = -32600
const INVALID_PARAMS = -32602
const SESSION_NOT_FOUND = -32001

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const { store, engineStore } = await sqliteStores()
const bus = new InProcessEventBus()
const app = createApp(parseConfig({}), { store, engineStore, sealer, bus })
const authApp = createApp(parseConfig(TEST_AUTH_ENV), { store, engineStore, sealer, bus })

const streams = new SseReaders()
afterEach(() => streams.cancelAll())

async function seed(title: string, principal = LOCAL_PRINCIPAL): Promise<string> {
  return (await store.create(principal, { title, body: 'body', tags: [] }, Date.now())).id
}

/** Changes a note through the session's own tools/call update_note. */
async function touch(session: LegacySession, id: string, principal = LOCAL_PRINCIPAL) {
  const note = await store.get(principal, id)
  const response = await session.request(
    'tools/call',
    {
      name: 'update_note',
      arguments: { id, expectedVersion: note?.version, body: `changed ${note?.version}` },
    },
    { id: 'touch' }
  )
  expect((await expectResult(response, 'touch')).isError).not.toBe(true)
}

/** Creates a note through the session: a change of its principal's resource list. */
async function create(session: LegacySession, title: string) {
  const response = await session.request(
    'tools/call',
    { name: 'create_note', arguments: { title } },
    { id: 'create' }
  )
  expect((await expectResult(response, 'create')).isError).not.toBe(true)
}

const updated = (id: string) => ({
  jsonrpc: '2.0',
  method: 'notifications/resources/updated',
  params: { uri: noteUri(id) },
})
const listChanged = (kind: 'resources' | 'tools' | 'prompts') => ({
  jsonrpc: '2.0',
  method: `notifications/${kind}/list_changed`,
})

const subscribe = async (session: LegacySession, id: string, method = 'resources/subscribe') =>
  expect(
    await expectResult(await session.request(method, { uri: noteUri(id) }, { id: 'sub' }), 'sub')
  ).toStrictEqual({})

describe('the GET notification stream', () => {
  it('answers GET without a session id with 405 and Allow', async () => {
    const response = await requestApp(app, '/mcp', {
      method: 'GET',
      headers: { accept: 'text/event-stream' },
    })
    expect(response.headers.get('allow')).toMatch(/\bPOST\b/)
    await expectError(response, { status: 405, code: INVALID_REQUEST, id: null })
  })

  it.each(['application/json', 'text/html'])(
    'answers GET with Accept %s with 406',
    async (accept) => {
      const { session } = await startSession(app)
      await expectError(await session.get({ accept }), {
        status: 406,
        code: INVALID_REQUEST,
        id: null,
      })
    }
  )

  it('refuses a GET stream for a session that was ended', async () => {
    const { session } = await startSession(app)
    expect((await session.delete()).status).toBe(204)
    await expectError(await session.get(), { status: 404, code: SESSION_NOT_FOUND, id: null })
  })

  it('sends resources/updated only for subscribed URIs, and nothing after unsubscribe', async () => {
    const watched = await seed('Watched')
    const unwatched = await seed('Unwatched')
    const { session } = await startSession(app)
    await subscribe(session, watched)
    const stream = streams.open(await session.get())
    await touch(session, unwatched)
    await touch(session, watched)
    expect(await stream.next()).toStrictEqual(updated(watched))
    await subscribe(session, watched, 'resources/unsubscribe')
    await touch(session, watched)
    await create(session, 'New')
    expect(await stream.next()).toStrictEqual(listChanged('resources'))
  })

  it('keeps one session’s subscriptions from another session of the same principal', async () => {
    const watched = await seed('Watched by one')
    const { session: subscriber } = await startSession(app)
    const { session: other } = await startSession(app)
    await subscribe(subscriber, watched)
    const stream = streams.open(await other.get())
    await touch(subscriber, watched)
    await create(subscriber, 'Sentinel')
    expect(await stream.next()).toStrictEqual(listChanged('resources'))
  })

  it("sends a session only its own principal's changes, and refuses to subscribe it to another's note", async () => {
    const alicePrincipal = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice')
    const bobPrincipal = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'bob')
    const aliceNote = await seed('Alice', alicePrincipal)
    const bobNote = await seed('Bob', bobPrincipal)
    const { session: alice } = await startSession(authApp, { headers: await bearer('alice') })
    const { session: bob } = await startSession(authApp, { headers: await bearer('bob') })
    const refused = await bob.request('resources/subscribe', { uri: noteUri(aliceNote) }, { id: 2 })
    await expectError(refused, { status: 200, code: INVALID_PARAMS, id: 2 })
    await subscribe(bob, bobNote)
    const stream = streams.open(await bob.get())
    await touch(alice, aliceNote, alicePrincipal)
    await create(alice, 'Alice again')
    await touch(bob, bobNote, bobPrincipal)
    expect(await stream.next()).toStrictEqual(updated(bobNote))
  })

  it('sends tools and prompts list changes when the server advertises them (fixture triggers)', async () => {
    const fixture = createFixtureApp(parseConfig({}), { sealer, bus, sessions: engineStore })
    const { session } = await startSession(fixture)
    const stream = streams.open(await session.get())
    for (const name of ['test_trigger_tool_change', 'test_trigger_prompt_change']) {
      await expectResult(await session.request('tools/call', { name }, { id: 1 }))
    }
    expect(await stream.next()).toStrictEqual(listChanged('tools'))
    expect(await stream.next()).toStrictEqual(listChanged('prompts'))
  })

  it('sends no tools or prompts list changes when the server does not advertise them', async () => {
    const { session } = await startSession(app)
    const stream = streams.open(await session.get())
    bus.publish({ kind: 'tools_list_changed' })
    bus.publish({ kind: 'prompts_list_changed' })
    await create(session, 'Sentinel')
    expect(await stream.next()).toStrictEqual(listChanged('resources'))
  })

  it('answers a JSON-RPC request without a session on the notes app with 400', async () => {
    const response = await postLegacy(app, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: 1 })
  })
})
