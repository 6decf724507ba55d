/**
 * @module tests/support/mcp-request
 * Builds correct MCP 2026-07-28 POSTs for in-process tests — standard headers (`Content-Type`,
 * `Accept`, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` with the Base64 sentinel for values that
 * are not plain visible ASCII) and the required `params._meta` — with overrides to break any part, and
 * sends them either through a Hono app (`postMcp`, the whole HTTP pipeline) or straight to an engine
 * handler (`callMcp`). Both fail the test on any 5xx: no request may ever make the server answer 5xx.
 * Also reads answers back: plain JSON or SSE (`readMessages`), and asserts JSON-RPC errors and results
 * exactly (`expectError`, `expectResult`); `toolResultText` is a tool result's text.
 *
 * Leaves to the suites: which server answers, and what the answers should contain.
 */
import type { Hono } from 'hono'
import { expect } from 'vitest'
import type { McpHandler, McpHttpInput } from '../../src/mcp/http-input.ts'
import {
  HEADER_METHOD,
  HEADER_NAME,
  HEADER_PROTOCOL_VERSION,
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_PROTOCOL_VERSION,
  NAMED_METHODS,
  PROTOCOL_VERSION,
} from '../../src/mcp/protocol.ts'
import type { CallToolResult } from '../../src/mcp/wire.ts'

/** A JSON value a test reads: `any` keeps the assertions readable. The tests' one explicit `any`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see the line above
export type JsonValue = any
export type JsonObject = Record<string, JsonValue>

/** The engine's in-process base URL; its host is on the default Host allow-list. */
export const MCP_URL = 'http://127.0.0.1/mcp'
const ORIGIN = 'http://127.0.0.1'

export interface McpRequestOptions {
  /** JSON-RPC id; default 1. */
  id?: string | number
  /** Params besides `_meta`. */
  params?: JsonObject
  /** `_meta["io.modelcontextprotocol/clientCapabilities"]`; default `{}` (no optional capability). */
  capabilities?: unknown
  /** Merged over the default `_meta` (a member set to `undefined` is dropped); `null` omits `_meta`. */
  meta?: JsonObject | null
  /** Merged over the standard headers (names in any case); `undefined` removes a header. */
  headers?: Record<string, string | undefined>
  /** Edits the JSON-RPC message before it is serialised (e.g. `delete message.id`). */
  patch?: (message: JsonObject) => void
  /** Replaces the serialised body entirely (e.g. malformed JSON). */
  body?: string
}

/** `=?base64?…?=`: the spec's encoding for header values that are not plain visible ASCII. */
export function base64Sentinel(value: string): string {
  const bytes = new TextEncoder().encode(value)
  return `=?base64?${btoa(String.fromCharCode(...bytes))}?=`
}

const PLAIN_HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/

/** The JSON-RPC request object for `method`, before any override of the body text. */
export function mcpMessage(method: string, options: McpRequestOptions = {}): JsonObject {
  const params: JsonObject = { ...options.params }
  if (options.meta !== null) {
    params._meta = {
      [META_PROTOCOL_VERSION]: PROTOCOL_VERSION,
      [META_CLIENT_CAPABILITIES]: options.capabilities === undefined ? {} : options.capabilities,
      [META_CLIENT_INFO]: { name: 'notes-mcp-tests', version: '0.0.0' },
      ...options.meta,
    }
  }
  const message: JsonObject = { jsonrpc: '2.0', id: options.id ?? 1, method, params }
  options.patch?.(message)
  return message
}

/** The standard headers for `method` (lower-case names), with `options.headers` applied. */
function mcpHeaders(method: string, options: McpRequestOptions = {}): Headers {
  const headers = new Headers({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    [HEADER_PROTOCOL_VERSION]: PROTOCOL_VERSION,
    [HEADER_METHOD]: method,
  })
  const nameField = NAMED_METHODS[method]
  const name = nameField === undefined ? undefined : options.params?.[nameField]
  if (typeof name === 'string') {
    headers.set(HEADER_NAME, PLAIN_HEADER_VALUE.test(name) ? name : base64Sentinel(name))
  }
  for (const [header, value] of Object.entries(options.headers ?? {})) {
    if (value === undefined) headers.delete(header)
    else headers.set(header, value)
  }
  return headers
}

/** The body text of the request. */
export function mcpBody(method: string, options: McpRequestOptions = {}): string {
  return options.body ?? JSON.stringify(mcpMessage(method, options))
}

/**
 * A complete `RequestInit` for POST /mcp as a real client sends it over HTTP: with `Host` and
 * `Content-Length` (fetch's `Request` would otherwise leave both out in-process).
 */
