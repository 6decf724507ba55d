/**
 * Per-operation scopes in the engine (`src/mcp/scopes.ts`): what an operation needs is decided from
 * the parsed body (the tool's name), checked against the scopes the HTTP layer says the caller holds,
 * and answered with the HTTP layer's challenge before anything runs, in both protocol eras. Without
 * granted scopes (no auth) everything is allowed. The notes server's own policy is pinned too.
 */
import { describe, expect, it } from 'vitest'
import * as z from 'zod'
import { definitions, text } from '../../src/mcp/definitions.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { requiredScopes } from '../../src/mcp/scopes.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer } from '../../src/mcp/server.ts'
import { createNotesServer } from '../../src/notes/server.ts'
import { NOTES_READ, NOTES_WRITE } from '../../src/notes/scopes.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { SseReader, initializeMessage } from '../support/legacy-request.ts'
import { callMcp, type HandlerCallOptions } from '../support/mcp-request.ts'

let ran = 0
const { tool, prompt } = definitions<null>()
const okForm = z.object({ ok: z.boolean() })
const server = compileServer<null>({
  info: { name: 'scoped', version: '1.0.0' },
  scopes: { 'tools/list': ['things:list'], 'prompts/get': ['things:read'] },
  tools: [
    tool({
      name: 'write_thing',
      description: 'Needs write.',
      input: z.object({}),
      scopes: ['things:write'],
      run: () => (ran++, text('written')),
    }),
    tool({
      name: 'open_thing',
      description: 'Needs nothing.',
      input: z.object({}),
      run: () => text('open'),
    }),
    tool({
      name: 'confirm_thing',
      description: 'Needs write, and asks first.',
      input: z.object({}),
      scopes: ['things:write'],
      async run(_args, ctx) {
        const answer = await ctx.elicit('ok', { message: 'Write the thing?', schema: okForm })
        return text(answer.action)
      },
    }),
  ],
  prompts: [
    prompt({
      name: 'ask_thing',
      description: 'Asks first; prompts/get needs read.',
      async get(_args, ctx) {
        const answer = await ctx.elicit('ok', { message: 'Read the thing?', schema: okForm })
        return { messages: [{ role: 'user', content: { type: 'text', text: answer.action } }] }
      },
    }),
  ],
})
const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const sessions = new SqliteEngineStore({ path: ':memory:' })
await sessions.migrate()
const handler = createMcpHandler({
  server,
  deps: null,
  sealer,
  bus: new InProcessEventBus(),
  legacy: { sessions },
})

function challenge(required: readonly string[], id: unknown): Response {
  return Response.json(
    { required, id },
    { status: 403, headers: { 'www-authenticate': 'Bearer test' } }
  )
}

function modern(method: string, params: Record<string, unknown>, extra: HandlerCallOptions) {
  return callMcp(handler, method, { id: 7, params, insufficientScope: challenge, ...extra })
}

/** Opens a 2025 session for principal `p` (no scopes reported) and answers its id. */
async function openSession(): Promise<string> {
  const init = await handler({
    body: JSON.stringify(initializeMessage()),
    headers: new Headers({ 'content-type': 'application/json' }),
    principal: 'p',
  })
  return init.headers.get('mcp-session-id') as string
}

