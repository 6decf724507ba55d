/**
 * The client driver against a fake server written as a `fetch` function (Request → Response): what goes
 * on the wire, how answers are read, the multi round-trip loop, its bounds, and transport retries.
 * Tasks (extension `io.modelcontextprotocol/tasks`) against a real engine instead: in-process
 * replicas with an SQLite task store, reached through a `fetch` that hands each request to one of
 * them — the task exposed, polled (at the suggested interval, through another replica each time),
 * answered, cancelled, failed, bounded; the fake server only for what a real one never sends. A task
 * that must still be working when it is read is a `held_compute` task, which works until the test
 * releases it, never one that merely takes long enough.
 */
import { once } from 'node:events'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import * as z from 'zod'
import {
  encodeHeaderValue,
  McpClient,
  McpClientError,
  McpDriverError,
  type ElicitRequestParams,
  type InputContext,
  type JsonRpcNotification,
  type McpClientOptions,
  type McpTask,
  type RoundInfo,
} from '../../src/client/index.ts'
import { MAX_RETRY_DELAY_MS, RETRY_DELAY_MS } from '../../src/client/rounds.ts'
import { definitions, text } from '../../src/mcp/definitions.ts'
import type { McpLogger } from '../../src/mcp/logger.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { type McpHandler } from '../../src/mcp/http-input.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import {
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  TASKS_EXTENSION,
} from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer } from '../../src/mcp/server.ts'
import type { JsonObject, RequestId } from '../../src/mcp/wire.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { tasksConformanceTools } from '../conformance/fixture-tasks-tools.ts'
import { tempDataDir } from '../support/server-process.ts'

const URL_A = 'http://replica-a.test/mcp'
const URL_B = 'http://replica-b.test/mcp'

interface Seen {
  url: string
  headers: Headers
  id: RequestId
  method: string
  params: JsonObject
  signal: AbortSignal
}

type Answer = (request: Seen, index: number) => Response | Promise<Response>

/** A fetch that records every request and lets `answer` play the server. */
function fakeServer(answer: Answer): { fetch: typeof fetch; seen: Seen[] } {
  const seen: Seen[] = []
  const fetchFn = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init)
    const body = (await request.json()) as { id: RequestId; method: string; params: JsonObject }
    const entry = { url: request.url, headers: request.headers, signal: request.signal, ...body }
    seen.push(entry)
    return answer(entry, seen.length - 1)
  }
  return { fetch: fetchFn, seen }
}

function json(message: unknown, status = 200): Response {
  return new Response(JSON.stringify(message), {
    status,
    headers: { 'content-type': 'application/json' },
  })
}

function ok(id: RequestId, result: JsonObject): Response {
  return json({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result } })
}

function inputRequired(id: RequestId, result: JsonObject): Response {
  return json({ jsonrpc: '2.0', id, result: { resultType: 'input_required', ...result } })
}

const encoder = new TextEncoder()

/** An SSE response made of raw chunks; `open` keeps it open after them. */
function sse(chunks: string[], options: { open?: boolean; onCancel?: () => void } = {}): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
      if (!options.open) controller.close()
    },
    cancel: options.onCancel,
  })
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
}

function event(message: unknown): string {
  return `data: ${JSON.stringify(message)}\n\n`
}

function elicitation(message: string): JsonObject {
  return {
    method: 'elicitation/create',
    params: {
      message,
      requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
    },
  }
}

const accept = async () => ({ action: 'accept' as const, content: { ok: true } })

function client(fetchFn: typeof fetch, options: Partial<McpClientOptions> = {}): McpClient {
  return new McpClient({ url: URL_A, fetch: fetchFn, ...options })
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('the call succeeded')
}

async function driverFailure(promise: Promise<unknown>): Promise<McpDriverError> {
  const error = await failure(promise)
  expect(error).toBeInstanceOf(McpDriverError)
  return error as McpDriverError
}

function decodeSentinel(value: string): string {
  const encoded = /^=\?base64\?(.*)\?=$/.exec(value)?.[1]
  if (encoded === undefined) throw new Error(`not a Base64 sentinel: ${value}`)
  return new TextDecoder().decode(Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0)))
}

