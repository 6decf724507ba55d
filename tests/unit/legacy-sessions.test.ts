/**
 * The 2025-era protocol (revisions 2025-11-25, 2025-06-18, 2025-03-26) on the conformance fixture and
 * the notes app, in-process, trying to break it: which era a message belongs to, what `initialize`
 * negotiates, every way a session id can be wrong (missing, garbage, truncated, each character
 * mutated, another principal's or OAuth client's, another key ring's, expired, a `requestState`
 * instead, ended — also after the TTL of the replica that ended it — sealed under a retired key), the
 * `MCP-Protocol-Version` cross-check, the session methods (ping, logging/setLevel,
 * resources/(un)subscribe: only what `resources/read` reads, their bounds, and a session that ends
 * meanwhile), what one principal may keep in the store (live sessions, the oldest ended at the cap;
 * subscriptions across them, refused at theirs with what is held), the methods that do not exist in
 * this era, and result shapes without the
 * 2026-07-28 stamps. Sessions live in a real in-memory SQLite store; each answer is pinned by HTTP
 * status, JSON-RPC code and id echo.
 *
 * The interactive flows are in `legacy-flows.test.ts`, the GET stream in `legacy-stream.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, notesServer } from '../../src/app.ts'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing, type RawKey } from '../../src/mcp/key-ring.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import {
  HEADER_PROTOCOL_VERSION,
  META_SERVER_INFO,
  PROTOCOL_VERSION,
} from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { noteUri } from '../../src/notes/format.ts'
import { MAX_SUBSCRIPTIONS_PER_SESSION } from '../../src/mcp/session-store.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'
import {
  LEGACY_VERSION,
  TEST_AUTH_ENV,
  bearer,
  initializeMessage,
  postLegacy,
  LegacySession,
  startSession,
  type HeaderOverrides,
} from '../support/legacy-request.ts'
import {
  expectError,
  expectResult,
  postMcp,
  readMessages,
  type JsonObject,
} from '../support/mcp-request.ts'

const INVALID_REQUEST = -32600
const METHOD_NOT_FOUND = -32601
const INVALID_PARAMS = -32602
const SESSION_NOT_FOUND = -32001

const sealerFor = async (keys: RawKey[], now?: () => number) =>
  StateSealer.create({ keyRing: await importKeyRing(keys), now })

const keyA = generateKey()
const sealer = await sealerFor([keyA])
const sessions = new SqliteEngineStore({ path: ':memory:' })
await sessions.migrate()
const bus = new InProcessEventBus()

/** The fixture app on the shared session store, with `env` and (by default) key ring [A]. */
const fixture = (env: Record<string, string> = {}, withSealer = sealer) =>
  createFixtureApp(parseConfig(env), { sealer: withSealer, bus, sessions })
const app = fixture()
const authApp = fixture(TEST_AUTH_ENV)

/** The notes app on a store of its own, with one note of the local principal. */
const { store: notesStore, engineStore: notesSessions } = await sqliteStores()
const notesApp = createApp(parseConfig({}), {
  store: notesStore,
  engineStore: notesSessions,
  sealer,
  bus,
})
const noteId = (
  await notesStore.create('local', { title: 'Groceries', body: 'milk', tags: [] }, Date.now())
).id

/** A URI of the fixture's resource template (`test://template/{id}/data`): every id reads. */
const templateUri = (id: string) => `test://template/${id}/data`

const ping = (session: LegacySession, headers?: HeaderOverrides) =>
  session.request('ping', undefined, { id: 1, headers })

/** A ping with `id` as session id (and `headers`) is 404 -32001; returns the error message. */
async function expectUnknownSession(
  target: ReturnType<typeof fixture>,
  id: string,
  headers: HeaderOverrides = {}
): Promise<string> {
  const response = await postLegacy(
    target,
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { [HEADER_SESSION_ID]: id, ...headers }
  )
  const error = await expectError(response, { status: 404, code: SESSION_NOT_FOUND, id: 1 })
  return error.message
}

/** What every refused session id is told (read once from an id that is plain garbage). */
const NOT_FOUND_MESSAGE = await (async () => {
  const response = await postLegacy(
    app,
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { [HEADER_SESSION_ID]: 'not-a-session' }
  )
  return ((await response.json()) as JsonObject).error.message as string
})()

/** POST, GET and DELETE with `id` are all 404 -32001 with the one message. */
async function expectRefusedEverywhere(
  target: ReturnType<typeof fixture>,
  session: LegacySession,
  headers: HeaderOverrides = {}
) {
  expect(await expectUnknownSession(target, session.id, headers)).toBe(NOT_FOUND_MESSAGE)
  const onTarget = { ...headers }
  for (const response of [await session.get(onTarget), await session.delete(onTarget)]) {
    const error = await expectError(response, { status: 404, code: SESSION_NOT_FOUND, id: null })
    expect(error.message).toBe(NOT_FOUND_MESSAGE)
  }
}

