/**
 * Authorization inside workerd: the real Worker entry (`src/worker.ts`, its default export) with auth
 * bindings, on the local D1 of this file. The same checks as on Node (`tests/e2e/oidc-tokens.test.ts`)
 * except the browser: valid, expired, not-yet-valid, other-issuer, other-audience, `alg: none`,
 * HS256-with-the-public-key, tampered and URL tokens; an unknown `kid` refused, then known after the
 * authorization server rotates its keys, with the JWKS fetched by `fetch` once per isolate; the 403
 * step-up naming `notes:write`, and the scopes of a task's tool on `tasks/get` and `tasks/cancel`; alice's note hidden from bob by id, URI, search and completion; bob's
 * replay of her `requestState` refused; and the approval page deciding only for the signed-in owner
 * (bob 403 and pending, then alice approves), with the session cookie a completed sign-in sets. And
 * the safe default: without auth, a request under a public name is refused unless ALLOW_UNAUTHENTICATED=1.
 *
 * The authorization server's JWKS endpoint is served inside the isolate by the test (its own
 * RS256 keys) by routing `fetch` of that one URL: `oidc-provider` cannot run in workerd, and
 * the browser sign-in against the real one is tested on Node. The Worker's own code — its `fetch`,
 * cache and cool-down — runs unchanged.
 */
import { env } from 'cloudflare:test'
import {
  SignJWT,
  base64url,
  decodeJwt,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JWK,
  type JWTPayload,
} from 'jose'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { sessionCookie } from '../../src/auth/web-login.ts'
import { importKeyRing, parseKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import worker from '../../src/worker.ts'
import { mcpInit, type JsonObject } from '../support/mcp-request.ts'
import { TASKS, isTerminal, waitForTask } from '../support/tasks.ts'
import { claimRefusals } from '../support/test-tokens.ts'

const ORIGIN = 'http://127.0.0.1'
const ISSUER = 'https://as.test'
const JWKS_URL = 'https://as.test/jwks'
const AUDIENCE = `${ORIGIN}/mcp`
const bindings = {
  ...env,
  AUTH_ISSUER: ISSUER,
  AUTH_JWKS_URL: JWKS_URL,
  AUTH_WEB_CLIENT_ID: 'notes-web',
  AUTH_WEB_CLIENT_SECRET: 'notes-web-secret',
}

interface Key {
  kid: string
  privateKey: CryptoKey
  publicKey: CryptoKey
  jwk: JWK
}

async function key(kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    kid,
    privateKey,
    publicKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  }
}

let published: Key[] = []
let jwksFetches = 0
const realFetch = globalThis.fetch

beforeAll(() => {
  vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input)
    if (url !== JWKS_URL) return realFetch(input, init)
    jwksFetches++
    return Response.json({ keys: published.map((k) => k.jwk) })
  })
})

afterAll(() => {
  vi.unstubAllGlobals()
})

let k1: Key

function token(
  claims: JWTPayload = {},
  signer: Key = k1,
  header: JsonObject = {}
): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const payload: JWTPayload = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    client_id: 'mcp-client',
    scope: 'notes:read notes:write',
    iat: now,
    exp: now + 300,
    ...claims,
  }
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: signer.kid, ...header })
    .sign(signer.privateKey)
}

function post(
  authorization: string | undefined,
  method: string,
  params: JsonObject,
  query = ''
): Promise<Response> {
  const init = mcpInit(method, {
    params,
    capabilities: { elicitation: { form: {}, url: {} } },
    headers: { authorization },
  })
  return worker.fetch(new Request(`${ORIGIN}/mcp${query}`, init), bindings)
}

const as = (subject: string, scope = 'notes:read notes:write') =>
  token({ sub: subject, scope }).then((t) => `Bearer ${t}`)

async function result(response: Response): Promise<JsonObject> {
  expect(response.status).toBe(200)
  return ((await response.json()) as JsonObject).result
}

const callTool = async (authorization: string, name: string, args: JsonObject = {}) =>
  result(await post(authorization, 'tools/call', { name, arguments: args }))

async function expectInvalidToken(response: Response, description: RegExp) {
  expect(response.status).toBe(401)
  const challenge = response.headers.get('www-authenticate') ?? ''
  expect(challenge).toMatch(/^Bearer error="invalid_token", /)
  expect(challenge).toMatch(description)
  expect(response.headers.get('cache-control')).toBe('no-store')
}

