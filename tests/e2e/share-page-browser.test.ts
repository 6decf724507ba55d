/**
 * The url-mode elicitation of `share_note` in a real browser: headless Chromium (driven by
 * playwright-core) opens the approval page the server asked the client to show, a person clicks
 * Approve or Refuse, and the retried tool call publishes (or does not publish) a read-only link. A
 * page on another origin that auto-submits a forged decision is refused (CSRF), and the share stays
 * pending. Two approval pages open side by side in one browser each keep their own CSRF cookie. With
 * an https `PUBLIC_URL` the page's cookie is `Secure` and `__Host-` prefixed, and Chromium keeps it
 * and sends it back (it accepts such cookies from http://127.0.0.1, where the test reaches the
 * server; any attribute a `__Host-` cookie must not have would make it drop the cookie, and the
 * decision fail).
 *
 * The browser is found by `tests/support/chromium.ts`: without one these tests are skipped, visibly;
 * under `CI=true` they fail instead. This is local mode (no auth): whoever opens the page decides;
 * the signed-in approval of a deployment with auth is `oidc-share-login.test.ts`'s.
 */
import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient } from '../../src/client/index.ts'
import { useChromium } from '../support/chromium.ts'
import { toolResultText } from '../support/mcp-request.ts'
import { freePort, startServer, tempDataDir } from '../support/server-process.ts'
import type { ServerProcess } from '../support/server-process.ts'

const chromium = useChromium('Share page browser tests')

let server: ServerProcess
/** A server whose public URL is https (as behind a TLS-terminating proxy), reached over http. */
let behindTls: ServerProcess

beforeAll(async () => {
  if (!chromium.run) return
  server = await startServer('notes', { DATA_DIR: await tempDataDir() })
  const port = await freePort()
  behindTls = await startServer('notes', {
    DATA_DIR: await tempDataDir(),
    PORT: String(port),
    PUBLIC_URL: `https://127.0.0.1:${port}`,
  })
})

afterAll(async () => {
  await server?.stop()
  await behindTls?.stop()
})

async function createNote(title: string, target = server): Promise<string> {
  const result = await new McpClient({ url: target.url }).callTool('create_note', {
    title,
    body: 'Shared body.',
  })
  return (result.structuredContent as { note: { id: string } }).note.id
}

/**
 * Calls share_note on `target`; the person acts in the browser on the page the server sends (at
 * `target`'s own address: the links of the https server name a TLS proxy this test does not run).
 */
async function shareWith(
  id: string,
  act: (url: string) => Promise<void>,
  target = server
): Promise<string> {
  const client = new McpClient({
    url: target.url,
    capabilities: { elicitation: { url: {} } },
    handlers: {
      async elicit(params) {
        if (params.mode !== 'url') throw new Error('expected a url elicitation')
        const url = new URL(params.url as string)
        await act(`${target.baseUrl}${url.pathname}`)
        return { action: 'accept' }
      },
    },
  })
  return toolResultText(await client.callTool('share_note', { id }))
}