/** A requestState the app sealed for a 2026-07-28 elicitation round of the local principal. */
async function modernRequestState(): Promise<string> {
  const round = await expectResult(
    await postMcp(app, 'tools/call', {
      params: { name: 'test_input_required_result_elicitation' },
      capabilities: { elicitation: {} },
    })
  )
  expect(round.resultType).toBe('input_required')
  return round.requestState
}

describe('era classification', () => {
  it('answers initialize as 2025-era with a session id of visible ASCII', async () => {
    // startSession asserts the Mcp-Session-Id header is visible ASCII only.
    const { session, result } = await startSession(app)
    expect(result.protocolVersion).toBe(LEGACY_VERSION)
    expect(await expectResult(await ping(session))).toStrictEqual({})
  })

  it.each(['tools/list', 'server/discover'])(
    'serves %s with a _meta protocol-version claim exactly as 2026-07-28 even with an Mcp-Session-Id',
    async (method) => {
      const { session } = await startSession(app)
      const plain = await expectResult(await postMcp(app, method))
      for (const id of [session.id, 'not-a-session']) {
        const withSession = await expectResult(
          await postMcp(app, method, { headers: { [HEADER_SESSION_ID]: id } })
        )
        expect(withSession).toStrictEqual(plain)
      }
      expect(plain.resultType).toBe('complete')
      expect(plain._meta[META_SERVER_INFO]).toBeDefined()
    }
  )

  it.each([
    ['without a session', false],
    ['with a session', true],
  ])(
    'answers a claim-less request with MCP-Protocol-Version 2026-07-28 %s with 400 -32602 "params._meta is required"',
    async (_case, withSession) => {
      const { session } = await startSession(app)
      const headers: HeaderOverrides = { [HEADER_PROTOCOL_VERSION]: PROTOCOL_VERSION }
      if (withSession) headers[HEADER_SESSION_ID] = session.id
      const response = await postLegacy(
        app,
        { jsonrpc: '2.0', id: 7, method: 'tools/list' },
        headers
      )
      const error = await expectError(response, { status: 400, code: INVALID_PARAMS, id: 7 })
      expect(error.message).toContain('params._meta is required')
    }
  )

  it('answers a posted JSON-RPC response without a session with 400 and a null id', async () => {
    const response = await postLegacy(app, { jsonrpc: '2.0', id: 's2c-x', result: {} })
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
  })
})

describe('initialize negotiation', () => {
  it.each(['2025-11-25', '2025-06-18', '2025-03-26'])(
    'echoes the supported revision %s',
    async (version) => {
      const { session, result } = await startSession(app, { protocolVersion: version })
      expect(result.protocolVersion).toBe(version)
      expect(session.protocolVersion).toBe(version)
      expect(await expectResult(await ping(session))).toStrictEqual({})
    }
  )

  it.each(['2024-11-05', PROTOCOL_VERSION, 'garbage', '9999-12-31'])(
    'offers 2025-11-25 when asked for %s',
    async (version) => {
      const { session, result } = await startSession(app, { protocolVersion: version })
      expect(result.protocolVersion).toBe('2025-11-25')
      expect(await expectResult(await ping(session))).toStrictEqual({})
    }
  )

  it('answers with protocolVersion, capabilities, serverInfo and instructions only', async () => {
    const response = await postLegacy(app, initializeMessage())
    const result = await expectResult(response)
    expect(Object.keys(result).sort()).toStrictEqual([
      'capabilities',
      'instructions',
      'protocolVersion',
      'serverInfo',
    ])
    expect(result.serverInfo).toStrictEqual({
      name: 'notes-mcp-conformance-fixture',
      version: '0.1.0',
    })
    expect(result.capabilities).toMatchObject({ tools: {}, resources: {}, prompts: {} })
  })

  it.each<[string, (message: JsonObject) => void]>([
    ['no protocolVersion', (message) => delete message.params.protocolVersion],
    ['no clientInfo', (message) => delete message.params.clientInfo],
    ['capabilities that are not an object', (message) => (message.params.capabilities = [])],
    ['an empty protocolVersion', (message) => (message.params.protocolVersion = '')],
    [
      'capabilities too large to seal into a session id',
      (message) =>
        (message.params.capabilities = { experimental: { big: { x: 'x'.repeat(20_000) } } }),
    ],
  ])('answers initialize with %s with 400 -32602 and no session', async (_case, edit) => {
    const message = initializeMessage({ id: 'init' })
    edit(message)
    const response = await postLegacy(app, message)
    expect(response.headers.get(HEADER_SESSION_ID)).toBeNull()
    await expectError(response, { status: 400, code: INVALID_PARAMS, id: 'init' })
  })

  it('cuts an over-long clientInfo instead of refusing the client', async () => {
    const message = initializeMessage()
    message.params.clientInfo = { name: 'n'.repeat(5_000), version: 'v'.repeat(5_000) }
    const response = await postLegacy(app, message)
    expect(await expectResult(response)).toHaveProperty('protocolVersion', LEGACY_VERSION)
    expect(response.headers.get(HEADER_SESSION_ID)?.length).toBeLessThan(2_000)
  })

  it.each<[string, JsonObject]>([
    ['a null id', { ...initializeMessage(), id: null }],
    ['no id (a notification)', { jsonrpc: '2.0', method: 'initialize', params: {} }],
    ['params that are an array', { ...initializeMessage(), params: [] }],
  ])('answers an initialize with %s with 400 and no session', async (_case, message) => {
    const response = await postLegacy(app, message)
    expect(response.status).toBe(400)
    expect(response.headers.get(HEADER_SESSION_ID)).toBeNull()
  })
})

