/**
 * Interactive flows of 2025-era sessions, in-process on the notes app (real in-memory SQLite store,
 * in-process event bus), trying to break them: `delete_note` asks its confirmation as a real
 * `elicitation/create` request on the POST's SSE stream, and every way its answer can go wrong is
 * tried — accepted, declined, an error, never, from another session or another principal, for an id
 * nobody asked, twice, too large, malformed, odd, before the client declared the capability, smuggled
 * into the request's params, after the request was cancelled or the session ended, and on another
 * replica. Whatever happens, the note is deleted only on an accepted confirmation of its own flow.
 *
 * Waits are events (the next SSE message, the end of a stream), never timers. Flows that must time out
 * (or must find an answer by polling the store) run on a handler built with short `legacy.input`
 * bounds, since `createApp` has no such option; `notesReplica` composes it as `createApp` does (and
 * so does the one that may not ask at all, `input.unavailable`).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../src/app.ts'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import {
  InProcessEventBus,
  MAX_EVENT_ID_CHARS,
  type EventBus,
  type ServerEvent,
} from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import type { InteractiveFlowBounds } from '../../src/mcp/legacy/transport.ts'
import { MAX_ANSWER_ID_CHARS } from '../../src/mcp/legacy/rendezvous.ts'
import { HEADER_PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { noteUri } from '../../src/notes/format.ts'
import { createNotesServer } from '../../src/notes/server.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import {
  SseReaders,
  TEST_AUTH_ENV,
  LegacySession,
  bearer,
  initializeMessage,
  postLegacy,
  startSession,
  type SseReader,
} from '../support/legacy-request.ts'
import { expectError, readMessages, type JsonObject } from '../support/mcp-request.ts'
import { expectInsufficientScope, signTestToken } from '../support/test-tokens.ts'

const INVALID_REQUEST = -32600

/** Short enough that a test waits little for a flow nobody answers. */
const SHORT_INPUT_TIMEOUT_MS = 400

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const { store, engineStore } = await sqliteStores()
const bus = new InProcessEventBus()
const events: ServerEvent[] = []
bus.subscribe((event) => events.push(event))

const app = createApp(parseConfig({}), { store, engineStore, sealer, bus })
const authApp = createApp(parseConfig(TEST_AUTH_ENV), { store, engineStore, sealer, bus })
const notesServer = createNotesServer()

/** The notes app on the shared store and key ring as `createApp` composes it, with `input` bounds. */
function notesReplica(replicaBus: EventBus, input: InteractiveFlowBounds) {
  return createHttpApp({
    config: parseConfig({}),
    handler: createMcpHandler({
      server: notesServer,
      deps: { notes: store, bus: replicaBus, baseUrl: 'http://127.0.0.1:8787', now: Date.now },
      sealer,
      bus: replicaBus,
      legacy: { sessions: engineStore, input },
    }),
  })
}
/** Flows that give up waiting quickly. */
const impatientApp = notesReplica(bus, { timeoutMs: SHORT_INPUT_TIMEOUT_MS })

const FORM_CLIENT = { elicitation: {} }

const streams = new SseReaders()
afterEach(() => streams.cancelAll())
const reader = (response: Response) => streams.open(response)

async function seed(title: string, principal = LOCAL_PRINCIPAL): Promise<string> {
  return (await store.create(principal, { title, body: 'body', tags: [] }, Date.now())).id
}

const exists = async (id: string, principal = LOCAL_PRINCIPAL) =>
  (await store.get(principal, id)) !== undefined

const ACCEPT = { action: 'accept', content: { confirm: true } }
const DECLINE = { action: 'decline' }

/**
 * Starts `delete_note` for `noteId` and reads the confirmation request from the POST's SSE stream:
 * an `elicitation/create` with a string id, asking about the note by its title.
 */
async function startDelete(
  session: LegacySession,
  noteId: string,
  title: string,
  id: string | number = 'del'
) {
  const response = await session.request(
    'tools/call',
    { name: 'delete_note', arguments: { id: noteId } },
    { id }
  )
  const stream = reader(response)
  const ask = (await stream.next()) as JsonObject
  expect(ask).toMatchObject({
    jsonrpc: '2.0',
    method: 'elicitation/create',
    params: {
      message: `Delete the note "${title}"? This cannot be undone.`,
      requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } },
    },
  })
  // Naming its stream (random) and event, and the call that asked: its answer needs that call's scopes.
  expect(ask.id).toEqual(
    expect.stringMatching(/^s2c-p[A-Za-z0-9_-]{16}-\d+\.tools\/call\.delete_note$/)
  )
  return { stream, ask }
}

