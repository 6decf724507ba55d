/**
 * The share approval pages over in-process HTTP (no browser): what a pending, decided, expired or
 * unknown request shows; that every response carries the anti-framing, no-script, same-origin-referrer and
 * no-store headers and escapes what it interpolates; and that a decision needs the page's CSRF token
 * and a same-origin browser, is single-use, and leaves nothing decided when refused with 403. Under
 * an https `PUBLIC_URL` (the app itself reached over plain http, as behind a TLS-terminating proxy)
 * the CSRF cookie is `Secure` and `__Host-` prefixed, and one without the prefix is not accepted.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CSRF_COOKIE, csrfCookieName } from '../../routes/share.ts'
import { cookieScheme } from '../../src/auth/web-login.ts'
import { SHARE_REQUEST_TTL_MS } from '../../src/notes/limits.ts'
import { randomToken } from '../../src/notes/tokens.ts'
import {
  ORIGIN,
  createNotesHarness,
  type NotesHarness,
  type SharePage,
  useNotesHarness,
} from '../support/notes-harness.ts'

const h = useNotesHarness()

/** A pending share request of a fresh note (of `harness`); returns its page URL and id. */
async function pendingShare(
  title = 'Holiday <script>alert("x")</script> & co',
  harness: NotesHarness = h()
) {
  const noteId = await harness.seed({ title, body: 'Body' })
  const id = randomToken()
  await harness.store.createShareRequest({
    id,
    principal: 'local',
    noteId,
    expiresAt: harness.clock.now + SHARE_REQUEST_TTL_MS,
  })
  return { id, url: `${ORIGIN}/share/${id}` }
}

/** A pending share request of a fresh note, its approval page opened: its id, URL and page. */
async function openedShare() {
  const share = await pendingShare()
  return { ...share, page: await h().openSharePage(share.url) }
}

async function statusOf(id: string) {
  return (await h().store.getShareRequest(id))?.status
}

/** The headers of every answer of the pages; an HTML page unless the Host/Origin guard answered. */
function expectPageHeaders(page: SharePage, { html = true } = {}) {
  expect(page.headers.get('content-security-policy')).toBe(
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
  )
  expect(page.headers.get('x-frame-options')).toBe('DENY')
  expect(page.headers.get('referrer-policy')).toBe('same-origin')
  expect(page.headers.get('cache-control')).toBe('no-store')
  expect(page.headers.get('content-type')).toMatch(html ? /^text\/html/ : /^application\/json/)
}