describe('the request on the wire', () => {
  it('sends the standard headers and the per-request _meta', async () => {
    const server = fakeServer(({ id }) => ok(id, { content: [] }))
    const mcp = client(server.fetch, {
      clientInfo: { name: 'test-host', version: '9.9.9' },
      handlers: { elicit: accept },
      headers: () => ({ authorization: 'Bearer t0k3n', 'mcp-method': 'forged' }),
    })
    await mcp.callTool('echo', { text: 'hi' })

    const [sent] = server.seen
    expect(sent?.url).toBe(URL_A)
    expect(Object.fromEntries(sent!.headers)).toMatchObject({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      'mcp-method': 'tools/call',
      'mcp-name': 'echo',
      authorization: 'Bearer t0k3n',
    })
    expect(sent?.method).toBe('tools/call')
    expect(sent?.params).toEqual({
      name: 'echo',
      arguments: { text: 'hi' },
      _meta: {
        [META_PROTOCOL_VERSION]: PROTOCOL_VERSION,
        [META_CLIENT_CAPABILITIES]: { elicitation: { form: {} } },
        [META_CLIENT_INFO]: { name: 'test-host', version: '9.9.9' },
      },
    })
  })

  it('adds progressToken and logLevel only when asked, and keeps caller _meta keys', async () => {
    const server = fakeServer(({ id }) => ok(id, { messages: [] }))
    const mcp = client(server.fetch, { capabilities: {} })
    await mcp.getPrompt('daily', { day: 'mon' }, { progressToken: 7, logLevel: 'debug' })
    await mcp.request('prompts/get', { name: 'daily', _meta: { traceparent: 'tp' } })

    expect(server.seen[0]?.headers.get('mcp-name')).toBe('daily')
    expect(server.seen[0]?.params._meta).toMatchObject({
      progressToken: 7,
      [META_LOG_LEVEL]: 'debug',
      [META_CLIENT_CAPABILITIES]: {},
    })
    const meta = server.seen[1]?.params._meta as JsonObject
    expect(meta.traceparent).toBe('tp')
    expect(meta).not.toHaveProperty('progressToken')
    expect(meta).not.toHaveProperty(META_LOG_LEVEL)
  })

  it('sends Mcp-Name as a Base64 sentinel for a non-ASCII resource URI', async () => {
    const uri = 'note://café/ünïcode 😀'
    const server = fakeServer(({ id, params }) =>
      ok(id, { contents: [{ uri: params.uri, text: '' }] })
    )
    const mcp = client(server.fetch)
    await mcp.readResource(uri)
    await mcp.readResource('note://plain/1')

    const header = server.seen[0]?.headers.get('mcp-name') ?? ''
    expect(header).toMatch(/^=\?base64\?[A-Za-z0-9+/]+=*\?=$/)
    expect(decodeSentinel(header)).toBe(uri)
    expect(server.seen[0]?.params.uri).toBe(uri)
    expect(server.seen[1]?.headers.get('mcp-name')).toBe('note://plain/1')
  })

  it('encodes header values that are not visible ASCII or that look like the sentinel', () => {
    expect(encodeHeaderValue('delete_note')).toBe('delete_note')
    expect(decodeSentinel(encodeHeaderValue('two words'))).toBe('two words')
    expect(decodeSentinel(encodeHeaderValue('tab\there'))).toBe('tab\there')
    expect(decodeSentinel(encodeHeaderValue('=?base64?SGVsbG8=?='))).toBe('=?base64?SGVsbG8=?=')
    expect(encodeHeaderValue('=?BASE64?x?=')).toBe('=?BASE64?x?=')
  })

  it('sends no Mcp-Name for methods without a name, and pages with the cursor', async () => {
    const server = fakeServer(({ id }) => ok(id, { tools: [] }))
    const mcp = client(server.fetch)
    await mcp.discover()
    await mcp.listTools('c1')
    expect(server.seen.map((s) => s.headers.get('mcp-method'))).toEqual([
      'server/discover',
      'tools/list',
    ])
    expect(server.seen.every((s) => !s.headers.has('mcp-name'))).toBe(true)
    expect(server.seen[1]?.params.cursor).toBe('c1')
  })

  it('gives every request a new id, unique across clients too', async () => {
    const server = fakeServer(({ id }) => ok(id, {}))
    const one = client(server.fetch)
    const two = client(server.fetch)
    await Promise.all([one.discover(), one.discover(), two.discover(), two.discover()])
    const ids = server.seen.map((s) => s.id)
    expect(new Set(ids).size).toBe(4)
    expect(ids.every((id) => typeof id === 'string')).toBe(true)
  })
})

describe('reading answers', () => {
  it('reads an SSE answer: notifications delivered in order, stops at the matching response', async () => {
    let cancelled = false
    const server = fakeServer(({ id }) =>
      sse(
        [
          ': keep-alive\n\n',
          'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress",',
          '"params":{"progressToken":"p","progress":1}}\r\n\r',
          '\n',
          'data: {"jsonrpc":"2.0",\r',
          '\ndata:"method":"notifications/message","params":{"level":"info","data":"x"}}\n\n',
          event({ jsonrpc: '2.0', id, result: { resultType: 'complete', content: [] } }),
          event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 9 } }),
        ],
        { open: true, onCancel: () => (cancelled = true) }
      )
    )
    const notifications: JsonRpcNotification[] = []
    const result = await client(server.fetch).callTool('slow', undefined, {
      progressToken: 'p',
      onNotification: (n) => notifications.push(n),
    })
    expect(result).toEqual({ resultType: 'complete', content: [] })
    expect(notifications.map((n) => n.method)).toEqual([
      'notifications/progress',
      'notifications/message',
    ])
    expect(notifications[0]?.params).toEqual({ progressToken: 'p', progress: 1 })
    expect(cancelled).toBe(true)
  })

  it('treats a server request on the SSE stream as a protocol error', async () => {
    const server = fakeServer(({ id }) =>
      sse([
        event({ jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: {} }),
        event({ jsonrpc: '2.0', id, result: { resultType: 'complete', content: [] } }),
      ])
    )
    const error = await driverFailure(client(server.fetch).callTool('t'))
    expect(error.reason).toBe('protocol')
    expect(error.message).toMatch(/elicitation\/create request/)
  })

  it('rejects a response for another id, an unknown resultType, and input_required on a list', async () => {
    const other = fakeServer(() => ok('someone-else', {}))
    expect((await driverFailure(client(other.fetch).discover())).reason).toBe('protocol')

    const unknown = fakeServer(({ id }) =>
      json({ jsonrpc: '2.0', id, result: { resultType: 'task' } })
    )
    expect((await driverFailure(client(unknown.fetch).callTool('t'))).reason).toBe('protocol')

    const listing = fakeServer(({ id }) => inputRequired(id, { requestState: 's' }))
    const error = await driverFailure(client(listing.fetch).listTools())
    expect(error.reason).toBe('protocol')
    expect(error.lastResult).toEqual({ resultType: 'input_required', requestState: 's' })
  })

  it('keeps code, data and HTTP status of a JSON-RPC error', async () => {
    const data = { requiredCapabilities: { sampling: {} } }
    const server = fakeServer(({ id, method }, index) =>
      index === 0
        ? json(
            { jsonrpc: '2.0', id, error: { code: -32021, message: 'needs sampling', data } },
            400
          )
        : index === 1
          ? json({ jsonrpc: '2.0', id, error: { code: -32602, message: `Unknown tool` } })
          : json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: method } }, 401)
    )
    const mcp = client(server.fetch)

    const capability = await failure(mcp.callTool('ask'))
    expect(capability).toBeInstanceOf(McpClientError)
    expect(capability).toMatchObject({
      code: -32021,
      data,
      httpStatus: 400,
      message: 'needs sampling',
    })
    expect(await failure(mcp.callTool('nope'))).toMatchObject({ code: -32602, httpStatus: 200 })
    expect(await failure(mcp.discover())).toMatchObject({ code: -32600, httpStatus: 401 })
    expect(server.seen).toHaveLength(3)
  })
})

