/**
 * `stateless-mcp/bearer` through the front door: `bearerAuth` as `createMcpServer`'s `authenticate`,
 * verifying ES256 tokens (real jose) against a key set served by a loopback HTTP server. A request
 * without a token is answered 401 with the challenge naming the metadata and the baseline scopes;
 * tokens for another audience or issuer, expired, unsigned (`alg: none`) or signed by an unknown key
 * are 401 `invalid_token`, and a token in the URL 400; a tool needing scopes the token lacks is 403
 * `insufficient_scope` naming them all, in both protocol eras; a valid token runs the tool, its
 * sealed round bound to that principal (another's token cannot finish it); the key set unreachable
 * is 503 without a challenge. Also: the metadata document and its handler, a hook's own scopes
 * without a challenge of its own (a plain 403), and bad options refused at construction.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as z from 'zod'
import { createMcpServer, generateStateKeys, text, tool, type McpLogger } from 'stateless-mcp'
import {
  bearerAuth,
  protectedResourceMetadata,
  protectedResourceMetadataHandler,
  resourceMetadataUrl,
  tokenPrincipal,
} from 'stateless-mcp/bearer'
import { greet } from '../support/greet-tool.ts'
import { initializeMessage } from '../support/legacy-request.ts'
import {
  mcpInit,
  readMessages,
  type JsonObject,
  type McpRequestOptions,
} from '../support/mcp-request.ts'

const ISSUER = 'https://auth.example'
const AUDIENCE = 'http://127.0.0.1:8787/mcp'
const METADATA_URL = 'http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp'

const whoami = tool({
  name: 'whoami',
  description: 'Says who is calling.',
  input: z.object({}),
  run: (_input, ctx) => text(ctx.principal),
})
const erase = tool({
  name: 'erase',
  description: 'Pretends to erase everything.',
  input: z.object({}),
  scopes: ['notes:write'],
  run: () => text('erased'),
})
const definition = { info: { name: 'guarded', version: '1.0.0' }, tools: [greet, whoami, erase] }

const logged: string[] = []
const logger: McpLogger = {
  warn: (message) => void logged.push(message),
  error: (message) => void logged.push(message),
}
const stateKeys = generateStateKeys()

let signingKey: CryptoKey
let strangerKey: CryptoKey
let jwksServer: Server
let server: ReturnType<typeof createMcpServer>

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true })
  signingKey = pair.privateKey
  strangerKey = (await generateKeyPair('ES256')).privateKey
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }],
  })
  jwksServer = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(jwks)
  })
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve))
  const { port } = jwksServer.address() as AddressInfo
  server = createMcpServer(definition, {
    stateKeys,
    logger,
    authenticate: bearerAuth({
      issuer: ISSUER,
      audience: AUDIENCE,
      jwksUrl: `http://127.0.0.1:${port}/jwks`,
      requiredScopes: ['notes:read'],
      implies: { 'notes:write': ['notes:read'] },
      logger,
    }),
  })
})

afterAll(async () => {
  await server.close()
  await new Promise((resolve) => jwksServer.close(resolve))
})

interface Claims {
  subject?: string
  scope?: string
  azp?: string
  issuer?: string
  audience?: string
  expires?: string | number
}

/** An ES256 access token of the served key set (or `key`), with the claims a test changes. */
function sign(claims: Claims = {}, key = signingKey): Promise<string> {
  return new SignJWT({
    scope: claims.scope ?? 'notes:read',
    ...(claims.azp === undefined ? {} : { azp: claims.azp }),
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(claims.issuer ?? ISSUER)
    .setAudience(claims.audience ?? AUDIENCE)
    .setSubject(claims.subject ?? 'ada')
    .setIssuedAt()
    .setExpirationTime(claims.expires ?? '5m')
    .sign(key)
}

/** A 2026-07-28 POST of `method` with `token` as its bearer (none when undefined). */
function post(method: string, token: string | undefined, options: McpRequestOptions = {}) {
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
  const init = mcpInit(method, { ...options, headers: { ...headers, ...options.headers } })
  return new Request('http://127.0.0.1:8787/mcp', init)
}

/** The one JSON-RPC message `response` carries. */
async function messageOf(response: Response): Promise<JsonObject> {
  const messages = await readMessages(response)
  expect(messages).toHaveLength(1)
  return messages[0] as JsonObject
}

/** A 2025-era POST of `message` with `token` as its bearer (and `session`'s headers). */
function legacyPost(token: string, message: object, session: Record<string, string> = {}) {
  return new Request('http://127.0.0.1:8787/mcp', {
    method: 'POST',
    headers: {
      host: '127.0.0.1:8787',
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session['mcp-session-id'] ? { 'mcp-protocol-version': '2025-11-25' } : {}),
      ...session,
    },
    body: JSON.stringify(message),
  })
}

/** The `tools/call` of `name` with `token`. */
async function call(name: string, token: string | undefined, args: object = {}) {
  return server.fetch(post('tools/call', token, { params: { name, arguments: { ...args } } }))
}

describe('bearerAuth refuses', () => {
  it('a request without a token: 401 naming the metadata and the baseline scopes', async () => {
    const response = await call('whoami', undefined)
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer scope="notes:read", resource_metadata="${METADATA_URL}"`
    )
    expect(response.headers.get('cache-control')).toBe('no-store')
    const body = (await response.json()) as { error: { code: number; message: string } }
    expect(body.error.code).toBe(-32600)
    expect(body.error.message).toMatch(/^Unauthorized/)
  })

  it.each([
    ['for another audience', { audience: 'http://127.0.0.1:8787/mcp-other' }, /audience/],
    ['of another issuer', { issuer: 'https://other.example' }, /another authorization server/],
    ['expired', { expires: Math.floor(Date.now() / 1000) - 3600 }, /expired/],
  ] as const)('a token %s: 401 invalid_token', async (_case, claims, why) => {
    const response = await call('whoami', await sign(claims))
    expect(response.status).toBe(401)
    const challenge = response.headers.get('www-authenticate') ?? ''
    expect(challenge).toMatch(/^Bearer error="invalid_token", error_description="[^"]+"/)
    expect(challenge).toMatch(why)
    expect(challenge).toContain(`resource_metadata="${METADATA_URL}"`)
  })

  it('an unsigned token (alg none) and one signed by a key the key set lacks', async () => {
    const unsigned = new UnsecuredJWT({ scope: 'notes:write' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('mallory')
      .setExpirationTime('5m')
      .encode()
    for (const token of [unsigned, await sign({ subject: 'mallory' }, strangerKey)]) {
      const response = await call('whoami', token)
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"')
    }
  })

  it('a token in the URL: 400 invalid_request', async () => {
    const token = await sign()
    const request = new Request(
      `http://127.0.0.1:8787/mcp?access_token=${token}`,
      mcpInit('tools/list')
    )
    const response = await server.fetch(request)
    expect(response.status).toBe(400)
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_request"')
  })

  it('a tool needing scopes the token lacks: 403 naming every scope it needs', async () => {
    const response = await call('erase', await sign({ scope: 'notes:read' }))
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer error="insufficient_scope", scope="notes:read notes:write", ' +
        'error_description="This operation needs the scope(s) notes:read notes:write.", ' +
        `resource_metadata="${METADATA_URL}"`
    )
    const message = await messageOf(response)
    expect(message.id).toBe(1)
    expect(message.error.code).toBe(-32600)
  })

  it('a token without the required scopes, whatever the tool', async () => {
    const response = await call('whoami', await sign({ scope: 'profile' }))
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toContain('scope="notes:read"')
  })

  it('a 2025-era session’s call needing more scopes than its token grants', async () => {
    const token = await sign({ scope: 'notes:read' })
    const opened = await server.fetch(legacyPost(token, initializeMessage()))
    expect(opened.status).toBe(200)
    const session = { 'mcp-session-id': opened.headers.get('mcp-session-id') as string }
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'erase' } }
    const response = await server.fetch(legacyPost(token, call, session))
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toContain('error="insufficient_scope"')
  })
})

