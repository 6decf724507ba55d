/**
 * The url-mode elicitation of `share_note` in a real browser: headless Chromium (driven by
 * playwright-core) opens the approval page the server asked the client to show, a person clicks
 * Approve or Refuse, and the retried tool call publishes (or does not publish) a read-only link. A
 * page on another origin that auto-submits a forged decision is refused (CSRF), and the share stays
 * pending.
 *
 * The browser is found by `tests/support/chromium.ts`: without one these tests are skipped, visibly;
 * under `CI=true` they fail instead. This is local mode (no auth): whoever opens the page decides;
 * the signed-in approval of a deployment with auth is `oidc-share-login.test.ts`'s.
 */
import { createServer, type Server } from 'node:http'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient } from '../../src/client/index.ts'
import type { CallToolResult } from '../../src/mcp/wire.ts'
import { browserTestsRun, launchChromium } from '../support/chromium.ts'
import {
  freePort,
  startServer,
  tempDataDir,
  type ServerProcess,
} from '../support/server-process.ts'

const RUN = browserTestsRun('Share page browser tests')

let server: ServerProcess
let browser: Browser

beforeAll(async () => {
  if (!RUN) return
  browser = await launchChromium()
  server = await startServer('notes', { DATA_DIR: await tempDataDir() })
})

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

async function createNote(title: string): Promise<string> {
  const result = await new McpClient({ url: server.url }).callTool('create_note', {
    title,
    body: 'Shared body.',
  })
  return (result.structuredContent as { note: { id: string } }).note.id
}

function textOf(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

/** Calls share_note; the person acts in the browser on the page the server sends. */
async function shareWith(id: string, act: (url: string) => Promise<void>): Promise<string> {
  const client = new McpClient({
    url: server.url,
    capabilities: { elicitation: { url: {} } },
    handlers: {
      async elicit(params) {
        if (params.mode !== 'url') throw new Error('expected a url elicitation')
        await act(params.url as string)
        return { action: 'accept' }
      },
    },
  })
  return textOf(await client.callTool('share_note', { id }))
}

describe.skipIf(!RUN)('the share approval page in headless Chromium', () => {
  it('publishes a read-only link after the person clicks Approve', async () => {
    const id = await createNote('Browser approved note')
    const page = await browser.newPage()
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
    const page = await browser.newPage()
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
    const page = await browser.newPage()
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
      expect(textOf(outcome)).toMatch(/not shared/i)
      await page.goto(shareUrl)
      expect(await page.textContent('h1')).toBe('Share a note?')
    } finally {
      evil?.close()
      await page.close()
    }
  })
})