describe('multi round-trip requests', () => {
  it('runs a 3-round elicitation chain: new ids, this round only, state echoed byte for byte', async () => {
    const state1 = 'eyJhbGciOiJkaXIifQ..s1.ciphertext'
    const state2 = ' spaces, "quotes", \\ back\\slash, \u2028, é, \ud83d\ude00 '
    const asked: Array<{ key: string; round: number; message: string }> = []
    const started: string[] = []
    let release!: () => void
    const bothStarted = new Promise<void>((resolve) => (release = resolve))

    const server = fakeServer(({ id, params }, index) => {
      if (index === 0)
        return inputRequired(id, { inputRequests: { a: elicitation('A?') }, requestState: state1 })
      if (index === 1) {
        return inputRequired(id, {
          inputRequests: { b: elicitation('B?'), c: elicitation('C?') },
          requestState: state2,
        })
      }
      return ok(id, {
        content: [{ type: 'text', text: `done ${JSON.stringify(params.arguments)}` }],
      })
    })
    const elicit = async (params: ElicitRequestParams, ctx: InputContext) => {
      asked.push({ key: ctx.key, round: ctx.round, message: params.message })
      started.push(ctx.key)
      if (started.length === 3) release()
      if (ctx.round === 2) await bothStarted // b and c run at the same time
      return { action: 'accept' as const, content: { ok: ctx.key !== 'c' } }
    }
    const result = await client(server.fetch, { handlers: { elicit } }).callTool('chain', { n: 1 })

    expect(result.content).toEqual([{ type: 'text', text: 'done {"n":1}' }])
    expect(server.seen).toHaveLength(3)
    expect(new Set(server.seen.map((s) => s.id)).size).toBe(3)
    for (const sent of server.seen) {
      expect(sent.params.name).toBe('chain')
      expect(sent.params.arguments).toEqual({ n: 1 })
      expect(sent.headers.get('mcp-name')).toBe('chain')
    }
    const [first, second, third] = server.seen.map((s) => s.params)
    expect(first).not.toHaveProperty('inputResponses')
    expect(first).not.toHaveProperty('requestState')
    expect(second?.inputResponses).toEqual({ a: { action: 'accept', content: { ok: true } } })
    expect(second?.requestState).toBe(state1)
    expect(third?.inputResponses).toEqual({
      b: { action: 'accept', content: { ok: true } },
      c: { action: 'accept', content: { ok: false } },
    })
    expect(third?.requestState).toBe(state2)
    expect(asked).toEqual([
      { key: 'a', round: 1, message: 'A?' },
      { key: 'b', round: 2, message: 'B?' },
      { key: 'c', round: 2, message: 'C?' },
    ])
  })

  it('answers sampling and roots requests, and echoes requestState only when the server sent one', async () => {
    const roots = { method: 'roots/list' }
    const server = fakeServer(({ id }, index) => {
      if (index === 0) {
        return inputRequired(id, {
          inputRequests: {
            llm: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } },
            where: roots,
          },
          requestState: 'S0',
        })
      }
      if (index === 1) return inputRequired(id, { inputRequests: { where: roots } })
      return ok(id, { messages: [] })
    })
    const mcp = client(server.fetch, {
      handlers: {
        sample: async (params) => ({
          role: 'assistant',
          content: { type: 'text', text: `${params.maxTokens}` },
          model: 'm',
        }),
        roots: async () => ({ roots: [{ uri: 'file:///notes' }] }),
      },
    })
    await mcp.getPrompt('p', { a: 'b' })
    expect(server.seen[0]?.params._meta).toMatchObject({
      [META_CLIENT_CAPABILITIES]: { sampling: {}, roots: {} },
    })
    const [, second, third] = server.seen.map((s) => s.params)
    expect(second?.requestState).toBe('S0')
    expect(second?.inputResponses).toEqual({
      llm: { role: 'assistant', content: { type: 'text', text: '5' }, model: 'm' },
      where: { roots: [{ uri: 'file:///notes' }] },
    })
    expect(third).not.toHaveProperty('requestState')
    expect(third?.inputResponses).toEqual({ where: { roots: [{ uri: 'file:///notes' }] } })
    expect(third?.arguments).toEqual({ a: 'b' })
  })

  it('resumes by hand from caller-supplied state, then follows only what the server sends', async () => {
    const server = fakeServer(({ id }, index) =>
      index === 0 ? inputRequired(id, { inputRequests: { q: elicitation('?') } }) : ok(id, {})
    )
    const mcp = client(server.fetch, { handlers: { elicit: accept } })
    await mcp.request('tools/call', {
      name: 't',
      inputResponses: { old: { action: 'decline' } },
      requestState: 'saved-by-the-host',
    })
    expect(server.seen[0]?.params).toMatchObject({
      inputResponses: { old: { action: 'decline' } },
      requestState: 'saved-by-the-host',
    })
    expect(server.seen[1]?.params).not.toHaveProperty('requestState')
    expect(server.seen[1]?.params.inputResponses).toEqual({
      q: { action: 'accept', content: { ok: true } },
    })
  })

  it('never mixes the states of parallel calls on one client', async () => {
    // The server's state names the call it belongs to and the round; it checks both on every retry.
    const server = fakeServer(async ({ id, params }) => {
      const who = String((params.arguments as JsonObject).who)
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5))
      const state = params.requestState as string | undefined
      const round = state === undefined ? 1 : Number(state.split(':')[1]) + 1
      if (state !== undefined && !state.startsWith(`${who}:`)) {
        return json({ jsonrpc: '2.0', id, error: { code: -32602, message: 'state mixed up' } })
      }
      const answer = (params.inputResponses as JsonObject | undefined)?.[`q${round - 1}`]
      if (round > 1 && (answer as JsonObject).content === undefined) throw new Error('no answer')
      if (round === 4) return ok(id, { content: [{ type: 'text', text: who }] })
      return inputRequired(id, {
        inputRequests: { [`q${round}`]: elicitation(`${who} ${round}`) },
        requestState: `${who}:${round}`,
      })
    })
    const mcp = client(server.fetch, {
      handlers: {
        elicit: async (params) => ({ action: 'accept', content: { asked: params.message } }),
      },
    })
    const names = ['ann', 'bob', 'cat', 'dan', 'eve', 'fay']
    const results = await Promise.all(names.map((who) => mcp.callTool('greet', { who })))
    expect(results.map((r) => r.content[0])).toEqual(names.map((text) => ({ type: 'text', text })))
    expect(server.seen).toHaveLength(names.length * 4)
    for (const sent of server.seen) {
      const who = (sent.params.arguments as JsonObject).who as string
      const responses = sent.params.inputResponses as Record<string, JsonObject> | undefined
      for (const answer of Object.values(responses ?? {})) {
        expect((answer.content as JsonObject).asked).toMatch(new RegExp(`^${who} `))
      }
    }
  })

  it('re-sends a requestState-only round after a pause that doubles up to a ceiling', async () => {
    // The driver's pauses run on fake timers: each re-send must wait exactly its pause, no less.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const pauses = [RETRY_DELAY_MS, 2 * RETRY_DELAY_MS, 4 * RETRY_DELAY_MS, MAX_RETRY_DELAY_MS]
      expect(4 * RETRY_DELAY_MS).toBeLessThan(MAX_RETRY_DELAY_MS) // the last pause is capped
      const server = fakeServer(({ id }, index) =>
        index < pauses.length
          ? inputRequired(id, { requestState: `wait-${index}` })
          : ok(id, { contents: [] })
      )
      const read = client(server.fetch).readResource('note://slow')
      await vi.advanceTimersByTimeAsync(0)
      expect(server.seen).toHaveLength(1)
      for (const [index, ms] of pauses.entries()) {
        await vi.advanceTimersByTimeAsync(ms - 1)
        expect(server.seen).toHaveLength(index + 1)
        await vi.advanceTimersByTimeAsync(1)
        expect(server.seen).toHaveLength(index + 2)
      }
      expect(await read).toMatchObject({ resultType: 'complete', contents: [] })

      expect(server.seen.map((s) => s.params.requestState)).toEqual([
        undefined,
        ...pauses.map((_, index) => `wait-${index}`),
      ])
      expect(server.seen.every((s) => !('inputResponses' in s.params))).toBe(true)
      expect(new Set(server.seen.map((s) => s.id)).size).toBe(server.seen.length)
    } finally {
      vi.useRealTimers()
    }
  })

  it('stops after maxRounds with the last result', async () => {
    let answered = 0
    const server = fakeServer(({ id }, index) =>
      inputRequired(id, { inputRequests: { again: elicitation('?') }, requestState: `s${index}` })
    )
    const mcp = client(server.fetch, {
      maxRounds: 3,
      handlers: { elicit: async () => (answered++, { action: 'decline' }) },
    })
    const error = await driverFailure(mcp.callTool('loop'))
    expect(error.reason).toBe('max_rounds')
    expect(error.lastResult).toMatchObject({ resultType: 'input_required', requestState: 's2' })
    expect(server.seen).toHaveLength(3)
    expect(answered).toBe(2)
  })

  it('fails with no_handler, before running any handler, when one kind of input has no handler', async () => {
    let elicited = 0
    const server = fakeServer(({ id }) =>
      inputRequired(id, {
        inputRequests: {
          form: elicitation('?'),
          llm: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } },
        },
      })
    )
    const mcp = client(server.fetch, {
      handlers: { elicit: async () => (elicited++, { action: 'cancel' }) },
    })
    const error = await driverFailure(mcp.callTool('t'))
    expect(error.reason).toBe('no_handler')
    expect(error.message).toMatch(/sampling\/createMessage.*handlers\.sample/)
    expect(error.lastResult).toMatchObject({ resultType: 'input_required' })
    expect(elicited).toBe(0)
    expect(server.seen).toHaveLength(1)
  })

  it('rejects input_required with neither inputRequests nor requestState, or an unknown input method', async () => {
    const empty = fakeServer(({ id }) => inputRequired(id, { inputRequests: {} }))
    expect((await driverFailure(client(empty.fetch).callTool('t'))).reason).toBe('protocol')
    const odd = fakeServer(({ id }) =>
      inputRequired(id, { inputRequests: { x: { method: 'ping' } } })
    )
    expect((await driverFailure(client(odd.fetch).callTool('t'))).reason).toBe('protocol')
  })

  it('propagates a handler failure and aborts the sibling handlers of that round', async () => {
    let siblingSignal: AbortSignal | undefined
    const server = fakeServer(({ id }) =>
      inputRequired(id, { inputRequests: { slow: elicitation('slow'), bad: elicitation('bad') } })
    )
    const mcp = client(server.fetch, {
      handlers: {
        elicit: async (params, ctx) => {
          if (params.message === 'bad') throw new Error('user closed the dialog')
          siblingSignal = ctx.signal
          return new Promise(() => {})
        },
      },
    })
    expect(await failure(mcp.callTool('t'))).toMatchObject({ message: 'user closed the dialog' })
    expect(siblingSignal?.aborted).toBe(true)
  })
})

