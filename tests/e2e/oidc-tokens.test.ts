/**
 * The notes server (`npm start`, a real process) as the resource server of a real authorization
 * server (`oidc-provider` on loopback, `tests/support/authorization-server.ts`): users sign in through
 * headless Chromium and the server gets their RFC 9068 access tokens, audience = its canonical URL by
 * resource indicator. Pinned: a valid token works and every token the server must refuse is refused
 * (expired, not yet valid, wrong issuer, wrong audience, `alg: none`, HS256 signed with the public
 * key, a tampered signature, a token in the URL); a read-only token reads and gets a 403 step-up
 * naming `notes:write` for a write; one user's notes stay invisible to another by id, `note://` URI,
 * search and completion; another user can neither replay a user's `requestState` nor use their
 * 2025-era session; and the key rotation of the provider is followed (an unknown `kid` is refused,
 * then known once the provider publishes it).
 */
import {
  SignJWT,
  base64url,
  decodeJwt,
  decodeProtectedHeader,
  exportSPKI,
  importJWK,
  type JWTPayload,
} from 'jose'
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient, McpClientError } from '../../src/client/index.ts'
import {
  MCP_CLIENT_ID,
  signingKey,
  startDeployment,
  type AuthorizationServer,
  type SigningKey,
} from '../support/authorization-server.ts'
import { useChromium } from '../support/chromium.ts'
import { initializeMessage } from '../support/legacy-request.ts'
import { mcpInit, type JsonObject } from '../support/mcp-request.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { claimRefusals } from '../support/test-tokens.ts'

const chromium = useChromium('OIDC token tests')

let alice: BrowserContext
let bob: BrowserContext

beforeAll(async () => {
  if (!chromium.run) return
  alice = await chromium.browser().newContext()
  bob = await chromium.browser().newContext()
})

function client(server: ServerProcess, token: string, capabilities?: JsonObject) {
  return new McpClient({
    url: server.url,
    headers: { authorization: `Bearer ${token}` },
    ...(capabilities ? { capabilities } : {}),
  })
}

const FORM = { elicitation: { form: {} } }

/** A raw POST /mcp with `authorization` (undefined: none), optionally with a query string. */
function post(
  server: ServerProcess,
  authorization: string | undefined,
  method = 'tools/call',
  params: JsonObject = { name: 'search_notes', arguments: { query: 'x' } },
  query = ''
): Promise<Response> {
  const init = mcpInit(method, { params, capabilities: FORM, headers: { authorization } })
  return fetch(`${server.url}${query}`, init)
}

async function expectInvalidToken(response: Response, description: RegExp): Promise<void> {
  expect(response.status).toBe(401)
  const challenge = response.headers.get('www-authenticate') ?? ''
  expect(challenge).toMatch(/^Bearer error="invalid_token", /)
  expect(challenge).toMatch(description)
  expect(challenge).toContain('resource_metadata="')
  expect(response.headers.get('cache-control')).toBe('no-store')
  expect((await response.json()).error.code).toBe(-32600)
}

/** The same token with one character of its signature changed. */
function tampered(token: string): string {
  const [header, payload, signature = ''] = token.split('.')
  const first = signature[0] === 'A' ? 'B' : 'A'
  return `${header}.${payload}.${first}${signature.slice(1)}`
}

async function noteId(result: JsonObject): Promise<string> {
  return (result.structuredContent as { note: { id: string } }).note.id
}