export function mcpInit(method: string, options: McpRequestOptions = {}): RequestInit {
  const body = mcpBody(method, options)
  const headers = mcpHeaders(method, options)
  if (!headers.has('host') && !Object.hasOwn(options.headers ?? {}, 'host')) {
    headers.set('host', new URL(ORIGIN).host)
  }
  headers.set('content-length', String(new TextEncoder().encode(body).byteLength))
  return { method: 'POST', headers, body }
}

function not5xx(response: Response): Response {
  expect(response.status, `the server answered ${response.status}`).toBeLessThan(500)
  return response
}

/** Any request to the app at `path`, with `Host: 127.0.0.1` unless `init` sets one; fails on 5xx. */
export async function requestApp(
  app: Hono,
  path: string,
  init: RequestInit = {}
): Promise<Response> {
  const headers = new Headers(init.headers)
  if (!headers.has('host')) headers.set('host', new URL(ORIGIN).host)
  return not5xx(await app.request(`${ORIGIN}${path}`, { ...init, headers }))
}

/** POSTs one MCP message through the whole HTTP pipeline of `app`; fails on 5xx. */
export async function postMcp(
  app: Hono,
  method: string,
  options: McpRequestOptions = {}
): Promise<Response> {
  return not5xx(await app.request(MCP_URL, mcpInit(method, options)))
}

export interface HandlerCallOptions extends McpRequestOptions {
  /** Default `'local'`, the principal of a server without auth. */
  principal?: string
  /** The OAuth client the caller authenticated through; none by default. */
  client?: string
  signal?: AbortSignal
  grantedScopes?: McpHttpInput['grantedScopes']
  insufficientScope?: McpHttpInput['insufficientScope']
}

/** Hands one MCP message straight to an engine handler, as the HTTP route does; fails on 5xx. */
export async function callMcp(
  handler: McpHandler,
  method: string,
  options: HandlerCallOptions = {}
): Promise<Response> {
  return not5xx(
    await handler({
      body: mcpBody(method, options),
      headers: mcpHeaders(method, options),
      principal: options.principal ?? 'local',
      client: options.client,
      signal: options.signal,
      grantedScopes: options.grantedScopes,
      insufficientScope: options.insufficientScope,
    })
  )
}

/**
 * The JSON messages of an SSE body (`data:` lines of each event; comments, blank events and events
 * with empty data, a resumable stream's priming event, skipped).
 */
export function parseSse(text: string): JsonObject[] {
  return text.split(/\r?\n\r?\n/).flatMap((event) => {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
    const joined = data.join('\n')
    return joined === '' ? [] : [JSON.parse(joined)]
  })
}

/** Every JSON-RPC message of a response: one for `application/json`, all events for SSE. */
export async function readMessages(response: Response): Promise<JsonObject[]> {
  const type = response.headers.get('content-type') ?? ''
  if (type.startsWith('text/event-stream')) return parseSse(await response.text())
  expect(type).toMatch(/^application\/json\b/)
  return [await response.json()]
}

/** The first JSON-RPC message of a response (failing the test when there is none). */
export async function firstMessage(response: Response): Promise<JsonObject> {
  const [message] = await readMessages(response)
  expect(message, 'the response carries no JSON-RPC message').toBeDefined()
  return message as JsonObject
}

export interface ExpectedError {
  status: number
  code: number
  /** The request id echoed with its JSON type (`1` is not `"1"`), or `null`. */
  id: string | number | null
}

/**
 * Asserts a JSON-RPC error answer: exact HTTP status, `application/json`, `jsonrpc: "2.0"`, the id
 * echoed with its type, no `result`, the exact code and a one-line, human-readable message.
 */
export async function expectError(
  response: Response,
  expected: ExpectedError
): Promise<{ code: number; message: string; data?: JsonValue }> {
  expect(response.status).toBe(expected.status)
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
  const body = (await response.json()) as JsonObject
  expect(body.jsonrpc).toBe('2.0')
  expect(body.id).toStrictEqual(expected.id)
  expect(body).not.toHaveProperty('result')
  expect(body.error?.code).toBe(expected.code)
  expect(body.error.message).toMatch(/^[A-Z][^\n]{9,}$/)
  return body.error
}

/** Asserts a successful JSON answer (200, `application/json`, id echoed) and returns its result. */
export async function expectResult(
  response: Response,
  id: string | number = 1
): Promise<JsonObject> {
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
  const body = (await response.json()) as JsonObject
  expect(body).toMatchObject({ jsonrpc: '2.0', id })
  expect(typeof body.id).toBe(typeof id)
  expect(body, JSON.stringify(body.error)).not.toHaveProperty('error')
  return body.result
}

/** The text blocks of a tool result, one a line (other blocks as empty lines). */
export function toolResultText(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}