describe('bounds and cancellation', () => {
  it('times out the whole call, rounds and handlers included', async () => {
    const server = fakeServer(({ id }) =>
      inputRequired(id, { inputRequests: { q: elicitation('?') }, requestState: 's' })
    )
    let handlerSignal: AbortSignal | undefined
    const mcp = client(server.fetch, {
      timeoutMs: 60,
      handlers: {
        elicit: (_params, ctx) => {
          handlerSignal = ctx.signal
          return new Promise(() => {}) // a user who never answers
        },
      },
    })
    const error = await driverFailure(mcp.callTool('t'))
    expect(error.reason).toBe('timeout')
    expect(error.lastResult).toMatchObject({ requestState: 's' })
    expect(handlerSignal?.aborted).toBe(true)
  })

  it('times out a server that never answers, even when its fetch ignores the signal', async () => {
    const server = fakeServer(() => new Promise<Response>(() => {}))
    const error = await driverFailure(client(server.fetch, { timeoutMs: 30 }).discover())
    expect(error.reason).toBe('timeout')
  })

  it("rejects with the caller's own reason when the caller aborts", async () => {
    // The stream stays open after a progress notification: the caller gives up on hearing it.
    const progress = { progressToken: 'p', progress: 1 }
    const server = fakeServer(() =>
      sse([event({ jsonrpc: '2.0', method: 'notifications/progress', params: progress })], {
        open: true,
      })
    )
    const controller = new AbortController()
    const reason = new Error('host closed the chat')
    const call = client(server.fetch).callTool(
      't',
      {},
      {
        signal: controller.signal,
        progressToken: 'p',
        onNotification: () => controller.abort(reason),
      }
    )
    expect(await failure(call)).toBe(reason)
  })
})

