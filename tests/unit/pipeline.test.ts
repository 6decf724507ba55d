/**
 * The HTTP pipeline and its answers to bad input, in-process through the conformance fixture app (and
 * tiny servers for pagination and its cache, completion caps, typed `Mcp-Param-*` headers and results
 * JSON cannot express): one test per rule, each pinning the exact HTTP status, JSON-RPC code and id
 * echo of the answer.
 *
 * Not sendable in-process: fetch's `Headers` refuses CR, LF and NUL in values (TypeError at
 * construction) and strips leading/trailing whitespace, and lower-cases header names. Node's HTTP
 * parser refuses CR/LF/NUL as well, so those bytes never reach the engine on any runtime; the tests
 * below send what can be constructed (other control characters, DEL, Latin-1 bytes).
 */
import { SignJWT, base64url, type JWTPayload } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import * as z from 'zod'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { definitions, text } from '../../src/mcp/definitions.ts'
import { ErrorCode, INTERNAL_ERROR_MESSAGE, McpError } from '../../src/mcp/errors.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import type { McpLogger } from '../../src/mcp/logger.ts'
import { MAX_CURSOR_LENGTH, encodeCursor } from '../../src/mcp/pagination.ts'
import {
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  META_SERVER_INFO,
  PROTOCOL_VERSION,
} from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer, type ServerDefinition } from '../../src/mcp/server.ts'
import {
  base64Sentinel,
  expectError,
  expectResult,
  mcpBody,
  mcpInit,
  mcpMessage,
  MCP_URL,
  postMcp,
  readMessages,
  requestApp,
  type JsonObject,
  type McpRequestOptions,
} from '../support/mcp-request.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const bus = new InProcessEventBus()
const fixture = (env: Record<string, string> = {}) =>
  createFixtureApp(parseConfig(env), { sealer, bus })
const app = fixture()

const post = (method: string, options?: McpRequestOptions) => postMcp(app, method, options)
const callTool = (name: string, options: McpRequestOptions = {}) =>
  post('tools/call', { ...options, params: { name, ...options.params } })

const PARSE_ERROR = -32700
const INVALID_REQUEST = -32600
const METHOD_NOT_FOUND = -32601
const INVALID_PARAMS = -32602
const INTERNAL_ERROR = -32603
const HEADER_MISMATCH = -32020
const UNSUPPORTED_VERSION = -32022

/** The HTTP app (default configuration) over the engine serving `definition`, with `logger`. */
function appServing(definition: ServerDefinition<null>, logger?: McpLogger) {
  const server = compileServer(definition)
  return createHttpApp({
    config: parseConfig({}),
    handler: createMcpHandler({ server, deps: null, sealer, ...(logger ? { logger } : {}) }),
  })
}

// A tools-only server with two items per page, and tools whose x-mcp-header params are typed.
const { tool, prompt } = definitions<null>()
const pagedApp = appServing({
  info: { name: 'paged', version: '1.0.0' },
  pageSize: 2,
  tools: [
    ...['alpha', 'bravo', 'charlie'].map((name) =>
      tool({ name, description: `The ${name} tool.`, input: z.object({}), run: () => text(name) })
    ),
    tool({
      name: 'typed_headers',
      description: 'Mirrors an integer and a boolean argument into Mcp-Param headers.',
      input: z.object({
        level: z.int().meta({ 'x-mcp-header': 'Level' }).optional(),
        dry: z.boolean().meta({ 'x-mcp-header': 'Dry' }).optional(),
      }),
      run: ({ level, dry }) => text(`level=${level} dry=${dry}`),
    }),
  ],
})

const WORDS = Array.from({ length: 150 }, (_, index) => `word${index}`)
const completionApp = appServing({
  info: { name: 'completions', version: '1.0.0' },
  prompts: [
    prompt({
      name: 'wordy',
      description: 'A prompt whose argument has 150 suggestions.',
      arguments: [{ name: 'word' }],
      get: ({ word }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `${word}` } }],
      }),
      complete: { word: (value) => WORDS.filter((word) => word.startsWith(value)) },
    }),
  ],
})

// Tools whose results (or error data) JSON cannot express; each reports progress first when asked to.
const selfReferencing: Record<string, unknown> = { note: 'contains itself' }
selfReferencing.self = selfReferencing
const unserialisable: Record<string, unknown> = {
  cyclic: selfReferencing,
  bigint: { count: 10n },
}
const brokenLogs: string[] = []
const brokenApp = appServing(
  {
    info: { name: 'broken', version: '1.0.0' },
    tools: [
      ...Object.entries(unserialisable).map(([name, structuredContent]) =>
        tool({
          name,
          description: `Returns a ${name} structuredContent.`,
          input: z.object({}),
          run: (_args, ctx) => {
            ctx.progress(1)
            return { content: [{ type: 'text', text: name }], structuredContent }
          },
        })
      ),
      tool({
        name: 'bigint_error_data',
        description: 'Throws an McpError whose data holds a BigInt.',
        input: z.object({}),
        run: (_args, ctx) => {
          ctx.progress(1)
          throw new McpError(ErrorCode.InvalidParams, 'Invalid params: too many.', { limit: 10n })
        },
      }),
      tool({ name: 'fine', description: 'Works.', input: z.object({}), run: () => text('fine') }),
    ],
  },
  { warn: () => {}, error: (message) => void brokenLogs.push(message) }
)

