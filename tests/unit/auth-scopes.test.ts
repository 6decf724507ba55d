/**
 * Scopes per operation through the whole notes app in-process (the HS256 tokens of
 * `test-tokens.ts`, an in-memory SQLite store), both protocol eras: reads need `notes:read`, writes
 * `notes:write` (which implies `notes:read`), AUTH_REQUIRED_SCOPE is a base scope every operation
 * needs, and a 403 names every scope the operation needs (base included) in one challenge, decided
 * from the body's tool name whatever `Mcp-Name` says. Listing tools is the same for every token (a
 * client can show what more scopes would allow), and per-user results are marked
 * `cacheScope: "private"`. Also: the safe default that keeps the single-user mode off public
 * addresses.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { SignJWT, generateKeyPair } from 'jose'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { ConfigError, assertSafeExposure, isLoopbackHost, parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { initializeMessage } from '../support/legacy-request.ts'
import { MCP_URL, mcpInit, postMcp, type JsonObject } from '../support/mcp-request.ts'
import {
  TEST_AUTH_ENV,
  TEST_RESOURCE_METADATA,
  expectInsufficientScope,
  signTestToken,
} from '../support/test-tokens.ts'

async function notesApp(env: Record<string, string> = {}) {
  const { store, engineStore } = await sqliteStores()
  const config = parseConfig({ ...TEST_AUTH_ENV, ...env })
  const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
  const logger = { warn: () => {}, error: () => {} }
  return createApp(config, { store, engineStore, sealer, bus: new InProcessEventBus(), logger })
}

const app = await notesApp()
const baseApp = await notesApp({ AUTH_REQUIRED_SCOPE: 'mcp' })

async function call(
  target: typeof app,
  scope: string | undefined,
  method: string,
  params: JsonObject = {},
  headers: Record<string, string> = {}
) {
  return postMcp(target, method, {
    params,
    headers: {
      authorization: `Bearer ${await signTestToken({ subject: 'alice', scope })}`,
      ...headers,
    },
  })
}

const tool = (name: string, args: JsonObject = {}) => ({ name, arguments: args })

const expectStepUp = (response: Response, scopes: string) =>
  expectInsufficientScope(response, scopes, 1)

describe('scopes per operation', () => {
  it('lets notes:read read (search, resources, prompts, completion) and refuses its writes', async () => {
    const reads: Array<[string, JsonObject]> = [
      ['tools/call', tool('search_notes', { query: 'x' })],
      ['tools/call', tool('list_tags')],
      ['resources/list', {}],
      ['resources/read', { uri: 'notes://help' }],
      ['prompts/get', { name: 'weekly_digest', arguments: {} }],
      [
        'completion/complete',
        { ref: { type: 'ref/resource', uri: 'note://{id}' }, argument: { name: 'id', value: 'n' } },
      ],
    ]
    for (const [method, params] of reads) {
      expect((await call(app, 'notes:read', method, params)).status, method).toBe(200)
    }
    for (const name of ['create_note', 'delete_note', 'share_note', 'delete_notes_by_tag']) {
      await expectStepUp(await call(app, 'notes:read', 'tools/call', tool(name)), 'notes:write')
    }
  })

  it('lets notes:write do everything, reads included (write implies read)', async () => {
    const created = await call(
      app,
      'notes:write',
      'tools/call',
      tool('create_note', { title: 'W' })
    )
    expect(created.status).toBe(200)
    const id = (await created.json()).result.structuredContent.note.id
    const read = await call(app, 'notes:write', 'resources/read', { uri: `note://${id}` })
    expect(read.status).toBe(200)
  })

  it('answers a token without scopes with the step-up to the scope of each read', async () => {
    await expectStepUp(
      await call(app, undefined, 'tools/call', tool('search_notes', { query: 'x' })),
      'notes:read'
    )
    await expectStepUp(
      await call(app, 'profile', 'resources/read', { uri: 'notes://help' }),
      'notes:read'
    )
  })

  it('lists the same tools for every token, and serves the list with no scope at all', async () => {
    const lists = await Promise.all(
      [undefined, 'notes:read', 'notes:write'].map(async (scope) => {
        const response = await call(app, scope, 'tools/list')
        expect(response.status).toBe(200)
        return (await response.json()).result
      })
    )
    expect(lists[1]).toEqual(lists[0])
    expect(lists[2]).toEqual(lists[0])
    expect(lists[0].cacheScope).toBe('public')
  })

  it('marks what one user reads as private to that user', async () => {
    for (const [method, params] of [
      ['resources/list', {}],
      ['resources/read', { uri: 'notes://help' }],
    ] as const) {
      const response = await call(app, 'notes:read', method, params)
      expect((await response.json()).result.cacheScope, method).toBe('private')
    }
  })

  it('decides from the body: an Mcp-Name naming a read tool does not lend its scope', async () => {
    const response = await call(
      app,
      'notes:read',
      'tools/call',
      tool('create_note', { title: 'x' }),
      {
        'mcp-name': 'search_notes',
      }
    )
    expect(response.status).not.toBe(200)
    const listed = await call(
      app,
      'notes:write',
      'tools/call',
      tool('search_notes', { query: 'x' })
    )
    expect((await listed.json()).result.structuredContent).toEqual({ notes: [] })
  })

  it('names the base scope with the operation’s in one challenge, and refuses a token without it', async () => {
    await expectStepUp(
      await call(baseApp, 'mcp notes:read', 'tools/call', tool('create_note')),
      'mcp notes:write'
    )
    await expectStepUp(await call(baseApp, 'notes:write', 'tools/list'), 'mcp')
    // A token lacking the base scope too hears everything the operation needs at once.
    await expectStepUp(
      await call(baseApp, 'notes:read', 'tools/call', tool('create_note')),
      'mcp notes:write'
    )
    expect((await call(baseApp, 'mcp notes:write', 'tools/call', tool('list_tags'))).status).toBe(
      200
    )
  })

  it('refuses a notification without the base scope like any other message', async () => {
    const notify = async (scope: string) =>
      postMcp(baseApp, 'notifications/cancelled', {
        params: { requestId: 1 },
        patch: (message) => delete message.id,
        headers: { authorization: `Bearer ${await signTestToken({ subject: 'alice', scope })}` },
      })
    await expectInsufficientScope(await notify('notes:write'), 'mcp', null)
    expect((await notify('mcp')).status).toBe(202)
  })

  it('asks for the baseline in the 401 and the metadata, base scope first, never offline_access', async () => {
    const response = await postMcp(baseApp, 'tools/list')
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer scope="mcp notes:read", resource_metadata="${TEST_RESOURCE_METADATA}"`
    )
    const metadata = await baseApp.request(
      'http://127.0.0.1/.well-known/oauth-protected-resource',
      {
        headers: { host: '127.0.0.1' },
      }
    )
    expect((await metadata.json()).scopes_supported).toEqual(['mcp', 'notes:read'])
    expect(() =>
      parseConfig({ ...TEST_AUTH_ENV, AUTH_REQUIRED_SCOPE: 'mcp offline_access' })
    ).toThrow(ConfigError)
  })

  it('checks 2025-era requests the same way: 403 with the challenge', async () => {
    const authorization = `Bearer ${await signTestToken({ subject: 'alice', scope: 'notes:read' })}`
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization,
      host: '127.0.0.1',
    }
    const init = await app.request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers,
      body: JSON.stringify(initializeMessage()),
    })
    const session = init.headers.get('mcp-session-id') as string
    const response = await app.request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: tool('create_note', { title: 'x' }),
      }),
    })
    await expectStepUp(response, 'notes:write')
  })
})

describe('an unreachable authorization server', () => {
  it('answers 503 without a challenge (the token may be fine), not 401', async () => {
    const unreachable = await notesApp({
      AUTH_JWT_SECRET: '',
      AUTH_JWKS_URL: 'http://127.0.0.1:1/jwks',
    })
    // An asymmetric token: the server must fetch the keys to check it, and cannot.
    const { privateKey } = await generateKeyPair('ES256')
    const token = await new SignJWT({ scope: 'notes:read' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(TEST_AUTH_ENV.AUTH_ISSUER)
      .setAudience(TEST_AUTH_ENV.AUTH_AUDIENCE)
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(privateKey)
    // Not `postMcp`, which fails any 5xx: this one is meant.
    const init = mcpInit('tools/list', { headers: { authorization: `Bearer ${token}` } })
    const response = await unreachable.request(MCP_URL, init)
    expect(response.status).toBe(503)
    expect(response.headers.get('www-authenticate')).toBeNull()
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(await response.json()).toMatchObject({ id: 1, error: { code: -32603 } })
  })
})

describe('the safe default', () => {
  it('knows loopback HOST values from the rest', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', 'LOCALHOST']) {
      expect(isLoopbackHost(host), host).toBe(true)
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.5', 'notes.example.com', '127.0.0.1.nip.io']) {
      expect(isLoopbackHost(host), host).toBe(false)
    }
  })

  it('refuses a public HOST without auth, unless ALLOW_UNAUTHENTICATED=1 or auth is configured', () => {
    expect(() => assertSafeExposure(parseConfig({ HOST: '0.0.0.0' }))).toThrow(/AUTH_ISSUER/)
    expect(() =>
      assertSafeExposure(parseConfig({ HOST: '0.0.0.0', ALLOW_UNAUTHENTICATED: '1' }))
    ).not.toThrow()
    expect(() =>
      assertSafeExposure(parseConfig({ HOST: '0.0.0.0', ...TEST_AUTH_ENV }))
    ).not.toThrow()
    expect(() => assertSafeExposure(parseConfig({}))).not.toThrow()
  })

  it('makes npm start exit with a message naming AUTH_ISSUER on HOST=0.0.0.0 without auth', async () => {
    const root = join(import.meta.dirname, '../..')
    const child = spawn(process.execPath, [join(root, 'src/node.ts')], {
      cwd: root,
      env: {
        ...process.env,
        HOST: '0.0.0.0',
        PORT: '0',
        DATA_DIR: join(root, 'data-never-created'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code).toBe(1)
    expect(output).toContain('Refusing to serve HOST=0.0.0.0 without authentication')
    expect(output).toContain('AUTH_ISSUER')
    expect(output).not.toContain('listening')
  })
})
