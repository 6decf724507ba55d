/**
 * @module routes/share
 * The pages behind `share_note`'s url-mode elicitation, for a person in a browser:
 * - `GET /share/:id` shows the note's title with Approve / Refuse buttons while the share request is
 *   pending and not expired; otherwise a page saying it is not found (404), already decided (409) or
 *   expired (410). A request whose note is gone is "not found". The page never names a principal.
 * - `POST /share/:id` records the decision once (`NotesStore.decideShareRequest`). It is protected
 *   against cross-site request forgery twice: a browser must say the POST comes from this site
 *   (`Sec-Fetch-Site: same-origin` and/or an `Origin` of this host; a cross-site or `null` one is 403),
 *   and the form must carry the CSRF token its page set in an HttpOnly, SameSite=Strict cookie of that
 *   page (compared in constant time; missing or different is 403). A request carrying neither header
 *   is not a browser form post, so it cannot be forged by another site; the token still applies. The
 *   cookie is named after the share id (`csrfCookieName`), so pages open side by side keep their own
 *   tokens although every cookie has `Path=/`; under HTTPS (the public base URL, `cookieScheme`) it is
 *   `Secure` with the `__Host-` prefix, so no sibling host or plain-http page can plant one, and a
 *   cookie without the prefix is not read.
 * - `GET /shared/:linkId` shows a published note read-only.
 * - `GET /auth/callback` ends a sign-in (with auth) and goes back to the page that asked for it.
 *
 * Who may decide: without auth (one local principal) whoever opens the page, as the only user of the
 * server. With auth the page acts for the principal the share was asked for, so the person must be
 * that principal (elicitation url mode: the server MUST verify the identity of the user who opens the
 * URL, and MUST NOT hand out a pre-authenticated URL): both the page and the decision require a sign-in
 * at the same authorization server (`src/auth/web-login.ts`), and the signed-in (issuer, subject) must
 * equal the share's principal. Anyone else gets 403 and the request stays pending for the right
 * person; without a configured web client (AUTH_WEB_CLIENT_ID) nobody can be checked and the pages
 * answer 503. The share id in the URL is 256 random bits and no personal data or credential.
 *
 * Every interpolated string is HTML-escaped (`hono/html`), and every response forbids framing,
 * scripts, cross-site referrers and caching; the Host/Origin guard of `/mcp` applies too.
 * Runtime-neutral: Web Crypto and Hono only.
 *
 * `routes/` holds the notes app's own pages only (the generic MCP, health and well-known routes are
 * the engine's, in `src/http/`). They use `src/`; the app's composition root `src/app.ts` mounts them
 * and is the one module under `src/` that imports `routes/`.
 */