describe('transport retries', () => {
  it('re-sends a round after a thrown fetch, on a new id and the next url', async () => {
    const urls = [URL_A, URL_B]
    let next = 0
    const rounds: RoundInfo[] = []
    const server = fakeServer(({ id }, index) => {
      if (index === 0) throw new TypeError('fetch failed: ECONNRESET')
      return ok(id, {})
    })
    const mcp = client(server.fetch, {
      transportRetries: 2,
      urls: () => urls[next++ % urls.length] as string,
      onRound: (info) => rounds.push(info),
    })
    await mcp.discover()
    expect(server.seen.map((s) => s.url)).toEqual([URL_A, URL_B])
    expect(server.seen[0]?.id).not.toBe(server.seen[1]?.id)
    expect(
      rounds.map(({ round, attempt, status, url }) => ({ round, attempt, status, url }))
    ).toEqual([
      { round: 1, attempt: 1, status: 0, url: URL_A },
      { round: 1, attempt: 2, status: 200, url: URL_B },
    ])
  })

  it('re-sends the same inputResponses and requestState after a 503, and reports each attempt', async () => {
    const rounds: RoundInfo[] = []
    let next = 0
    const server = fakeServer(({ id, url }, index) => {
      if (index === 0) {
        return inputRequired(id, { inputRequests: { q: elicitation('?') }, requestState: 'S' })
      }
      if (index === 1) return new Response('upstream down', { status: 503 })
      const response = ok(id, { content: [] })
      response.headers.set('x-replica', new URL(url).hostname)
      return response
    })
    const mcp = client(server.fetch, {
      transportRetries: 1,
      handlers: { elicit: accept },
      urls: () => [URL_A, URL_B][next++ % 2] as string,
      onRound: (info) => rounds.push(info),
    })
    await mcp.callTool('t', { x: 1 })

    const [, failed, retried] = server.seen
    expect(failed?.id).not.toBe(retried?.id)
    expect(retried?.params.inputResponses).toEqual(failed?.params.inputResponses)
    expect(retried?.params.requestState).toBe('S')
    expect(retried?.params.arguments).toEqual({ x: 1 })
    expect(server.seen.map((s) => s.url)).toEqual([URL_A, URL_B, URL_A])
    expect(
      rounds.map((r) => [r.round, r.attempt, r.status, r.resultType, r.headers.get('x-replica')])
    ).toEqual([
      [1, 1, 200, 'input_required', null],
      [2, 1, 503, undefined, null],
      [2, 2, 200, 'complete', 'replica-a.test'],
    ])
  })

  it('retries an event stream that ends before its response', async () => {
    const server = fakeServer(({ id }, index) =>
      index === 0
        ? sse([
            event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }),
          ])
        : ok(id, { content: [] })
    )
    await client(server.fetch, { transportRetries: 1 }).callTool('t')
    expect(server.seen).toHaveLength(2)
  })

  it('gives up with a transport error when retries are exhausted or not enabled', async () => {
    const down = fakeServer(() => new Response(null, { status: 502 }))
    const error = await driverFailure(client(down.fetch, { transportRetries: 2 }).discover())
    expect(error.reason).toBe('transport')
    expect(down.seen).toHaveLength(3)

    const refused = fakeServer(() => Promise.reject(new TypeError('connect ECONNREFUSED')))
    const thrown = await driverFailure(client(refused.fetch).discover())
    expect(thrown.reason).toBe('transport')
    expect(thrown.cause).toBeInstanceOf(TypeError)
    expect(refused.seen).toHaveLength(1)
  })

  it("uses a request's own transportRetries instead of the client's, and reports each attempt's method", async () => {
    const down = fakeServer(() => new Response(null, { status: 503 }))
    const rounds: RoundInfo[] = []
    const mcp = client(down.fetch, { transportRetries: 3, onRound: (info) => rounds.push(info) })
    expect((await driverFailure(mcp.callTool('t', {}, { transportRetries: 0 }))).reason).toBe(
      'transport'
    )
    expect(down.seen).toHaveLength(1)
    const once = client(down.fetch)
    expect((await driverFailure(once.discover({ transportRetries: 1 }))).reason).toBe('transport')
    expect(down.seen).toHaveLength(3)
    expect(rounds.map((r) => r.method)).toEqual(['tools/call'])
    await expect(mcp.discover({ transportRetries: -1 })).rejects.toThrow(RangeError)
  })

  it('does not retry a 400 or an unexpected answer', async () => {
    const bad = fakeServer(({ id }) =>
      json({ jsonrpc: '2.0', id, error: { code: -32020, message: 'header mismatch' } }, 400)
    )
    expect(await failure(client(bad.fetch, { transportRetries: 3 }).discover())).toMatchObject({
      code: -32020,
      httpStatus: 400,
    })
    expect(bad.seen).toHaveLength(1)

    const html = fakeServer(
      () => new Response('<h1>oops</h1>', { status: 500, headers: { 'content-type': 'text/html' } })
    )
    expect(
      (await driverFailure(client(html.fetch, { transportRetries: 3 }).discover())).reason
    ).toBe('protocol')
    expect(html.seen).toHaveLength(1)
  })
})

