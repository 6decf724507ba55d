/**
 * The whole notes app in-process for tests: `createApp` with a private in-memory SQLite store, a fresh
 * key ring, an in-process event bus, a clock the test can move and a logger that keeps what the engine
 * logs. `rpc` sends one correctly formed 2026-07-28 request through the whole HTTP pipeline (built by
 * `mcp-request.ts`: headers, Base64 sentinel for a non-ASCII `Mcp-Name`, `_meta`) with the client
 * capabilities, log level and progress token asked for, and reads the answer, JSON or SSE. `tool` /
 * `retry` drive multi round-trip tool calls (`prefilled` sends answers with the first call);
 * `openSharePage` / `submitDecision` act as the browser on the share approval page (its CSRF cookie
 * named as the page names it, `csrfCookieName`); `completedText`, `toolErrorText` and
 * `expectInputRequired` read a round's answer. `env` adds configuration (e.g. an https
 * `PUBLIC_URL`). With `auth: true` the app verifies the HS256 bearer tokens of `test-tokens.ts`
 * (granting every notes scope) and `as` picks the caller, on the MCP endpoint and signed in on the
 * share pages.
 */
import type { Hono } from 'hono'
import { afterEach, beforeEach, expect } from 'vitest'
import { CSRF_FIELD, csrfCookieName } from '../../routes/share.ts'
import { createApp } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { cookieScheme, sessionCookie } from '../../src/auth/web-login.ts'
import { parseConfig } from '../../src/config.ts'
import { publicBaseUrl } from '../../src/http/app.ts'
import type { McpLogger } from '../../src/mcp/logger.ts'
import { InProcessEventBus, type ServerEvent } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { META_LOG_LEVEL, type LogLevel } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import type { ClientCapabilities } from '../../src/mcp/wire.ts'
import type { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import type { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { sqliteStores } from './sqlite-stores.ts'
import { postMcp, readMessages, requestApp, type JsonValue } from './mcp-request.ts'
import { TEST_AUTH_ENV, bearer } from './test-tokens.ts'

export const ORIGIN = 'http://127.0.0.1'

/** Every client capability (form and url elicitation, sampling, roots). */
export const ALL_CAPABILITIES: ClientCapabilities = {
  elicitation: { form: {}, url: {} },
  sampling: {},
  roots: {},
}

/** `TEST_AUTH_ENV` and the web client the share pages sign in with. */
const AUTH_ENV = {
  ...TEST_AUTH_ENV,
  AUTH_WEB_CLIENT_ID: 'notes-web',
  AUTH_WEB_CLIENT_SECRET: 'notes-web-secret',
}

export interface RpcOptions {
  /** Defaults to `ALL_CAPABILITIES`. */
  capabilities?: ClientCapabilities
  logLevel?: LogLevel
  progressToken?: string | number
  headers?: Record<string, string>
  /** With `auth: true`: the subject of the bearer token (default `alice`). */
  as?: string
}

export interface RpcResponse {
  status: number
  headers: Headers
  /** The parsed JSON body, or the parsed messages of every SSE event in order. */
  body: JsonValue
  /** The final JSON-RPC message: the JSON body, or the last SSE event. */
  message: JsonValue
  /** Notifications sent before the final message (SSE only). */
  notifications: JsonValue[]
  result: JsonValue
  error: JsonValue
}

export interface SharePage {
  status: number
  headers: Headers
  html: string
  /** The CSRF cookie value set by the page, if any. */
  cookie?: string
  /** The CSRF token of the page's hidden field, if any. */
  token?: string
}

export interface PageOptions {
  /**
   * With `auth: true`: the subject signed in on the page (default `alice`), or `null` for nobody.
   * The session cookie is the one a completed sign-in sets (`auth/web-login.ts`).
   */
  as?: string | null
}

export interface DecisionOptions extends PageOptions {
  cookie?: string
  /** The name `cookie` is sent under; default the page's own CSRF cookie name. */
  cookieName?: string
  token?: string
  origin?: string
  secFetchSite?: string
}

export interface NotesHarness {
  app: Hono
  store: SqliteNotesStore
  engineStore: SqliteEngineStore
  bus: InProcessEventBus
  /** Events published on the bus since the harness was built. */
  events: ServerEvent[]
  /** What the engine logged (instead of stderr): level, message and fields. */
  logs: Array<{ level: 'warn' | 'error'; message: string; fields?: Record<string, unknown> }>
  clock: { now: number; advance(ms: number): void }
  rpc(method: string, params?: Record<string, unknown>, options?: RpcOptions): Promise<RpcResponse>
  tool(name: string, args?: Record<string, unknown>, options?: RpcOptions): Promise<RpcResponse>
  /** A first call (no `requestState`) that already carries answers nobody asked for. */
  prefilled(
    name: string,
    args: Record<string, unknown>,
    inputResponses: Record<string, unknown>,
    options?: RpcOptions
  ): Promise<RpcResponse>
  /** Sends the same tool call again with `requestState` of `previous` and `inputResponses`. */
  retry(
    previous: RpcResponse,
    name: string,
    args: Record<string, unknown>,
    inputResponses: Record<string, unknown>,
    options?: RpcOptions
  ): Promise<RpcResponse>
  /** Creates a note straight in the store for the (local or given) principal. */
  seed(note: { title: string; body?: string; tags?: string[] }, principal?: string): Promise<string>
  principalOf(subject: string): string
  openSharePage(url: string, options?: PageOptions): Promise<SharePage>
  submitDecision(url: string, decision: string, options?: DecisionOptions): Promise<SharePage>
  close(): Promise<void>
}

export async function createNotesHarness(
  options: { auth?: boolean; env?: Record<string, string> } = {}
): Promise<NotesHarness> {
  const config = parseConfig({ ...(options.auth ? AUTH_ENV : {}), ...options.env })
  const cookies = cookieScheme(publicBaseUrl(config))
  /** The CSRF cookie name of the share page at `url` (`/share/<id>`). */
  const csrfNameOf = (url: string) => csrfCookieName(cookies, new URL(url).pathname.split('/')[2]!)
  const stores = await sqliteStores()
  const { store, engineStore } = stores
  const bus = new InProcessEventBus()
  const events: ServerEvent[] = []
  bus.subscribe((event) => events.push(event))
  const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
  const clock = {
    now: Date.now(),
    advance(ms: number) {
      clock.now += ms
    },
  }
  const logs: NotesHarness['logs'] = []
  const logger: McpLogger = {
    warn: (message, fields) => logs.push({ level: 'warn', message, fields }),
    error: (message, fields) => logs.push({ level: 'error', message, fields }),
  }
  const app = createApp(config, { store, engineStore, sealer, bus, logger, now: () => clock.now })
  let nextId = 1

  // The principal string `stateless-mcp/bearer` derives from a verified token (JSON `[issuer, subject]`).
  const principalOf = (subject: string) =>
    options.auth ? tokenPrincipal(AUTH_ENV.AUTH_ISSUER, subject) : LOCAL_PRINCIPAL

  async function rpc(
    method: string,
    params: Record<string, unknown> = {},
    rpcOptions: RpcOptions = {}
  ): Promise<RpcResponse> {
    const headers: Record<string, string> = {
      ...rpcOptions.headers,
      ...(options.auth ? await bearer(rpcOptions.as ?? 'alice') : {}),
    }
    const response = await postMcp(app, method, {
      id: nextId++,
      params,
      capabilities: rpcOptions.capabilities ?? ALL_CAPABILITIES,
      meta: { [META_LOG_LEVEL]: rpcOptions.logLevel, progressToken: rpcOptions.progressToken },
      headers,
    })
    const messages = await readMessages(response)
    const sse = response.headers.get('content-type')?.startsWith('text/event-stream') ?? false
    const message = messages.at(-1)
    return {
      status: response.status,
      headers: response.headers,
      body: sse ? messages : message,
      message,
      notifications: messages.slice(0, -1),
      result: message?.result,
      error: message?.error,
    }
  }

  function tool(name: string, args: Record<string, unknown> = {}, rpcOptions?: RpcOptions) {
    return rpc('tools/call', { name, arguments: args }, rpcOptions)
  }

  function prefilled(
    name: string,
    args: Record<string, unknown>,
    inputResponses: Record<string, unknown>,
    rpcOptions?: RpcOptions
  ) {
    return rpc('tools/call', { name, arguments: args, inputResponses }, rpcOptions)
  }

  function retry(
    previous: RpcResponse,
    name: string,
    args: Record<string, unknown>,
    inputResponses: Record<string, unknown>,
    rpcOptions?: RpcOptions
  ) {
    const requestState = previous.result?.requestState
    if (typeof requestState !== 'string')
      throw new Error('retry: the previous answer has no requestState')
    return rpc('tools/call', { name, arguments: args, inputResponses, requestState }, rpcOptions)
  }

  async function seed(
    note: { title: string; body?: string; tags?: string[] },
    principal = principalOf('alice')
  ): Promise<string> {
    const created = await store.create(
      principal,
      { title: note.title, body: note.body ?? '', tags: note.tags ?? [] },
      clock.now
    )
    return created.id
  }

  /**
   * The cookies of a page request: the CSRF cookie given (as `csrfName`) and, with auth, the session
   * of `as`.
   */
  async function pageCookies(
    csrf: { name: string; value: string | undefined },
    as: string | null = 'alice'
  ): Promise<Record<string, string>> {
    const sent = csrf.value === undefined ? [] : [`${csrf.name}=${csrf.value}`]
    if (options.auth && as !== null) {
      const identity = { issuer: AUTH_ENV.AUTH_ISSUER, subject: as }
      const session = await sessionCookie(sealer, publicBaseUrl(config), identity)
      sent.push(`${session.name}=${session.value}`)
    }
    return sent.length === 0 ? {} : { cookie: sent.join('; ') }
  }

  async function openSharePage(url: string, pageOptions: PageOptions = {}): Promise<SharePage> {
    const csrfName = csrfNameOf(url)
    const headers = await pageCookies({ name: csrfName, value: undefined }, pageOptions.as)
    return sharePage(await requestApp(app, new URL(url).pathname, { headers }), csrfName)
  }

  async function submitDecision(
    url: string,
    decision: string,
    { cookie, cookieName, token, origin = ORIGIN, secFetchSite, as }: DecisionOptions = {}
  ): Promise<SharePage> {
    const csrfName = csrfNameOf(url)
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      ...(await pageCookies({ name: cookieName ?? csrfName, value: cookie }, as)),
    }
    if (origin !== '') headers.origin = origin
    if (secFetchSite !== undefined) headers['sec-fetch-site'] = secFetchSite
    const form = new URLSearchParams({ decision })
    if (token !== undefined) form.set(CSRF_FIELD, token)
    return sharePage(
      await requestApp(app, new URL(url).pathname, {
        method: 'POST',
        headers,
        body: form.toString(),
      }),
      csrfName
    )
  }

  return {
    app,
    store,
    engineStore,
    bus,
    events,
    logs,
    clock,
    rpc,
    tool,
    prefilled,
    retry,
    seed,
    principalOf,
    openSharePage,
    submitDecision,
    close: () => stores.close(),
  }
}

/** A page's answer, with the value it set for its CSRF cookie `csrfName`. */
async function sharePage(response: Response, csrfName: string): Promise<SharePage> {
  const html = await response.text()
  const setCookie = response.headers.get('set-cookie') ?? ''
  const cookie = new RegExp(`(?:^|,\\s*)${csrfName}=([^;]*)`).exec(setCookie)?.[1]
  const token = new RegExp(`name="${CSRF_FIELD}" value="([^"]+)"`).exec(html)?.[1]
  return { status: response.status, headers: response.headers, html, cookie, token }
}

/**
 * A fresh in-process notes app for every test of the calling file, closed after each one. Call at the
 * top of a test file and read the current harness through the returned function.
 */
export function useNotesHarness(): () => NotesHarness {
  let harness: NotesHarness | undefined
  beforeEach(async () => {
    harness = await createNotesHarness()
  })
  afterEach(async () => {
    await harness?.close()
  })
  return () => {
    if (!harness) throw new Error('useNotesHarness: the harness exists only inside a test')
    return harness
  }
}

/** An accepted form answer. */
export const accept = (content: Record<string, unknown>) => ({ action: 'accept', content })

/** The text of a round that answered 200 with a complete result. */
export function completedText(response: RpcResponse): string {
  expect(response.status).toBe(200)
  expect(response.result.resultType).toBe('complete')
  return response.result.content[0].text
}

/** The message of a call that answered 200 with a tool error (an `isError` result). */
export function toolErrorText(response: RpcResponse): string {
  expect(response.status).toBe(200)
  expect(response.result.isError).toBe(true)
  return response.result.content[0].text
}

/** The round asked exactly these keys and handed back a requestState to echo. */
export function expectInputRequired(response: RpcResponse, keys: string[]): void {
  expect(response.status).toBe(200)
  expect(response.result.resultType).toBe('input_required')
  expect(Object.keys(response.result.inputRequests)).toEqual(keys)
  expect(typeof response.result.requestState).toBe('string')
}
