/**
 * JSON-RPC batches of 2025-era sessions (`src/mcp/legacy/batch.ts`), in-process through the whole
 * HTTP pipeline of the notes app and the conformance fixture (real in-memory SQLite store,
 * in-process event bus): a 2025-03-26 session's batch of requests is answered as a JSON array, or as
 * one SSE stream when a request streams (progress, an interactive `delete_note` asking on it); a
 * batch of notifications and answers is 202; every refusal (empty, `initialize` inside, another
 * revision's session, too many messages, a bad element, a repeated id, too few scopes, no or an
 * unknown session) is of the whole batch, with nothing done. Also a batch sent by a real client: the
 * v1 SDK's Streamable HTTP transport, which sends an array when given one (its `Client` never does).
 */
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { MAX_BATCH_MESSAGES } from '../../src/mcp/legacy/batch.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { HEADER_PROTOCOL_VERSION, PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'
import {
  SseReaders,
  TEST_AUTH_ENV,
  initializeMessage,
  postLegacy,
  startSession,
} from '../support/legacy-request.ts'
import { expectError, requestApp, type JsonObject } from '../support/mcp-request.ts'
import { expectInsufficientScope, signTestToken } from '../support/test-tokens.ts'

const INVALID_REQUEST = -32600
const SESSION_NOT_FOUND = -32001
const BATCH_REVISION = '2025-03-26'

/** The notes app (without and with auth) and the fixture, on one store, key ring and bus. */
const { store, engineStore } = await sqliteStores()
const shared = {
  sealer: StateSealer.create({ keyRing: await importKeyRing([generateKey()]) }),
  bus: new InProcessEventBus(),
}
const app = createApp(parseConfig({}), { store, engineStore, ...shared })
const authApp = createApp(parseConfig(TEST_AUTH_ENV), { store, engineStore, ...shared })
const fixture = createFixtureApp(parseConfig({}), { sessions: engineStore, ...shared })

const streams = new SseReaders()
afterEach(() => streams.cancelAll())

const request = (id: string | number, method: string, params?: JsonObject): JsonObject =>
  params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params }
const notification = (method: string, params: JsonObject = {}): JsonObject => ({
  jsonrpc: '2.0',
  method,
  params,
})
const ping = (id: string | number) => request(id, 'ping')
const createNote = (id: string | number, title: string) =>
  request(id, 'tools/call', { name: 'create_note', arguments: { title, body: 'batched' } })

/** A session of `version` (default the one revision with batches) on `target`. */
async function sessionOf(target = app, protocolVersion = BATCH_REVISION, options = {}) {
  return (await startSession(target, { protocolVersion, ...options })).session
}

/** The JSON array a batch was answered with. */
async function batchAnswer(response: Response): Promise<JsonObject[]> {
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
  const body = (await response.json()) as unknown
  expect(Array.isArray(body)).toBe(true)
  return body as JsonObject[]
}

const titles = async (principal = 'local') =>
  (await store.list(principal, 0, 1000)).items.map((note) => note.title)