describe('JSON-RPC framing', () => {
  it('answers malformed JSON with 400 and -32700 and a null id', async () => {
    const response = await post('tools/list', { body: '{"jsonrpc":"2.0","id":1,"method":' })
    await expectError(response, { status: 400, code: PARSE_ERROR, id: null })
  })

  it('answers a body that is not UTF-8 with 400 and -32700', async () => {
    const options = { params: { cursor: 'X' } }
    const bytes = new TextEncoder().encode(mcpBody('tools/list', options))
    bytes[bytes.lastIndexOf(0x58)] = 0xff
    const response = await requestApp(app, '/mcp', {
      ...mcpInit('tools/list', options),
      body: bytes,
    })
    await expectError(response, { status: 400, code: PARSE_ERROR, id: null })
  })

  it('rejects a JSON array (a batch) with 400 and -32600 and a null id', async () => {
    const response = await post('tools/list', {
      body: JSON.stringify([mcpMessage('tools/list'), mcpMessage('tools/list', { id: 2 })]),
    })
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
  })

  it.each([['"tools/list"'], ['42'], ['null']])(
    'rejects a body that is not an object (%s) with 400 and -32600',
    async (body) => {
      await expectError(await post('tools/list', { body }), {
        status: 400,
        code: INVALID_REQUEST,
        id: null,
      })
    }
  )

  it('rejects a JSON-RPC response object with 400 and an id-less -32600', async () => {
    // The id of a response names a request of the *server*; echoing it could make the client match
    // this error to one of its own pending requests with the same id (checklist http-batch-reply).
    const response = await post('tools/list', {
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }),
    })
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
  })

  it.each([
    ['a wrong jsonrpc version', (message: JsonObject) => (message.jsonrpc = '1.0')],
    ['a missing jsonrpc member', (message: JsonObject) => delete message.jsonrpc],
    ['a method that is not a string', (message: JsonObject) => (message.method = 42)],
    ['an empty method', (message: JsonObject) => (message.method = '')],
  ])('rejects %s with 400 and -32600, echoing the id', async (_case, patch) => {
    const response = await post('tools/list', { id: 7, patch })
    await expectError(response, { status: 400, code: INVALID_REQUEST, id: 7 })
  })

  it.each([[null], [1.5], [{}], [true], [[1]]])(
    'rejects the id %j with 400 and -32600 and a null id',
    async (id) => {
      const response = await post('tools/list', { patch: (message) => (message.id = id) })
      await expectError(response, { status: 400, code: INVALID_REQUEST, id: null })
    }
  )

  it.each([['text'], [[1, 2]], [5], [null]])(
    'rejects params that are not an object (%j) with 400 and -32600',
    async (params) => {
      const response = await post('tools/list', { patch: (message) => (message.params = params) })
      await expectError(response, { status: 400, code: INVALID_REQUEST, id: 1 })
    }
  )

  it('echoes the request id with its JSON type on results and on errors', async () => {
    expect(await expectResult(await post('tools/list', { id: '1' }), '1')).toHaveProperty('tools')
    expect(await expectResult(await post('tools/list', { id: 1 }), 1)).toHaveProperty('tools')
    expect(await expectResult(await post('tools/list', { id: 0 }), 0)).toHaveProperty('tools')
    await expectError(await post('unknown/method', { id: '9' }), {
      status: 404,
      code: METHOD_NOT_FOUND,
      id: '9',
    })
  })
})

describe('notifications', () => {
  const notification = (message: JsonObject) => delete message.id

  it('accepts a notification without MCP headers with 202 and an empty body', async () => {
    const response = await post('notifications/cancelled', {
      patch: notification,
      meta: null,
      headers: { 'mcp-protocol-version': undefined, 'mcp-method': undefined },
    })
    expect(response.status).toBe(202)
    expect(await response.text()).toBe('')
  })

  it('accepts a notification with MCP headers with 202 and an empty body', async () => {
    const response = await post('notifications/cancelled', {
      patch: notification,
      params: { requestId: 3 },
    })
    expect(response.status).toBe(202)
    expect(await response.text()).toBe('')
  })

  it('accepts a notification removed in 2026-07-28 with 202 and ignores it', async () => {
    const response = await post('notifications/initialized', { patch: notification, meta: null })
    expect(response.status).toBe(202)
    expect(await response.text()).toBe('')
  })
})

describe('required _meta', () => {
  it('rejects a request without _meta with 400 and -32602 naming it in data.missing', async () => {
    const error = await expectError(await post('tools/list', { meta: null }), {
      status: 400,
      code: INVALID_PARAMS,
      id: 1,
    })
    expect(error.data.missing).toEqual(['_meta'])
  })

  it.each([[META_PROTOCOL_VERSION], [META_CLIENT_CAPABILITIES]])(
    'rejects a request whose _meta lacks %s with 400 and -32602 naming it in data.missing',
    async (key) => {
      const error = await expectError(await post('tools/list', { meta: { [key]: undefined } }), {
        status: 400,
        code: INVALID_PARAMS,
        id: 1,
      })
      expect(error.data.missing).toEqual([key])
    }
  )

  it('accepts a request without clientInfo (it is optional)', async () => {
    const result = await expectResult(
      await post('server/discover', { meta: { [META_CLIENT_INFO]: undefined } })
    )
    expect(result.supportedVersions).toContain(PROTOCOL_VERSION)
  })

  it.each([['yes'], [[]], [null], [{ elicitation: true }]])(
    'rejects clientCapabilities %j with 400 and -32602',
    async (capabilities) => {
      await expectError(await post('tools/list', { capabilities }), {
        status: 400,
        code: INVALID_PARAMS,
        id: 1,
      })
    }
  )

  it('rejects a protocolVersion that is not a string with 400 and -32602', async () => {
    const response = await post('tools/list', { meta: { [META_PROTOCOL_VERSION]: 20260728 } })
    await expectError(response, { status: 400, code: INVALID_PARAMS, id: 1 })
  })

  it('rejects an unknown logLevel with 400 and -32602', async () => {
    const response = await post('tools/list', { meta: { [META_LOG_LEVEL]: 'verbose' } })
    await expectError(response, { status: 400, code: INVALID_PARAMS, id: 1 })
  })

  it.each([[1.5], [true], [{}], [null]])(
    'rejects the progressToken %j with 400 and -32602',
    async (progressToken) => {
      const response = await post('tools/list', { meta: { progressToken } })
      await expectError(response, { status: 400, code: INVALID_PARAMS, id: 1 })
    }
  )
})