describe('session ids', () => {
  it('answers a request without Mcp-Session-Id with 400 -32600, echoing the id', async () => {
    const response = await postLegacy(app, { jsonrpc: '2.0', id: 3, method: 'ping' })
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: 3 })
  })

  it.each([
    ['plain garbage', () => 'garbage'],
    ['five dot-separated parts of garbage', () => 'a.b.c.d.e'],
    ['a very long id', () => 'A'.repeat(20_000)],
  ])('refuses %s with 404 -32001 and the one message', async (_case, id) => {
    expect(await expectUnknownSession(app, id())).toBe(NOT_FOUND_MESSAGE)
  })

  it('refuses every truncation of a real id with 404 -32001 and the one message', async () => {
    const { session } = await startSession(app)
    const cuts = [1, 2, 16, session.id.length >> 1, session.id.length - 2, session.id.length - 1]
    for (const cut of cuts) {
      expect(await expectUnknownSession(app, session.id.slice(0, cut)), `cut at ${cut}`).toBe(
        NOT_FOUND_MESSAGE
      )
      expect(await expectUnknownSession(app, session.id.slice(cut)), `from ${cut}`).toBe(
        NOT_FOUND_MESSAGE
      )
    }
    expect(await expectResult(await ping(session))).toStrictEqual({})
  })

  it('refuses a real id with any one character changed, at every position', async () => {
    const { session } = await startSession(app)
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    for (let index = 0; index < session.id.length; index++) {
      const char = session.id[index] as string
      // Within the base64url alphabet (and a letter for a dot), so only the content changes.
      const replacement =
        char === '.' ? 'A' : alphabet[(alphabet.indexOf(char) + 1) % alphabet.length]
      const mutated = session.id.slice(0, index) + replacement + session.id.slice(index + 1)
      expect(await expectUnknownSession(app, mutated), `position ${index}`).toBe(NOT_FOUND_MESSAGE)
    }
    expect(await expectResult(await ping(session))).toStrictEqual({})
  })

  it("refuses one subject's session presented by another subject, on every method", async () => {
    const { session } = await startSession(authApp, { headers: await bearer('alice') })
    expect(await expectResult(await ping(session))).toStrictEqual({})
    await expectRefusedEverywhere(authApp, session, await bearer('mallory'))
    // Alice's session survived the attempts.
    expect(await expectResult(await ping(session, await bearer('alice')))).toStrictEqual({})
  })

  it('refuses a session presented through another OAuth client of the same subject', async () => {
    const { session } = await startSession(authApp, { headers: await bearer('alice', 'app-1') })
    expect(await expectResult(await ping(session))).toStrictEqual({})
    await expectRefusedEverywhere(authApp, session, await bearer('alice', 'app-2'))
    await expectRefusedEverywhere(authApp, session, await bearer('alice'))
  })

  it("refuses an authenticated subject's session on a server without auth", async () => {
    const { session } = await startSession(authApp, { headers: await bearer('alice') })
    expect(await expectUnknownSession(app, session.id)).toBe(NOT_FOUND_MESSAGE)
  })

  it('refuses a session sealed under another key ring, or another secret under the same kid', async () => {
    const { session } = await startSession(app)
    const otherRing = fixture({}, await sealerFor([generateKey()]))
    const sameKid = fixture({}, await sealerFor([{ ...generateKey(), kid: keyA.kid }]))
    for (const target of [otherRing, sameKid]) {
      expect(await expectUnknownSession(target, session.id)).toBe(NOT_FOUND_MESSAGE)
    }
  })

  it('refuses a session once it sat unused for its lifetime (SESSION_TTL_SECONDS); use slides it', async () => {
    const clock = { now: Date.now() }
    const timed = fixture({ SESSION_TTL_SECONDS: '60' }, await sealerFor([keyA], () => clock.now))
    const { session } = await startSession(timed)
    clock.now += 58_000
    expect(await expectResult(await ping(session))).toStrictEqual({})
    clock.now += 59_000
    expect(await expectResult(await ping(session))).toStrictEqual({})
    clock.now += 61_000
    expect(await expectUnknownSession(timed, session.id)).toBe(NOT_FOUND_MESSAGE)
  })

  it('refuses a requestState presented as a session id', async () => {
    expect(await expectUnknownSession(app, await modernRequestState())).toBe(NOT_FOUND_MESSAGE)
  })

  it('refuses a session id presented as a requestState', async () => {
    const { session } = await startSession(app)
    const response = await postMcp(app, 'tools/call', {
      params: {
        name: 'test_input_required_result_elicitation',
        requestState: session.id,
        inputResponses: { user_name: { action: 'accept', content: { name: 'Mallory' } } },
      },
      capabilities: { elicitation: {} },
    })
    const error = await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
    expect(error.message).toBe('Invalid or expired requestState')
  })

  it('ends a session on DELETE (204); then POST, GET and DELETE all answer 404', async () => {
    const { session } = await startSession(app)
    const ended = await session.delete()
    expect(ended.status).toBe(204)
    expect(await ended.text()).toBe('')
    await expectRefusedEverywhere(app, session)
    for (const response of [
      await session.notify('notifications/initialized'),
      await session.answer('s2c-pAAAAAAAAAAAAAAAA-1.tools/call.delete_note', {
        action: 'accept',
        content: {},
      }),
    ]) {
      await expectError(response, { status: 404, code: SESSION_NOT_FOUND, id: null })
    }
  })

  it('ends a session for every app on the same store and key ring', async () => {
    const { session } = await startSession(app)
    const replica = fixture()
    expect((await session.delete()).status).toBe(204)
    expect(await expectUnknownSession(replica, session.id)).toBe(NOT_FOUND_MESSAGE)
  })

  it('keeps a DELETEd session unknown until its own expiry, whatever the TTL of the replica that ended it', async () => {
    const clock = { now: Date.now() }
    const timedSealer = await sealerFor([keyA], () => clock.now)
    const store = new SqliteEngineStore({ path: ':memory:' })
    await store.migrate()
    const replica = (ttlSeconds: number) =>
      createFixtureApp(parseConfig({ SESSION_TTL_SECONDS: String(ttlSeconds) }), {
        sealer: timedSealer,
        bus,
        sessions: store,
      })
    const long = replica(7 * 86_400)
    const short = replica(60)
    const { session } = await startSession(long)
    // Ended through the replica with the short lifetime…
    const onShort = new LegacySession(short, session.id, session.protocolVersion)
    expect((await onShort.delete()).status).toBe(204)
    // …two hours later, every expired row purged, the id (sealed for a week) is still unknown.
    clock.now += 2 * 3_600_000
    while ((await store.purgeExpired(clock.now, 1000)) > 0);
    expect(await expectUnknownSession(long, session.id)).toBe(NOT_FOUND_MESSAGE)
    expect(await expectUnknownSession(short, session.id)).toBe(NOT_FOUND_MESSAGE)
    await store.close()
  })

  it('keeps a session across key rotation while its key is in the ring', async () => {
    const { session } = await startSession(app)
    const keyB = generateKey()
    const promoted = fixture({}, await sealerFor([keyB, keyA]))
    const onPromoted = await postLegacy(
      promoted,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { [HEADER_SESSION_ID]: session.id, [HEADER_PROTOCOL_VERSION]: session.protocolVersion }
    )
    expect(await expectResult(onPromoted)).toStrictEqual({})
    const retired = fixture({}, await sealerFor([keyB]))
    expect(await expectUnknownSession(retired, session.id)).toBe(NOT_FOUND_MESSAGE)
  })
})

