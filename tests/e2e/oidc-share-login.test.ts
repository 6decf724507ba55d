/**
 * Approval by the right person, end to end: the notes server (`npm start`) with a real authorization
 * server (`oidc-provider` on loopback) and its confidential web client (AUTH_WEB_CLIENT_ID/SECRET).
 * Alice's host calls `share_note`; the approval page it opens signs the person in at the same
 * authorization server (authorization code + PKCE, headless Chromium, one browser context per
 * person) and only the principal the share was asked for decides: bob's browser gets 403 and the
 * share stays pending; alice's browser approves and her retried call publishes the link. The session
 * cookie is sealed and HttpOnly, and the login answers a forged callback without deciding anything.
 */
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient } from '../../src/client/index.ts'
import {
  signIn,
  signingKey,
  startDeployment,
  type AuthorizationServer,
} from '../support/authorization-server.ts'
import { useChromium } from '../support/chromium.ts'
import { toolResultText } from '../support/mcp-request.ts'
import type { ServerProcess } from '../support/server-process.ts'

const chromium = useChromium('OIDC approval-page tests')

let as: AuthorizationServer
let server: ServerProcess
let alice: BrowserContext
let bob: BrowserContext
let aliceToken: string

beforeAll(async () => {
  if (!chromium.run) return
  alice = await chromium.browser().newContext()
  bob = await chromium.browser().newContext()
  ;({ as, server } = await startDeployment([await signingKey('k1')], { webLogin: true }))
  aliceToken = await as.accessToken(alice, 'alice', 'notes:read notes:write')
})

afterAll(async () => {
  await server?.stop()
  await as?.close()
})

describe.skipIf(!chromium.run)('the approval page behind a sign-in', () => {
  it("refuses bob on alice's share (403, still pending), then lets alice approve it", async () => {
    const mcp = new McpClient({
      url: server.url,
      headers: { authorization: `Bearer ${aliceToken}` },
    })
    const created = await mcp.callTool('create_note', { title: 'Alice holiday plans' })
    const id = (created.structuredContent as { note: { id: string } }).note.id

    const opened: string[] = []
    const outcome = await new McpClient({
      url: server.url,
      headers: { authorization: `Bearer ${aliceToken}` },
      capabilities: { elicitation: { url: {} } },
      maxRounds: 4,
      handlers: {
        async elicit(params) {
          const url = params.url as string
          opened.push(url)
          if (opened.length === 1) {
            // Bob got hold of the link: he signs in as himself and is refused.
            const bobPage = await bob.newPage()
            const first = bobPage.waitForResponse(
              (r) => r.url() === url && r.request().method() === 'GET' && r.status() !== 302
            )
            await bobPage.goto(url)
            expect(bobPage.url().startsWith(as.issuer)).toBe(true)
            await signIn(bobPage, as.issuer, 'bob')
            expect((await first).status()).toBe(403)
            expect(await bobPage.textContent('h1')).toBe('Not your request')
            expect(await bobPage.textContent('body')).not.toContain('Alice holiday plans')
            await bobPage.close()
            return { action: 'accept' }
          }
          // The share is still pending, so the server asks again; now alice opens it.
          expect(url).toBe(opened[0])
          const page = await alice.newPage()
          await page.goto(url)
          if (page.url().startsWith(as.issuer)) await signIn(page, as.issuer, 'alice')
          await page.waitForURL(url)
          expect(await page.textContent('body')).toContain('Alice holiday plans')
          await page.click('button[value="approve"]')
          await page.waitForLoadState()
          expect(await page.textContent('h1')).toBe('Approved')
          await page.close()
          return { action: 'accept' }
        },
      },
    }).callTool('share_note', { id })
    expect(opened).toHaveLength(2)
    expect(toolResultText(outcome)).toMatch(/^Shared "Alice holiday plans" read-only at /)
  })

  it('keeps the session in a sealed HttpOnly cookie bound to this server', async () => {
    const cookies = await alice.cookies(server.baseUrl)
    const session = cookies.find((cookie) => cookie.name === 'notes-session')
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' })
    // A compact JWE: five parts, nothing readable (no subject) inside.
    expect(session?.value.split('.')).toHaveLength(5)
    expect(session?.value).not.toMatch(/alice/)
  })

  it('refuses a callback this browser did not start, and signs nobody in', async () => {
    const context = await chromium.browser().newContext()
    try {
      const page = await context.newPage()
      const response = await page.goto(
        `${server.baseUrl}/auth/callback?code=forged&state=forged&iss=${encodeURIComponent(as.issuer)}`
      )
      expect(response?.status()).toBe(400)
      expect(await page.textContent('h1')).toBe('Sign-in failed')
      expect(await context.cookies(server.baseUrl)).toEqual([])
    } finally {
      await context.close()
    }
  })
})