describe.skipIf(!chromium.run)('the notes server with a real authorization server', () => {
  let as: AuthorizationServer
  let server: ServerProcess
  let otherResource: string
  let key: SigningKey
  let aliceToken: string
  let aliceReadOnly: string
  let bobToken: string

  beforeAll(async () => {
    key = await signingKey('k1')
    ;({ as, server, otherResource } = await startDeployment([key]))
    aliceToken = await as.accessToken(alice, 'alice', 'notes:read notes:write')
    aliceReadOnly = await as.accessToken(alice, 'alice', 'notes:read')
    bobToken = await as.accessToken(bob, 'bob', 'notes:read notes:write')
  })

  afterAll(async () => {
    await server?.stop()
    await as?.close()
  })

  /** A token no real server would issue: alice's claims changed, signed with the provider's key. */
  function forged(claims: JWTPayload): Promise<string> {
    return new SignJWT({ ...decodeJwt(aliceToken), ...claims })
      .setProtectedHeader(decodeProtectedHeader(aliceToken) as { alg: string })
      .sign(key.privateKey)
  }

  it('gets RFC 9068 access tokens whose audience is the canonical URL of the endpoint', () => {
    expect(decodeProtectedHeader(aliceToken)).toMatchObject({
      alg: 'RS256',
      typ: 'at+jwt',
      kid: 'k1',
    })
    expect(decodeJwt(aliceToken)).toMatchObject({
      iss: as.issuer,
      aud: `${server.baseUrl}/mcp`,
      sub: 'alice',
      scope: 'notes:read notes:write',
      client_id: MCP_CLIENT_ID,
    })
  })

  it('serves a valid token: alice creates and reads her note', async () => {
    const mcp = client(server, aliceToken)
    const id = await noteId(await mcp.callTool('create_note', { title: 'Alice token note' }))
    const read = await mcp.callTool('get_note', { id })
    expect(read.isError).toBeFalsy()
    expect((read.structuredContent as { note: { title: string } }).note.title).toBe(
      'Alice token note'
    )
  })

  it('publishes the baseline scope, never offline_access, in its protected-resource metadata', async () => {
    const response = await fetch(`${server.baseUrl}/.well-known/oauth-protected-resource/mcp`)
    expect(await response.json()).toEqual({
      resource: `${server.baseUrl}/mcp`,
      authorization_servers: [as.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: ['notes:read'],
    })
  })

  it('answers no token with a bare challenge: 401, scope and resource_metadata, no error', async () => {
    const response = await post(server, undefined)
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer scope="notes:read", resource_metadata="${server.baseUrl}/.well-known/oauth-protected-resource/mcp"`
    )
    expect(response.headers.get('cache-control')).toBe('no-store')
  })

  it.each<[string, () => Promise<string>, RegExp]>([
    ...claimRefusals(forged, 'http://127.0.0.1:1'),
    [
      'a token the real server issued for another resource',
      () => as.accessToken(alice, 'alice', 'notes:read', otherResource),
      /not for this server: its audience must be http:\/\/127\.0\.0\.1:\d+\/mcp/,
    ],
    [
      'an unsigned token (alg: none)',
      async () => {
        const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'at+jwt' }))
        return `${header}.${aliceToken.split('.')[1]}.`
      },
      /malformed|algorithm/,
    ],
    [
      "an HS256 token whose secret is the provider's public key",
      async () => {
        const pem = await exportSPKI(
          (await importJWK(key.publicJwk, 'RS256', { extractable: true })) as CryptoKey
        )
        return new SignJWT(decodeJwt(aliceToken))
          .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'k1' })
          .sign(new TextEncoder().encode(pem))
      },
      /algorithm this server refuses/,
    ],
    ['a tampered signature', async () => tampered(aliceToken), /signature is invalid/],
  ])('refuses %s with 401 invalid_token', async (_case, token, description) => {
    await expectInvalidToken(await post(server, `Bearer ${await token()}`), description)
  })

  it('refuses a token in the query string, even a valid one, with 400 invalid_request', async () => {
    for (const authorization of [undefined, `Bearer ${aliceToken}`]) {
      const response = await post(
        server,
        authorization,
        undefined,
        undefined,
        `?access_token=${aliceToken}`
      )
      expect(response.status).toBe(400)
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_request"/)
      expect(response.headers.get('cache-control')).toBe('no-store')
    }
  })

  it('lets a read-only token search, and answers its write with a 403 step-up naming notes:write', async () => {
    const reader = client(server, aliceReadOnly)
    const found = await reader.callTool('search_notes', { query: 'Alice' })
    expect(found.isError).toBeFalsy()
    const response = await post(server, `Bearer ${aliceReadOnly}`, 'tools/call', {
      name: 'create_note',
      arguments: { title: 'Not allowed' },
    })
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="notes:write", error_description="This operation needs the scope(s) notes:write.", resource_metadata="${server.baseUrl}/.well-known/oauth-protected-resource/mcp"`
    )
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(await response.json()).toMatchObject({ id: 1, error: { code: -32600 } })
    const error = await reader.callTool('create_note', { title: 'Not allowed' }).catch((e) => e)
    expect(error).toBeInstanceOf(McpClientError)
    expect((error as McpClientError).httpStatus).toBe(403)
    const all = await client(server, aliceToken).callTool('search_notes', { query: 'Not allowed' })
    expect(all.structuredContent).toEqual({ notes: [] })
  })

  it("keeps alice's note from bob by id, note:// URI, search and completion", async () => {
    const mine = client(server, aliceToken)
    const id = await noteId(await mine.callTool('create_note', { title: 'Alice secret plans' }))
    const theirs = client(server, bobToken)
    expect((await theirs.callTool('get_note', { id })).isError).toBe(true)
    const read = await theirs.readResource(`note://${id}`).catch((e) => e)
    expect(read).toBeInstanceOf(McpClientError)
    const found = await theirs.callTool('search_notes', { query: 'secret plans' })
    expect(found.structuredContent).toEqual({ notes: [] })
    const completed: JsonObject = await theirs.complete(
      { type: 'ref/resource', uri: 'note://{id}' },
      { name: 'id', value: id.slice(0, 4) }
    )
    expect(completed.completion.values).not.toContain(id)
    // The same four through alice's own token.
    expect((await mine.callTool('get_note', { id })).isError).toBeFalsy()
    expect(JSON.stringify((await mine.readResource(`note://${id}`)).contents)).toContain(
      'Alice secret plans'
    )
    const own: JsonObject = await mine.complete(
      { type: 'ref/resource', uri: 'note://{id}' },
      { name: 'id', value: id.slice(0, 4) }
    )
    expect(own.completion.values).toContain(id)
  })

  it("refuses bob's replay of alice's requestState", async () => {
    const mine = client(server, aliceToken)
    const id = await noteId(await mine.callTool('create_note', { title: 'Alice keeps this' }))
    const first = await post(server, `Bearer ${aliceToken}`, 'tools/call', {
      name: 'delete_note',
      arguments: { id },
    }).then((response) => response.json())
    expect(first.result.resultType).toBe('input_required')
    const replay = await post(server, `Bearer ${bobToken}`, 'tools/call', {
      name: 'delete_note',
      arguments: { id },
      requestState: first.result.requestState,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    }).then((response) => response.json())
    expect(replay.error).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' })
    expect((await mine.callTool('get_note', { id })).isError).toBeFalsy()
  })

  it("answers bob's use of alice's 2025-era session id with 404", async () => {
    const legacy = (authorization: string, body: JsonObject, session?: string) =>
      fetch(server.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${authorization}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } : {}),
        },
        body: JSON.stringify(body),
      })
    const init = await legacy(aliceToken, initializeMessage())
    expect(init.status).toBe(200)
    const session = init.headers.get('mcp-session-id') as string
    expect(session).toBeTruthy()
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' }
    expect((await legacy(bobToken, ping, session)).status).toBe(404)
    const own = await legacy(aliceToken, ping, session)
    expect(own.status).toBe(200)
  })
})