import { Hono, type Context, type Env, type MiddlewareHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import { html, raw } from 'hono/html'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { LoginError } from '../src/auth/oidc-client.ts'
import {
  CALLBACK_PATH,
  cookieScheme,
  isSameOriginPost,
  type CookieScheme,
  type WebLogin,
} from '../src/auth/web-login.ts'
import { constantTimeEqual } from 'stateless-mcp/compose'
import { isoTime } from '../src/notes/format.ts'
import { SHARE_REQUEST_TTL_MS } from '../src/notes/limits.ts'
import type { DecideOutcome, Note, NotesStore, ShareRequest } from '../src/notes/store.ts'
import { isToken, randomToken } from '../src/notes/tokens.ts'

export interface ShareRouteOptions {
  notes: NotesStore
  /** Clock in milliseconds since the epoch; defaults to `Date.now`. */
  now?: () => number
  /** The Host/Origin guard (`http/origin-guard.ts`) in front of every page. */
  guard: MiddlewareHandler
  /** This server's public base URL: under HTTPS its cookies are `Secure` and `__Host-` prefixed. */
  baseUrl: string
  /**
   * With auth: who the person is (`login`; without it nobody can be checked and the pages refuse).
   * Without auth (one local principal) whoever opens a page decides.
   */
  auth?: { login: WebLogin | undefined }
}

/** The CSRF cookie's name before the share id (`csrfCookieName`), and the form field repeating it. */
export const CSRF_COOKIE = 'share_csrf'
export const CSRF_FIELD = 'csrf'

/** The name of the CSRF cookie of share `id`'s page, for a server whose cookies are `cookies`. */
export function csrfCookieName(cookies: CookieScheme, id: string): string {
  return cookies.name(`${CSRF_COOKIE}-${id}`)
}
/** Largest decision form accepted, in bytes (the real one is under 100). */
const MAX_FORM_BYTES = 2048

const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  // `same-origin`, not `no-referrer`: with no-referrer, browsers send `Origin: null` on the page's own
  // form post, which the CSRF check must refuse. Cross-site requests still get no referrer.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}
button{font:inherit;padding:.5rem 1.25rem;margin-right:.75rem;cursor:pointer}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f6f6f6;padding:1rem}
.muted{color:#666}`

type Closed = Exclude<DecideOutcome, 'decided'>

const CLOSED: Record<Closed, { status: ContentfulStatusCode; title: string; text: string }> = {
  not_found: {
    status: 404,
    title: 'Not found',
    text: 'There is no share request at this address.',
  },
  already_decided: {
    status: 409,
    title: 'Already decided',
    text: 'This share request was already decided; nothing more can be changed here.',
  },
  expired: {
    status: 410,
    title: 'Expired',
    text: 'This share request expired. Ask your assistant to share the note again.',
  },
}

function page(c: Context, status: ContentfulStatusCode, title: string, content: unknown) {
  return c.html(
    html`<!doctype html>
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>${title}</title>
          <style>
            ${raw(STYLE)}
          </style>
        </head>
        <body>
          <main>${content}</main>
        </body>
      </html>`,
    status
  )
}

/** A page that only says something: a heading and one paragraph. */
function notice(c: Context, status: ContentfulStatusCode, title: string, text: string) {
  return page(
    c,
    status,
    title,
    html`<h1>${title}</h1>
      <p>${text}</p>`
  )
}

function closedPage(c: Context, closed: Closed) {
  const { status, title, text } = CLOSED[closed]
  return notice(c, status, title, text)
}

/** The path of a share request's page and of its decision. */
type SharePath = '/share/:id'

/** What every page works with, resolved once when the route is built. */
interface SharePages {
  notes: NotesStore
  now: () => number
  auth: ShareRouteOptions['auth']
  cookies: CookieScheme
}

/** The CSRF cookie of share `id`'s page: its name and the attributes it is set and deleted with. */
function csrfCookie(cookies: CookieScheme, id: string) {
  return {
    name: csrfCookieName(cookies, id),
    options: { path: '/', secure: cookies.secure, httpOnly: true, sameSite: 'Strict' as const },
  }
}

/** The pending request and its note, or why it cannot be decided. */
async function openShare(
  { notes, now }: SharePages,
  id: string
): Promise<Closed | { share: ShareRequest; note: Note }> {
  const share = isToken(id) ? await notes.getShareRequest(id) : undefined
  const note = share && (await notes.get(share.principal, share.noteId))
  if (!share || !note) return 'not_found'
  if (share.status !== 'pending') return 'already_decided'
  return now() >= share.expiresAt ? 'expired' : { share, note }
}

/**
 * Why this person may not act on `share` (a page to answer, or `sign-in` when nobody is signed in
 * yet), or `undefined` when they may: always without auth, else when signed in as its principal.
 */
async function refusal(
  { auth }: SharePages,
  c: Context,
  share: ShareRequest
): Promise<Response | 'sign-in' | undefined> {
  if (!auth) return undefined
  if (!auth.login) {
    return notice(
      c,
      503,
      'Sign-in unavailable',
      'This server cannot check who you are (its web sign-in is not configured), so nobody can decide here. Nothing was shared.'
    )
  }
  const identity = await auth.login.identity(c)
  if (identity === undefined) return 'sign-in'
  if (tokenPrincipal(identity.issuer, identity.subject) === share.principal) return undefined
  return notice(
    c,
    403,
    'Not your request',
    'You are signed in with another account than the one that asked to share this note, so you cannot decide here. Nothing was decided: sign in with that account to decide.'
  )
}

/** `GET /share/:id`: the approval page (its CSRF cookie set), a sign-in, or why not. */
function showApproval(pages: SharePages) {
  return async function showApproval(c: Context<Env, SharePath>): Promise<Response> {
    const id = c.req.param('id')
    const opened = await openShare(pages, id)
    if (typeof opened === 'string') return closedPage(c, opened)
    const refused = await refusal(pages, c, opened.share)
    if (refused === 'sign-in') {
      try {
        return await (pages.auth?.login as WebLogin).signIn(c, `/share/${id}`)
      } catch (error) {
        if (!(error instanceof LoginError)) throw error
        return notice(c, 503, 'Sign-in unavailable', error.message)
      }
    }
    if (refused) return refused
    const token = randomToken()
    const csrf = csrfCookie(pages.cookies, id)
    setCookie(c, csrf.name, token, { ...csrf.options, maxAge: SHARE_REQUEST_TTL_MS / 1000 })
    return page(
      c,
      200,
      'Share a note?',
      html`<h1>Share a note?</h1>
        <p>Your assistant asks to publish a read-only link to the note:</p>
        <p><strong>${opened.note.title}</strong></p>
        <p class="muted">Anyone with the link will be able to read it.</p>
        <form method="post">
          <input type="hidden" name="${CSRF_FIELD}" value="${token}" />
          <button type="submit" name="decision" value="approve">Approve</button>
          <button type="submit" name="decision" value="refuse">Refuse</button>
        </form>`
    )
  }
}

/**
 * The decision a form for share `id` carries, once it passed both CSRF checks (the browser's
 * same-origin headers, the token of its page's cookie), or the page refusing it.
 */
async function readDecision(
  c: Context,
  cookies: CookieScheme,
  id: string
): Promise<'approved' | 'refused' | Response> {
  if (!isSameOriginPost(c))
    return notice(c, 403, 'Forbidden', 'This form can only be sent from its own page.')
  if (!isToken(id)) return closedPage(c, 'not_found')
  const form = await c.req.parseBody()
  const cookie = getCookie(c, csrfCookieName(cookies, id))
  const token = form[CSRF_FIELD]
  if (cookie === undefined || typeof token !== 'string' || !constantTimeEqual(cookie, token)) {
    return notice(
      c,
      403,
      'Forbidden',
      'The form expired or did not come from its page. Reload the page and decide again.'
    )
  }
  if (form.decision === 'approve') return 'approved'
  if (form.decision === 'refuse') return 'refused'
  return notice(c, 400, 'Bad request', 'Choose Approve or Refuse.')
}

/** `POST /share/:id`: records the decision once, for the share's own principal. */
function decide(pages: SharePages) {
  return async function decide(c: Context<Env, SharePath>): Promise<Response> {
    const id = c.req.param('id')
    const decision = await readDecision(c, pages.cookies, id)
    if (typeof decision !== 'string') return decision
    const share = await pages.notes.getShareRequest(id)
    if (share === undefined) return closedPage(c, 'not_found')
    const refused = await refusal(pages, c, share)
    if (refused === 'sign-in') {
      return notice(c, 403, 'Signed out', 'Your sign-in expired. Reload the page and decide again.')
    }
    if (refused) return refused
    const outcome = await pages.notes.decideShareRequest(id, decision, pages.now())
    const csrf = csrfCookie(pages.cookies, id)
    deleteCookie(c, csrf.name, csrf.options)
    if (outcome !== 'decided') return closedPage(c, outcome)
    return decision === 'approved'
      ? notice(
          c,
          200,
          'Approved',
          'Go back to your assistant and continue: it will publish the link.'
        )
      : notice(c, 200, 'Refused', 'Nothing was shared. You can close this page.')
  }
}

/** `GET /auth/callback`: ends a sign-in and goes back to the page that asked for it. */
function finishSignIn({ auth }: SharePages) {
  return async function finishSignIn(c: Context): Promise<Response> {
    if (!auth?.login) return notice(c, 404, 'Not found', 'There is no sign-in here.')
    try {
      return c.redirect(await auth.login.callback(c), 303)
    } catch (error) {
      if (!(error instanceof LoginError)) throw error
      return error.unavailable
        ? notice(c, 503, 'Sign-in unavailable', error.message)
        : notice(c, 400, 'Sign-in failed', error.message)
    }
  }
}

/** `GET /shared/:linkId`: a published note, read-only. */
function showShared({ notes }: SharePages) {
  return async function showShared(c: Context<Env, '/shared/:linkId'>): Promise<Response> {
    const linkId = c.req.param('linkId')
    const note = isToken(linkId) ? await notes.getSharedNote(linkId) : undefined
    if (!note) return notice(c, 404, 'Not found', 'There is no shared note at this address.')
    const tags = note.tags.length > 0 ? `Tags: ${note.tags.join(', ')} · ` : ''
    return page(
      c,
      200,
      note.title,
      html`<h1>${note.title}</h1>
        <p class="muted">${tags}Updated ${isoTime(note.updatedAt).slice(0, 10)} · read-only</p>
        <pre>${note.body}</pre>`
    )
  }
}

/** Every page's headers: no framing, no scripts, no cross-site referrer, no caching. */
const securePage: MiddlewareHandler = async function securePage(c, next) {
  await next()
  for (const [name, value] of Object.entries(PAGE_HEADERS)) c.res.headers.set(name, value)
}

export function shareRoute({
  notes,
  now = Date.now,
  guard,
  baseUrl,
  auth,
}: ShareRouteOptions): Hono {
  const pages: SharePages = { notes, now, auth, cookies: cookieScheme(baseUrl) }
  const route = new Hono()
  for (const path of ['/share/:id', '/shared/:linkId', CALLBACK_PATH]) {
    route.use(path, securePage, guard)
  }
  route.get('/share/:id', showApproval(pages))
  route.post(
    '/share/:id',
    bodyLimit({
      maxSize: MAX_FORM_BYTES,
      onError: (c) => notice(c, 413, 'Too large', 'The form is too large.'),
    }),
    decide(pages)
  )
  route.get(CALLBACK_PATH, finishSignIn(pages))
  route.get('/shared/:linkId', showShared(pages))
  return route
}