describe('standard headers', () => {
  const simpleText = { params: { name: 'test_simple_text' } }
  const cafe = { params: { uri: 'test://template/café/data' } }
  /** The request `params` with the Mcp-Name header `name` (`undefined`: without it). */
  const named = (params: McpRequestOptions, name: string | undefined): McpRequestOptions => ({
    ...params,
    headers: { 'mcp-name': name },
  })

  it.each<[string, string, McpRequestOptions]>([
    [
      'MCP-Protocol-Version is missing',
      'tools/list',
      { headers: { 'mcp-protocol-version': undefined } },
    ],
    [
      'MCP-Protocol-Version differs from _meta',
      'tools/list',
      { meta: { [META_PROTOCOL_VERSION]: 'v999.0.0' } },
    ],
    ['Mcp-Method is missing', 'tools/list', { headers: { 'mcp-method': undefined } }],
    [
      'Mcp-Method differs from the body',
      'tools/list',
      { headers: { 'mcp-method': 'prompts/list' } },
    ],
    [
      'Mcp-Method differs in case (TOOLS/LIST)',
      'tools/list',
      { headers: { 'mcp-method': 'TOOLS/LIST' } },
    ],
    ['Mcp-Name is missing on tools/call', 'tools/call', named(simpleText, undefined)],
    [
      'Mcp-Name is missing on prompts/get',
      'prompts/get',
      named({ params: { name: 'test_simple_prompt' } }, undefined),
    ],
    [
      'Mcp-Name is missing on resources/read',
      'resources/read',
      named({ params: { uri: 'test://static-text' } }, undefined),
    ],
    ['Mcp-Name names another tool', 'tools/call', named(simpleText, 'wrong_tool_name')],
    [
      'Mcp-Name uses the upper-case =?BASE64?…?= (a literal, not the name)',
      'tools/call',
      named(simpleText, '=?BASE64?dGVzdF9zaW1wbGVfdGV4dA==?='),
    ],
    [
      'Mcp-Name is a partial sentinel (a literal, not the name)',
      'tools/call',
      named(simpleText, '=?base64?dGVzdF9zaW1wbGVfdGV4dA=='),
    ],
    [
      'Mcp-Name has Base64 without its padding',
      'tools/call',
      named(simpleText, '=?base64?dGVzdF9zaW1wbGVfdGV4dA?='),
    ],
    [
      'Mcp-Name has characters outside Base64',
      'tools/call',
      named(simpleText, '=?base64?dGVz!!!dA==?='),
    ],
    [
      'Mcp-Name is Base64 of bytes that are not UTF-8',
      'resources/read',
      named(cafe, '=?base64?Y2Fm6Q==?='),
    ],
    [
      'MCP-Protocol-Version holds a DEL character',
      'tools/list',
      { headers: { 'mcp-protocol-version': `${PROTOCOL_VERSION}\x7f` } },
    ],
    [
      'Mcp-Method holds a control character',
      'tools/list',
      { headers: { 'mcp-method': 'tools/\x01list' } },
    ],
    ['Mcp-Name holds a DEL character', 'tools/call', named(simpleText, 'test_simple_text\x7f')],
    [
      'Mcp-Name holds a byte above 0x7E (Latin-1 é, not Base64-encoded)',
      'resources/read',
      named(cafe, 'test://template/caf\u00e9/data'),
    ],
  ])('rejects with 400 and -32020 when %s', async (_case, method, options) => {
    await expectError(await post(method, options), { status: 400, code: HEADER_MISMATCH, id: 1 })
  })

  it('accepts an Mcp-Name that is the Base64 sentinel of the tool name', async () => {
    const result = await expectResult(
      await callTool('test_simple_text', {
        headers: { 'mcp-name': base64Sentinel('test_simple_text') },
      })
    )
    expect(result.content[0].text).toBe('This is a simple text response for testing.')
  })

  it('accepts a non-ASCII resource URI sent as the Base64 sentinel', async () => {
    const response = await post('resources/read', cafe)
    const result = await expectResult(response)
    expect(result.contents[0].uri).toBe('test://template/café/data')
  })

  it('reads header names in any case', async () => {
    const body = mcpBody('tools/call', simpleText)
    const response = await requestApp(app, '/mcp', {
      method: 'POST',
      body,
      headers: [
        ['Content-Type', 'application/json'],
        ['ACCEPT', 'application/json, text/event-stream'],
        ['MCP-PROTOCOL-VERSION', PROTOCOL_VERSION],
        ['mcp-METHOD', 'tools/call'],
        ['Mcp-Name', 'test_simple_text'],
      ],
    })
    expect((await expectResult(response)).content[0].text).toMatch(/simple text/)
  })

  it('accepts header values with surrounding whitespace', async () => {
    // fetch trims the values already; this pins that the engine compares the trimmed value.
    const response = await callTool('test_simple_text', {
      headers: { 'mcp-method': ' tools/call\t', 'mcp-name': '  test_simple_text ' },
    })
    expect((await expectResult(response)).isError).toBeUndefined()
  })
})