/** A note of the local principal, a form-capable session on `target`, and `delete_note` asking. */
async function deleteFlow(title: string, target = app, id: string | number = 'del') {
  const noteId = await seed(title)
  const { session } = await startSession(target, { capabilities: FORM_CLIENT })
  return { noteId, session, ...(await startDelete(session, noteId, title, id)) }
}

/** The stream's remaining messages are exactly the tool result of request `id`; returns its text. */
async function finalText(
  stream: SseReader,
  id: string | number = 'del',
  isError = false
): Promise<string> {
  const rest = await stream.rest()
  expect(rest).toHaveLength(1)
  const [final] = rest as [JsonObject]
  expect(final).toMatchObject({ jsonrpc: '2.0', id })
  expect(final, JSON.stringify(final.error)).not.toHaveProperty('error')
  expect(final.result).not.toHaveProperty('resultType')
  expect(final.result.isError === true).toBe(isError)
  return final.result.content[0].text
}

/** An answer POST is accepted with 202 and no body, whatever it answers. */
async function expectAccepted(response: Promise<Response>) {
  const answered = await response
  expect(answered.status).toBe(202)
  expect(await answered.text()).toBe('')
}

/** The call on `stream` ends with `text`, and the note `noteId` (of `principal`) was kept or deleted. */
async function expectOutcome(
  stream: SseReader,
  text: string,
  noteId: string,
  outcome: 'kept' | 'deleted',
  principal = LOCAL_PRINCIPAL
) {
  expect(await finalText(stream)).toBe(text)
  expect(await exists(noteId, principal)).toBe(outcome === 'kept')
}