describe('bearerAuth admits', () => {
  it('a valid token: the tool runs as the token’s issuer and subject', async () => {
    const message = await messageOf(await call('whoami', await sign({ subject: 'ada' })))
    expect(message.result.content).toEqual([{ type: 'text', text: tokenPrincipal(ISSUER, 'ada') }])
  })

  it('a scope through the hierarchy: notes:write grants notes:read, so erase runs', async () => {
    const message = await messageOf(await call('erase', await sign({ scope: 'notes:write' })))
    expect(message.result.content).toEqual([{ type: 'text', text: 'erased' }])
  })

  it('a sealed round only to the principal and client it was sealed for', async () => {
    const capabilities = { elicitation: { form: {} } }
    const params = { name: 'greet', arguments: {} }
    const ada = await sign({ subject: 'ada', azp: 'app' })
    const asked = await messageOf(
      await server.fetch(post('tools/call', ada, { params, capabilities }))
    )
    const answer = {
      ...params,
      inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: asked.result.requestState,
    }
    const others = [
      await sign({ subject: 'mallory', azp: 'app' }),
      await sign({ subject: 'ada', azp: 'another-app' }),
    ]
    for (const token of others) {
      const stolen = await messageOf(
        await server.fetch(post('tools/call', token, { params: answer, capabilities }))
      )
      expect(stolen.error).toMatchObject({
        code: -32602,
        message: 'Invalid or expired requestState',
      })
    }
    const finished = await messageOf(
      await server.fetch(
        post('tools/call', await sign({ subject: 'ada', azp: 'app' }), {
          params: answer,
          capabilities,
        })
      )
    )
    expect(finished.result.content).toEqual([{ type: 'text', text: 'Hello, Ada' }])
  })
})