describe('protocol version', () => {
  it.each([['v999.0.0'], ['2025-11-25']])(
    'rejects version %s with 400 and -32022 naming supported and requested',
    async (version) => {
      const error = await expectError(
        await post('server/discover', {
          meta: { [META_PROTOCOL_VERSION]: version },
          headers: { 'mcp-protocol-version': version },
        }),
        { status: 400, code: UNSUPPORTED_VERSION, id: 1 }
      )
      expect(error.data).toEqual({ supported: [PROTOCOL_VERSION], requested: version })
      const discover = await expectResult(await post('server/discover'))
      expect(discover.supportedVersions).toEqual(expect.arrayContaining(error.data.supported))
    }
  )
})

describe('methods', () => {
  it.each([
    ['initialize'],
    ['ping'],
    ['logging/setLevel'],
    ['resources/subscribe'],
    ['resources/unsubscribe'],
    ['unknown/method'],
  ])('answers %s with 404 and -32601', async (method) => {
    await expectError(await post(method, { params: { uri: 'test://static-text' } }), {
      status: 404,
      code: METHOD_NOT_FOUND,
      id: 1,
    })
  })

  it.each([
    ['prompts/list'],
    ['resources/list'],
    ['completion/complete'],
    ['subscriptions/listen'],
  ])(
    'answers %s with 404 and -32601 when the server does not advertise its capability',
    async (method) => {
      await expectError(await postMcp(pagedApp, method), {
        status: 404,
        code: METHOD_NOT_FOUND,
        id: 1,
      })
    }
  )

  it.each([['GET'], ['DELETE']])(
    'answers %s /mcp with 405, Allow: POST and a JSON-RPC error body',
    async (method) => {
      const response = await requestApp(app, '/mcp', {
        method,
        headers: { accept: 'text/event-stream' },
      })
      expect(response.headers.get('allow')).toBe('POST')
      await expectError(response, { status: 405, code: INVALID_REQUEST, id: null })
    }
  )
})

describe('HTTP layer', () => {
  it('answers a Content-Type other than application/json with 415 and a JSON-RPC error', async () => {
    const response = await post('tools/list', { headers: { 'content-type': 'text/plain' } })
    await expectError(response, { status: 415, code: INVALID_REQUEST, id: 1 })
  })

  it('answers a body without Content-Type with 415 and a JSON-RPC error', async () => {
    // A string body would make fetch add text/plain; bytes leave the header out.
    const init = mcpInit('tools/list', { headers: { 'content-type': undefined } })
    const body = new TextEncoder().encode(mcpBody('tools/list'))
    const response = await requestApp(app, '/mcp', { ...init, body })
    await expectError(response, { status: 415, code: INVALID_REQUEST, id: 1 })
  })

  it('accepts application/json with a charset parameter', async () => {
    const response = await post('tools/list', {
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    expect(await expectResult(response)).toHaveProperty('tools')
  })

  it('answers a body over MAX_BODY_BYTES with 413 and a JSON-RPC error', async () => {
    const small = fixture({ MAX_BODY_BYTES: '2048' })
    const under = await postMcp(small, 'tools/list', { params: { pad: 'x'.repeat(1500) } })
    expect(await expectResult(under)).toHaveProperty('tools')
    const over = await postMcp(small, 'tools/list', { params: { pad: 'x'.repeat(4096) } })
    await expectError(over, { status: 413, code: INVALID_REQUEST, id: null })
  })

  it('refuses a foreign Host with 403 and a JSON-RPC error echoing the id', async () => {
    const response = await post('server/discover', { headers: { host: 'evil.example.com' } })
    await expectError(response, { status: 403, code: INVALID_REQUEST, id: 1 })
  })

  it('refuses a request without a Host header with 403', async () => {
    const response = await post('server/discover', { headers: { host: undefined } })
    await expectError(response, { status: 403, code: INVALID_REQUEST, id: 1 })
  })

  it('refuses a foreign Origin with 403 and a JSON-RPC error echoing the id', async () => {
    const response = await post('server/discover', {
      headers: { origin: 'http://evil.example.com' },
    })
    await expectError(response, { status: 403, code: INVALID_REQUEST, id: 1 })
  })

  it.each([['127.0.0.1:3200'], ['localhost:3200'], ['LOCALHOST']])(
    'accepts the allowed Host %s',
    async (host) => {
      expect(
        await expectResult(await post('server/discover', { headers: { host } }))
      ).toHaveProperty('capabilities')
    }
  )

  it('keeps refusing foreign Hosts after remembering many allowed ones', async () => {
    const ports = Array.from({ length: 100 }, (_, index) => 4000 + index)
    for (const port of ports) {
      await expectResult(await post('server/discover', { headers: { host: `localhost:${port}` } }))
    }
    const foreign = await post('server/discover', { headers: { host: 'evil.example.com:4000' } })
    await expectError(foreign, { status: 403, code: INVALID_REQUEST, id: 1 })
    const foreignOrigin = await post('server/discover', {
      headers: { host: 'localhost:4000', origin: 'http://evil.example.com' },
    })
    await expectError(foreignOrigin, { status: 403, code: INVALID_REQUEST, id: 1 })
  })

  it('accepts an Origin on an allowed host', async () => {
    const response = await post('server/discover', { headers: { origin: 'http://localhost:5173' } })
    expect(await expectResult(response)).toHaveProperty('capabilities')
  })

  it('accepts an Origin listed in ALLOWED_ORIGINS and still refuses others', async () => {
    const listed = fixture({ ALLOWED_ORIGINS: 'https://app.example.com' })
    const allowed = await postMcp(listed, 'server/discover', {
      headers: { origin: 'https://app.example.com' },
    })
    expect(await expectResult(allowed)).toHaveProperty('capabilities')
    const other = await postMcp(listed, 'server/discover', {
      headers: { origin: 'https://other.example.com' },
    })
    await expectError(other, { status: 403, code: INVALID_REQUEST, id: 1 })
  })

  it('answers a throw that escapes the engine with 500 and a JSON-RPC -32603 without detail', async () => {
    const failing = createHttpApp({
      config: parseConfig({}),
      handler: async () => {
        throw new Error('secret detail: the database password is hunter2')
      },
    })
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const response = await failing.request(MCP_URL, mcpInit('tools/list'))
      expect(response.status).toBe(500)
      expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: INTERNAL_ERROR, message: INTERNAL_ERROR_MESSAGE },
      })
      expect(logged).toHaveBeenCalledOnce()
    } finally {
      logged.mockRestore()
    }
  })

  it('answers GET /healthz with 200', async () => {
    const response = await requestApp(app, '/healthz')
    expect(response.status).toBe(200)
  })

  it.each([
    ['/.well-known/oauth-protected-resource'],
    ['/.well-known/oauth-protected-resource/mcp'],
  ])('answers %s with 404 when auth is not configured', async (path) => {
    expect((await requestApp(app, path)).status).toBe(404)
  })
})