describe('delete_note through server→client requests', () => {
  it('deletes the note once the confirmation is accepted (answer 202, result on the stream)', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Old draft')
    await expectAccepted(session.answer(ask.id, ACCEPT))
    await expectOutcome(stream, 'Deleted the note "Old draft".', noteId, 'deleted')
  })

  it('holds the flow between its rounds in the process: no requestState is sealed or opened', async () => {
    const seal = vi.spyOn(sealer, 'seal')
    const open = vi.spyOn(sealer, 'open')
    try {
      const { noteId, session, stream, ask } = await deleteFlow('Held draft')
      await expectAccepted(session.answer(ask.id, ACCEPT))
      await expectOutcome(stream, 'Deleted the note "Held draft".', noteId, 'deleted')
      expect(seal).not.toHaveBeenCalled()
      expect(open).not.toHaveBeenCalled()
    } finally {
      seal.mockRestore()
      open.mockRestore()
    }
  })

  it.each([
    ['declined', DECLINE, 'Kept the note.'],
    [
      'accepted without confirm',
      { action: 'accept', content: { confirm: false } },
      'Kept the note.',
    ],
    ['cancelled', { action: 'cancel' }, 'Nothing deleted; ask again later.'],
  ])('keeps the note when the confirmation is %s', async (_case, answer, text) => {
    const { noteId, session, stream, ask } = await deleteFlow('Keep me')
    await expectAccepted(session.answer(ask.id, answer))
    expect(await finalText(stream)).toBe(text)
    expect(await exists(noteId)).toBe(true)
  })

  it('ends with a tool error and keeps the note when the client answers with a JSON-RPC error', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Errored')
    await expectAccepted(
      session.answerError(ask.id, { code: -32603, message: 'The host has no UI' })
    )
    const text = await finalText(stream, 'del', true)
    expect(text).toContain('The host has no UI')
    expect(await exists(noteId)).toBe(true)
  })

  it('asks again, with a new id, when the answer does not fit the form', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Odd answer')
    await expectAccepted(session.answer(ask.id, { action: 'accept', content: { confirm: 'yes' } }))
    const again = (await stream.next()) as JsonObject
    expect(again).toMatchObject({ method: 'elicitation/create', params: ask.params })
    expect(again.id).not.toBe(ask.id)
    // The first question's id is spent: an accept for it changes nothing.
    await expectAccepted(session.answer(ask.id, ACCEPT))
    await expectAccepted(session.answer(again.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept')
  })

  it('ends with a tool error and keeps the note when nobody answers in time; a late answer changes nothing', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Unanswered', impatientApp)
    const text = await finalText(stream, 'del', true)
    expect(text).toMatch(/did not answer the question/)
    await expectAccepted(session.answer(ask.id, ACCEPT))
    expect(await exists(noteId)).toBe(true)
  })

  it("never lets another session's answer fill the slot: the flow waits for its own", async () => {
    const { session: intruder } = await startSession(app, { capabilities: FORM_CLIENT })
    const { noteId, session, stream, ask } = await deleteFlow('Contested')
    await expectAccepted(intruder.answer(ask.id, ACCEPT))
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept')
  })

  it("never lets another session's answer fill the slot: alone, the flow times out", async () => {
    const { session: intruder } = await startSession(impatientApp, { capabilities: FORM_CLIENT })
    const { noteId, stream, ask } = await deleteFlow('Hijacked', impatientApp)
    await expectAccepted(intruder.answer(ask.id, ACCEPT))
    expect(await finalText(stream, 'del', true)).toMatch(/did not answer/)
    expect(await exists(noteId)).toBe(true)
  })

  it("never lets another principal's answer fill the slot", async () => {
    const principal = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice')
    const noteId = await seed('Alice only', principal)
    const { session } = await startSession(authApp, {
      capabilities: FORM_CLIENT,
      headers: await bearer('alice'),
    })
    const { session: mallory } = await startSession(authApp, {
      capabilities: FORM_CLIENT,
      headers: await bearer('mallory'),
    })
    const { stream, ask } = await startDelete(session, noteId, 'Alice only')
    await expectAccepted(mallory.answer(ask.id, ACCEPT))
    // Mallory's answer on Alice's session id is refused outright.
    const stolen = await session.answer(ask.id, ACCEPT, await bearer('mallory'))
    await expectError(stolen, { status: 404, code: -32001, id: null })
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept', principal)
  })

  it('ignores an answer for an id nobody asked (202) and still takes the real one', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Unknown id')
    await expectAccepted(session.answer('s2c-pAAAAAAAAAAAAAAAA-1.tools/call.delete_note', ACCEPT))
    await expectAccepted(session.answer(`${ask.id}x`, ACCEPT))
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept')
  })

  it('counts an answer posted twice once: the first one decides', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Twice')
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectAccepted(session.answer(ask.id, ACCEPT))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept')
  })

  it('deletes once when the accept is posted twice', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Accepted twice')
    const before = events.length
    await expectAccepted(session.answer(ask.id, ACCEPT))
    await expectAccepted(session.answer(ask.id, ACCEPT))
    expect(await finalText(stream)).toBe('Deleted the note "Accepted twice".')
    const updates = events
      .slice(before)
      .filter((event) => event.kind === 'resource_updated' && event.uri === noteUri(noteId))
    expect(updates).toHaveLength(1)
  })

  it('answers an answer over the body limit with 413, and the flow still takes the real one', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Big answer')
    const huge = { action: 'accept', content: { confirm: true, padding: 'x'.repeat(1 << 20) } }
    const tooLarge = await session.answer(ask.id, huge)
    await expectError(tooLarge, { status: 413, code: INVALID_REQUEST, id: null })
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept')
  })

  it.each<[string, (id: string) => JsonObject]>([
    ['a numeric id', () => ({ jsonrpc: '2.0', id: 7, result: ACCEPT })],
    [
      'an id longer than the bus carries',
      (id) => ({ jsonrpc: '2.0', id: `${id}${'A'.repeat(MAX_ANSWER_ID_CHARS)}`, result: ACCEPT }),
    ],
    [
      'an id that names no call',
      () => ({ jsonrpc: '2.0', id: 's2c-AAAAAAAAAAAAAAAA', result: ACCEPT }),
    ],
    ['no jsonrpc member', (id) => ({ id, result: ACCEPT })],
  ])('refuses an answer with %s with 400 -32600', async (_case, answer) => {
    const { session, stream, ask } = await deleteFlow('Malformed answer')
    await expectError(await session.post(answer(ask.id)), {
      status: 400,
      code: INVALID_REQUEST,
      id: null,
    })
    await expectAccepted(session.answer(ask.id, DECLINE))
    expect(await finalText(stream)).toBe('Kept the note.')
  })

  it('refuses an answer sent with MCP-Protocol-Version 2026-07-28 (400), and the flow waits on', async () => {
    const { session, stream, ask } = await deleteFlow('Wrong version')
    const wrong = await session.answer(ask.id, ACCEPT, { [HEADER_PROTOCOL_VERSION]: '2026-07-28' })
    await expectError(wrong, { status: 400, code: INVALID_REQUEST, id: null })
    await expectAccepted(session.answer(ask.id, DECLINE))
    expect(await finalText(stream)).toBe('Kept the note.')
  })

  it('takes an answer sent with another supported MCP-Protocol-Version than the negotiated one', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Other version')
    await expectAccepted(
      session.answer(ask.id, ACCEPT, { [HEADER_PROTOCOL_VERSION]: '2025-03-26' })
    )
    await expectOutcome(stream, 'Deleted the note "Other version".', noteId, 'deleted')
  })

  it('answers a client without the elicitation capability with a tool error naming it, asking nothing', async () => {
    const noteId = await seed('No forms')
    const { session } = await startSession(app, { capabilities: { sampling: {} } })
    const response = await session.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: noteId } },
      { id: 'del' }
    )
    const messages = await readMessages(response)
    expect(messages).toHaveLength(1)
    const [final] = messages as [JsonObject]
    expect(final).toMatchObject({ id: 'del', result: { isError: true } })
    expect(final.result.content[0].text).toMatch(/elicitation/)
    expect(await exists(noteId)).toBe(true)
  })

  it("ends the call with the deployment's reason, asking nothing, where responses are sent whole (input.unavailable)", async () => {
    const reason = 'This deployment sends whole responses: it cannot ask mid-call.'
    const wholeResponses = notesReplica(bus, { unavailable: reason })
    const noteId = await seed('Whole responses')
    const { session } = await startSession(wholeResponses, { capabilities: FORM_CLIENT })
    const response = await session.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: noteId } },
      { id: 'del' }
    )
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    const messages = await readMessages(response)
    expect(messages).toHaveLength(1)
    const [final] = messages as [JsonObject]
    expect(final).toMatchObject({ id: 'del', result: { isError: true } })
    expect(final.result.content[0].text).toBe(reason)
    expect(await exists(noteId)).toBe(true)
  })

  it.each([
    ['2025-03-26', FORM_CLIENT, 'delete_note', '2025-03-26'],
    ['2025-06-18', { elicitation: { url: {} } }, 'share_note', '2025-06-18'],
    ['2025-03-26', FORM_CLIENT, 'delete_note', '2025-11-25'],
    ['2025-06-18', { elicitation: { url: {} } }, 'share_note', '2025-11-25'],
  ])(
    'never asks a %s session what its revision does not define, whatever it declared (header %4$s)',
    async (protocolVersion, capabilities, name, header) => {
      const noteId = await seed(`Revision ${protocolVersion}`)
      const { session } = await startSession(app, { protocolVersion, capabilities })
      const response = await session.request(
        'tools/call',
        { name, arguments: { id: noteId } },
        { id: 'rev', headers: { [HEADER_PROTOCOL_VERSION]: header } }
      )
      const messages = await readMessages(response)
      expect(messages).toHaveLength(1)
      expect((messages[0] as JsonObject).result).toMatchObject({ isError: true })
      expect(await exists(noteId)).toBe(true)
    }
  )

  it('gives two flows of one session different request ids and keeps their answers apart', async () => {
    const first = await seed('First')
    const second = await seed('Second')
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const one = await startDelete(session, first, 'First', 'one')
    const two = await startDelete(session, second, 'Second', 'two')
    expect(one.ask.id).not.toBe(two.ask.id)
    await expectAccepted(session.answer(two.ask.id, ACCEPT))
    expect(await finalText(two.stream, 'two')).toBe('Deleted the note "Second".')
    await expectAccepted(session.answer(one.ask.id, DECLINE))
    expect(await finalText(one.stream, 'one')).toBe('Kept the note.')
    expect([await exists(first), await exists(second)]).toStrictEqual([true, false])
  })
})

