/**
 * @module tests/support/authorization-server
 * A real OAuth 2.1 / OpenID Connect authorization server for the auth tests: `oidc-provider` on
 * 127.0.0.1 (in the test process), configured as a deployment of the notes server would configure
 * its own:
 * - resource indicators (RFC 8707): an access token for the notes server is a JWT (RFC 9068, RS256)
 *   whose `aud` is the resource it was asked for, with the scopes `notes:read notes:write` defined;
 *   a second resource (`otherResource`) gives tokens for another server;
 * - `mcp-client`, a public client with PKCE, as an MCP host would be; `notes-web`, the confidential
 *   client of the notes server's approval pages (redirect URI `<notes base>/auth/callback`);
 * - its development login and consent pages (any password; the login name becomes `sub`).
 * The test makes the signing keys (`signingKey`) and keeps their private halves, so it can also sign
 * the tokens no real server would issue; `rotate(keys)` restarts the provider on the same port
 * publishing other keys. `signIn` drives the login pages in a Chromium page (playwright-core);
 * `accessToken` gets an access token for a user through a real authorization-code flow in the
 * browser. `startDeployment` starts one with a notes server (`npm start`) that trusts it, on fresh
 * ports.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, type JWK } from 'jose'
import Provider, { errors } from 'oidc-provider'
import type { BrowserContext, Page } from 'playwright-core'
import { freePort, startServer, tempDataDir, type ServerProcess } from './server-process.ts'

export interface SigningKey {
  kid: string
  privateKey: CryptoKey
  publicJwk: JWK
}

export interface AuthorizationServerOptions {
  port: number
  /** Base URL of the notes server (its resource is `<base>/mcp`). */
  notesBaseUrl: string
  otherResource: string
  keys: SigningKey[]
}

export interface AuthorizationServer {
  issuer: string
  jwksUrl: string
  webClient: { id: string; secret: string }
  rotate(keys: SigningKey[]): Promise<void>
  /** An access token of `user` for `resource` (default the notes server) with `scope`. */
  accessToken(
    context: BrowserContext,
    user: string,
    scope: string,
    resource?: string
  ): Promise<string>
  close(): Promise<void>
}

export const MCP_CLIENT_ID = 'mcp-client'
const WEB_CLIENT = { id: 'notes-web', secret: 'notes-web-secret-0123456789' }

/** A fresh RS256 key pair named `kid`. */
export async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    kid,
    privateKey,
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  }
}

async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))
  return { verifier, challenge: Buffer.from(digest).toString('base64url') }
}

/**
 * Completes the provider's login (as `user`, any password) and consent pages if they show, until
 * the browser leaves the provider. The caller waits for where it lands.
 */
export async function signIn(page: Page, issuer: string, user: string): Promise<void> {
  for (let step = 0; step < 2 && page.url().startsWith(`${issuer}/interaction/`); step++) {
    if (await page.locator('input[name=login]').count()) {
      await page.fill('input[name=login]', user)
      await page.fill('input[name=password]', 'any-password')
    }
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
  }
}

export async function startAuthorizationServer(
  options: AuthorizationServerOptions
): Promise<AuthorizationServer> {
  const issuer = `http://127.0.0.1:${options.port}`
  const resource = `${options.notesBaseUrl}/mcp`
  // The MCP host's redirect URI: codes by state, for `accessToken` to pick up.
  const codes = new Map<string, string>()
  const callback = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1')
    const state = url.searchParams.get('state')
    const code = url.searchParams.get('code')
    if (state && code) codes.set(state, code)
    response.writeHead(200, { 'content-type': 'text/plain' }).end('signed in')
  })
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve))
  const mcpRedirect = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`
  let keys = options.keys
  let server: Server | undefined

  async function listen(): Promise<void> {
    const jwks = {
      keys: await Promise.all(
        keys.map(async (key) => ({
          ...(await exportJWK(key.privateKey)),
          kid: key.kid,
          alg: 'RS256',
          use: 'sig',
        }))
      ),
    }
    const provider = new Provider(issuer, {
      jwks,
      cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
      clients: [
        {
          client_id: MCP_CLIENT_ID,
          token_endpoint_auth_method: 'none',
          redirect_uris: [mcpRedirect],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
        {
          client_id: WEB_CLIENT.id,
          client_secret: WEB_CLIENT.secret,
          redirect_uris: [`${options.notesBaseUrl}/auth/callback`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      features: {
        devInteractions: { enabled: true },
        resourceIndicators: {
          enabled: true,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== resource && indicator !== options.otherResource) {
              throw new errors.InvalidTarget()
            }
            return {
              scope: 'notes:read notes:write',
              audience: indicator,
              accessTokenTTL: 300,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'RS256' } },
            }
          },
        },
      },
    })
    await new Promise<void>((resolve) => {
      server = provider.listen(options.port, '127.0.0.1', resolve)
    })
  }

  async function stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (!server) return resolve()
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }

  await listen()
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    webClient: WEB_CLIENT,
    async rotate(next) {
      await stop()
      keys = next
      await listen()
    },
    async accessToken(context, user, scope, forResource = resource) {
      const { verifier, challenge } = await pkce()
      const state = crypto.randomUUID()
      const authorize = new URL(`${issuer}/auth`)
      for (const [name, value] of Object.entries({
        client_id: MCP_CLIENT_ID,
        response_type: 'code',
        redirect_uri: mcpRedirect,
        scope,
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: forResource,
      })) {
        authorize.searchParams.set(name, value)
      }
      const page = await context.newPage()
      try {
        await page.goto(authorize.href)
        await signIn(page, issuer, user)
        await page.waitForURL(`${mcpRedirect}**`)
      } finally {
        await page.close()
      }
      const code = codes.get(state)
      codes.delete(state)
      if (!code) throw new Error(`no authorization code for ${user}`)
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: mcpRedirect,
          client_id: MCP_CLIENT_ID,
          code_verifier: verifier,
          resource: forResource,
        }),
      })
      const tokens = (await response.json()) as { access_token?: string; error?: string }
      if (!tokens.access_token) throw new Error(`token request failed: ${JSON.stringify(tokens)}`)
      return tokens.access_token
    },
    async close() {
      await stop()
      await new Promise<void>((resolve) => callback.close(() => resolve()))
    },
  }
}

export interface Deployment {
  as: AuthorizationServer
  /** The notes server, trusting `as`. */
  server: ServerProcess
  /** The resource `as` also issues tokens for: another server than the notes server. */
  otherResource: string
}

/**
 * An authorization server publishing `keys` and a notes server that trusts it, on fresh ports; with
 * `webLogin` the notes server signs people in on its approval pages as `as.webClient`.
 */
export async function startDeployment(
  keys: SigningKey[],
  options: { webLogin?: boolean } = {}
): Promise<Deployment> {
  const notesPort = await freePort()
  const otherResource = `http://127.0.0.1:${await freePort()}/mcp`
  const as = await startAuthorizationServer({
    port: await freePort(),
    notesBaseUrl: `http://127.0.0.1:${notesPort}`,
    otherResource,
    keys,
  })
  const server = await startServer('notes', {
    PORT: String(notesPort),
    DATA_DIR: await tempDataDir(),
    AUTH_ISSUER: as.issuer,
    AUTH_JWKS_URL: as.jwksUrl,
    ...(options.webLogin
      ? { AUTH_WEB_CLIENT_ID: as.webClient.id, AUTH_WEB_CLIENT_SECRET: as.webClient.secret }
      : {}),
  })
  return { as, server, otherResource }
}