describe.skipIf(!chromium.run)('the share approval page in headless Chromium', () => {
  it('publishes a read-only link after the person clicks Approve', async () => {
    const id = await createNote('Browser approved note')
    const page = await chromium.browser().newPage()
    const outcome = await shareWith(id, async (url) => {
      await page.goto(url)
      expect(await page.textContent('body')).toContain('Browser approved note')
      await page.click('button[value="approve"]')
      await page.waitForLoadState()
      expect(await page.textContent('h1')).toBe('Approved')
    })
    const link = /https?:\/\/\S+\/shared\/[A-Za-z0-9_-]+/.exec(outcome)?.[0]
    expect(link, outcome).toBeDefined()
    await page.goto(link!)
    expect(await page.textContent('body')).toContain('Browser approved note')
    await page.close()
  })

  it('publishes nothing after the person clicks Refuse', async () => {
    const id = await createNote('Browser refused note')
    const page = await chromium.browser().newPage()
    const outcome = await shareWith(id, async (url) => {
      await page.goto(url)
      await page.click('button[value="refuse"]')
      await page.waitForLoadState()
      expect(await page.textContent('h1')).toBe('Refused')
    })
    expect(outcome).toMatch(/refused/i)
    expect(outcome).not.toMatch(/\/shared\//)
    await page.close()
  })

  it('refuses a decision forged by a page on another origin, and the share stays pending', async () => {
    const id = await createNote('Browser forged note')
    let shareUrl = ''
    const page = await chromium.browser().newPage()
    // A hostile site on another port (another origin) that auto-submits "approve" to the share URL.
    let evil: Server | undefined
    try {
      const outcome = await new McpClient({
        url: server.url,
        capabilities: { elicitation: { url: {} } },
        maxRounds: 3,
        handlers: {
          async elicit(params) {
            if (shareUrl) return { action: 'decline' }
            shareUrl = params.url as string
            await page.goto(shareUrl) // the person looks at the real page (its cookie is set) …
            const port = await freePort()
            evil = createServer((_req, res) => {
              res.setHeader('content-type', 'text/html')
              res.end(
                `<form id="f" method="post" action="${shareUrl}"><input name="csrf" value="guess"><input name="decision" value="approve"></form><script>document.getElementById('f').submit()</script>`
              )
            }).listen(port, '127.0.0.1')
            // … then visits the hostile page, which posts the forged form cross-site.
            const response = page.waitForResponse(
              (r) => r.url() === shareUrl && r.request().method() === 'POST'
            )
            await page.goto(`http://localhost:${port}/`)
            expect((await response).status()).toBe(403)
            return { action: 'accept' }
          },
        },
      }).callTool('share_note', { id })
      // The share is still pending, so the server asks again; the person then declines.
      expect(toolResultText(outcome)).toMatch(/not shared/i)
      await page.goto(shareUrl)
      expect(await page.textContent('h1')).toBe('Share a note?')
    } finally {
      evil?.close()
      await page.close()
    }
  })

  it('keeps the token of each of two pages open side by side in one browser', async () => {
    const first = await createNote('Side by side, first')
    const second = await createNote('Side by side, second')
    const context = await chromium.browser().newContext()
    try {
      const [firstPage, secondPage] = [await context.newPage(), await context.newPage()]
      const outcome = await shareWith(first, async (firstUrl) => {
        await firstPage.goto(firstUrl)
        // The second page opens (and sets its cookie) before the first is decided.
        const inner = await shareWith(second, async (secondUrl) => {
          await secondPage.goto(secondUrl)
          await firstPage.click('button[value="approve"]')
          await firstPage.waitForLoadState()
          expect(await firstPage.textContent('h1')).toBe('Approved')
          await secondPage.click('button[value="refuse"]')
          await secondPage.waitForLoadState()
          expect(await secondPage.textContent('h1')).toBe('Refused')
        })
        expect(inner).toMatch(/refused/i)
      })
      expect(outcome).toMatch(/\/shared\//)
    } finally {
      await context.close()
    }
  })

  it('under an https PUBLIC_URL, decides with the Secure __Host- cookie Chromium keeps', async () => {
    const id = await createNote('Behind TLS note', behindTls)
    const context = await chromium.browser().newContext()
    try {
      const page = await context.newPage()
      const outcome = await shareWith(
        id,
        async (url) => {
          await page.goto(url)
          const shareId = new URL(url).pathname.split('/')[2]
          expect(await context.cookies()).toStrictEqual([
            expect.objectContaining({
              name: `__Host-share_csrf-${shareId}`,
              path: '/',
              secure: true,
              httpOnly: true,
              sameSite: 'Strict',
            }),
          ])
          await page.click('button[value="approve"]')
          await page.waitForLoadState()
          expect(await page.textContent('h1')).toBe('Approved')
          expect(await context.cookies()).toStrictEqual([])
        },
        behindTls
      )
      expect(outcome).toMatch(/https:\/\/127\.0\.0\.1:\d+\/shared\//)
    } finally {
      await context.close()
    }
  })
})