describe('delete_note: answers and asks a client cannot smuggle in', () => {
  it('ignores inputResponses and requestState sent in 2025-era params: the question is still asked', async () => {
    const noteId = await seed('Prefilled')
    const { session } = await startSession(app, { capabilities: FORM_CLIENT })
    const response = await session.request(
      'tools/call',
      {
        name: 'delete_note',
        arguments: { id: noteId },
        inputResponses: { confirm: ACCEPT },
        requestState: 'forged',
      },
      { id: 'del' }
    )
    const stream = reader(response)
    expect(await stream.next()).toMatchObject({ method: 'elicitation/create' })
    expect(await exists(noteId)).toBe(true)
  })

  it('takes client capabilities from initialize only, never from a request _meta', async () => {
    const noteId = await seed('Escalated')
    const { session } = await startSession(app, { capabilities: {} })
    const response = await session.request(
      'tools/call',
      {
        name: 'delete_note',
        arguments: { id: noteId },
        _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } },
      },
      { id: 'del' }
    )
    const [final] = (await readMessages(response)) as [JsonObject]
    expect(final).toMatchObject({ id: 'del', result: { isError: true } })
    expect(await exists(noteId)).toBe(true)
  })

  it.each([
    ['a null result', null],
    ['a string result', 'yes'],
    ['an array result', [ACCEPT]],
  ])('ends with a tool error and keeps the note for an answer with %s', async (_case, result) => {
    const { noteId, session, stream, ask } = await deleteFlow('Odd result')
    await expectAccepted(session.post({ jsonrpc: '2.0', id: ask.id, result }))
    expect(await finalText(stream, 'del', true)).toMatch(/could not answer/)
    expect(await exists(noteId)).toBe(true)
  })

  it('survives an accepted answer padded with extra content under the body limit', async () => {
    const { session, stream, ask } = await deleteFlow('Padded')
    const padded = { action: 'accept', content: { confirm: true, padding: 'x'.repeat(200_000) } }
    await expectAccepted(session.answer(ask.id, padded))
    // The extra member is not part of the form: the answer counts, the padding goes nowhere.
    expect(await finalText(stream)).toBe('Deleted the note "Padded".')
  })
})