describe('listen', () => {
  it('delivers notifications until the caller aborts, then resolves and closes the stream', async () => {
    let cancelled = false
    let push!: (message: unknown) => void
    const server = fakeServer(({ id }) => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          push = (message) => controller.enqueue(encoder.encode(event(message)))
          push({
            jsonrpc: '2.0',
            method: 'notifications/subscriptions/acknowledged',
            params: {
              notifications: { toolsListChanged: true },
              _meta: { 'io.modelcontextprotocol/subscriptionId': id },
            },
          })
        },
        cancel: () => void (cancelled = true),
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    })
    const controller = new AbortController()
    const received: string[] = []
    const done = client(server.fetch).listen(
      { toolsListChanged: true },
      {
        signal: controller.signal,
        onNotification: (n) => {
          received.push(n.method)
          if (received.length === 1)
            push({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
          if (received.length === 2) controller.abort()
        },
      }
    )
    await expect(done).resolves.toBeUndefined()
    expect(received).toEqual([
      'notifications/subscriptions/acknowledged',
      'notifications/tools/list_changed',
    ])
    expect(cancelled).toBe(true)
    expect(server.seen[0]?.headers.get('mcp-method')).toBe('subscriptions/listen')
    expect(server.seen[0]?.params.notifications).toEqual({ toolsListChanged: true })
    expect(server.seen[0]?.params._meta).toHaveProperty(META_PROTOCOL_VERSION, PROTOCOL_VERSION)
  })

  it('resolves when the server ends the subscription gracefully, and rejects on an error', async () => {
    const server = fakeServer(({ id }) =>
      sse([event({ jsonrpc: '2.0', id, result: { resultType: 'complete' } })])
    )
    await expect(
      client(server.fetch).listen({}, { onNotification: () => {} })
    ).resolves.toBeUndefined()

    const refusing = fakeServer(({ id }) =>
      json({ jsonrpc: '2.0', id, error: { code: -32021, message: 'needs tasks' } }, 400)
    )
    const error = await failure(client(refusing.fetch).listen({}, { onNotification: () => {} }))
    expect(error).toMatchObject({ code: -32021, httpStatus: 400 })
  })
})

describe('options', () => {
  const fetchFn = fakeServer(({ id }) => ok(id, {})).fetch

  it('validates numbers with RangeError and shapes with TypeError', () => {
    expect(() => new McpClient({ url: URL_A, maxRounds: 0 })).toThrow(RangeError)
    expect(() => new McpClient({ url: URL_A, timeoutMs: -1 })).toThrow(RangeError)
    expect(() => new McpClient({ url: URL_A, timeoutMs: 2 ** 40 })).toThrow(RangeError)
    expect(() => new McpClient({ url: URL_A, transportRetries: 1.5 })).toThrow(RangeError)
    expect(() => new McpClient({ url: 'not a url' })).toThrow(TypeError)
    expect(() => new McpClient({ url: 'ftp://host/mcp' })).toThrow(TypeError)
    expect(() => new McpClient({ url: URL_A, fetch: 'fetch' as unknown as typeof fetch })).toThrow(
      TypeError
    )
    expect(() => new McpClient({ url: URL_A, maxRounds: '3' as unknown as number })).toThrow(
      TypeError
    )
  })

  it('refuses a declared capability without its handler', () => {
    expect(() => new McpClient({ url: URL_A, capabilities: { sampling: {} } })).toThrow(
      /handlers\.sample/
    )
    expect(
      () =>
        new McpClient({
          url: URL_A,
          capabilities: { elicitation: { url: {} } },
          handlers: { elicit: accept },
        })
    ).not.toThrow()
  })

  it('calls handlers that are methods of a class instance, with their this', async () => {
    class Host {
      answer = 'from the host'
      async elicit() {
        return { action: 'accept' as const, content: { said: this.answer } }
      }
    }
    const server = fakeServer(({ id }, index) =>
      index === 0 ? inputRequired(id, { inputRequests: { q: elicitation('?') } }) : ok(id, {})
    )
    await new McpClient({ url: URL_A, fetch: server.fetch, handlers: new Host() }).callTool('t')
    expect(server.seen[0]?.params._meta).toMatchObject({
      [META_CLIENT_CAPABILITIES]: { elicitation: { form: {} } },
    })
    expect(server.seen[1]?.params.inputResponses).toEqual({
      q: { action: 'accept', content: { said: 'from the host' } },
    })
  })

  it('validates call arguments before sending anything', async () => {
    const mcp = new McpClient({ url: URL_A, fetch: fetchFn })
    await expect(mcp.request('tools/call', {})).rejects.toThrow(TypeError)
    await expect(mcp.request('subscriptions/listen')).rejects.toThrow(/listen\(\)/)
    await expect(mcp.discover({ logLevel: 'loud' as 'debug' })).rejects.toThrow(RangeError)
  })
})

/** The gates of `held_compute` tasks, by label: each task works until its gate opens. */
const heldGates = new Map<string, Promise<void>>()

/** Holds the `held_compute` task of `label` until the answered release is called. */
function holdTask(label: string): () => void {
  const gate = Promise.withResolvers<void>()
  heldGates.set(label, gate.promise)
  return gate.resolve
}

const heldCompute = definitions<unknown>().tool({
  name: 'held_compute',
  description: 'Works, as a task, until the test releases its label (or it is cancelled).',
  input: z.object({ label: z.string() }),
  task: 'required',
  async run({ label }, ctx) {
    await ctx.startTask()
    const gate = heldGates.get(label)
    if (!gate) throw new Error(`no hold for "${label}": call holdTask first`)
    await Promise.race([gate, once(ctx.signal, 'abort')])
    ctx.signal.throwIfAborted()
    return text(`Computed "${label}".`)
  },
})

/** The conformance fixture's task tools (what the referee holds a tasks server to), and the held one. */
const taskServer = compileServer<unknown>({
  info: { name: 'client-driver-tasks', version: '0.0.0' },
  tools: [...tasksConformanceTools, heldCompute],
})

const taskDir = await tempDataDir('notes-mcp-client-tasks-')
const taskStores: SqliteEngineStore[] = []
const replicaShutdowns: AbortController[] = []
let taskFile = 0
const taskSealer = StateSealer.create({
  keyRing: await importKeyRing([generateKey()]),
  ttlSeconds: 600,
})
const quiet: McpLogger = { warn: () => {}, error: () => {} }

afterEach(() => {
  // Ends every run still going (a held task never released, a cancelled one), then forgets the gates.
  for (const shutdown of replicaShutdowns.splice(0)) shutdown.abort()
  heldGates.clear()
})
afterAll(async () => {
  for (const store of taskStores) await store.close()
  await rm(taskDir, { recursive: true, force: true })
})

interface EngineRequest {
  url: string
  headers: Headers
  body?: { method: string; params: JsonObject }
}

/**
 * In-process replicas of a real engine with tasks, each with its own store on one SQLite file (as
 * separate processes share it), reached through a `fetch` that routes by host and records every
 * request. No takeover loop: a task runs on the replica that accepted or resumed it.
 */