describe('MCP-Protocol-Version on a session', () => {
  const revisions = ['2025-11-25', '2025-06-18', '2025-03-26']
  /** Every negotiated revision with every header a 2025 client may send (or none). */
  const everyPair = revisions.flatMap((negotiated) =>
    [...revisions, undefined].map((header) => [negotiated, header] as const)
  )

  it.each(everyPair)(
    'serves a %s session whatever supported header it sends (%s): POST, GET and DELETE',
    async (negotiated, header) => {
      const { session } = await startSession(app, { protocolVersion: negotiated })
      const headers = { [HEADER_PROTOCOL_VERSION]: header }
      expect(await expectResult(await ping(session, headers))).toStrictEqual({})
      const stream = await session.get(headers)
      expect(stream.status).toBe(200)
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream\b/)
      await stream.body?.cancel()
      expect((await session.delete(headers)).status).toBe(204)
    }
  )

  // A request with 2026-07-28 is the modern era's (classify.ts); GET, DELETE and answers reach the session.
  it.each(['2024-11-05', 'garbage', '2025-06-18x', ''])(
    'answers a request with MCP-Protocol-Version %j on a 2025-06-18 session with 400 -32600 naming what to send',
    async (header) => {
      const { session } = await startSession(app, { protocolVersion: '2025-06-18' })
      const response = await ping(session, { [HEADER_PROTOCOL_VERSION]: header })
      const error = await expectError(response, { status: 400, code: INVALID_REQUEST, id: 1 })
      expect(error.message).toBe(
        `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(header)} in a 2025-era session; send the version it negotiated (2025-06-18), another of 2025-11-25, 2025-06-18, 2025-03-26, or none.`
      )
    }
  )

  it.each([PROTOCOL_VERSION, '2024-11-05'])(
    'refuses a GET stream and a DELETE with MCP-Protocol-Version %s, and the session survives',
    async (header) => {
      const { session } = await startSession(app, { protocolVersion: '2025-06-18' })
      const wrong = { [HEADER_PROTOCOL_VERSION]: header }
      for (const response of [await session.get(wrong), await session.delete(wrong)]) {
        const error = await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
        expect(error.message).toMatch(/^Bad Request: unsupported MCP-Protocol-Version/)
      }
      expect(await expectResult(await ping(session))).toStrictEqual({})
    }
  )
})