describe('ending a flow early', () => {
  it('ends the flow on notifications/cancelled with nothing deleted; a later accept changes nothing', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Cancelled')
    const cancelled = await session.notify('notifications/cancelled', {
      requestId: 'del',
      reason: 'The user closed the dialog',
    })
    expect(cancelled.status).toBe(202)
    // A cancelled request gets no response (2025 cancellation): the stream just ends.
    expect(await stream.rest()).toStrictEqual([])
    await expectAccepted(session.answer(ask.id, ACCEPT))
    expect(await exists(noteId)).toBe(true)
  })

  it("ignores another session's notifications/cancelled for the same request id", async () => {
    const { session: other } = await startSession(app, { capabilities: FORM_CLIENT })
    const { session, stream, ask } = await deleteFlow('Not yours to cancel')
    expect((await other.notify('notifications/cancelled', { requestId: 'del' })).status).toBe(202)
    await expectAccepted(session.answer(ask.id, ACCEPT))
    expect(await finalText(stream)).toBe('Deleted the note "Not yours to cancel".')
  })

  it('refuses the answer of a session ended mid-flow (404); the flow ends with the session, note kept', async () => {
    const { noteId, session, stream, ask } = await deleteFlow('Ended mid-flow', impatientApp)
    expect((await session.delete()).status).toBe(204)
    await expectError(await session.answer(ask.id, ACCEPT), { status: 404, code: -32001, id: null })
    expect(await stream.rest()).toStrictEqual([
      {
        jsonrpc: '2.0',
        id: 'del',
        error: { code: -32001, message: expect.stringMatching(/^Session ended/) },
      },
    ])
    expect(await exists(noteId)).toBe(true)
  })

  // JSON-RPC ids 7 and "7" name different requests.
  it('cancels request 7 only for requestId 7, not for the string "7"', async () => {
    const { session, stream, ask } = await deleteFlow('Seven', app, 7)
    expect((await session.notify('notifications/cancelled', { requestId: '7' })).status).toBe(202)
    await expectAccepted(session.answer(ask.id, DECLINE))
    expect(await finalText(stream, 7)).toBe('Kept the note.')
  })

  // A JSON-RPC id may be any string: the cancellation must name the whole of it...
  it('cancels a request whose id is longer than the bus carries', async () => {
    const longId = `request-${'x'.repeat(MAX_EVENT_ID_CHARS)}`
    const { noteId, session, stream } = await deleteFlow('Long id', impatientApp, longId)
    expect((await session.notify('notifications/cancelled', { requestId: longId })).status).toBe(
      202
    )
    // Cancelled, the stream ends with no response; not cancelled, it ends with the timeout's error.
    expect(await stream.rest()).toStrictEqual([])
    expect(await exists(noteId)).toBe(true)
  })

  // ...and only the whole of it.
  it('does not cancel a request whose id is only a prefix of the cancelled one', async () => {
    const prefix = 'p'.repeat(MAX_EVENT_ID_CHARS)
    const { session, stream, ask } = await deleteFlow('Prefix id', app, prefix)
    const cancelled = await session.notify('notifications/cancelled', { requestId: `${prefix}-2` })
    expect(cancelled.status).toBe(202)
    await expectAccepted(session.answer(ask.id, DECLINE))
    expect(await finalText(stream, prefix)).toBe('Kept the note.')
  })
})

