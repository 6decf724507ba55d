/**
 * The approval pages' sign-in, in-process (the browser round trip is `tests/e2e/oidc-share-login`):
 * - against a real authorization server (`oidc-provider` on loopback): a page without a session
 *   redirects to its authorization endpoint with PKCE S256, `state`, `nonce`, `scope=openid` and the
 *   callback URL, setting a sealed, HttpOnly, SameSite=Lax login cookie (`__Host-` and Secure when the
 *   server is HTTPS); the callback refuses a wrong `state`, a wrong or missing `iss` (RFC 9207), an
 *   error answer and a bad code, spending the login and signing nobody in;
 * - against that server with what no real one sends swapped in (`forgedServer`: its token endpoint,
 *   its discovery document, keys besides its own): the ID token's checks refuse a wrong or missing
 *   `nonce`, an `aud` or `azp` of another client, two audiences without `azp`, another `iss`, an
 *   expired token, an empty `sub`, an `alg` outside the allow-list (HS256 with the client secret,
 *   `none`, ML-DSA-44 by a published key) and an answer without an ID token, each with 400, no
 *   session and nothing secret on the page; a discovery document naming another issuer stops the
 *   sign-in before it starts (503) and before any code is redeemed (400); the client authenticates
 *   with client_secret_basic, or client_secret_post in the form when that is all the server takes;
 * - with signed-in sessions (the cookie a completed sign-in sets): only the share's own principal sees
 *   and decides it; anyone else, or nobody, gets 403 and the share stays pending; without a web client
 *   the pages answer 503; the Host guard applies to the pages.
 */
import type { Hono } from 'hono'
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type JWK, type JWTPayload } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { randomSecret } from '../../src/auth/oidc-client.ts'
import { createAuthServices } from '../../src/auth/services.ts'
import { parseConfig, type AuthConfig } from '../../src/config.ts'
import { sha256Base64url } from '../../src/mcp/canonical-json.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { SHARE_REQUEST_TTL_MS } from '../../src/notes/limits.ts'
import { randomToken } from '../../src/notes/tokens.ts'
import type { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import {
  MCP_CLIENT_ID,
  signingKey,
  startAuthorizationServer,
  type AuthorizationServer,
  type SigningKey,
} from '../support/authorization-server.ts'
import { createNotesHarness, ORIGIN, type NotesHarness } from '../support/notes-harness.ts'
import { freePort } from '../support/server-process.ts'

/** The notes server's base URL: the web client's redirect URI is under it. */
const NOTES = 'https://notes.example'
const SESSION_COOKIE = '__Host-notes-session'
const LOGIN_COOKIE = '__Host-notes-login'

let as: AuthorizationServer
/** The provider's signing key: a forged token endpoint signs what the real one would with it. */
let providerKey: SigningKey

beforeAll(async () => {
  providerKey = await signingKey('k1')
  as = await startAuthorizationServer({
    port: await freePort(),
    notesBaseUrl: NOTES,
    otherResource: 'https://other.example/mcp',
    keys: [providerKey],
  })
})

afterAll(() => as?.close())

const newSealer = async () => StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })

/**
 * A notes server at `publicUrl` whose web client is that of `as`; it reaches the authorization server
 * with `fetch` when given (a `forgedServer`), and seals with `sealer` when given (replicas share one).
 */
async function appAt(
  publicUrl: string,
  options: { fetch?: typeof fetch; sealer?: StateSealer } = {}
): Promise<{ app: Hono; store: SqliteNotesStore }> {
  const { store, engineStore } = await sqliteStores()
  const config = parseConfig({
    PUBLIC_URL: publicUrl,
    ALLOWED_HOSTS: new URL(publicUrl).hostname,
    AUTH_ISSUER: as.issuer,
    AUTH_JWKS_URL: as.jwksUrl,
    AUTH_WEB_CLIENT_ID: as.webClient.id,
    AUTH_WEB_CLIENT_SECRET: as.webClient.secret,
  })
  const sealer = options.sealer ?? (await newSealer())
  const auth =
    options.fetch && createAuthServices(config.auth as AuthConfig, { fetch: options.fetch })
  const app = createApp(config, { store, engineStore, sealer, bus: new InProcessEventBus(), auth })
  return { app, store }
}