describe('errors about the request content (HTTP 200)', () => {
  it('answers an unknown tool with -32602', async () => {
    await expectError(await callTool('no_such_tool'), { status: 200, code: INVALID_PARAMS, id: 1 })
  })

  it('answers tools/call with arguments that are not an object with -32602', async () => {
    const response = await callTool('test_simple_text', { params: { arguments: [1] } })
    await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
  })

  it('answers an unknown prompt with -32602', async () => {
    const response = await post('prompts/get', { params: { name: 'no_such_prompt' } })
    await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
  })

  it('answers an unknown resource with -32602 and data.uri', async () => {
    const uri = 'test://nonexistent-resource-for-conformance-testing'
    const error = await expectError(await post('resources/read', { params: { uri } }), {
      status: 200,
      code: INVALID_PARAMS,
      id: 1,
    })
    expect(error.data).toEqual({ uri })
  })

  it('answers wrong argument types with an isError result, not a JSON-RPC error', async () => {
    const response = await callTool('test_x_mcp_header', {
      params: { arguments: { level: 'high' } },
    })
    const result = await expectResult(response)
    expect(result).toMatchObject({ resultType: 'complete', isError: true })
    expect(result.content[0].text).toMatch(/level/)
  })

  it('answers prompts/get without its required arguments with -32602', async () => {
    const response = await post('prompts/get', {
      params: { name: 'test_prompt_with_arguments', arguments: { arg1: 'only one' } },
    })
    const error = await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
    expect(error.message).toMatch(/arg2/)
  })

  it.each([['tools/list'], ['prompts/list'], ['resources/list'], ['resources/templates/list']])(
    'answers %s with an invalid cursor with -32602',
    async (method) => {
      const response = await post(method, { params: { cursor: 'not-a-cursor' } })
      await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
    }
  )
})

describe('failures after parsing', () => {
  const callBroken = (name: string, progressToken?: string) =>
    postMcp(brokenApp, 'tools/call', {
      id: `call-${name}`,
      params: { name },
      meta: progressToken === undefined ? {} : { progressToken },
    })

  it.each(Object.keys(unserialisable))(
    'answers -32603 as JSON when a %s result cannot be serialised, and keeps serving',
    async (name) => {
      brokenLogs.length = 0
      const error = await expectError(await callBroken(name), {
        status: 200,
        code: INTERNAL_ERROR,
        id: `call-${name}`,
      })
      expect(error).toEqual({ code: INTERNAL_ERROR, message: INTERNAL_ERROR_MESSAGE })
      expect(brokenLogs).toEqual(['request failed'])
      expect((await expectResult(await callBroken('fine'), 'call-fine')).content).toEqual([
        { type: 'text', text: 'fine' },
      ])
    }
  )

  it.each(Object.keys(unserialisable))(
    'ends the SSE stream with -32603 when a %s result cannot be serialised after a progress notification',
    async (name) => {
      const response = await callBroken(name, 'tok')
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      expect(await readMessages(response)).toEqual([
        {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: 'tok', progress: 1 },
        },
        {
          jsonrpc: '2.0',
          id: `call-${name}`,
          error: { code: INTERNAL_ERROR, message: INTERNAL_ERROR_MESSAGE },
        },
      ])
    }
  )

  it('answers -32603, as JSON and as the last SSE event, for an McpError whose data cannot be serialised', async () => {
    const error = await expectError(await callBroken('bigint_error_data'), {
      status: 200,
      code: INTERNAL_ERROR,
      id: 'call-bigint_error_data',
    })
    expect(error.message).toBe(INTERNAL_ERROR_MESSAGE)
    const streamed = await readMessages(await callBroken('bigint_error_data', 'tok'))
    expect(streamed.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'call-bigint_error_data',
      error: { code: INTERNAL_ERROR, message: INTERNAL_ERROR_MESSAGE },
    })
  })
})