describe('scopes of answers, notifications and initialize', () => {
  const alice = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice')
  /** The notes app whose every operation also needs the base scope `mcp` (AUTH_REQUIRED_SCOPE). */
  const baseApp = createApp(parseConfig({ ...TEST_AUTH_ENV, AUTH_REQUIRED_SCOPE: 'mcp' }), {
    store,
    engineStore,
    sealer,
    bus,
  })
  /** The Authorization header of a token of alice's granting `scope` (none at all when absent). */
  const aliceWith = async (scope?: string) => ({
    authorization: `Bearer ${await signTestToken({ subject: 'alice', scope })}`,
  })

  /** A note of alice's and her `delete_note` of it asking, on a session of a token granting `scope`. */
  async function aliceDeletes(title: string, target: typeof app, scope: string) {
    const noteId = await seed(title, alice)
    const { session } = await startSession(target, {
      capabilities: FORM_CLIENT,
      headers: await aliceWith(scope),
    })
    return { noteId, session, ...(await startDelete(session, noteId, title)) }
  }

  it('refuses the answer of a token of the same caller without notes:write (403) and stores nothing', async () => {
    const { noteId, session, stream, ask } = await aliceDeletes('Scoped', authApp, 'notes:write')
    for (const scope of [undefined, 'notes:read'])
      await expectInsufficientScope(
        await session.answer(ask.id, ACCEPT, await aliceWith(scope)),
        'notes:write',
        null
      )
    // Had a refused accept been stored, it would decide: the first answer counts.
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept', alice)
  })

  it('refuses a base-only or scopeless answer naming the base scope and the tool’s; the writer’s answer then deletes', async () => {
    const { noteId, session, stream, ask } = await aliceDeletes('Base', baseApp, 'mcp notes:write')
    for (const scope of [undefined, 'mcp', 'notes:write'])
      await expectInsufficientScope(
        await session.answer(ask.id, ACCEPT, await aliceWith(scope)),
        'mcp notes:write',
        null
      )
    expect(await exists(noteId, alice)).toBe(true)
    await expectAccepted(session.answer(ask.id, ACCEPT))
    await expectOutcome(stream, 'Deleted the note "Base".', noteId, 'deleted', alice)
  })

  it('refuses an answer whose id was changed to name an operation without scopes: nothing is stored', async () => {
    const { noteId, session, stream, ask } = await aliceDeletes('Renamed', authApp, 'notes:write')
    const renamed = (ask.id as string).replace(
      /\.tools\/call\.delete_note$/,
      '.tools/call.list_tags'
    )
    expect(renamed).not.toBe(ask.id)
    await expectAccepted(session.answer(renamed, ACCEPT, await aliceWith('notes:read')))
    await expectAccepted(session.answer(ask.id, DECLINE))
    await expectOutcome(stream, 'Kept the note.', noteId, 'kept', alice)
  })

  it('refuses initialize without the base scope (403, no session)', async () => {
    const refused = await postLegacy(baseApp, initializeMessage(), await aliceWith('notes:write'))
    expect(refused.headers.get(HEADER_SESSION_ID)).toBeNull()
    await expectInsufficientScope(refused, 'mcp', 1)
    const accepted = await postLegacy(baseApp, initializeMessage(), await aliceWith('mcp'))
    expect(accepted.status).toBe(200)
    expect(accepted.headers.get(HEADER_SESSION_ID)).toBeTruthy()
  })

  it('refuses notifications without the base scope: a refused notifications/cancelled cancels nothing', async () => {
    const { noteId, session, stream, ask } = await aliceDeletes(
      'Not cancelled',
      baseApp,
      'mcp notes:write'
    )
    const without = await aliceWith('notes:write')
    await expectInsufficientScope(
      await session.notify('notifications/initialized', undefined, without),
      'mcp',
      null
    )
    await expectInsufficientScope(
      await session.notify('notifications/cancelled', { requestId: 'del' }, without),
      'mcp',
      null
    )
    await expectAccepted(session.answer(ask.id, ACCEPT))
    await expectOutcome(stream, 'Deleted the note "Not cancelled".', noteId, 'deleted', alice)
  })

  it('refuses ping, logging/setLevel and resources/subscribe without the base scope', async () => {
    const { session } = await startSession(baseApp, { headers: await aliceWith('mcp notes:write') })
    const headers = await aliceWith('notes:write')
    const cases: Array<[string, JsonObject | undefined, string]> = [
      ['ping', undefined, 'mcp'],
      ['logging/setLevel', { level: 'info' }, 'mcp'],
      ['resources/subscribe', { uri: 'notes://help' }, 'mcp notes:read'],
    ]
    for (const [method, params, scopes] of cases)
      await expectInsufficientScope(
        await session.request(method, params, { id: 3, headers }),
        scopes,
        3
      )
  })
})

