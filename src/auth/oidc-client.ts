/**
 * @module auth/oidc-client
 * `OidcClient`: this server as an OpenID Connect relying party of its own authorization server, a
 * confidential web client (AUTH_WEB_CLIENT_ID / AUTH_WEB_CLIENT_SECRET), used to learn who a person in
 * a browser is (the approval pages, `web-login.ts`). Authorization code flow with PKCE (S256), `state`
 * and `nonce`:
 * - `metadata()` reads the issuer's OpenID discovery document once (again after an hour; a failure is
 *   not kept) and requires its `issuer` to be exactly AUTH_ISSUER (OIDC Discovery §4.3);
 * - `authorizationUrl()` builds the redirect to the authorization endpoint;
 * - `checkIssuer()` applies RFC 9207 to the callback: an `iss` parameter must be the issuer, and it
 *   must be present when the server says it sends one (a mix-up attack otherwise goes unseen);
 * - `redeem()` exchanges the code (client_secret_basic, or client_secret_post when that is all the
 *   server takes) and verifies the ID token: signature by the issuer's JWKS (asymmetric algorithms
 *   only), `iss`, `aud` = this client (`azp` too when present or several audiences), lifetime, and the
 *   `nonce` of this login. The result is the person's issuer and subject, nothing else.
 * Runtime-neutral: `fetch`, Web Crypto and jose.
 */
import { jwtVerify } from 'jose'
import {
  ASYMMETRIC_ALGORITHMS,
  boundedText,
  CLOCK_TOLERANCE_SECONDS,
  KeysUnavailableError,
  type RemoteJwks,
} from 'stateless-mcp/bearer'
import { randomBase64url, sha256Base64url } from 'stateless-mcp'
import { constantTimeEqual } from 'stateless-mcp/compose'

const METADATA_MAX_AGE_MS = 60 * 60_000
const TIMEOUT_MS = 10_000
const MAX_RESPONSE_BYTES = 64 * 1024

/** The fields of the authorization server's metadata this client uses. */
export interface ServerMetadata {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
  authorization_response_iss_parameter_supported?: boolean
  token_endpoint_auth_methods_supported?: string[]
}

export interface OidcClientOptions {
  issuer: string
  clientId: string
  clientSecret: string
  /** The key set of a JWKS URL, shared with the access-token verifier when it is the same URL. */
  jwksFor: (url: string) => RemoteJwks
  fetch?: typeof fetch
  now?: () => number
}

export interface AuthorizationRequest {
  redirectUri: string
  state: string
  nonce: string
  codeVerifier: string
}

export interface Identity {
  issuer: string
  subject: string
}

/**
 * Signing in failed; `message` is safe to show (it never holds a secret or a token). `unavailable`:
 * the authorization server could not be used (its metadata or its keys), which is no fault of the
 * person's and may pass (503), rather than a sign-in that was refused (400).
 */
export class LoginError extends Error {
  override name = 'LoginError'
  readonly unavailable: boolean

  constructor(message: string, options: ErrorOptions & { unavailable?: boolean } = {}) {
    super(message, options)
    this.unavailable = options.unavailable ?? false
  }
}

/** What a person whose sign-in was refused can do about it. */
const START_AGAIN = 'Open the link again to sign in anew.'

/** A fresh random value for `state`, `nonce` or a PKCE verifier (256 bits, base64url). */
export function randomSecret(): string {
  return randomBase64url(32)
}

/** `application/x-www-form-urlencoded` of one value, as RFC 6749 §2.3.1 wants for Basic auth. */
const formEncode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2)

function isMetadata(value: unknown): value is ServerMetadata {
  if (typeof value !== 'object' || value === null) return false
  const m = value as Record<string, unknown>
  const methods = m.token_endpoint_auth_methods_supported
  return (
    ['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri'].every(
      (field) => typeof m[field] === 'string' && URL.canParse(m[field])
    ) &&
    (methods === undefined ||
      (Array.isArray(methods) && methods.every((method) => typeof method === 'string')))
  )
}

export class OidcClient {
  readonly issuer: string
  readonly clientId: string
  readonly #secret: string
  readonly #jwksFor: (url: string) => RemoteJwks
  readonly #fetch: typeof fetch | undefined
  readonly #now: () => number
  #metadata: { value: ServerMetadata; until: number } | undefined
  #loading: Promise<ServerMetadata> | undefined

  constructor(options: OidcClientOptions) {
    this.issuer = options.issuer
    this.clientId = options.clientId
    this.#secret = options.clientSecret
    this.#jwksFor = options.jwksFor
    this.#fetch = options.fetch
    this.#now = options.now ?? Date.now
  }

  #request(url: string, init: RequestInit): Promise<Response> {
    return (this.#fetch ?? globalThis.fetch)(url, {
      ...init,
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
  }