describe('Mcp-Param headers', () => {
  const region = (args: JsonObject, headers: Record<string, string | undefined> = {}) =>
    callTool('test_x_mcp_header', { params: { arguments: args }, headers })
  const typed = (args: JsonObject, headers: Record<string, string>) =>
    postMcp(pagedApp, 'tools/call', {
      params: { name: 'typed_headers', arguments: args },
      headers,
    })

  it('accepts a header equal to the argument', async () => {
    const result = await expectResult(
      await region({ region: 'eu-west' }, { 'mcp-param-region': 'eu-west' })
    )
    expect(result.content[0].text).toBe('region=eu-west level=')
  })

  it('accepts a header that is the Base64 sentinel of the argument', async () => {
    const response = await region(
      { region: 'Hello' },
      { 'mcp-param-region': '=?base64?SGVsbG8=?=' }
    )
    expect((await expectResult(response)).content[0].text).toBe('region=Hello level=')
  })

  it('accepts a non-ASCII argument sent as the Base64 sentinel', async () => {
    const response = await region(
      { region: 'Zürich' },
      { 'mcp-param-region': base64Sentinel('Zürich') }
    )
    expect((await expectResult(response)).content[0].text).toBe('region=Zürich level=')
  })

  it.each<[string, JsonObject, Record<string, string | undefined>]>([
    ['the header is missing while the body has the argument', { region: 'Hello' }, {}],
    ['the header differs from the argument', { region: 'Hello' }, { 'mcp-param-region': 'World' }],
    [
      'the header has invalid Base64',
      { region: 'Hello' },
      { 'mcp-param-region': '=?base64?SGVsbG8?=' },
    ],
    [
      'the header has characters outside Base64',
      { region: 'Hello' },
      { 'mcp-param-region': '=?base64?SGVs!!!bG8=?=' },
    ],
    ['the header holds a DEL character', { region: 'Hello' }, { 'mcp-param-region': 'Hello\x7f' }],
  ])('rejects with 400 and -32020 when %s', async (_case, args, headers) => {
    await expectError(await region(args, headers), { status: 400, code: HEADER_MISMATCH, id: 1 })
  })

  it('does not require the header when the argument is absent', async () => {
    expect((await expectResult(await region({}))).content[0].text).toBe('region= level=')
  })

  it('does not require the header when the argument is null', async () => {
    // null is not a valid region, so the tool reports an argument error: but no header error.
    expect(await expectResult(await region({ region: null }))).toMatchObject({ isError: true })
  })

  it('ignores Mcp-Param headers the tool does not declare', async () => {
    const response = await region({}, { 'mcp-param-other': 'anything' })
    expect((await expectResult(response)).content[0].text).toBe('region= level=')
  })

  it.each([['42'], ['42.0']])('compares an integer header numerically (%s ≡ 42)', async (value) => {
    const response = await typed({ level: 42 }, { 'mcp-param-level': value })
    expect((await expectResult(response)).content[0].text).toBe('level=42 dry=undefined')
  })

  it.each([['41'], ['0x2a'], ['0b101010'], ['forty-two']])(
    'rejects the integer header %s for 42 with 400 and -32020',
    async (value) => {
      await expectError(await typed({ level: 42 }, { 'mcp-param-level': value }), {
        status: 400,
        code: HEADER_MISMATCH,
        id: 1,
      })
    }
  )

  it('compares a boolean header as lower-case true/false', async () => {
    const ok = await typed({ dry: true }, { 'mcp-param-dry': 'true' })
    expect((await expectResult(ok)).content[0].text).toBe('level=undefined dry=true')
    await expectError(await typed({ dry: true }, { 'mcp-param-dry': 'True' }), {
      status: 400,
      code: HEADER_MISMATCH,
      id: 1,
    })
  })
})

describe('result stamping', () => {
  const serverInfo = { name: 'notes-mcp-conformance-fixture', version: '0.1.0' }

  it.each<[string, McpRequestOptions]>([
    ['server/discover', {}],
    ['tools/list', {}],
    ['prompts/list', {}],
    ['resources/list', {}],
    ['resources/templates/list', {}],
    ['resources/read', { params: { uri: 'test://static-text' } }],
    ['resources/read', { params: { uri: 'test://template/7/data' } }],
  ])('stamps %s with resultType, serverInfo and cache hints', async (method, options) => {
    const result = await expectResult(await post(method, options))
    expect(result.resultType).toBe('complete')
    expect(result._meta[META_SERVER_INFO]).toEqual(serverInfo)
    expect(Number.isSafeInteger(result.ttlMs) && result.ttlMs >= 0).toBe(true)
    expect(['public', 'private']).toContain(result.cacheScope)
  })

  it.each<[string, McpRequestOptions]>([
    ['tools/call', { params: { name: 'test_simple_text' } }],
    ['tools/call', { params: { name: 'test_error_handling' } }],
    ['prompts/get', { params: { name: 'test_simple_prompt' } }],
    [
      'completion/complete',
      {
        params: {
          ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
          argument: { name: 'arg1', value: 'test' },
        },
      },
    ],
  ])('stamps %s with resultType and serverInfo but no cache hints', async (method, options) => {
    const result = await expectResult(await post(method, options))
    expect(result.resultType).toBe('complete')
    expect(result._meta[META_SERVER_INFO]).toEqual(serverInfo)
    expect(result).not.toHaveProperty('ttlMs')
    expect(result).not.toHaveProperty('cacheScope')
  })

  it('stamps input_required with resultType and serverInfo but no cache hints', async () => {
    const response = await callTool('test_input_required_result_elicitation', {
      capabilities: { elicitation: {} },
    })
    const result = await expectResult(response)
    expect(result.resultType).toBe('input_required')
    expect(result._meta[META_SERVER_INFO]).toEqual(serverInfo)
    expect(result).not.toHaveProperty('ttlMs')
    expect(result).not.toHaveProperty('cacheScope')
  })
})