describe('answers on another replica', () => {
  it('takes an answer posted to a replica on the same bus', async () => {
    const { session, stream, ask } = await deleteFlow('Same bus')
    const elsewhere = new LegacySession(notesReplica(bus, {}), session.id, session.protocolVersion)
    await expectAccepted(elsewhere.answer(ask.id, ACCEPT))
    expect(await finalText(stream)).toBe('Deleted the note "Same bus".')
  })

  it('finds an answer whose bus signal never arrives by polling the store', async () => {
    // The replica holding the flow has a bus of its own: the other replica's signal is lost.
    const holder = notesReplica(new InProcessEventBus(), { answerPollMs: 20 })
    const { noteId, session, stream, ask } = await deleteFlow('Lost signal', holder)
    const elsewhere = new LegacySession(app, session.id, session.protocolVersion)
    await expectAccepted(elsewhere.answer(ask.id, ACCEPT))
    await expectOutcome(stream, 'Deleted the note "Lost signal".', noteId, 'deleted')
  })
})

describe('prompts/get through server→client requests (fixture)', () => {
  const fixture = createFixtureApp(parseConfig({}), { sealer, bus, sessions: engineStore })
  const getPrompt = (session: LegacySession) =>
    session.request('prompts/get', { name: 'test_input_required_result_prompt' }, { id: 'p' })

  it('asks on the stream and answers the prompt with the answer', async () => {
    const { session } = await startSession(fixture, { capabilities: FORM_CLIENT })
    const stream = reader(await getPrompt(session))
    const ask = (await stream.next()) as JsonObject
    expect(ask).toMatchObject({ method: 'elicitation/create' })
    await expectAccepted(session.answer(ask.id, { action: 'accept', content: { context: 'tea' } }))
    const [final] = (await stream.rest()) as [JsonObject]
    expect(final.result).toStrictEqual({
      messages: [{ role: 'user', content: { type: 'text', text: 'Use this context: tea' } }],
    })
  })

  it('answers a client without the elicitation capability with a JSON-RPC error on HTTP 200', async () => {
    const { session } = await startSession(fixture)
    const error = await expectError(await getPrompt(session), {
      status: 200,
      code: INVALID_REQUEST,
      id: 'p',
    })
    expect(error.message).toMatch(/elicitation/)
  })
})