  /** The authorization server's metadata (cached), or `LoginError`. */
  async metadata(): Promise<ServerMetadata> {
    if (this.#metadata !== undefined && this.#now() < this.#metadata.until) {
      return this.#metadata.value
    }
    this.#loading ??= this.#loadMetadata().finally(() => {
      this.#loading = undefined
    })
    return this.#loading
  }

  async #loadMetadata(): Promise<ServerMetadata> {
    const url = `${this.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
    let document: unknown
    try {
      const response = await this.#request(url, { headers: { accept: 'application/json' } })
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      document = JSON.parse(await boundedText(response, MAX_RESPONSE_BYTES))
    } catch (error) {
      throw new LoginError(`The authorization server's metadata could not be read (${url}).`, {
        cause: error,
        unavailable: true,
      })
    }
    if (!isMetadata(document) || document.issuer !== this.issuer) {
      throw new LoginError(`The metadata at ${url} is not that of the issuer ${this.issuer}.`, {
        unavailable: true,
      })
    }
    this.#metadata = { value: document, until: this.#now() + METADATA_MAX_AGE_MS }
    return document
  }

  async authorizationUrl(request: AuthorizationRequest): Promise<string> {
    const url = new URL((await this.metadata()).authorization_endpoint)
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: this.clientId,
      redirect_uri: request.redirectUri,
      scope: 'openid',
      state: request.state,
      nonce: request.nonce,
      // PKCE S256 (RFC 7636 §4.2): base64url of the SHA-256 of the verifier.
      code_challenge: await sha256Base64url(request.codeVerifier),
      code_challenge_method: 'S256',
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return url.href
  }

  /** RFC 9207: whether the callback's `iss` parameter (if any) is acceptable. */
  async checkIssuer(iss: string | undefined): Promise<boolean> {
    if (iss !== undefined) return iss === this.issuer
    return !(await this.metadata()).authorization_response_iss_parameter_supported
  }

  /** Exchanges an authorization code; the verified identity of the ID token, or `LoginError`. */
  async redeem(code: string, request: Omit<AuthorizationRequest, 'state'>): Promise<Identity> {
    const metadata = await this.metadata()
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: request.redirectUri,
      code_verifier: request.codeVerifier,
    })
    const headers: Record<string, string> = {
      accept: 'application/json',
      'content-type': 'application/x-www-form-urlencoded',
    }
    const methods = metadata.token_endpoint_auth_methods_supported
    if (
      methods &&
      !methods.includes('client_secret_basic') &&
      methods.includes('client_secret_post')
    ) {
      body.set('client_id', this.clientId)
      body.set('client_secret', this.#secret)
    } else {
      headers.authorization = `Basic ${btoa(`${formEncode(this.clientId)}:${formEncode(this.#secret)}`)}`
    }
    let tokens: { id_token?: unknown }
    try {
      const response = await this.#request(metadata.token_endpoint, {
        method: 'POST',
        headers,
        body,
      })
      const text = await boundedText(response, MAX_RESPONSE_BYTES)
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      tokens = JSON.parse(text) as { id_token?: unknown }
    } catch (error) {
      throw new LoginError(`The authorization server refused the sign-in code. ${START_AGAIN}`, {
        cause: error,
      })
    }
    if (typeof tokens?.id_token !== 'string') {
      throw new LoginError(`The authorization server sent no ID token. ${START_AGAIN}`)
    }
    try {
      const { payload } = await jwtVerify(
        tokens.id_token,
        this.#jwksFor(metadata.jwks_uri).getKey,
        {
          issuer: this.issuer,
          audience: this.clientId,
          algorithms: [...ASYMMETRIC_ALGORITHMS],
          requiredClaims: ['sub', 'exp', 'iat', 'nonce'],
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          currentDate: new Date(this.#now()),
        }
      )
      const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud]
      const azp = payload.azp
      if (
        typeof payload.nonce !== 'string' ||
        !constantTimeEqual(payload.nonce, request.nonce) ||
        (azp !== undefined && azp !== this.clientId) ||
        (audiences.length > 1 && azp === undefined) ||
        typeof payload.sub !== 'string' ||
        payload.sub === ''
      ) {
        throw new Error('nonce, azp or sub')
      }
      return { issuer: this.issuer, subject: payload.sub }
    } catch (error) {
      if (error instanceof KeysUnavailableError) {
        throw new LoginError(
          "The authorization server's keys could not be read, so the sign-in cannot be checked. Try again shortly.",
          { cause: error, unavailable: true }
        )
      }
      throw new LoginError(`The ID token of the sign-in is invalid. ${START_AGAIN}`, {
        cause: error,
      })
    }
  }
}