describe.skipIf(!chromium.run)('the provider rotating its signing keys', () => {
  let as: AuthorizationServer
  let server: ServerProcess

  afterAll(async () => {
    await server?.stop()
    await as?.close()
  })

  it('refuses a token signed with a key the provider does not publish, then accepts it once it does', async () => {
    const old = await signingKey('k-old')
    const next = await signingKey('k-next')
    ;({ as, server } = await startDeployment([old]))
    // Signed ahead of time with the key the provider will rotate to.
    const early = await as.accessToken(alice, 'alice', 'notes:read')
    const preSigned = await new SignJWT(decodeJwt(early))
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'k-next' })
      .sign(next.privateKey)
    // First request of this server: it fetches the JWKS, finds no k-next and refuses.
    await expectInvalidToken(await post(server, `Bearer ${preSigned}`), /unknown key/)
    expect((await post(server, `Bearer ${early}`)).status).toBe(200)

    await as.rotate([next, old])
    const rotated = await as.accessToken(alice, 'alice', 'notes:read')
    expect(decodeProtectedHeader(rotated).kid).toBe('k-next')
    // An unknown kid makes the server fetch the JWKS again: the new key is found.
    expect((await post(server, `Bearer ${rotated}`)).status).toBe(200)
    expect((await post(server, `Bearer ${preSigned}`)).status).toBe(200)
    // The old key is still published, so tokens signed before the rotation stay good.
    expect((await post(server, `Bearer ${early}`)).status).toBe(200)
  })
})
