/**
 * @module auth/web-login
 * Who is this person in a browser? `WebLogin` signs a person in at this server's authorization server
 * (`oidc-client.ts`: code flow + PKCE, `state`, `nonce`, RFC 9207 `iss`) and remembers the result in a
 * short session cookie, for the pages behind url-mode asks: such a page acts for the principal an ask
 * was made for, so it must first know that the person opening it is that principal (elicitation
 * url mode: the server MUST verify the identity of the user who opens the URL).
 *
 * Cookies: the session (`{issuer, subject}`, `SESSION_TTL_SECONDS`) and the pending login (`state`,
 * `nonce`, PKCE verifier and the page to return to, `LOGIN_TTL_SECONDS`) are sealed with the server's
 * key ring (AES-GCM: tamper-proof, unreadable, any replica opens them, rotation as for `requestState`),
 * bound to this server's base URL, `HttpOnly`, `SameSite=Lax` (the callback is a top-level navigation
 * from the authorization server) and `Path=/`; under HTTPS they are `Secure` with the `__Host-` prefix,
 * so no other host or path can plant one (`cookieScheme`, the one rule for every cookie of this
 * server, the share page's CSRF cookie included). Nothing personal travels in a URL.
 *
 * Leaves to the pages (`routes/share.ts`): what a signed-in person may do there, and every page shown.
 */
import type { Context } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import * as z from 'zod'
import { constantTimeEqual, type StateBinding, type StateSealer } from 'stateless-mcp/compose'
import { LoginError, randomSecret, type Identity, type OidcClient } from './oidc-client.ts'

export const SESSION_TTL_SECONDS = 15 * 60
export const LOGIN_TTL_SECONDS = 10 * 60
export const CALLBACK_PATH = '/auth/callback'
/** The cookies' names before `cookieScheme` prefixes them. */
const SESSION_COOKIE = 'notes-session'
const LOGIN_COOKIE = 'notes-login'

export interface WebLoginOptions {
  oidc: OidcClient
  sealer: StateSealer
  /** This server's public base URL (cookies are bound to it; the callback is under it). */
  baseUrl: string
}

const IdentitySchema = z.strictObject({ issuer: z.string(), subject: z.string() })
const LoginSchema = z.strictObject({
  state: z.string(),
  nonce: z.string(),
  verifier: z.string(),
  returnTo: z.string().regex(/^\/(?!\/)/),
})
type PendingLogin = z.infer<typeof LoginSchema>

/** Whether a POST says it comes from a page of this host (Fetch Metadata, then `Origin`). */
export function isSameOriginPost(c: Context): boolean {
  const site = c.req.header('sec-fetch-site')
  if (site !== undefined && site !== 'same-origin') return false
  const origin = c.req.header('origin')
  if (origin === undefined) return true
  try {
    return new URL(origin).host === new URL(c.req.url).host
  } catch {
    return false // `Origin: null` and anything else that is not a URL
  }
}

/** How the cookies of a server are named and flagged (`cookieScheme`). */
export interface CookieScheme {
  /** Whether its cookies carry `Secure`. */
  readonly secure: boolean
  /** The name a cookie called `base` has on the wire: `__Host-` prefixed under HTTPS. */
  name(base: string): string
}

/**
 * The cookies of the server at `baseUrl` (its public base URL: PUBLIC_URL, or on Workers without it
 * the request's origin; never the URL a request arrived on, which behind a TLS-terminating proxy is
 * plain http). Under HTTPS every cookie is `Secure` and named with the `__Host-` prefix, which browsers
 * accept only with `Secure`, `Path=/` and no `Domain`: no other host (a sibling subdomain), no path
 * and no plain-http page can plant or overwrite one, and one planted without the prefix is never
 * read. On a plain-http base (loopback development) neither: Chromium keeps `Secure` cookies from
 * http://127.0.0.1 and http://localhost, but other browsers drop them, and the local flow must work.
 */
export function cookieScheme(baseUrl: string): CookieScheme {
  const secure = new URL(baseUrl).protocol === 'https:'
  return { secure, name: (base) => (secure ? `__Host-${base}` : base) }
}

/** What a cookie's sealed value is bound to: its own name and the server's base URL. */
function cookieBinding(name: string, baseUrl: string): StateBinding {
  return { principal: '', method: name, target: baseUrl, args: null }
}

/**
 * The session cookie (name and sealed value) saying `identity` signed in at the server at `baseUrl`;
 * what a completed sign-in sets.
 */