describe('session methods', () => {
  it('answers ping with an empty result', async () => {
    const { session } = await startSession(app)
    expect(await expectResult(await session.request('ping', {}, { id: 'p' }), 'p')).toStrictEqual(
      {}
    )
  })

  it.each([
    ['an unknown level', { level: 'verbose' }],
    ['no level', {}],
    ['a level that is not a string', { level: 3 }],
  ])('answers logging/setLevel with %s with -32602 on HTTP 200', async (_case, params) => {
    const { session } = await startSession(app)
    const response = await session.request('logging/setLevel', params, { id: 2 })
    await expectError(response, { status: 200, code: INVALID_PARAMS, id: 2 })
  })

  /** The notifications/message a test_logging_tool call of `session` sends before its result. */
  async function logsOf(session: LegacySession): Promise<JsonObject[]> {
    const response = await session.request('tools/call', { name: 'test_logging_tool' }, { id: 9 })
    const messages = await readMessages(response)
    expect(messages.at(-1)).toMatchObject({
      id: 9,
      result: { content: [{ type: 'text', text: 'Logging complete.' }] },
    })
    return messages.slice(0, -1)
  }

  it.each([
    ['debug', 3],
    ['info', 3],
    ['warning', 0],
    ['emergency', 0],
  ])(
    'sends later tool logs at or above the level set (%s: %i info messages)',
    async (level, count) => {
      const { session } = await startSession(app)
      const set = await session.request('logging/setLevel', { level }, { id: 1 })
      expect(await expectResult(set)).toStrictEqual({})
      const logs = await logsOf(session)
      expect(logs).toHaveLength(count)
      for (const log of logs) {
        expect(log).toMatchObject({
          jsonrpc: '2.0',
          method: 'notifications/message',
          params: { level: 'info', logger: 'fixture' },
        })
      }
    }
  )

  it('keeps one session’s log level from another session', async () => {
    const { session: verbose } = await startSession(app)
    const { session: quiet } = await startSession(app)
    await expectResult(await verbose.request('logging/setLevel', { level: 'debug' }, { id: 1 }))
    expect(await logsOf(quiet)).toStrictEqual([])
    expect(await logsOf(verbose)).toHaveLength(3)
  })

  it('ignores a 2026-07-28 log level in the _meta of a 2025-era request', async () => {
    const { session } = await startSession(app)
    const response = await session.request(
      'tools/call',
      { name: 'test_logging_tool', _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } },
      { id: 9 }
    )
    expect(await readMessages(response)).toHaveLength(1)
  })

  it("sends progress for the request's progressToken before the result", async () => {
    const { session } = await startSession(app)
    const response = await session.request(
      'tools/call',
      { name: 'test_tool_with_progress', _meta: { progressToken: 'tok' } },
      { id: 8 }
    )
    const messages = await readMessages(response)
    expect(messages.slice(0, -1).map((message) => message.params)).toStrictEqual(
      [0, 50, 100].map((progress) => ({
        progressToken: 'tok',
        progress,
        total: 100,
        message: `Completed step ${progress} of 100`,
      }))
    )
    expect(messages.at(-1)).toMatchObject({
      id: 8,
      result: { content: [{ text: 'Progress complete.' }] },
    })
  })

  it('subscribes and unsubscribes (unsubscribing twice is no error)', async () => {
    const { session } = await startSession(app)
    const uri = 'test://watched-resource'
    for (const method of [
      'resources/subscribe',
      'resources/unsubscribe',
      'resources/unsubscribe',
    ]) {
      expect(await expectResult(await session.request(method, { uri }, { id: 1 }))).toStrictEqual(
        {}
      )
    }
  })

  it.each([
    ['an over-long uri', { uri: `test://${'x'.repeat(2049)}` }],
    ['an empty uri', { uri: '' }],
    ['no uri', {}],
  ])('answers resources/subscribe with %s with -32602 on HTTP 200', async (_case, params) => {
    const { session } = await startSession(app)
    for (const method of ['resources/subscribe', 'resources/unsubscribe']) {
      const response = await session.request(method, params, { id: 4 })
      await expectError(response, { status: 200, code: INVALID_PARAMS, id: 4 })
    }
  })

  it('accepts a uri of exactly 2048 characters', async () => {
    const { session } = await startSession(app)
    const uri = templateUri('x'.repeat(2048 - templateUri('').length))
    expect(uri).toHaveLength(2048)
    const response = await session.request('resources/subscribe', { uri }, { id: 1 })
    expect(await expectResult(response)).toStrictEqual({})
  })

  it(`refuses a subscription beyond ${MAX_SUBSCRIPTIONS_PER_SESSION} per session with a clear error`, async () => {
    const { session } = await startSession(app)
    const subscribe = (id: string) =>
      session.request('resources/subscribe', { uri: templateUri(id) }, { id: 'sub' })
    for (let index = 0; index < MAX_SUBSCRIPTIONS_PER_SESSION; index++) {
      expect(await expectResult(await subscribe(`r${index}`), 'sub')).toStrictEqual({})
    }
    const over = await expectError(await subscribe('one-too-many'), {
      status: 200,
      code: INVALID_PARAMS,
      id: 'sub',
    })
    const most = MAX_SUBSCRIPTIONS_PER_SESSION
    expect(over).toStrictEqual({
      code: INVALID_PARAMS,
      message: `Too many subscriptions: this session holds ${most} resource subscriptions, and at most ${most} are allowed per session; unsubscribe from some first.`,
      data: { cap: 'subscriptions', scope: 'session', limit: most, held: most },
    })
    // Subscribing again to a URI already held is still fine, and unsubscribing makes room.
    expect(await expectResult(await subscribe('r0'), 'sub')).toStrictEqual({})
    await expectResult(
      await session.request('resources/unsubscribe', { uri: templateUri('r1') }, { id: 1 })
    )
    expect(await expectResult(await subscribe('one-too-many'), 'sub')).toStrictEqual({})
    // Another session is not limited by this one's subscriptions.
    const { session: other } = await startSession(app)
    const response = await other.request(
      'resources/subscribe',
      { uri: templateUri('x') },
      { id: 1 }
    )
    expect(await expectResult(response)).toStrictEqual({})
  })

  it('answers a subscribe whose session ended after the request found it with the 404 of any session not found', async () => {
    /** Ends the session just before subscribing it: what a DELETE, or an eviction, racing does. */
    class EndingStore extends SqliteEngineStore {
      override async addSubscription(sid: string, uri: string, now: number, cap: number) {
        await this.endSession(sid)
        return super.addSubscription(sid, uri, now, cap)
      }
    }
    const ending = new EndingStore({ path: ':memory:' })
    await ending.migrate()
    const target = createFixtureApp(parseConfig({}), { sealer, bus, sessions: ending })
    const { session } = await startSession(target)
    const response = await session.request(
      'resources/subscribe',
      { uri: templateUri('ended') },
      { id: 'sub' }
    )
    const error = await expectError(response, { status: 404, code: SESSION_NOT_FOUND, id: 'sub' })
    expect(error.message).toBe(NOT_FOUND_MESSAGE)
    await ending.close()
  })

  it.each([
    ['a resource the server does not have', 'test://no-such-resource'],
    ['a URI its template does not match', 'test://template/a/b/data'],
    ['a scheme the server does not serve', 'other://static-text'],
  ])(
    'refuses resources/subscribe to %s exactly as resources/read answers it (-32602, data.uri)',
    async (_case, uri) => {
      const { session } = await startSession(app)
      const read = await expectError(await session.request('resources/read', { uri }, { id: 3 }), {
        status: 200,
        code: INVALID_PARAMS,
        id: 3,
      })
      const subscribed = await session.request('resources/subscribe', { uri }, { id: 3 })
      const refused = await expectError(subscribed, { status: 200, code: INVALID_PARAMS, id: 3 })
      expect(refused).toStrictEqual(read)
      expect(refused.data).toStrictEqual({ uri })
    }
  )

  it("refuses a subscription to a note that does not exist or is another principal's, as resources/read does", async () => {
    const notesAuthApp = createApp(parseConfig(TEST_AUTH_ENV), {
      store: notesStore,
      engineStore: notesSessions,
      sealer,
      bus,
    })
    const alicesNote = await notesStore.create(
      tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice'),
      { title: 'Diary', body: 'private', tags: [] },
      Date.now()
    )
    const { session: alice } = await startSession(notesAuthApp, { headers: await bearer('alice') })
    const { session: bob } = await startSession(notesAuthApp, { headers: await bearer('bob') })
    for (const uri of [noteUri(alicesNote.id), noteUri('n_doesnotexist0000'), 'note://bad id']) {
      const read = await expectError(await bob.request('resources/read', { uri }, { id: 5 }), {
        status: 200,
        code: INVALID_PARAMS,
        id: 5,
      })
      const subscribed = await bob.request('resources/subscribe', { uri }, { id: 5 })
      expect(
        await expectError(subscribed, { status: 200, code: INVALID_PARAMS, id: 5 })
      ).toStrictEqual(read)
      expect(read.data).toStrictEqual({ uri })
    }
    const own = await alice.request(
      'resources/subscribe',
      { uri: noteUri(alicesNote.id) },
      { id: 1 }
    )
    expect(await expectResult(own)).toStrictEqual({})
  })

  it.each(['server/discover', 'subscriptions/listen', 'notes/frobnicate', 'tasks/get'])(
    'answers %s with -32601 on HTTP 200 in the 2025 era',
    async (method) => {
      const { session } = await startSession(app)
      const response = await session.request(method, {}, { id: 'm' })
      await expectError(response, { status: 200, code: METHOD_NOT_FOUND, id: 'm' })
    }
  )

  it.each([
    ['two pings', () => [ping1(), ping1(2)]],
    ['an initialize and a ping', () => [initializeMessage(), ping1(2)]],
    ['an empty array', () => []],
  ])('refuses a batch of %s with 400 -32600', async (_case, batch) => {
    const { session } = await startSession(app)
    const response = await session.post(batch())
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
  })

  it('answers a notification with 202 and no body', async () => {
    const { session } = await startSession(app)
    const response = await session.notify('notifications/roots/list_changed')
    expect(response.status).toBe(202)
    expect(await response.text()).toBe('')
  })
})