describe('authorization inside workerd', () => {
  it('refuses a kid the authorization server does not publish yet, then knows it after rotation', async () => {
    k1 = await key('k1')
    const next = await key('k2')
    published = [k1]
    // The isolate's first request: the JWKS is fetched, k2 is not in it.
    const early = await token({}, next)
    await expectInvalidToken(await post(`Bearer ${early}`, 'tools/list', {}), /unknown key/)
    expect((await post(await as('alice'), 'tools/list', {})).status).toBe(200)
    expect(jwksFetches).toBe(1)
    published = [next, k1]
    expect((await post(`Bearer ${early}`, 'tools/list', {})).status).toBe(200)
    expect(jwksFetches).toBe(2)
  })

  it('keeps the keys for the isolate: many requests, no more JWKS fetches', async () => {
    const before = jwksFetches
    for (let i = 0; i < 5; i++)
      expect((await post(await as(`user${i}`), 'tools/list', {})).status).toBe(200)
    expect(jwksFetches).toBe(before)
  })

  it.each<[string, () => Promise<string>, RegExp]>([
    ...claimRefusals(token, 'https://evil.test'),
    [
      'a token for another resource',
      () => token({ aud: 'https://other.test/mcp' }),
      /its audience must be http:\/\/127\.0\.0\.1\/mcp/,
    ],
    [
      'an unsigned token (alg: none)',
      async () => `${base64url.encode('{"alg":"none"}')}.${(await token()).split('.')[1]}.`,
      /./,
    ],
    [
      "an HS256 token whose secret is the server's public key",
      async () =>
        new SignJWT(decodeJwt(await token()))
          .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
          .sign(new TextEncoder().encode(await exportSPKI(k1.publicKey))),
      /algorithm this server refuses/,
    ],
    [
      'a tampered signature',
      async () => {
        const [h, p, s = ''] = (await token()).split('.')
        return `${h}.${p}.${s[0] === 'A' ? 'B' : 'A'}${s.slice(1)}`
      },
      /signature is invalid/,
    ],
  ])('refuses %s with 401 invalid_token', async (_case, mint, description) => {
    await expectInvalidToken(await post(`Bearer ${await mint()}`, 'tools/list', {}), description)
  })

  it('refuses a token in the query string with 400 invalid_request', async () => {
    const response = await post(undefined, 'tools/list', {}, `?access_token=${await token()}`)
    expect(response.status).toBe(400)
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_request"/)
  })

  it('lets a read-only token search and answers its write with a 403 step-up naming notes:write', async () => {
    const reader = await as('alice', 'notes:read')
    expect((await callTool(reader, 'search_notes', { query: 'x' })).isError).toBeFalsy()
    const response = await post(reader, 'tools/call', {
      name: 'create_note',
      arguments: { title: 'x' },
    })
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toMatch(
      /^Bearer error="insufficient_scope", scope="notes:write", /
    )
  })

  it('answers tasks/get and tasks/cancel of a task only to a token with the scopes of its tool', async () => {
    const send = (authorization: string, method: string, params: JsonObject) =>
      worker.fetch(
        new Request(
          `${ORIGIN}/mcp`,
          mcpInit(method, { params, capabilities: TASKS, headers: { authorization } })
        ),
        bindings
      )
    const reader = await as('alice', 'notes:read')
    const created = await result(
      await send(reader, 'tools/call', { name: 'export_notes', arguments: {} })
    )
    expect(created.resultType).toBe('task')
    const taskId = created.taskId as string
    const scopeless = await as('alice', '')
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const refused = await send(scopeless, method, { taskId })
      expect(refused.status, method).toBe(403)
      expect(refused.headers.get('www-authenticate')).toMatch(
        /^Bearer error="insufficient_scope", scope="notes:read", /
      )
      expect(await refused.text()).not.toContain('resource')
    }
    const done = await waitForTask(
      async () => result(await send(reader, 'tasks/get', { taskId })),
      isTerminal,
      'the export'
    )
    expect(done.status).toBe('completed')
  })

  it("keeps alice's note from bob by id, note:// URI, search and completion", async () => {
    const alice = await as('alice')
    const bob = await as('bob')
    const created = await callTool(alice, 'create_note', { title: 'Alice workerd secret' })
    const id = created.structuredContent.note.id as string
    expect((await callTool(bob, 'get_note', { id })).isError).toBe(true)
    const read = await post(bob, 'resources/read', { uri: `note://${id}` })
    expect(((await read.json()) as JsonObject).error).toBeDefined()
    expect(
      (await callTool(bob, 'search_notes', { query: 'workerd secret' })).structuredContent
    ).toEqual({ notes: [] })
    const ref = { type: 'ref/resource', uri: 'note://{id}' }
    const theirs = await result(
      await post(bob, 'completion/complete', { ref, argument: { name: 'id', value: 'n' } })
    )
    expect(theirs.completion.values).not.toContain(id)
    const own = await result(
      await post(alice, 'completion/complete', { ref, argument: { name: 'id', value: 'n' } })
    )
    expect(own.completion.values).toContain(id)
  })

  it("refuses bob's replay of alice's requestState", async () => {
    const alice = await as('alice')
    const created = await callTool(alice, 'create_note', { title: 'Alice keeps' })
    const id = created.structuredContent.note.id as string
    const first = await callTool(alice, 'delete_note', { id })
    expect(first.resultType).toBe('input_required')
    const replay = await post(await as('bob'), 'tools/call', {
      name: 'delete_note',
      arguments: { id },
      requestState: first.requestState,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    })
    expect(((await replay.json()) as JsonObject).error).toMatchObject({ code: -32602 })
    expect((await callTool(alice, 'get_note', { id })).isError).toBeFalsy()
  })

  it('lets only the signed-in owner decide a share: bob 403 and still pending, then alice approves', async () => {
    const alice = await as('alice')
    const created = await callTool(alice, 'create_note', { title: 'Alice edge share' })
    const id = created.structuredContent.note.id as string
    const first = await callTool(alice, 'share_note', { id })
    const url = first.inputRequests.approve.params.url as string
    const sealer = StateSealer.create({
      keyRing: await importKeyRing(parseKeyRing(env.STATE_KEYS)),
    })
    const page = async (subject: string, init: RequestInit = {}) => {
      const session = await sessionCookie(sealer, ORIGIN, { issuer: ISSUER, subject })
      const headers = new Headers(init.headers)
      headers.set('host', '127.0.0.1')
      const cookies = [headers.get('cookie'), `${session.name}=${session.value}`]
      headers.set('cookie', cookies.filter(Boolean).join('; '))
      return worker.fetch(new Request(url, { ...init, headers }), bindings)
    }
    const again = async () => {
      const next = await post(alice, 'tools/call', {
        name: 'share_note',
        arguments: { id },
        requestState: first.requestState,
        inputResponses: { approve: { action: 'accept' } },
      })
      return result(next)
    }

    const bobPage = await page('bob')
    expect(bobPage.status).toBe(403)
    expect(await bobPage.text()).not.toContain('Alice edge share')
    expect((await again()).resultType).toBe('input_required')

    const alicePage = await page('alice')
    expect(alicePage.status).toBe(200)
    const html = await alicePage.text()
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] as string
    const csrfCookie = (alicePage.headers.get('set-cookie') ?? '').split(';')[0] as string
    const decided = await page('alice', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrfCookie },
      body: new URLSearchParams({ csrf, decision: 'approve' }).toString(),
    })
    expect(decided.status).toBe(200)
    const published = await again()
    expect(published.content[0].text).toMatch(/^Shared "Alice edge share" read-only at /)
  })
})

describe('the safe default inside workerd', () => {
  it('refuses to serve without auth under a public name unless ALLOW_UNAUTHENTICATED=1', async () => {
    vi.resetModules()
    const { default: open } = await import('../../src/worker.ts')
    const publicEnv = { ...env, ALLOWED_HOSTS: 'notes.example,127.0.0.1' }
    const request = (host: string) =>
      new Request(`http://${host}/mcp`, mcpInit('tools/list', { headers: { host } }))
    const refused = await open.fetch(request('notes.example'), publicEnv)
    expect(refused.status).toBe(500)
    expect(((await refused.json()) as JsonObject).error.message).not.toMatch(/AUTH/)
    expect((await open.fetch(request('127.0.0.1'), publicEnv)).status).toBe(200)

    vi.resetModules()
    const { default: allowed } = await import('../../src/worker.ts')
    const optedIn = { ...publicEnv, ALLOW_UNAUTHENTICATED: '1' }
    expect((await allowed.fetch(request('notes.example'), optedIn)).status).toBe(200)
  })
})