export async function sessionCookie(
  sealer: StateSealer,
  baseUrl: string,
  identity: Identity
): Promise<{ name: string; value: string }> {
  const name = cookieScheme(baseUrl).name(SESSION_COOKIE)
  const sealed = await sealer
    .withTtl(SESSION_TTL_SECONDS)
    .seal(cookieBinding(name, baseUrl), { issuer: identity.issuer, subject: identity.subject })
  return { name, value: sealed.token }
}

export class WebLogin {
  readonly #oidc: OidcClient
  readonly #sealer: StateSealer
  readonly #sessions: StateSealer
  readonly #logins: StateSealer
  readonly #baseUrl: string
  readonly #redirectUri: string
  readonly #secure: boolean
  readonly #sessionCookie: string
  readonly #loginCookie: string

  constructor({ oidc, sealer, baseUrl }: WebLoginOptions) {
    this.#oidc = oidc
    this.#sealer = sealer
    this.#sessions = sealer.withTtl(SESSION_TTL_SECONDS)
    this.#logins = sealer.withTtl(LOGIN_TTL_SECONDS)
    this.#baseUrl = baseUrl
    this.#redirectUri = `${baseUrl}${CALLBACK_PATH}`
    const cookies = cookieScheme(baseUrl)
    this.#secure = cookies.secure
    this.#sessionCookie = cookies.name(SESSION_COOKIE)
    this.#loginCookie = cookies.name(LOGIN_COOKIE)
  }

  #cookieOptions(maxAge: number) {
    return {
      path: '/',
      httpOnly: true,
      secure: this.#secure,
      sameSite: 'Lax' as const,
      maxAge,
    }
  }

  async #open<T>(c: Context, name: string, sealer: StateSealer, schema: z.ZodType<T>) {
    const token = getCookie(c, name)
    if (token === undefined) return undefined
    try {
      const { journal } = await sealer.open(token, cookieBinding(name, this.#baseUrl))
      const parsed = schema.safeParse(journal)
      return parsed.success ? parsed.data : undefined
    } catch {
      return undefined // expired, tampered, another server's or another key ring's: not signed in
    }
  }

  /** The signed-in person of this request, if any. */
  identity(c: Context): Promise<Identity | undefined> {
    return this.#open(c, this.#sessionCookie, this.#sessions, IdentitySchema)
  }

  /**
   * The redirect that signs the person in and comes back to `returnTo` (a path of this site);
   * `LoginError` when the authorization server cannot be reached.
   */
  async signIn(c: Context, returnTo: string): Promise<Response> {
    const login: PendingLogin = {
      state: randomSecret(),
      nonce: randomSecret(),
      verifier: randomSecret(),
      returnTo,
    }
    const location = await this.#oidc.authorizationUrl({
      redirectUri: this.#redirectUri,
      state: login.state,
      nonce: login.nonce,
      codeVerifier: login.verifier,
    })
    const sealed = await this.#logins.seal(cookieBinding(this.#loginCookie, this.#baseUrl), login)
    setCookie(c, this.#loginCookie, sealed.token, this.#cookieOptions(LOGIN_TTL_SECONDS))
    c.header('cache-control', 'no-store')
    return c.redirect(location, 302)
  }

  /**
   * Finishes a sign-in at the callback: checks `state`, `iss` and the code, sets the session cookie
   * and answers where to go back to; `LoginError` (safe to show) otherwise. The pending login is
   * spent either way.
   */
  async callback(c: Context): Promise<string> {
    const login = await this.#open(c, this.#loginCookie, this.#logins, LoginSchema)
    deleteCookie(c, this.#loginCookie, this.#cookieOptions(0))
    if (login === undefined) {
      throw new LoginError('This sign-in expired or was started elsewhere. Open the link again.')
    }
    const { state, code, iss, error } = c.req.query()
    if (state === undefined || !constantTimeEqual(state, login.state)) {
      throw new LoginError(
        'This sign-in does not match the one this browser started. Open the link again.'
      )
    }
    if (!(await this.#oidc.checkIssuer(iss))) {
      throw new LoginError('The sign-in answer came from another authorization server.')
    }
    if (error !== undefined) {
      throw new LoginError(
        error === 'access_denied'
          ? 'Sign-in was cancelled.'
          : 'The authorization server refused the sign-in.'
      )
    }
    if (code === undefined) throw new LoginError('The sign-in answer carries no code.')
    const identity = await this.#oidc.redeem(code, {
      redirectUri: this.#redirectUri,
      nonce: login.nonce,
      codeVerifier: login.verifier,
    })
    const session = await sessionCookie(this.#sealer, this.#baseUrl, identity)
    setCookie(c, session.name, session.value, this.#cookieOptions(SESSION_TTL_SECONDS))
    return login.returnTo
  }
}
