/**
 * @module tests/support/legacy-request
 * Drives the 2025-era protocol (revisions 2025-11-25, 2025-06-18, 2025-03-26) of an app in-process, as
 * a 2025 client sends it: `initialize` (`startSession`), then requests, notifications and answers to
 * server→client requests carrying `Mcp-Session-Id` and `MCP-Protocol-Version` (`LegacySession`),
 * the session's GET stream and its DELETE. Every message goes through the whole HTTP pipeline with
 * `Host` and `Content-Length` set, and fails the test on any 5xx (`requestApp` of `mcp-request.ts`).
 * `SseReader` reads an SSE body message by message while the server still writes it, so a test can
 * answer a question the server asked mid-request (`SseReaders` cancels those a test left open).
 * Messages are built without any 2026-07-28 `_meta`. `TEST_AUTH_ENV` and `bearer` are re-exported
 * from `test-tokens.ts` for the suites that authenticate their sessions.
 *
 * Leaves to the suites: which app answers, and what the answers should contain.
 */
import type { Hono } from 'hono'
import { expect } from 'vitest'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { HEADER_PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { parseSse, requestApp, type JsonObject } from './mcp-request.ts'

export { TEST_AUTH_ENV, bearer } from './test-tokens.ts'

/** The newest 2025-era revision, what a v1 SDK client asks for today. */
export const LEGACY_VERSION = '2025-11-25'

/** Header overrides: a member set to `undefined` removes that header. */
export type HeaderOverrides = Record<string, string | undefined>

export interface InitializeOptions {
  /** `params.protocolVersion`; default `LEGACY_VERSION`. */
  protocolVersion?: string
  /** `params.capabilities`; default `{}`. */
  capabilities?: JsonObject
  /** JSON-RPC id; default 1. */
  id?: string | number
  /** Sent with the POST and with every later message of the session (e.g. `authorization`). */
  headers?: HeaderOverrides
}

/** The `initialize` request a 2025 client sends first. */
export function initializeMessage(options: InitializeOptions = {}): JsonObject {
  return {
    jsonrpc: '2.0',
    id: options.id ?? 1,
    method: 'initialize',
    params: {
      protocolVersion: options.protocolVersion ?? LEGACY_VERSION,
      capabilities: options.capabilities ?? {},
      clientInfo: { name: 'notes-mcp-legacy-tests', version: '0.0.0' },
    },
  }
}

/**
 * POSTs one JSON value (or, with a string, that exact body text) to /mcp with the headers a 2025
 * client sends (`Content-Type`, `Accept` for JSON and SSE), `overrides` applied; fails on 5xx.
 */
export function postLegacy(
  app: Hono,
  message: unknown,
  overrides: HeaderOverrides = {}
): Promise<Response> {
  const body = typeof message === 'string' ? message : JSON.stringify(message)
  const headers = withOverrides(
    new Headers({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': String(new TextEncoder().encode(body).byteLength),
    }),
    overrides
  )
  return requestApp(app, '/mcp', { method: 'POST', headers, body })
}

function withOverrides(headers: Headers, overrides: HeaderOverrides): Headers {
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) headers.delete(name)
    else headers.set(name, value)
  }
  return headers
}

export interface RequestOptions {
  /** JSON-RPC id; default a fresh integer per session. */
  id?: string | number
  /** Merged over the session's headers for this message only. */
  headers?: HeaderOverrides
}

/**
 * One 2025-era session of a test client: the `Mcp-Session-Id` the server issued and the version it
 * negotiated, sent on every message (override either per message through `headers`).
 */
export class LegacySession {
  readonly app: Hono
  readonly id: string
  readonly protocolVersion: string
  readonly headers: HeaderOverrides
  #nextId = 100

  constructor(app: Hono, id: string, protocolVersion: string, headers: HeaderOverrides = {}) {
    this.app = app
    this.id = id
    this.protocolVersion = protocolVersion
    this.headers = headers
  }