/** A pending share of a fresh note of alice at the server `publicUrl`. */
async function pendingShare(store: SqliteNotesStore) {
  const principal = JSON.stringify([as.issuer, 'alice'])
  const note = await store.create(
    principal,
    { title: 'Alice secret', body: '', tags: [] },
    Date.now()
  )
  const id = randomToken()
  await store.createShareRequest({
    id,
    principal,
    noteId: note.id,
    expiresAt: Date.now() + SHARE_REQUEST_TTL_MS,
  })
  return id
}

/** A browser's GET: with the Host header of its URL (the Host/Origin guard wants one). */
function get(app: Hono, url: string, headers: Record<string, string> = {}): Promise<Response> {
  return Promise.resolve(app.request(url, { headers: { host: new URL(url).host, ...headers } }))
}

function cookieOf(response: Response, name: string): string | undefined {
  return response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`))
}

/** A sign-in this browser started at `NOTES`: what the redirect and the login cookie carry. */
interface StartedLogin {
  state: string
  nonce: string
  codeChallenge: string
  /** The `Cookie` header value that brings the login back to the callback. */
  cookie: string
  /** The page the sign-in returns to (a pending share of alice). */
  page: string
}

async function startSignIn(app: Hono, store: SqliteNotesStore): Promise<StartedLogin> {
  const page = `/share/${await pendingShare(store)}`
  const response = await get(app, `${NOTES}${page}`)
  const params = new URL(response.headers.get('location') as string).searchParams
  return {
    state: params.get('state') as string,
    nonce: params.get('nonce') as string,
    codeChallenge: params.get('code_challenge') as string,
    cookie: (cookieOf(response, LOGIN_COOKIE) as string).split(';')[0] as string,
    page,
  }
}

/** The authorization server's redirect back to `NOTES` with `query`, and `cookie` if any. */
function callbackAt(app: Hono, query: Record<string, string>, cookie?: string) {
  const url = new URL(`${NOTES}/auth/callback`)
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
  return get(app, url.href, cookie === undefined ? {} : { cookie })
}

/**
 * A callback answer that signs nobody in: 400 with `message` (and none of `secrets`) on a framed-off
 * page, no session cookie, and the login spent when the browser brought one.
 */
async function expectRefusedSignIn(
  response: Response,
  message: RegExp,
  { loginSpent = true, secrets = [] as string[], status = 400 } = {}
) {
  expect(response.status).toBe(status)
  const text = await response.text()
  expect(text).toMatch(message)
  for (const secret of secrets) expect(text).not.toContain(secret)
  expect(cookieOf(response, SESSION_COOKIE)).toBeUndefined()
  if (loginSpent) expect(cookieOf(response, LOGIN_COOKIE)).toMatch(/Max-Age=0/)
  expect(response.headers.get('x-frame-options')).toBe('DENY')
}

/** Opens a pending share's approval page through `server`: 503, no sign-in started, no cookie. */
async function expectApprovalPageUnavailable(server: { fetch: typeof fetch }) {
  const { app, store } = await appAt(NOTES, { fetch: server.fetch })
  const response = await get(app, `${NOTES}/share/${await pendingShare(store)}`)
  expect(response.status).toBe(503)
  expect(await response.text()).toMatch(/Sign-in unavailable[^]*is not that of the issuer/)
  expect(response.headers.get('location')).toBeNull()
  expect(response.headers.getSetCookie()).toEqual([])
}

/** A token endpoint's answer (JSON), given the nonce of the login its code was issued for. */
type TokenAnswer = (nonce: string) => Promise<Record<string, unknown>>

interface ForgedServerOptions {
  /** Rewrites the provider's OpenID configuration. */
  discovery?: (document: Record<string, unknown>) => Record<string, unknown>
  /** Default: a token response with a well-formed ID token. */
  tokens?: TokenAnswer
  /** Public keys published besides the provider's. */
  extraKeys?: JWK[]
  /** The key set answers 503: the provider's keys cannot be read. */
  keysDown?: boolean
}

/** A token request as the token endpoint received it. */
interface TokenRequest {
  authorization: string | null
  form: URLSearchParams
}

/**
 * The authorization server as the notes server's `fetch` reaches it: the real provider, except for
 * what a test swaps in: its OpenID configuration rewritten, keys published besides its own, and its
 * token endpoint, which answers the codes of `issueCode` (each bound to a login's nonce, as a real
 * server binds them) with `tokens`, anything else with `invalid_grant`, and keeps every request and
 * answer for the test to read.
 */
function forgedServer(options: ForgedServerOptions = {}) {
  const nonces = new Map<string, string>()
  const tokenRequests: TokenRequest[] = []
  const tokenAnswers: Record<string, unknown>[] = []
  const answer = options.tokens ?? ((nonce) => tokenResponse(nonce))
  const fetchThrough: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    if (request.url === `${as.issuer}/token`) {
      const form = new URLSearchParams(await request.text())
      tokenRequests.push({ authorization: request.headers.get('authorization'), form })
      const nonce = nonces.get(form.get('code') ?? '')
      if (nonce === undefined) return Response.json({ error: 'invalid_grant' }, { status: 400 })
      const tokens = await answer(nonce)
      tokenAnswers.push(tokens)
      return Response.json(tokens)
    }
    const real = await fetch(request)
    if (request.url === `${as.issuer}/.well-known/openid-configuration` && options.discovery) {
      return Response.json(options.discovery(await real.json()))
    }
    if (request.url === as.jwksUrl && options.keysDown) {
      return new Response('unavailable', { status: 503 })
    }
    if (request.url === as.jwksUrl && options.extraKeys) {
      const { keys } = (await real.json()) as { keys: JWK[] }
      return Response.json({ keys: [...keys, ...options.extraKeys] })
    }
    return real
  }
  return {
    fetch: fetchThrough,
    tokenRequests,
    tokenAnswers,
    /** A code the token endpoint redeems for the login of `nonce`. */
    issueCode(nonce: string): string {
      const code = randomSecret()
      nonces.set(code, nonce)
      return code
    },
  }
}
type ForgedServer = ReturnType<typeof forgedServer>

/**
 * Starts a sign-in at a fresh server reaching `server`, then brings the authorization server's
 * redirect (a code of `server` for this login, its `state` and `iss`) to the callback: of that
 * server, or of a replica sharing its keys that reaches `callbackVia`.
 */
async function signInThrough(
  server: ForgedServer,
  { callbackVia }: { callbackVia?: ForgedServer } = {}
) {
  const sealer = await newSealer()
  const first = await appAt(NOTES, { fetch: server.fetch, sealer })
  const login = await startSignIn(first.app, first.store)
  const app = callbackVia
    ? (await appAt(NOTES, { fetch: callbackVia.fetch, sealer })).app
    : first.app
  const code = server.issueCode(login.nonce)
  const response = await callbackAt(app, { code, state: login.state, iss: as.issuer }, login.cookie)
  return { app, login, code, response }
}

/** Signs an ID token's claims. */
type Signer = (claims: JWTPayload) => Promise<string>

/** RS256 by the provider's own key, as it signs its ID tokens. */
const signedByProvider: Signer = (claims) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: providerKey.kid })
    .sign(providerKey.privateKey)

/** The claims of the ID token of alice's sign-in at the web client, for the login of `nonce`. */
function idTokenClaims(nonce: string): JWTPayload {
  const now = Math.floor(Date.now() / 1000)
  return { iss: as.issuer, sub: 'alice', aud: as.webClient.id, nonce, iat: now, exp: now + 300 }
}

/** A token response whose ID token has `changes` over alice's claims (`undefined` drops one). */
async function tokenResponse(
  nonce: string,
  changes: JWTPayload = {},
  sign: Signer = signedByProvider
): Promise<Record<string, unknown>> {
  return {
    access_token: randomSecret(),
    token_type: 'Bearer',
    expires_in: 300,
    id_token: await sign({ ...idTokenClaims(nonce), ...changes }),
  }
}

/** What a refused sign-in's page must not show: the client secret, the flow's values, any token. */
function secretsOf(server: ForgedServer, code: string, login: StartedLogin): string[] {
  const tokens = server.tokenAnswers.flatMap((answer) =>
    [answer.id_token, answer.access_token].filter((value) => typeof value === 'string')
  )
  return [as.webClient.secret, code, login.nonce, login.state, ...tokens]
}

describe('signing in at the authorization server', () => {
  it('redirects a page without a session to the authorization endpoint with PKCE, state and nonce', async () => {
    const { app, store } = await appAt('https://notes.example')
    const id = await pendingShare(store)
    const response = await get(app, `https://notes.example/share/${id}`)
    expect(response.status).toBe(302)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const location = new URL(response.headers.get('location') as string)
    expect(`${location.origin}${location.pathname}`).toBe(`${as.issuer}/auth`)
    const params = Object.fromEntries(location.searchParams)
    expect(params).toMatchObject({
      response_type: 'code',
      client_id: as.webClient.id,
      redirect_uri: 'https://notes.example/auth/callback',
      scope: 'openid',
      code_challenge_method: 'S256',
    })
    for (const name of ['state', 'nonce', 'code_challenge'])
      expect(params[name]).toMatch(/^[\w-]{43}$/)
    const login = cookieOf(response, '__Host-notes-login') as string
    expect(login).toMatch(/; Max-Age=600; Path=\/; HttpOnly; Secure; SameSite=Lax$/)
    // Sealed: nothing of the flow (state, nonce, the page) is readable in it.
    expect(login).not.toContain(params.state)
    expect(login).not.toContain(id)
  })

  it('uses plain cookie names without Secure on an http:// server', async () => {
    const { app, store } = await appAt('http://127.0.0.1:8787')
    const response = await get(app, `http://127.0.0.1:8787/share/${await pendingShare(store)}`)
    const login = cookieOf(response, 'notes-login') as string
    expect(login).toBeDefined()
    expect(login).not.toContain('Secure')
  })

  describe('the callback', () => {
    let app: Hono
    let login: StartedLogin

    beforeAll(async () => {
      const built = await appAt(NOTES)
      app = built.app
      login = await startSignIn(app, built.store)
    })

    it.each<[string, () => Record<string, string>, boolean, RegExp]>([
      [
        'no pending login',
        () => ({ code: 'c', state: login.state, iss: as.issuer }),
        false,
        /expired or was started elsewhere/,
      ],
      [
        'another state',
        () => ({ code: 'c', state: 'x'.repeat(43), iss: as.issuer }),
        true,
        /does not match/,
      ],
      [
        'another iss',
        () => ({ code: 'c', state: login.state, iss: 'https://evil.example' }),
        true,
        /another authorization server/,
      ],
      [
        'no iss from a server that sends one',
        () => ({ code: 'c', state: login.state }),
        true,
        /another authorization server/,
      ],
      [
        'an error answer',
        () => ({ error: 'access_denied', state: login.state, iss: as.issuer }),
        true,
        /cancelled/,
      ],
      [
        'a code the server never issued',
        () => ({ code: 'forged', state: login.state, iss: as.issuer }),
        true,
        /refused the sign-in code/,
      ],
    ])(
      'refuses %s with 400, spends the login and sets no session',
      async (_case, query, withCookie, message) => {
        const response = await callbackAt(app, query(), withCookie ? login.cookie : undefined)
        await expectRefusedSignIn(response, message, { loginSpent: withCookie })
      }
    )
  })

  describe('redeeming the code', () => {
    /** A post-quantum key the server publishes besides its RSA key: outside the allow-list. */
    let mlDsa: { privateKey: CryptoKey; publicJwk: JWK }

    beforeAll(async () => {
      const { privateKey, publicKey } = await generateKeyPair('ML-DSA-44', { extractable: true })
      mlDsa = {
        privateKey,
        publicJwk: { ...(await exportJWK(publicKey)), kid: 'pq', alg: 'ML-DSA-44', use: 'sig' },
      }
    })

    const withIdToken =
      (changes: JWTPayload, sign?: Signer): TokenAnswer =>
      (nonce) =>
        tokenResponse(nonce, changes, sign)
    const hs256WithClientSecret: Signer = (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .sign(new TextEncoder().encode(as.webClient.secret))
    const unsigned: Signer = async (claims) => new UnsecuredJWT(claims).encode()
    const signedWithMlDsa: Signer = (claims) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ML-DSA-44', kid: 'pq' }).sign(mlDsa.privateKey)
    const now = () => Math.floor(Date.now() / 1000)
    const INVALID = /The ID token of the sign-in is invalid\./

    it.each<[string, TokenAnswer, RegExp]>([
      ['a nonce of another sign-in', withIdToken({ nonce: randomSecret() }), INVALID],
      ['no nonce', withIdToken({ nonce: undefined }), INVALID],
      ['an aud of another client', withIdToken({ aud: MCP_CLIENT_ID }), INVALID],
      ['an azp of another client', withIdToken({ azp: MCP_CLIENT_ID }), INVALID],
      [
        'two audiences without azp',
        (nonce) => tokenResponse(nonce, { aud: [as.webClient.id, MCP_CLIENT_ID] }),
        INVALID,
      ],
      ['an iss of another server', withIdToken({ iss: 'https://evil.example' }), INVALID],
      ['an expired token', withIdToken({ iat: now() - 600, exp: now() - 300 }), INVALID],
      ['an empty sub', withIdToken({ sub: '' }), INVALID],
      ['HS256 signed with the client secret', withIdToken({}, hs256WithClientSecret), INVALID],
      ['alg none', withIdToken({}, unsigned), INVALID],
      ['ML-DSA-44 by a key the server publishes', withIdToken({}, signedWithMlDsa), INVALID],
      [
        'no id_token',
        async () => ({ access_token: randomSecret(), token_type: 'Bearer' }),
        /sent no ID token/,
      ],
      [
        'an id_token that is not a string',
        async (nonce) => ({ access_token: randomSecret(), id_token: idTokenClaims(nonce) }),
        /sent no ID token/,
      ],
    ])(
      'refuses a token response with %s: 400, no session, nothing secret shown',
      async (_case, tokens, message) => {
        const server = forgedServer({ tokens, extraKeys: [mlDsa.publicJwk] })
        const { login, code, response } = await signInThrough(server)
        expect(server.tokenRequests).toHaveLength(1)
        await expectRefusedSignIn(response, message, { secrets: secretsOf(server, code, login) })
      }
    )

    it('answers 503 when the key set cannot be read: the token is not checked, nobody signed in', async () => {
      const server = forgedServer({ keysDown: true })
      const { login, code, response } = await signInThrough(server)
      expect(server.tokenRequests).toHaveLength(1)
      await expectRefusedSignIn(response, /Sign-in unavailable[^]*keys could not be read/, {
        secrets: secretsOf(server, code, login),
        status: 503,
      })
    })

    it.each<[string, TokenAnswer]>([
      ['a well-formed ID token', withIdToken({})],
      [
        'two audiences and azp this client',
        (nonce) =>
          tokenResponse(nonce, { aud: [as.webClient.id, MCP_CLIENT_ID], azp: as.webClient.id }),
      ],
    ])('signs alice in with %s and returns to her page', async (_case, tokens) => {
      const server = forgedServer({ tokens, extraKeys: [mlDsa.publicJwk] })
      const { app, login, response } = await signInThrough(server)
      expect(response.status).toBe(303)
      expect(response.headers.get('location')).toBe(login.page)
      const session = cookieOf(response, SESSION_COOKIE) as string
      expect(session).toMatch(/; HttpOnly; Secure; SameSite=Lax$/)
      // The session is alice's: her share's page opens for it.
      const page = await get(app, `${NOTES}${login.page}`, {
        cookie: session.split(';')[0] as string,
      })
      expect(page.status).toBe(200)
    })

    it.each<[string, 'client_secret_basic' | 'client_secret_post', string[] | undefined]>([
      ['only client_secret_post', 'client_secret_post', ['client_secret_post']],
      ['both', 'client_secret_basic', ['client_secret_post', 'client_secret_basic']],
      ["the provider's own list", 'client_secret_basic', undefined],
    ])(
      'authenticates the token request, when the server takes %s, with %s',
      async (_case, expected, methods) => {
        const server = forgedServer({
          discovery:
            methods &&
            ((document) => ({ ...document, token_endpoint_auth_methods_supported: methods })),
        })
        const { login, code, response } = await signInThrough(server)
        expect(response.status).toBe(303)
        expect(server.tokenRequests).toHaveLength(1)
        const [{ authorization, form }] = server.tokenRequests as [TokenRequest]
        expect(form.get('grant_type')).toBe('authorization_code')
        expect(form.get('code')).toBe(code)
        expect(form.get('redirect_uri')).toBe(`${NOTES}/auth/callback`)
        expect(await sha256Base64url(form.get('code_verifier') as string)).toBe(login.codeChallenge)
        if (expected === 'client_secret_post') {
          expect(authorization).toBeNull()
          expect(form.get('client_id')).toBe(as.webClient.id)
          expect(form.get('client_secret')).toBe(as.webClient.secret)
        } else {
          const credentials = `${as.webClient.id}:${as.webClient.secret}`
          expect(authorization).toBe(`Basic ${Buffer.from(credentials).toString('base64')}`)
          expect(form.has('client_id')).toBe(false)
          expect(form.has('client_secret')).toBe(false)
        }
      }
    )
  })

  describe('a discovery document naming another issuer', () => {
    const issuers: [string, () => string][] = [
      ['another server', () => 'https://evil.example'],
      ['the issuer with a trailing slash', () => `${as.issuer}/`],
    ]
    const naming = (issuer: string) =>
      forgedServer({ discovery: (document) => ({ ...document, issuer }) })

    it.each(issuers)(
      'naming %s: the approval page answers 503 and starts no sign-in',
      async (_case, issuer) => {
        await expectApprovalPageUnavailable(naming(issuer()))
      }
    )

    it.each(issuers)(
      'naming %s on the replica that gets the callback: 503 and no code redeemed',
      async (_case, issuer) => {
        const signedInAt = forgedServer()
        const replica = naming(issuer())
        const { login, code, response } = await signInThrough(signedInAt, {
          callbackVia: replica,
        })
        await expectRefusedSignIn(response, /Sign-in unavailable[^]*is not that of the issuer/, {
          secrets: secretsOf(replica, code, login),
          status: 503,
        })
        expect(replica.tokenRequests).toEqual([])
        expect(signedInAt.tokenRequests).toEqual([])
      }
    )
  })
})