async function engine(
  hosts: string[],
  tasks: { pollIntervalMs: number } = { pollIntervalMs: 20 }
): Promise<{ fetch: typeof fetch; sent: EngineRequest[] }> {
  const path = join(taskDir, `tasks-${++taskFile}.db`)
  const handlers = new Map<string, McpHandler>()
  for (const host of hosts) {
    const store = new SqliteEngineStore({ path })
    await store.migrate()
    taskStores.push(store)
    const shutdown = new AbortController()
    replicaShutdowns.push(shutdown)
    handlers.set(
      host,
      createMcpHandler({
        server: taskServer,
        deps: {},
        sealer: taskSealer,
        logger: quiet,
        shutdown: shutdown.signal,
        tasks: { store, takeoverIntervalMs: 0, ...tasks },
      })
    )
  }
  const sent: EngineRequest[] = []
  const fetchFn = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init)
    const entry: EngineRequest = { url: request.url, headers: request.headers }
    sent.push(entry)
    const body = await request.text()
    entry.body = JSON.parse(body) as EngineRequest['body']
    const handler = handlers.get(new URL(request.url).host)
    if (!handler) throw new TypeError(`fetch failed: no replica at ${request.url}`)
    return handler({ body, headers: request.headers, principal: 'local', signal: request.signal })
  }
  return { fetch: fetchFn, sent }
}

const ENGINE_A = 'http://127.0.0.1/mcp'
const ENGINE_B = 'http://127.0.0.2/mcp'

function taskClient(fetchFn: typeof fetch, options: Partial<McpClientOptions> = {}): McpClient {
  return new McpClient({ url: ENGINE_A, fetch: fetchFn, tasks: true, ...options })
}

async function started(mcp: McpClient, name: string, args: JsonObject = {}): Promise<McpTask> {
  const outcome = await mcp.startToolCall(name, args)
  if (outcome.kind !== 'task') throw new Error(`${name} answered a result, not a task`)
  return outcome.task
}

function slow(seconds: number, label: string): JsonObject {
  return { seconds, label }
}

function methods(sent: EngineRequest[]): string[] {
  return sent.map((request) => request.body?.method ?? '?')
}