describe('GET /share/:id', () => {
  it('shows the escaped note title, Approve and Refuse, and a CSRF token matching its cookie', async () => {
    const { id, page } = await openedShare()
    expect(page.status).toBe(200)
    expectPageHeaders(page)
    expect(page.html).toContain(
      'Holiday &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co'
    )
    expect(page.html).not.toContain('<script>')
    expect(page.html).toContain('value="approve"')
    expect(page.html).toContain('value="refuse"')
    expect(page.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(page.cookie).toBe(page.token)
    // Plain http (loopback development): no Secure, which browsers other than Chromium would drop.
    expect(page.headers.get('set-cookie')).toBe(
      `${CSRF_COOKIE}-${id}=${page.token}; Max-Age=600; Path=/; HttpOnly; SameSite=Strict`
    )
    expect(await statusOf(id)).toBe('pending')
  })

  it('gives every visit its own token', async () => {
    const { url } = await pendingShare()
    const first = await h().openSharePage(url)
    const second = await h().openSharePage(url)
    expect(first.token).not.toBe(second.token)
  })

  it.each([
    ['an unknown id', () => `${ORIGIN}/share/${randomToken()}`],
    ['a malformed id', () => `${ORIGIN}/share/not-a-share-id`],
  ])('answers %s with a 404 page and no token', async (_case, url) => {
    const page = await h().openSharePage(url())
    expect(page.status).toBe(404)
    expectPageHeaders(page)
    expect(page.html).toContain('Not found')
    expect(page.token).toBeUndefined()
    expect(page.cookie).toBeUndefined()
  })

  it('answers a request whose note was deleted with 404', async () => {
    const { url } = await pendingShare()
    const [note] = (await h().store.list('local', 0, 1)).items
    await h().store.delete('local', note!.id, 'delete-key')
    expect((await h().openSharePage(url)).status).toBe(404)
  })

  it('answers an expired request with 410', async () => {
    const { url } = await pendingShare()
    h().clock.advance(SHARE_REQUEST_TTL_MS)
    const page = await h().openSharePage(url)
    expect(page.status).toBe(410)
    expect(page.html).toContain('Expired')
    expect(page.token).toBeUndefined()
  })

  it('answers a decided request with 409', async () => {
    const { id, url } = await pendingShare()
    await h().store.decideShareRequest(id, 'refused', h().clock.now)
    const page = await h().openSharePage(url)
    expect(page.status).toBe(409)
    expect(page.html).toContain('Already decided')
  })
})

describe('POST /share/:id', () => {
  it.each([
    ['approve', 'approved', 'Approved'],
    ['refuse', 'refused', 'Refused'],
  ])('records %s with the token of its page', async (decision, status, heading) => {
    const { id, url, page } = await openedShare()
    const answer = await h().submitDecision(url, decision, {
      ...page,
      secFetchSite: 'same-origin',
    })
    expect(answer.status).toBe(200)
    expectPageHeaders(answer)
    expect(answer.html).toContain(heading)
    expect(answer.headers.get('set-cookie')).toBe(
      `${CSRF_COOKIE}-${id}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict`
    )
    expect(await statusOf(id)).toBe(status)
  })

  it.each([
    ['no token in the form', (page: SharePage) => ({ cookie: page.cookie })],
    ['no cookie', (page: SharePage) => ({ token: page.token })],
    ['a wrong token', (page: SharePage) => ({ cookie: page.cookie, token: randomToken() })],
    [
      'a token of the same length but not this page’s',
      (page: SharePage) => ({ cookie: randomToken(), token: page.token }),
    ],
    ['a token of another length', (page: SharePage) => ({ cookie: page.cookie, token: 'short' })],
    [
      'a cross-site Origin (the Host/Origin guard)',
      (page: SharePage) => ({ ...page, origin: 'https://evil.example' }),
    ],
    [
      'an Origin of null (the Host/Origin guard)',
      (page: SharePage) => ({ ...page, origin: 'null' }),
    ],
    [
      'Sec-Fetch-Site: cross-site',
      (page: SharePage) => ({ ...page, origin: '', secFetchSite: 'cross-site' }),
    ],
    ['Sec-Fetch-Site: same-site', (page: SharePage) => ({ ...page, secFetchSite: 'same-site' })],
  ])('refuses %s with 403 and decides nothing', async (name, options) => {
    const { id, url, page } = await openedShare()
    const answer = await h().submitDecision(url, 'approve', options(page))
    expect(answer.status).toBe(403)
    expectPageHeaders(answer, { html: !name.includes('guard') })
    expect(await statusOf(id)).toBe('pending')
  })

  it('accepts a form post without Origin or Sec-Fetch-Site when the token matches', async () => {
    const { id, url, page } = await openedShare()
    const answer = await h().submitDecision(url, 'approve', { ...page, origin: '' })
    expect(answer.status).toBe(200)
    expect(await statusOf(id)).toBe('approved')
  })

  it('refuses a second decision: the first one stands', async () => {
    const { id, url, page } = await openedShare()
    expect((await h().submitDecision(url, 'refuse', page)).status).toBe(200)
    const second = await h().submitDecision(url, 'approve', page)
    expect(second.status).toBe(409)
    expect(second.html).toContain('Already decided')
    expect(await statusOf(id)).toBe('refused')
  })

  it('refuses a decision after the request expired', async () => {
    const { id, url, page } = await openedShare()
    h().clock.advance(SHARE_REQUEST_TTL_MS)
    const answer = await h().submitDecision(url, 'approve', page)
    expect(answer.status).toBe(410)
    expect(await statusOf(id)).toBe('pending')
  })

  it('answers an unknown decision with 400 and decides nothing', async () => {
    const { id, url, page } = await openedShare()
    expect((await h().submitDecision(url, 'maybe', page)).status).toBe(400)
    expect(await statusOf(id)).toBe('pending')
  })

  it('answers an unknown share id with 404', async () => {
    const { page } = await openedShare()
    const unknown = randomToken()
    const answer = await h().submitDecision(`${ORIGIN}/share/${unknown}`, 'approve', {
      ...page,
      cookieName: `${CSRF_COOKIE}-${unknown}`,
    })
    expect(answer.status).toBe(404)
  })

  it('refuses an oversized form with 413', async () => {
    const { id, url } = await pendingShare()
    const response = await h().app.request(url, {
      method: 'POST',
      headers: { host: '127.0.0.1', 'content-type': 'application/x-www-form-urlencoded' },
      body: `decision=approve&pad=${'x'.repeat(4096)}`,
    })
    expect(response.status).toBe(413)
    expect(await statusOf(id)).toBe('pending')
  })
})

describe('GET /shared/:linkId', () => {
  it('serves the published note read-only, escaped, with the page headers', async () => {
    const noteId = await h().seed({
      title: 'Plan <i>',
      body: '<img src=x onerror=alert(1)>',
      tags: ['trip'],
    })
    const id = randomToken()
    const linkId = randomToken()
    await h().store.createShareRequest({
      id,
      principal: 'local',
      noteId,
      expiresAt: h().clock.now + 1000,
    })
    await h().store.decideShareRequest(id, 'approved', h().clock.now)
    await h().store.publishShare('local', id, linkId, 'publish-key')
    const page = await h().openSharePage(`${ORIGIN}/shared/${linkId}`)
    expect(page.status).toBe(200)
    expectPageHeaders(page)
    expect(page.html).toContain('Plan &lt;i&gt;')
    expect(page.html).toContain('&lt;img src=x onerror=alert(1)&gt;')
    expect(page.html).toContain('trip')
    expect(page.html).not.toContain('<form')
    expect(page.cookie).toBeUndefined()
  })

  it.each([
    ['an unknown link', () => randomToken()],
    ['a malformed link', () => 'nope'],
  ])('answers %s with 404', async (_case, linkId) => {
    const page = await h().openSharePage(`${ORIGIN}/shared/${linkId()}`)
    expect(page.status).toBe(404)
    expectPageHeaders(page)
  })

  it('does not serve an approved share that was never published', async () => {
    const { id } = await pendingShare()
    await h().store.decideShareRequest(id, 'approved', h().clock.now)
    expect((await h().openSharePage(`${ORIGIN}/shared/${id}`)).status).toBe(404)
  })
})

describe('under an https PUBLIC_URL', () => {
  /** A harness whose public URL is https while requests reach it over http (a TLS proxy in front). */
  let tls: NotesHarness
  beforeEach(async () => {
    tls = await createNotesHarness({ env: { PUBLIC_URL: 'https://notes.example.com' } })
  })
  afterEach(async () => {
    await tls.close()
  })

  it('sets the CSRF cookie Secure with the __Host- prefix, Path=/ and no Domain', async () => {
    const { id, url } = await pendingShare('Title', tls)
    const page = await tls.openSharePage(url)
    expect(page.status).toBe(200)
    expect(page.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(page.headers.get('set-cookie')).toBe(
      `__Host-${CSRF_COOKIE}-${id}=${page.token}; Max-Age=600; Path=/; HttpOnly; Secure; SameSite=Strict`
    )
  })

  it('records a decision with the __Host- cookie and clears it the same way', async () => {
    const { id, url } = await pendingShare('Title', tls)
    const page = await tls.openSharePage(url)
    const answer = await tls.submitDecision(url, 'approve', {
      ...page,
      secFetchSite: 'same-origin',
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('set-cookie')).toBe(
      `__Host-${CSRF_COOKIE}-${id}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict`
    )
    expect((await tls.store.getShareRequest(id))?.status).toBe('approved')
  })

  it('does not accept the cookie without its __Host- prefix: 403, nothing decided', async () => {
    const { id, url } = await pendingShare('Title', tls)
    const page = await tls.openSharePage(url)
    // What a sibling host or a plain-http page could plant: the right token under the name without
    // the prefix (the name a plain-http server gives it).
    const answer = await tls.submitDecision(url, 'approve', {
      ...page,
      cookieName: csrfCookieName(cookieScheme('http://notes.example.com'), id),
      secFetchSite: 'same-origin',
    })
    expect(answer.status).toBe(403)
    expect(answer.html).toContain('did not come from its page')
    expect((await tls.store.getShareRequest(id))?.status).toBe('pending')
  })
})