describe('pagination', () => {
  it('walks every page of tools/list and ends by omitting nextCursor', async () => {
    const names: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const params = cursor === undefined ? {} : { cursor }
      const result = await expectResult(await postMcp(pagedApp, 'tools/list', { params }))
      expect(result.tools.length).toBeLessThanOrEqual(2)
      names.push(...result.tools.map((listed: JsonObject) => listed.name))
      cursor = result.nextCursor
      if (cursor !== undefined) expect(typeof cursor).toBe('string')
      pages += 1
    } while (cursor !== undefined && pages < 10)
    expect(names).toEqual(['alpha', 'bravo', 'charlie', 'typed_headers'])
    expect(pages).toBe(2)
  })

  it('treats the empty-string cursor as a cursor (invalid here), not as the first page', async () => {
    const response = await postMcp(pagedApp, 'tools/list', { params: { cursor: '' } })
    await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
  })

  it('answers a repeated list page identically, echoing each request id with its own JSON type', async () => {
    const first = await expectResult(await postMcp(pagedApp, 'tools/list', { id: 41 }), 41)
    const again = await expectResult(
      await postMcp(pagedApp, 'tools/list', { id: 'forty-two' }),
      'forty-two'
    )
    expect(again).toEqual(first)
    const page2 = { params: { cursor: first.nextCursor } }
    const second = await expectResult(await postMcp(pagedApp, 'tools/list', { id: 7, ...page2 }), 7)
    expect(second.tools).not.toEqual(first.tools)
  })

  it('keeps serving the pages it defines from its cache however many forged cursors came first', async () => {
    // The second tool's schema counts how often the page holding it is serialised.
    let serialised = 0
    const counting = {
      type: 'object',
      toJSON: () => {
        serialised += 1
        return { type: 'object' }
      },
    }
    const onePerPage = appServing({
      info: { name: 'one-per-page', version: '1.0.0' },
      pageSize: 1,
      tools: [
        tool({ name: 'first', description: 'One.', input: z.object({}), run: () => text('1') }),
        tool({
          name: 'second',
          description: 'Two.',
          input: z.object({}),
          inputJsonSchema: counting,
          run: () => text('2'),
        }),
      ],
    })
    const list = (cursor?: string) =>
      postMcp(onePerPage, 'tools/list', { params: cursor === undefined ? {} : { cursor } })
    const first = await expectResult(await list())
    for (let offset = 2; offset < 202; offset++) {
      // Well-formed cursors the server never issued: answered (an empty page), never kept.
      const forged = await expectResult(await list(encodeCursor('tools', offset)))
      expect(forged.tools).toEqual([])
      expect(forged).not.toHaveProperty('nextCursor')
    }
    for (let i = 0; i < 3; i++) {
      const second = await expectResult(await list(first.nextCursor))
      expect(second.tools.map((listed: JsonObject) => listed.name)).toEqual(['second'])
    }
    expect(serialised).toBe(1)
  })

  it('refuses a cursor longer than any it issues with -32602, even one that would decode', async () => {
    const padded = base64url.encode(
      JSON.stringify({ l: 'tools', o: 2 }) + ' '.repeat(MAX_CURSOR_LENGTH)
    )
    const response = await postMcp(pagedApp, 'tools/list', { params: { cursor: padded } })
    const error = await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
    expect(error.message).toBe(
      `Invalid params: the cursor is longer than any cursor this server returns (${MAX_CURSOR_LENGTH} characters at most).`
    )
  })

  it('rejects a cursor issued for another list with -32602', async () => {
    const tools = await expectResult(await postMcp(pagedApp, 'tools/list'))
    expect(tools.nextCursor).toEqual(expect.any(String))
    const response = await post('prompts/list', { params: { cursor: tools.nextCursor } })
    await expectError(response, { status: 200, code: INVALID_PARAMS, id: 1 })
  })
})

describe('completion', () => {
  const complete = (value: string) =>
    postMcp(completionApp, 'completion/complete', {
      params: { ref: { type: 'ref/prompt', name: 'wordy' }, argument: { name: 'word', value } },
    })

  it('caps completion values at 100 and reports hasMore and the total', async () => {
    const { completion } = await expectResult(await complete(''))
    expect(completion.values).toEqual(WORDS.slice(0, 100))
    expect(completion).toMatchObject({ hasMore: true, total: 150 })
  })

  it('reports hasMore false when every value fits', async () => {
    const { completion } = await expectResult(await complete('word1'))
    expect(completion.values).toHaveLength(61)
    expect(completion.hasMore).toBe(false)
  })
})