describe('tasks, against a real engine with an SQLite task store', () => {
  it('declares the extension, exposes the task, and polls tasks/get with Mcp-Name = taskId until it completes', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1'])
    const release = holdTask('polled')
    const task = await started(taskClient(fetchFn), 'held_compute', { label: 'polled' })

    expect(task.taskId).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(task.status).toBe('working')
    expect(task.pollIntervalMs).toBe(20)
    expect(task.terminal).toBe(false)
    expect(sent[0]?.body?.params._meta).toMatchObject({
      [META_CLIENT_CAPABILITIES]: { extensions: { [TASKS_EXTENSION]: {} } },
    })
    expect(await task.refresh()).toMatchObject({ taskId: task.taskId, status: 'working' })
    release()
    expect(await task.result()).toEqual({
      content: [{ type: 'text', text: 'Computed "polled".' }],
    })
    expect(task.status).toBe('completed')

    const polls = sent.slice(1)
    expect(polls.length).toBeGreaterThanOrEqual(2)
    for (const poll of polls) {
      expect(poll.headers.get('mcp-method')).toBe('tasks/get')
      expect(poll.headers.get('mcp-name')).toBe(task.taskId)
      expect(poll.body?.params.taskId).toBe(task.taskId)
    }
  })

  it('gets the result at once when the client did not declare the extension, and -32021 for a task-required tool', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1'])
    const mcp = taskClient(fetchFn, { tasks: false })
    expect(await mcp.startToolCall('slow_compute', slow(0.01, 'plain'))).toMatchObject({
      kind: 'result',
      result: { resultType: 'complete', content: [{ text: 'Computed "plain" in 0.01 s.' }] },
    })
    expect(await failure(mcp.callTool('failing_job', {}))).toMatchObject({
      code: -32021,
      httpStatus: 400,
    })
    expect(sent[0]?.body?.params._meta).toMatchObject({ [META_CLIENT_CAPABILITIES]: {} })
  })

  it('answers input_required through tasks/update with the input handlers, all keys at once, each once', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1'])
    const asked: Array<{ key: string; round: number; message: string }> = []
    const mcp = taskClient(fetchFn, {
      handlers: {
        elicit: async (params, ctx) => {
          asked.push({ key: ctx.key, round: ctx.round, message: params.message })
          return {
            action: 'accept',
            content: ctx.key === 'name' ? { name: 'Ada' } : { confirm: true },
          }
        },
      },
    })
    const task = await started(mcp, 'multi_input')
    expect(await task.result()).toMatchObject({
      content: [{ text: 'name=Ada; confirmed=true' }],
    })

    expect(asked).toEqual([
      { key: 'name', round: 1, message: 'What is your name?' },
      { key: 'confirm', round: 1, message: 'Shall I go ahead?' },
    ])
    const updates = sent.filter((request) => request.body?.method === 'tasks/update')
    expect(updates).toHaveLength(1)
    expect(updates[0]?.headers.get('mcp-name')).toBe(task.taskId)
    expect(updates[0]?.body?.params).toMatchObject({
      taskId: task.taskId,
      inputResponses: {
        name: { action: 'accept', content: { name: 'Ada' } },
        confirm: { action: 'accept', content: { confirm: true } },
      },
    })
  })

  it('answers a question asked again under a new key as a new round', async () => {
    const { fetch: fetchFn } = await engine(['127.0.0.1'])
    const asked: string[] = []
    const mcp = taskClient(fetchFn, {
      handlers: {
        elicit: async (_params, ctx) => {
          asked.push(`${ctx.key}@${ctx.round}`)
          // The first answer does not fit the form: the task asks again.
          return { action: 'accept', content: { confirm: ctx.round === 1 ? 'yes' : true } }
        },
      },
    })
    const task = await started(mcp, 'confirm_delete', { filename: 'a.txt' })
    expect(await task.result()).toMatchObject({ content: [{ text: 'Deleted a.txt.' }] })
    expect(asked).toEqual(['confirm@1', 'confirm#2@2'])
  })

  it('sends every poll and answer to another replica than the one before', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1', '127.0.0.2'])
    let next = 0
    const mcp = taskClient(fetchFn, {
      urls: () => [ENGINE_A, ENGINE_B][next++ % 2] as string,
      handlers: { elicit: async () => ({ action: 'accept', content: { confirm: true } }) },
    })
    expect(await mcp.callTool('confirm_delete', { filename: 'b.txt' })).toMatchObject({
      content: [{ text: 'Deleted b.txt.' }],
    })
    expect(methods(sent)).toContain('tasks/update')
    sent.forEach((request, index) => {
      expect(request.url).toBe(index % 2 === 0 ? ENGINE_A : ENGINE_B)
    })
  })

  it('cancels a running task: tasks/cancel is acked, and result() rejects with reason cancelled', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1'])
    holdTask('cancelled')
    const task = await started(taskClient(fetchFn), 'held_compute', { label: 'cancelled' })
    await task.cancel()
    const error = await driverFailure(task.result())
    expect(error.reason).toBe('cancelled')
    expect(error.lastResult).toMatchObject({ taskId: task.taskId, status: 'cancelled' })
    const cancel = sent.find((request) => request.body?.method === 'tasks/cancel')
    expect(cancel?.headers.get('mcp-method')).toBe('tasks/cancel')
    expect(cancel?.headers.get('mcp-name')).toBe(task.taskId)
    expect(cancel?.body?.params.taskId).toBe(task.taskId)
  })

  it("rejects with a failed task's JSON-RPC error, and completes a task whose result is an error", async () => {
    const { fetch: fetchFn } = await engine(['127.0.0.1'])
    const mcp = taskClient(fetchFn)
    const error = await failure(mcp.callTool('protocol_error_job', {}))
    expect(error).toBeInstanceOf(McpClientError)
    expect(error).toMatchObject({ code: -32603, message: 'Internal error: the job broke down.' })
    expect(await mcp.callTool('failing_job', {})).toMatchObject({
      isError: true,
      content: [{ text: 'The job failed: this tool always fails.' }],
    })
  })

  it('callTool resolves the rounds before the task, then follows the task to its result', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1'])
    const mcp = taskClient(fetchFn, {
      handlers: { elicit: async () => ({ action: 'accept', content: { name: 'Ada' } }) },
    })
    expect(await mcp.callTool('test_tool_with_task', {})).toMatchObject({
      content: [{ text: 'Hello, Ada!' }],
    })
    expect(methods(sent).slice(0, 3)).toEqual(['tools/call', 'tools/call', 'tasks/get'])
    expect(sent[1]?.body?.params.inputResponses).toEqual({
      user_name: { action: 'accept', content: { name: 'Ada' } },
    })
  })

  it('waits the pollIntervalMs the server suggests between polls', async () => {
    const { fetch: fetchFn, sent } = await engine(['127.0.0.1'], { pollIntervalMs: 5_000 })
    // The task's own 8 s and the client's pauses run on the same fake clock.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const task = await started(taskClient(fetchFn), 'slow_compute', slow(8, 'paced'))
      const done = task.result()
      const polls = () => sent.filter((r) => r.headers.get('mcp-method') === 'tasks/get').length
      await vi.advanceTimersByTimeAsync(4_999)
      expect(polls()).toBe(0)
      await vi.advanceTimersByTimeAsync(1)
      expect(polls()).toBe(1)
      await vi.advanceTimersByTimeAsync(4_999)
      expect(polls()).toBe(1)
      await vi.advanceTimersByTimeAsync(1)
      expect(polls()).toBe(2)
      expect(await done).toMatchObject({ content: [{ text: 'Computed "paced" in 8 s.' }] })
    } finally {
      vi.useRealTimers()
    }
  })

  it('bounds a wait: a task that does not end rejects with timeout and the last task seen', async () => {
    const { fetch: fetchFn } = await engine(['127.0.0.1'])
    const mcp = taskClient(fetchFn, { taskTimeoutMs: 100 })
    holdTask('bounded')
    const task = await started(mcp, 'held_compute', { label: 'bounded' })
    const error = await driverFailure(task.wait())
    expect(error.reason).toBe('timeout')
    expect(error.lastResult).toMatchObject({ taskId: task.taskId, status: 'working' })
    expect((await driverFailure(task.wait({ timeoutMs: 50 }))).reason).toBe('timeout')
    await task.cancel()
  })

  it('reaches a task by its id from another client, and an unknown id answers -32602', async () => {
    const { fetch: fetchFn } = await engine(['127.0.0.1'])
    const release = holdTask('resumed')
    const first = await started(taskClient(fetchFn), 'held_compute', { label: 'resumed' })
    const other = taskClient(fetchFn)
    const resumed = await other.resumeTask(first.taskId)
    expect(resumed).toMatchObject({ taskId: first.taskId, status: 'working' })
    release()
    expect(await resumed.result()).toMatchObject({
      content: [{ text: 'Computed "resumed".' }],
    })
    expect(await other.getTask(first.taskId)).toMatchObject({ status: 'completed' })
    expect(await failure(other.getTask('no-such-task'))).toMatchObject({ code: -32602 })
  })
})
describe('tasks the server got wrong', () => {
  it('refuses a task answered to anything but tools/call, and a malformed or foreign task from tasks/get', async () => {
    const read = fakeServer(({ id }) =>
      json({ jsonrpc: '2.0', id, result: { resultType: 'task', taskId: 't', status: 'working' } })
    )
    const reading = client(read.fetch, { tasks: true })
    expect((await driverFailure(reading.readResource('note://1'))).reason).toBe('protocol')

    for (const task of [
      { taskId: 'other', status: 'working' },
      { taskId: 't', status: 'sleeping' },
      { taskId: 't', status: 'completed' },
      { taskId: 't', status: 'working', pollIntervalMs: -1 },
    ]) {
      const server = fakeServer(({ id }) => ok(id, task))
      const error = await driverFailure(client(server.fetch, { tasks: true }).getTask('t'))
      expect(error.reason, JSON.stringify(task)).toBe('protocol')
    }
  })

  it('validates the task options', () => {
    expect(() => new McpClient({ url: URL_A, tasks: 'yes' as unknown as boolean })).toThrow(
      TypeError
    )
    expect(() => new McpClient({ url: URL_A, taskTimeoutMs: 0 })).toThrow(RangeError)
  })
})