function ping1(id = 1): JsonObject {
  return { jsonrpc: '2.0', id, method: 'ping' }
}

describe('what one principal may keep in the store', () => {
  const SESSIONS_CAP = 3
  const SUBSCRIPTIONS_CAP = 150
  const limitedStore = new SqliteEngineStore({ path: ':memory:' })
  /** What the engine of `limited` logged. */
  const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = []
  const limited = createFixtureApp(
    parseConfig({
      ...TEST_AUTH_ENV,
      MAX_SESSIONS_PER_PRINCIPAL: String(SESSIONS_CAP),
      MAX_SUBSCRIPTIONS_PER_PRINCIPAL: String(SUBSCRIPTIONS_CAP),
    }),
    {
      sealer,
      bus,
      sessions: limitedStore,
      logger: { warn: (message, fields) => warnings.push({ message, fields }), error() {} },
    }
  )
  beforeAll(() => limitedStore.migrate())
  afterAll(() => limitedStore.close())

  const subscribe = (session: LegacySession, id: string) =>
    session.request('resources/subscribe', { uri: templateUri(id) }, { id: 'sub' })
  const subscribed = async (session: LegacySession, id: string) =>
    expect(await expectResult(await subscribe(session, id), 'sub')).toStrictEqual({})
  const refused = async (session: LegacySession, id: string) =>
    expectError(await subscribe(session, id), { status: 200, code: INVALID_PARAMS, id: 'sub' })
  /** The refusal of a principal holding `held` subscriptions under a cap of `limit`. */
  const principalFull = (held: number, limit = SUBSCRIPTIONS_CAP) => ({
    code: INVALID_PARAMS,
    message: `Too many subscriptions: your sessions hold ${held} resource subscriptions together, and at most ${limit} are allowed; unsubscribe from some, or end sessions you no longer use (DELETE /mcp with their Mcp-Session-Id).`,
    data: { cap: 'subscriptions', scope: 'principal', limit, held },
  })

  it.each([0, -1, 1.5, Number.NaN, 2 ** 53])(
    'refuses %s as a cap on what one principal keeps, when the handler is built',
    (cap) => {
      for (const limits of [
        { maxSessionsPerPrincipal: cap },
        { maxSubscriptionsPerPrincipal: cap },
      ]) {
        const build = () =>
          createMcpHandler({
            server: notesServer,
            deps: {} as never,
            sealer,
            bus,
            legacy: { sessions: limitedStore, ...limits },
          })
        expect(build).toThrow(RangeError)
      }
    }
  )

  it('refuses a subscription loop across sessions at the principal’s cap with a clear error, until some end', async () => {
    const headers = await bearer('subscriber')
    const { session: first } = await startSession(limited, { headers })
    const { session: second } = await startSession(limited, { headers })
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) await subscribed(first, `a${i}`)
    for (let i = MAX_SUBSCRIPTIONS_PER_SESSION; i < SUBSCRIPTIONS_CAP; i++) {
      await subscribed(second, `a${i}`)
    }
    expect(await refused(second, 'over')).toStrictEqual(principalFull(SUBSCRIPTIONS_CAP))
    // A new session of the same principal has no room either; another principal is not limited.
    const { session: third } = await startSession(limited, { headers })
    expect(await refused(third, 'over')).toStrictEqual(principalFull(SUBSCRIPTIONS_CAP))
    // A replica configured with a lower cap says what is held, not its cap.
    const lowered = createFixtureApp(
      parseConfig({ ...TEST_AUTH_ENV, MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '120' }),
      { sealer, bus, sessions: limitedStore }
    )
    const onLowered = new LegacySession(lowered, third.id, third.protocolVersion, headers)
    expect(await refused(onLowered, 'over')).toStrictEqual(principalFull(SUBSCRIPTIONS_CAP, 120))
    const { session: stranger } = await startSession(limited, { headers: await bearer('stranger') })
    await subscribed(stranger, 'over')
    // A URI already held is still fine; unsubscribing makes room for one.
    await subscribed(second, `a${SUBSCRIPTIONS_CAP - 1}`)
    await expectResult(
      await second.request('resources/unsubscribe', { uri: templateUri('a0') }, { id: 1 })
    )
    await expectResult(
      await first.request('resources/unsubscribe', { uri: templateUri('a0') }, { id: 1 })
    )
    await subscribed(third, 'over')
    expect(await refused(third, 'over-again')).toStrictEqual(principalFull(SUBSCRIPTIONS_CAP))
    // Ending a session frees every place it held.
    expect((await first.delete()).status).toBe(204)
    for (let i = 1; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) await subscribed(third, `b${i}`)
  })

  it('initialize at the principal’s cap ends its oldest sessions (then 404, their subscriptions freed) and logs it, so a loop of initialize keeps working', async () => {
    const headers = await bearer('opener')
    const { session: oldest } = await startSession(limited, { headers })
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) await subscribed(oldest, `o${i}`)
    warnings.length = 0
    const opened = [oldest]
    // A host that opens a session per start and never ends one: 3 times the cap, each one works.
    for (let i = 1; i < 3 * SESSIONS_CAP; i++) {
      const { session } = await startSession(limited, { headers })
      expect(await expectResult(await ping(session))).toStrictEqual({})
      opened.push(session)
    }
    // The store holds the newest cap of them (a session answers only while its record exists); the
    // others answer 404 like any ended session, and the client initializes again.
    for (const session of opened.slice(0, -SESSIONS_CAP)) {
      await expectRefusedEverywhere(limited, session, headers)
    }
    for (const session of opened.slice(-SESSIONS_CAP)) {
      expect(await expectResult(await ping(session))).toStrictEqual({})
    }
    // One warning per ended session, naming the new session by a prefix of its id only.
    expect(warnings).toHaveLength(opened.length - SESSIONS_CAP)
    for (const { message, fields } of warnings) {
      expect(message).toMatch(/oldest/)
      expect(fields).toStrictEqual({
        session: expect.stringMatching(/^[\w-]{8}$/),
        evicted: 1,
        maxSessions: SESSIONS_CAP,
      })
    }
    // The oldest one's subscriptions went with it: a newer session has their places.
    const newest = opened.at(-1) as LegacySession
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++) await subscribed(newest, `n${i}`)
    // Another principal's sessions are their own.
    const { session: stranger } = await startSession(limited, {
      headers: await bearer('stranger-2'),
    })
    expect(await expectResult(await ping(stranger))).toStrictEqual({})
    for (const session of opened.slice(-SESSIONS_CAP)) {
      expect(await expectResult(await ping(session))).toStrictEqual({})
    }
  })
})