describe('per-operation scopes', () => {
  it('answers the challenge with the tool’s scopes, before the tool runs, for a call lacking them', async () => {
    const before = ran
    const response = await modern(
      'tools/call',
      { name: 'write_thing' },
      { grantedScopes: new Set(['things:read']) }
    )
    expect(response.status).toBe(403)
    expect(await response.json()).toEqual({ required: ['things:write'], id: 7 })
    expect(ran).toBe(before)
  })

  it('runs the tool when the scopes are granted, and anything when no scopes are reported (no auth)', async () => {
    for (const grantedScopes of [new Set(['things:write']), undefined]) {
      const response = await modern('tools/call', { name: 'write_thing' }, { grantedScopes })
      expect(response.status).toBe(200)
      expect((await response.json()).result.content[0].text).toBe('written')
    }
  })

  it('decides from the body’s tool name, whatever the Mcp-Name header says', async () => {
    const response = await modern(
      'tools/call',
      { name: 'write_thing' },
      { grantedScopes: new Set(), headers: { 'mcp-name': 'open_thing' } }
    )
    // The header disagreeing with the body is itself refused; it can never borrow open_thing's scopes.
    expect(response.status).toBe(400)
  })

  it('applies method scopes, and a tool without scopes needs none', async () => {
    expect((await modern('tools/list', {}, { grantedScopes: new Set() })).status).toBe(403)
    const open = await modern('tools/call', { name: 'open_thing' }, { grantedScopes: new Set() })
    expect(open.status).toBe(200)
  })

  it('checks 2025-era requests the same way', async () => {
    const session = await openSession()
    const call = await handler({
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'write_thing' },
      }),
      headers: new Headers({ 'content-type': 'application/json', 'mcp-session-id': session }),
      principal: 'p',
      grantedScopes: new Set(['things:read']),
      insufficientScope: challenge,
    })
    expect(call.status).toBe(403)
    expect(await call.json()).toEqual({ required: ['things:write'], id: 2 })
  })

  it('checks the 2025 GET stream and DELETE against the base scopes; a refused DELETE ends nothing', async () => {
    const session = await openSession()
    const headers = () => new Headers({ accept: 'text/event-stream', 'mcp-session-id': session })
    const scoped = (method: 'GET' | 'DELETE', granted: string[]) =>
      handler({
        method,
        body: '',
        headers: headers(),
        principal: 'p',
        grantedScopes: new Set(granted),
        baseScopes: ['things:base'],
        insufficientScope: challenge,
      })
    for (const method of ['GET', 'DELETE'] as const) {
      const refused = await scoped(method, ['things:write'])
      expect(refused.status, method).toBe(403)
      expect(await refused.json()).toEqual({ required: ['things:base'], id: null })
    }
    const stream = await scoped('GET', ['things:base'])
    expect(stream.status).toBe(200)
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/)
    await stream.body?.cancel()
    // The session outlived the refused DELETE; a granted one ends it.
    expect((await scoped('DELETE', ['things:base'])).status).toBe(204)
    expect((await scoped('DELETE', ['things:base'])).status).toBe(404)
  })

  it('needs the asking call’s scopes, base scopes included, for a 2025 answer: a tool’s or a method’s', async () => {
    const grant = (scopes: string[]) => ({
      principal: 'p',
      grantedScopes: new Set(scopes),
      baseScopes: ['things:base'],
      insufficientScope: challenge,
    })
    const init = await handler({
      body: JSON.stringify(initializeMessage({ capabilities: { elicitation: {} } })),
      headers: new Headers({ 'content-type': 'application/json' }),
      ...grant(['things:base']),
    })
    const headers = new Headers({
      'content-type': 'application/json',
      'mcp-session-id': init.headers.get('mcp-session-id') as string,
    })
    const post = (message: object, scopes: string[]) =>
      handler({ body: JSON.stringify({ jsonrpc: '2.0', ...message }), headers, ...grant(scopes) })
    for (const [method, name, own] of [
      ['tools/call', 'confirm_thing', 'things:write'],
      ['prompts/get', 'ask_thing', 'things:read'],
    ] as const) {
      const granted = ['things:base', own]
      const stream = new SseReader(await post({ id: method, method, params: { name } }, granted))
      const ask = (await stream.next()) as { id: string; method: string }
      expect(ask.method, method).toBe('elicitation/create')
      const answer = (scopes: string[]) =>
        post({ id: ask.id, result: { action: 'accept', content: { ok: true } } }, scopes)
      for (const scopes of [[], ['things:base'], [own]]) {
        const refused = await answer(scopes)
        expect(refused.status, `${method} with ${scopes.join(' ')}`).toBe(403)
        expect(await refused.json()).toEqual({ required: granted, id: null })
      }
      expect((await answer(granted)).status).toBe(202)
      expect(await stream.next()).toMatchObject({ id: method, result: {} })
      expect(JSON.stringify(await stream.next())).toBeUndefined()
    }
  })

  it('refuses initialize and notifications of the 2025 era without the base scopes', async () => {
    const scoped = (body: object, granted: string[], headers: Record<string, string> = {}) =>
      handler({
        body: JSON.stringify(body),
        headers: new Headers({ 'content-type': 'application/json', ...headers }),
        principal: 'p',
        grantedScopes: new Set(granted),
        baseScopes: ['things:base'],
        insufficientScope: challenge,
      })
    const refused = await scoped(initializeMessage({ id: 4 }), ['things:write'])
    expect(refused.status).toBe(403)
    expect(refused.headers.get('mcp-session-id')).toBeNull()
    expect(await refused.json()).toEqual({ required: ['things:base'], id: 4 })
    const init = await scoped(initializeMessage(), ['things:base'])
    const session = { 'mcp-session-id': init.headers.get('mcp-session-id') as string }
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' }
    const notified = await scoped(initialized, [], session)
    expect(notified.status).toBe(403)
    expect(await notified.json()).toEqual({ required: ['things:base'], id: null })
    expect((await scoped(initialized, ['things:base'], session)).status).toBe(202)
  })

  it('gives the notes server read and write scopes per operation, and none for the lists', () => {
    const notes = createNotesServer()
    const need = (method: string, params: Record<string, unknown> = {}) =>
      requiredScopes(notes, method, params)
    expect(need('tools/call', { name: 'search_notes' })).toEqual([NOTES_READ])
    expect(need('tools/call', { name: 'get_note' })).toEqual([NOTES_READ])
    for (const name of [
      'create_note',
      'update_note',
      'delete_note',
      'delete_notes_by_tag',
      'create_note_from_template',
      'share_note',
    ])
      expect(need('tools/call', { name })).toEqual([NOTES_WRITE])
    for (const method of [
      'resources/read',
      'resources/list',
      'prompts/get',
      'completion/complete',
      'subscriptions/listen',
      'resources/subscribe',
    ])
      expect(need(method)).toEqual([NOTES_READ])
    for (const method of [
      'tools/list',
      'prompts/list',
      'resources/templates/list',
      'server/discover',
    ])
      expect(need(method)).toEqual([])
    expect(need('tools/call', { name: 'no_such_tool' })).toEqual([])
  })
})