  #headers(overrides: HeaderOverrides = {}): HeaderOverrides {
    return {
      [HEADER_SESSION_ID]: this.id,
      [HEADER_PROTOCOL_VERSION]: this.protocolVersion,
      ...this.headers,
      ...overrides,
    }
  }

  /** POSTs any JSON value (or exact body text) with the session's headers. */
  post(message: unknown, headers?: HeaderOverrides): Promise<Response> {
    return postLegacy(this.app, message, this.#headers(headers))
  }

  /** A request of `method`; its id is `options.id` or the next integer of this session. */
  request(method: string, params?: JsonObject, options: RequestOptions = {}): Promise<Response> {
    const message: JsonObject = { jsonrpc: '2.0', id: options.id ?? this.#nextId++, method }
    if (params !== undefined) message.params = params
    return this.post(message, options.headers)
  }

  notify(method: string, params?: JsonObject, headers?: HeaderOverrides): Promise<Response> {
    const message: JsonObject = { jsonrpc: '2.0', method }
    if (params !== undefined) message.params = params
    return this.post(message, headers)
  }

  /** Answers the server→client request `id` with `result`. */
  answer(id: string, result: JsonObject, headers?: HeaderOverrides): Promise<Response> {
    return this.post({ jsonrpc: '2.0', id, result }, headers)
  }

  /** Answers the server→client request `id` with a JSON-RPC error. */
  answerError(
    id: string,
    error: { code: number; message: string },
    headers?: HeaderOverrides
  ): Promise<Response> {
    return this.post({ jsonrpc: '2.0', id, error }, headers)
  }

  /** Opens the session's notification stream (GET /mcp). */
  get(headers?: HeaderOverrides): Promise<Response> {
    return requestApp(this.app, '/mcp', {
      method: 'GET',
      headers: withOverrides(new Headers({ accept: 'text/event-stream' }), this.#headers(headers)),
    })
  }

  /** Ends the session (DELETE /mcp). */
  delete(headers?: HeaderOverrides): Promise<Response> {
    return requestApp(this.app, '/mcp', {
      method: 'DELETE',
      headers: withOverrides(new Headers(), this.#headers(headers)),
    })
  }
}

/**
 * Sends `initialize` (and `notifications/initialized`, as clients do), asserts the session id header
 * (visible ASCII only) and returns the session with the negotiated version and the result.
 */
export async function startSession(
  app: Hono,
  options: InitializeOptions = {}
): Promise<{ session: LegacySession; result: JsonObject }> {
  const response = await postLegacy(app, initializeMessage(options), options.headers)
  expect(response.status).toBe(200)
  const body = (await response.json()) as JsonObject
  expect(body, JSON.stringify(body.error)).toHaveProperty('result')
  const id = response.headers.get(HEADER_SESSION_ID)
  expect(id).toMatch(/^[\x21-\x7e]+$/)
  const session = new LegacySession(app, id as string, body.result.protocolVersion, options.headers)
  expect((await session.notify('notifications/initialized')).status).toBe(202)
  return { session, result: body.result }
}

/**
 * Sends `initialize` over HTTP to the server at `url`, as a 2025 client opens, and answers the
 * session id it issued (asserting the 200 and the header).
 */
export async function openSessionAt(url: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(initializeMessage()),
  })
  expect(response.status).toBe(200)
  await response.text()
  const session = response.headers.get(HEADER_SESSION_ID)
  expect(session).toMatch(/^[\x21-\x7e]+$/)
  return session!
}

/**
 * Reads an SSE response body one message at a time while the server writes it; comments (keep-alive)
 * and events without data are skipped. Event ids are kept: `ids` lists every id read so far (the
 * priming event's included), in order, and `idOf` the id of a message read.
 */
export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #decoder = new TextDecoder()
  #buffer = ''
  #queued: JsonObject[] = []
  readonly ids: string[] = []
  readonly #idOf = new Map<JsonObject, string>()

  constructor(response: Response) {
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream\b/)
    this.#reader = (response.body as ReadableStream<Uint8Array>).getReader()
  }

  /** The next message, or `undefined` once the stream has ended. */
  async next(): Promise<JsonObject | undefined> {
    while (this.#queued.length === 0) {
      const { done, value } = await this.#reader.read()
      if (done) {
        // A last event without its blank line still counts.
        this.#read(this.#buffer + this.#decoder.decode())
        this.#buffer = ''
        return this.#queued.shift()
      }
      this.#buffer += this.#decoder.decode(value, { stream: true })
      const events = this.#buffer.split(/\r?\n\r?\n/)
      this.#buffer = events.pop() as string
      for (const event of events) this.#read(event)
    }
    return this.#queued.shift()
  }

  /** The SSE id of `message` (one this reader returned), if its event had one. */
  idOf(message: JsonObject): string | undefined {
    return this.#idOf.get(message)
  }

  /** The raw SSE text of the stream's fields `retry:` seen so far. */
  readonly retries: number[] = []

  #read(event: string): void {
    const id = /^id: ?(.*)$/m.exec(event)?.[1]
    const retry = /^retry: ?(\d+)$/m.exec(event)?.[1]
    if (retry !== undefined) this.retries.push(Number(retry))
    if (id !== undefined) this.ids.push(id)
    for (const message of parseSse(event)) {
      if (id !== undefined) this.#idOf.set(message, id)
      this.#queued.push(message)
    }
  }

  /** Every message until the stream ends. */
  async rest(): Promise<JsonObject[]> {
    const messages: JsonObject[] = []
    for (let message = await this.next(); message; message = await this.next()) {
      messages.push(message)
    }
    return messages
  }

  /** Stops reading: the server sees the client go away. */
  cancel(): Promise<void> {
    return this.#reader.cancel()
  }
}

/** Opens `SseReader`s and cancels every one still open on `cancelAll` (call it in `afterEach`). */
export class SseReaders {
  readonly #open: SseReader[] = []

  open(response: Response): SseReader {
    const reader = new SseReader(response)
    this.#open.push(reader)
    return reader
  }

  async cancelAll(): Promise<void> {
    await Promise.all(this.#open.splice(0).map((reader) => reader.cancel()))
  }
}