describe('a discovery document of the wrong shape', () => {
  it.each<[string, Record<string, unknown>]>([
    ['auth methods that are not a list', { token_endpoint_auth_methods_supported: true }],
    ['auth methods that are not strings', { token_endpoint_auth_methods_supported: [1] }],
    ['an authorization endpoint that is not a URL', { authorization_endpoint: 'not a url' }],
    ['no token endpoint', { token_endpoint: undefined }],
  ])('with %s: the approval page answers 503 and starts no sign-in', async (_case, change) => {
    await expectApprovalPageUnavailable(
      forgedServer({ discovery: (document) => ({ ...document, ...change }) })
    )
  })
})

describe('deciding as the right person', () => {
  let h: NotesHarness
  let id: string
  let url: string

  beforeAll(async () => {
    h = await createNotesHarness({ auth: true })
    const noteId = await h.seed({ title: 'Alice private' })
    id = randomToken()
    await h.store.createShareRequest({
      id,
      principal: h.principalOf('alice'),
      noteId,
      expiresAt: h.clock.now + SHARE_REQUEST_TTL_MS,
    })
    url = `${ORIGIN}/share/${id}`
  })

  afterAll(() => h?.close())

  it.each<[string, string]>([
    ['bob', 'Not your request'],
    ['ALICE', 'Not your request'],
  ])('shows %s neither the note nor the buttons: 403', async (as, heading) => {
    const page = await h.openSharePage(url, { as })
    expect(page.status).toBe(403)
    expect(page.html).toContain(heading)
    expect(page.html).not.toContain('Alice private')
    expect(page.token).toBeUndefined()
  })

  it('refuses decisions by another account or by nobody, and the share stays pending', async () => {
    const page = await h.openSharePage(url, { as: 'alice' })
    expect(page.status).toBe(200)
    for (const as of ['bob', null]) {
      const answer = await h.submitDecision(url, 'approve', { ...page, as })
      expect(answer.status).toBe(403)
      expect((await h.store.getShareRequest(id))?.status).toBe('pending')
    }
    const approved = await h.submitDecision(url, 'approve', { ...page, as: 'alice' })
    expect(approved.status).toBe(200)
    expect((await h.store.getShareRequest(id))?.status).toBe('approved')
  })

  it('guards the pages with the Host check of /mcp', async () => {
    const response = await h.app.request(url, { headers: { host: 'evil.example' } })
    expect(response.status).toBe(403)
    expect(response.headers.get('x-frame-options')).toBe('DENY')
  })
})

describe('without a web client', () => {
  it('answers the approval page with 503 and decides nothing', async () => {
    const { store, engineStore } = await sqliteStores()
    const sealer = await newSealer()
    const warnings: string[] = []
    const logger = { warn: (message: string) => warnings.push(message), error: () => {} }
    const config = parseConfig({ AUTH_ISSUER: as.issuer, AUTH_JWKS_URL: as.jwksUrl })
    const app = createApp(config, {
      store,
      engineStore,
      sealer,
      bus: new InProcessEventBus(),
      logger,
    })
    expect(warnings).toEqual(['share approvals need AUTH_WEB_CLIENT_ID and AUTH_WEB_CLIENT_SECRET'])
    const id = await pendingShare(store)
    const response = await get(app, `http://127.0.0.1/share/${id}`)
    expect(response.status).toBe(503)
    expect(await response.text()).toContain('Sign-in unavailable')
    expect((await store.getShareRequest(id))?.status).toBe('pending')
  })
})