describe('an authorization server out of reach', () => {
  it('is 503 with Retry-After and no challenge: the token is not at fault', async () => {
    const unreachable = createMcpServer(definition, {
      stateKeys,
      logger,
      authenticate: bearerAuth({
        issuer: ISSUER,
        audience: AUDIENCE,
        jwksUrl: 'http://127.0.0.1:1/jwks',
        logger,
      }),
    })
    const response = await unreachable.fetch(post('tools/list', await sign()))
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(response.headers.get('www-authenticate')).toBeNull()
    expect(logged).toContain('token keys unavailable')
    await unreachable.close()
  })
})

describe('the protected-resource metadata', () => {
  const options = {
    resource: AUDIENCE,
    authorizationServers: [ISSUER],
    scopesSupported: ['notes:read', 'offline_access'],
  }

  it('lives at the well-known path inserted before the resource’s path', () => {
    expect(resourceMetadataUrl(AUDIENCE)).toBe(METADATA_URL)
    expect(resourceMetadataUrl('https://mcp.example/')).toBe(
      'https://mcp.example/.well-known/oauth-protected-resource'
    )
  })

  it('names the authorization servers and the baseline scopes, never offline_access', () => {
    expect(protectedResourceMetadata(options)).toEqual({
      resource: AUDIENCE,
      authorization_servers: [ISSUER],
      bearer_methods_supported: ['header'],
      scopes_supported: ['notes:read'],
    })
  })

  it('is served at its path and the root one, and nowhere else', async () => {
    const serve = protectedResourceMetadataHandler(options)
    for (const url of [
      METADATA_URL,
      'http://127.0.0.1:8787/.well-known/oauth-protected-resource',
    ]) {
      const response = serve(new Request(url)) as Response
      expect(response.headers.get('content-type')).toBe('application/json')
      expect(await response.json()).toEqual(protectedResourceMetadata(options))
    }
    expect(serve(new Request('http://127.0.0.1:8787/mcp'))).toBeUndefined()
    expect(serve(new Request(METADATA_URL, { method: 'POST' }))?.status).toBe(405)
  })
})

describe('a hook of its own', () => {
  it('giving scopes without a challenge gets a plain JSON-RPC 403', async () => {
    const plain = createMcpServer(definition, {
      stateKeys,
      logger,
      authenticate: () => ({ principal: 'ada', scopes: ['notes:read'] }),
    })
    const response = await plain.fetch(
      post('tools/call', undefined, { params: { name: 'erase', arguments: {} } })
    )
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toBeNull()
    const message = await messageOf(response)
    expect(message.error.message).toContain('notes:write')
    await plain.close()
  })
})

describe('bearerAuth’s options', () => {
  it.each([
    [{ audience: AUDIENCE, jwksUrl: 'https://auth.example/jwks' }, /issuer is required/],
    [
      { issuer: ISSUER, audience: '/mcp', jwksUrl: 'https://auth.example/jwks' },
      /audience must be an absolute URL/,
    ],
    [{ issuer: ISSUER, audience: AUDIENCE }, /exactly one of jwksUrl .* and key/],
    [
      { issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'jwks.json' },
      /jwksUrl must be an absolute URL/,
    ],
  ])('are refused at construction, naming the fix: %j', (options, message) => {
    expect(() => bearerAuth(options as Parameters<typeof bearerAuth>[0])).toThrow(message)
  })
})