describe('2025-era results', () => {
  /** The 2026-07-28 result with the stamps 2025 has none of taken off. */
  function unstamped(result: JsonObject): JsonObject {
    const { resultType: _r, ttlMs: _t, cacheScope: _c, _meta, ...rest } = result
    const { [META_SERVER_INFO]: _s, ...meta } = _meta ?? {}
    return Object.keys(meta).length === 0 ? rest : { ...rest, _meta: meta }
  }

  it.each<['fixture' | 'notes', string, JsonObject]>([
    ['fixture', 'tools/list', {}],
    ['fixture', 'tools/call', { name: 'test_simple_text' }],
    ['fixture', 'resources/list', {}],
    ['fixture', 'resources/templates/list', {}],
    ['fixture', 'resources/read', { uri: 'test://static-text' }],
    ['fixture', 'prompts/list', {}],
    ['fixture', 'prompts/get', { name: 'test_simple_prompt' }],
    [
      'fixture',
      'completion/complete',
      {
        ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        argument: { name: 'arg1', value: 'te' },
      },
    ],
    ['notes', 'tools/list', {}],
    ['notes', 'tools/call', { name: 'get_note', arguments: { id: noteId } }],
    ['notes', 'resources/read', { uri: 'notes://help' }],
    ['notes', 'resources/read', { uri: `note://${noteId}` }],
    ['notes', 'prompts/get', { name: 'review_note', arguments: { id: noteId } }],
  ])(
    '%s: %s %j has the 2026-07-28 result without resultType, serverInfo or cache hints',
    async (server, method, params) => {
      const target = server === 'fixture' ? app : notesApp
      const { session } = await startSession(target)
      const legacy = await expectResult(await session.request(method, params, { id: 5 }), 5)
      expect(legacy).not.toHaveProperty('resultType')
      expect(legacy).not.toHaveProperty('ttlMs')
      expect(legacy).not.toHaveProperty('cacheScope')
      expect(legacy._meta ?? {}).not.toHaveProperty(META_SERVER_INFO)
      const modern = await expectResult(await postMcp(target, method, { params }))
      expect(legacy).toStrictEqual(unstamped(modern))
    }
  )
})