describe('a batch of a 2025-03-26 session', () => {
  it('answers a batch of requests with a JSON array of their responses, in order', async () => {
    const session = await sessionOf()
    const answers = await batchAnswer(
      await session.post([ping(1), request('two', 'tools/list'), createNote(3, 'From a batch')])
    )
    expect(answers.map((answer) => answer.id)).toStrictEqual([1, 'two', 3])
    expect(answers[0]).toStrictEqual({ jsonrpc: '2.0', id: 1, result: {} })
    expect(answers[1]?.result.tools.map((tool: JsonObject) => tool.name)).toContain('create_note')
    expect(answers[2]?.result.isError).toBeUndefined()
    expect(await titles()).toContain('From a batch')
  })

  it('answers each request as it would alone: an unknown method is its -32601 in the array', async () => {
    const session = await sessionOf()
    const answers = await batchAnswer(await session.post([request(1, 'notes/frobnicate'), ping(2)]))
    expect(answers).toStrictEqual([
      {
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32601, message: 'Method not found: notes/frobnicate' },
      },
      { jsonrpc: '2.0', id: 2, result: {} },
    ])
  })

  it('answers a batch of only notifications with 202 and no body', async () => {
    const session = await sessionOf()
    const response = await session.post([
      notification('notifications/roots/list_changed'),
      notification('notifications/cancelled', { requestId: 'nothing-running' }),
    ])
    expect(response.status).toBe(202)
    expect(await response.text()).toBe('')
  })

  it('leaves the notifications of a mixed batch out of its answer', async () => {
    const session = await sessionOf()
    const answers = await batchAnswer(
      await session.post([notification('notifications/roots/list_changed'), ping(7)])
    )
    expect(answers).toStrictEqual([{ jsonrpc: '2.0', id: 7, result: {} }])
  })

  it('answers with one SSE stream carrying every response once a request streams', async () => {
    const session = await sessionOf(fixture)
    const response = await session.post([
      request(1, 'tools/call', { name: 'test_tool_with_progress', _meta: { progressToken: 'p' } }),
      ping(2),
    ])
    const messages = await streams.open(response).rest()
    const progress = messages.filter((message) => message.method === 'notifications/progress')
    expect(progress.map((message) => message.params.progress)).toStrictEqual([0, 50, 100])
    const answers = messages.filter((message) => 'id' in message)
    expect(answers.map((answer) => answer.id).sort()).toStrictEqual([1, 2])
    expect(answers.find((answer) => answer.id === 1)?.result.content).toStrictEqual([
      { type: 'text', text: 'Progress complete.' },
    ])
  })

  it('asks an interactive request of a batch on the batch stream, and takes the answer POSTed alone', async () => {
    const session = await sessionOf(fixture, BATCH_REVISION, { capabilities: { sampling: {} } })
    const stream = streams.open(
      await session.post([
        request('s', 'tools/call', { name: 'test_sampling', arguments: { prompt: 'Hello?' } }),
        ping('p'),
      ])
    )
    const first = [await stream.next(), await stream.next()] as JsonObject[]
    expect(first.find((message) => message.id === 'p')).toStrictEqual({
      jsonrpc: '2.0',
      id: 'p',
      result: {},
    })
    const ask = first.find((message) => message.method === 'sampling/createMessage') as JsonObject
    const answered = await session.answer(ask.id, {
      role: 'assistant',
      content: { type: 'text', text: 'Hi!' },
      model: 'test-model',
    })
    expect(answered.status).toBe(202)
    expect(await stream.rest()).toStrictEqual([
      {
        jsonrpc: '2.0',
        id: 's',
        result: { content: [{ type: 'text', text: 'LLM response: Hi!' }] },
      },
    ])
  })

  it(`serves a batch of exactly ${MAX_BATCH_MESSAGES} messages`, async () => {
    const session = await sessionOf()
    const batch = Array.from({ length: MAX_BATCH_MESSAGES }, (_, index) => ping(index))
    const answers = await batchAnswer(await session.post(batch))
    expect(answers.map((answer) => answer.id)).toStrictEqual(batch.map((message) => message.id))
  })
})