describe('bearer auth', () => {
  const ISSUER = 'https://issuer.example'
  const AUDIENCE = 'http://127.0.0.1:8787/mcp'
  const SECRET = 'a-test-signing-secret-of-more-than-32-characters'
  const SCOPE = 'notes:write'
  const METADATA = 'http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp'
  const authApp = fixture({
    AUTH_ISSUER: ISSUER,
    AUTH_AUDIENCE: AUDIENCE,
    AUTH_JWT_SECRET: SECRET,
    AUTH_REQUIRED_SCOPE: SCOPE,
  })

  async function token(claims: JWTPayload = {}, secret = SECRET): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    const payload: JWTPayload = {
      iss: ISSUER,
      aud: AUDIENCE,
      sub: 'alice',
      scope: SCOPE,
      iat: now,
      exp: now + 300,
      ...claims,
    }
    for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key]
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(secret))
  }
  const authed = (
    authorization: string | undefined,
    method = 'server/discover',
    options: McpRequestOptions = {}
  ) => postMcp(authApp, method, { ...options, headers: { authorization } })

  it('answers a request without a token with 401, a bare challenge (no error) and a JSON-RPC body', async () => {
    const response = await authed(undefined)
    // RFC 6750 §3.1: no error code when the request carries no credentials.
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer scope="${SCOPE}", resource_metadata="${METADATA}"`
    )
    expect(response.headers.get('cache-control')).toBe('no-store')
    await expectError(response, { status: 401, code: INVALID_REQUEST, id: 1 })
  })

  it('answers credentials of another scheme like none at all: 401 without an error code', async () => {
    const response = await authed('Basic YWxpY2U6c2VjcmV0')
    expect(response.headers.get('www-authenticate')).not.toContain('error=')
    await expectError(response, { status: 401, code: INVALID_REQUEST, id: 1 })
  })

  it.each([['Bearer'], ['Bearer two tokens'], ['Bearer  ']])(
    'answers the malformed Bearer header %j with 400 error="invalid_request"',
    async (authorization) => {
      const response = await authed(authorization)
      const challenge = response.headers.get('www-authenticate') ?? ''
      expect(challenge).toContain('error="invalid_request"')
      expect(challenge).toContain(`resource_metadata="${METADATA}"`)
      expect(response.headers.get('cache-control')).toBe('no-store')
      await expectError(response, { status: 400, code: INVALID_REQUEST, id: 1 })
    }
  )

  it.each<[string, () => Promise<string>]>([
    ['a token that is not a JWT', async () => 'not-a-jwt'],
    ['a bad signature', () => token({}, 'another-secret-that-is-also-long-enough-!!')],
    ['a wrong issuer', () => token({ iss: 'https://other-issuer.example' })],
    ['a wrong audience', () => token({ aud: 'https://other-server.example/mcp' })],
    ['an expired token', () => token({ iat: 1_000_000, exp: 1_000_600 })],
    ['a token without sub', () => token({ sub: undefined })],
  ])('answers %s with 401 error="invalid_token"', async (_case, mint) => {
    const response = await authed(`Bearer ${await mint()}`)
    const challenge = response.headers.get('www-authenticate') ?? ''
    expect(challenge).toMatch(/^Bearer /)
    expect(challenge).toContain('error="invalid_token"')
    expect(challenge).toContain(`resource_metadata="${METADATA}"`)
    expect(response.headers.get('cache-control')).toBe('no-store')
    await expectError(response, { status: 401, code: INVALID_REQUEST, id: 1 })
  })

  it('answers a token lacking the base scope (AUTH_REQUIRED_SCOPE) with 403 error="insufficient_scope"', async () => {
    const response = await authed(`Bearer ${await token({ scope: 'notes:read' })}`)
    const challenge = response.headers.get('www-authenticate') ?? ''
    expect(challenge).toContain('error="insufficient_scope"')
    expect(challenge).toContain(`scope="${SCOPE}"`)
    expect(challenge).toContain(`resource_metadata="${METADATA}"`)
    await expectError(response, { status: 403, code: INVALID_REQUEST, id: 1 })
  })

  it('serves a request with a good token', async () => {
    const result = await expectResult(await authed(`Bearer ${await token()}`))
    expect(result.supportedVersions).toContain(PROTOCOL_VERSION)
  })

  it('reads the Bearer scheme case-insensitively', async () => {
    // RFC 9110 §11.1: the authentication scheme is a case-insensitive token.
    const result = await expectResult(await authed(`bearer ${await token()}`))
    expect(result.supportedVersions).toContain(PROTOCOL_VERSION)
  })

  it("rejects one subject's requestState presented by another subject", async () => {
    const elicitation = {
      params: { name: 'test_input_required_result_elicitation' },
      capabilities: { elicitation: {} },
    }
    const round1 = await expectResult(
      await authed(`Bearer ${await token()}`, 'tools/call', elicitation)
    )
    expect(round1.resultType).toBe('input_required')
    const retry = {
      ...elicitation,
      params: {
        ...elicitation.params,
        requestState: round1.requestState,
        inputResponses: { user_name: { action: 'accept', content: { name: 'Mallory' } } },
      },
    }
    const stolen = await authed(`Bearer ${await token({ sub: 'mallory' })}`, 'tools/call', retry)
    const error = await expectError(stolen, { status: 200, code: INVALID_PARAMS, id: 1 })
    expect(error.message).toBe('Invalid or expired requestState')
    const own = await expectResult(await authed(`Bearer ${await token()}`, 'tools/call', retry))
    expect(own.content[0].text).toBe('Hello, Mallory!')
  })

  it.each([
    ['/.well-known/oauth-protected-resource'],
    ['/.well-known/oauth-protected-resource/mcp'],
  ])('serves protected-resource metadata at %s', async (path) => {
    const response = await requestApp(authApp, path)
    expect(response.status).toBe(200)
    const metadata = (await response.json()) as JsonObject
    expect(metadata).toEqual({
      resource: AUDIENCE,
      authorization_servers: [ISSUER],
      bearer_methods_supported: ['header'],
      scopes_supported: [SCOPE],
    })
  })

  it('serves GET /healthz without a token', async () => {
    expect((await requestApp(authApp, '/healthz')).status).toBe(200)
  })
})
