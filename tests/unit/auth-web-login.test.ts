/**
 * The approval pages' sign-in, in-process (the browser round trip is `tests/e2e/oidc-share-login`):
 * - against a real authorization server (`oidc-provider` on loopback): a page without a session
 *   redirects to its authorization endpoint with PKCE S256, `state`, `nonce`, `scope=openid` and the
 *   callback URL, setting a sealed, HttpOnly, SameSite=Lax login cookie (`__Host-` and Secure when the
 *   server is HTTPS); the callback refuses a wrong `state`, a wrong or missing `iss` (RFC 9207), an
 *   error answer and a bad code, spending the login and signing nobody in;
 * - with signed-in sessions (the cookie a completed sign-in sets): only the share's own principal sees
 *   and decides it; anyone else, or nobody, gets 403 and the share stays pending; without a web client
 *   the pages answer 503; the Host guard applies to the pages.
 */
import type { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/events.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { SHARE_REQUEST_TTL_MS } from '../../src/notes/limits.ts'
import { randomToken } from '../../src/notes/tokens.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import {
  signingKey,
  startAuthorizationServer,
  type AuthorizationServer,
} from '../support/authorization-server.ts'
import { createNotesHarness, ORIGIN, type NotesHarness } from '../support/notes-harness.ts'
import { freePort } from '../support/server-process.ts'

let as: AuthorizationServer

beforeAll(async () => {
  as = await startAuthorizationServer({
    port: await freePort(),
    notesBaseUrl: 'https://notes.example',
    otherResource: 'https://other.example/mcp',
    keys: [await signingKey('k1')],
  })
})

afterAll(() => as?.close())

async function appAt(publicUrl: string): Promise<{ app: Hono; store: SqliteNotesStore }> {
  const store = new SqliteNotesStore({ path: ':memory:' })
  await store.migrate()
  const config = parseConfig({
    PUBLIC_URL: publicUrl,
    ALLOWED_HOSTS: new URL(publicUrl).hostname,
    AUTH_ISSUER: as.issuer,
    AUTH_JWKS_URL: as.jwksUrl,
    AUTH_WEB_CLIENT_ID: as.webClient.id,
    AUTH_WEB_CLIENT_SECRET: as.webClient.secret,
  })
  const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
  const app = createApp(config, { store, sealer, bus: new InProcessEventBus() })
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
    let state: string
    let cookie: string

    beforeAll(async () => {
      const built = await appAt('https://notes.example')
      app = built.app
      const response = await get(
        app,
        `https://notes.example/share/${await pendingShare(built.store)}`
      )
      state = new URL(response.headers.get('location') as string).searchParams.get(
        'state'
      ) as string
      cookie = (cookieOf(response, '__Host-notes-login') as string).split(';')[0] as string
    })

    async function callback(query: Record<string, string>, withCookie = true) {
      const url = new URL('https://notes.example/auth/callback')
      for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
      return get(app, url.href, withCookie ? { cookie } : {})
    }

    it.each<[string, () => Record<string, string>, boolean, RegExp]>([
      [
        'no pending login',
        () => ({ code: 'c', state, iss: as.issuer }),
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
        () => ({ code: 'c', state, iss: 'https://evil.example' }),
        true,
        /another authorization server/,
      ],
      [
        'no iss from a server that sends one',
        () => ({ code: 'c', state }),
        true,
        /another authorization server/,
      ],
      [
        'an error answer',
        () => ({ error: 'access_denied', state, iss: as.issuer }),
        true,
        /cancelled/,
      ],
      [
        'a code the server never issued',
        () => ({ code: 'forged', state, iss: as.issuer }),
        true,
        /refused the sign-in code/,
      ],
    ])(
      'refuses %s with 400, spends the login and sets no session',
      async (_case, query, withCookie, message) => {
        const response = await callback(query(), withCookie)
        expect(response.status).toBe(400)
        expect(await response.text()).toMatch(message)
        expect(cookieOf(response, '__Host-notes-session')).toBeUndefined()
        if (withCookie) expect(cookieOf(response, '__Host-notes-login')).toMatch(/Max-Age=0/)
        expect(response.headers.get('x-frame-options')).toBe('DENY')
      }
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
    const store = new SqliteNotesStore({ path: ':memory:' })
    await store.migrate()
    const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
    const warnings: string[] = []
    const logger = { warn: (message: string) => warnings.push(message), error: () => {} }
    const config = parseConfig({ AUTH_ISSUER: as.issuer, AUTH_JWKS_URL: as.jwksUrl })
    const app = createApp(config, { store, sealer, bus: new InProcessEventBus(), logger })
    expect(warnings).toEqual(['share approvals need AUTH_WEB_CLIENT_ID and AUTH_WEB_CLIENT_SECRET'])
    const id = await pendingShare(store)
    const response = await get(app, `http://127.0.0.1/share/${id}`)
    expect(response.status).toBe(503)
    expect(await response.text()).toContain('Sign-in unavailable')
    expect((await store.getShareRequest(id))?.status).toBe('pending')
  })
})