describe('batches refused whole, with nothing done', () => {
  it.each([
    ['empty, with a session', true],
    ['empty, without one', false],
  ])('refuses a batch that is %s with 400 -32600', async (_case, withSession) => {
    const response = withSession
      ? await (await sessionOf()).post([])
      : await postLegacy(app, [], { [HEADER_PROTOCOL_VERSION]: BATCH_REVISION })
    const error = await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
    expect(error.message).toBe(
      'Invalid Request: the batch is empty; send at least one JSON-RPC message.'
    )
  })

  it.each([
    ['without a session', () => postLegacy(app, [initializeMessage(), ping(2)])],
    [
      'in a session',
      async () =>
        (await sessionOf()).post([
          ping(2),
          initializeMessage({ protocolVersion: BATCH_REVISION, id: 3 }),
        ]),
    ],
  ])('refuses a batch carrying initialize %s: it must be sent alone', async (_case, send) => {
    const error = await expectError(await send(), { status: 400, code: INVALID_REQUEST, id: null })
    expect(error.message).toMatch(/^Invalid Request: initialize must be sent alone/)
  })

  it.each(['2025-11-25', '2025-06-18'])(
    'refuses any batch of a %s session with the -32600 of every revision without batches',
    async (version) => {
      const session = await sessionOf(app, version)
      const response = await session.post([createNote(1, `Batched in ${version}`), ping(2)])
      const error = await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
      expect(error.message).toBe(
        'Invalid Request: batches are not supported; send one JSON-RPC message per POST.'
      )
      expect(await titles()).not.toContain(`Batched in ${version}`)
    }
  )

  it(`refuses a batch of more than ${MAX_BATCH_MESSAGES} messages`, async () => {
    const session = await sessionOf()
    const batch = [
      createNote(0, 'One too many'),
      ...Array.from({ length: MAX_BATCH_MESSAGES }, (_, index) => ping(index + 1)),
    ]
    const error = await expectError(await session.post(batch), {
      status: 400,
      code: INVALID_REQUEST,
      id: null,
    })
    expect(error.message).toBe(
      `Invalid Request: a batch carries at most ${MAX_BATCH_MESSAGES} messages and this one has ${MAX_BATCH_MESSAGES + 1}; send the rest in further POSTs.`
    )
    expect(await titles()).not.toContain('One too many')
  })

  it.each<[string, unknown, string]>([
    ['an old jsonrpc', { jsonrpc: '1.0', id: 2, method: 'ping' }, '"jsonrpc" must be "2.0".'],
    ['a nested batch', [ping(2)], '"jsonrpc" must be "2.0".'],
    ['a number', 42, '"jsonrpc" must be "2.0".'],
    [
      'a float id',
      { jsonrpc: '2.0', id: 1.5, method: 'ping' },
      '"id" must be a string or an integer.',
    ],
    [
      'params that are no object',
      { jsonrpc: '2.0', id: 2, method: 'ping', params: [1] },
      '"params" must be an object.',
    ],
    [
      'an answer to nothing the server asked',
      { jsonrpc: '2.0', id: 'mine', result: {} },
      'this response answers no request the server sent.',
    ],
  ])('refuses a batch with %s as its second message, naming it', async (_case, element, what) => {
    const session = await sessionOf()
    const error = await expectError(
      await session.post([createNote(1, `Refused: ${_case}`), element]),
      { status: 400, code: INVALID_REQUEST, id: null }
    )
    expect(error.message).toBe(`Invalid Request: ${what} This was message 2 of the batch.`)
    expect(await titles()).not.toContain(`Refused: ${_case}`)
  })

  it.each([
    ['7 and 7', 7, 7, '7'],
    ['"a" and "a"', 'a', 'a', '"a"'],
  ])('refuses two requests of the ids %s', async (_case, first, second, shown) => {
    const session = await sessionOf()
    const error = await expectError(
      await session.post([createNote(first, 'Same id'), ping(second)]),
      { status: 400, code: INVALID_REQUEST, id: null }
    )
    expect(error.message).toBe(
      `Invalid Request: two requests of the batch have the id ${shown}; give each request its own id.`
    )
    expect(await titles()).not.toContain('Same id')
  })

  it('tells 7 and "7" apart', async () => {
    const session = await sessionOf()
    const answers = await batchAnswer(await session.post([ping(7), ping('7')]))
    expect(answers.map((answer) => answer.id)).toStrictEqual([7, '7'])
  })

  it('refuses a batch needing scopes the token lacks with the 403 naming them all', async () => {
    const bob = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'bob')
    const reader = {
      authorization: `Bearer ${await signTestToken({ subject: 'bob', scope: 'notes:read' })}`,
    }
    const session = await sessionOf(authApp, BATCH_REVISION, { headers: reader })
    const response = await session.post([ping(1), createNote(2, 'Needs write')])
    await expectInsufficientScope(response, 'notes:write', null)
    expect(await titles(bob)).not.toContain('Needs write')
  })

  it('refuses a batch without a session id (400) or with an unknown one (404)', async () => {
    const batch = [ping(1), ping(2)]
    const missing = await postLegacy(app, batch)
    const error = await expectError(missing, { status: 400, code: INVALID_REQUEST, id: null })
    expect(error.message).toMatch(/Mcp-Session-Id/)
    const unknown = await postLegacy(app, batch, { [HEADER_SESSION_ID]: 'not-a-session' })
    await expectError(unknown, { status: 404, code: SESSION_NOT_FOUND, id: null })
  })

  it('leaves a batch with a 2026-07-28 claim, or sent with the 2026-07-28 header, to that era', async () => {
    const session = await sessionOf()
    const claimed = request(2, 'tools/list', {
      _meta: { 'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION },
    })
    for (const response of [
      await session.post([ping(1), claimed]),
      await session.post([ping(1), ping(2)], { [HEADER_PROTOCOL_VERSION]: PROTOCOL_VERSION }),
    ]) {
      const error = await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
      expect(error.message).toBe(
        'Invalid Request: batches are not supported; send one JSON-RPC message per POST.'
      )
    }
  })
})

describe('a batch sent by a real client', () => {
  /** The app behind the v1 SDK transport's `fetch`, through the whole HTTP pipeline. */
  const fetchApp = (target: typeof app) => (url: string | URL, init?: RequestInit) =>
    requestApp(target, new URL(url).pathname, init)

  it('answers the v1 SDK transport’s batch of requests, each response heard once', async () => {
    const heard: JSONRPCMessage[] = []
    const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:8787/mcp'), {
      fetch: fetchApp(fixture),
    })
    transport.onmessage = (message) => heard.push(message)
    await transport.start()
    await transport.send(initializeMessage({ protocolVersion: BATCH_REVISION }) as JSONRPCMessage)
    expect(transport.sessionId).toMatch(/^[\x21-\x7e]+$/)
    transport.setProtocolVersion(BATCH_REVISION)
    await transport.send([
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'test_simple_text' } },
    ])
    const answers = heard.filter((message) => 'id' in message && message.id !== 1)
    expect(answers).toStrictEqual([
      { jsonrpc: '2.0', id: 2, result: {} },
      {
        jsonrpc: '2.0',
        id: 3,
        result: {
          content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
        },
      },
    ])
    await transport.terminateSession()
    await transport.close()
  })
})
