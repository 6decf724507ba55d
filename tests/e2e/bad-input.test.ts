/**
 * Bad input against the real notes server process, over raw TCP so nothing a client library would
 * refuse is filtered first: malformed JSON, batches, wrong id types, missing and contradictory
 * headers, control and non-UTF-8 bytes in headers and bodies, oversized and chunked bodies, unknown
 * tools, wrong argument types. Every answer must be a 4xx or a JSON-RPC error — never a 5xx — and the
 * process must still serve afterwards. Pathologically nested JSON (100,000 levels of `[` or `{"a":`)
 * in every place a client controls, in both eras, on a server with the default 1 MiB body limit: a
 * 400 -32700 naming the nesting bound, and a body exactly at the bound is served as usual.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH } from '../../src/mcp/envelope.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { LEGACY_VERSION, openSessionAt } from '../support/legacy-request.ts'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'

let server: ServerProcess
let port: number

beforeAll(async () => {
  server = await startServer('notes', { DATA_DIR: await tempDataDir(), MAX_BODY_BYTES: '4096' })
  port = Number(new URL(server.url).port)
})

afterAll(async () => {
  await server?.stop()
})

/** Sends raw bytes and returns the status code and body of the (first) HTTP response. */
function raw(request: Buffer | string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.setTimeout(5000, () => socket.destroy(new Error('timeout')))
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) })
    })
    socket.end(request)
  })
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
}

function post(
  body: Buffer | string,
  headers: Record<string, string> = {},
  method = 'tools/list'
): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body
  const lines = {
    Host: '127.0.0.1',
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method,
    'Content-Length': String(payload.length),
    Connection: 'close',
    ...headers,
  }
  const head = Object.entries(lines)
    .filter(([, value]) => value !== '')
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n')
  return Buffer.concat([Buffer.from(`POST /mcp HTTP/1.1\r\n${head}\r\n\r\n`, 'latin1'), payload])
}

const call = (name: string, args: unknown, id: unknown = 1) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, _meta: META },
  })

const CASES: Array<[string, Buffer | string, number]> = [
  ['malformed JSON', post('{"jsonrpc":'), 400],
  [
    'a batch',
    post(
      `[${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } })}]`
    ),
    400,
  ],
  [
    'a float id',
    post(
      JSON.stringify({ jsonrpc: '2.0', id: 1.5, method: 'tools/list', params: { _meta: META } })
    ),
    400,
  ],
  [
    'an object id',
    post(JSON.stringify({ jsonrpc: '2.0', id: {}, method: 'tools/list', params: { _meta: META } })),
    400,
  ],
  [
    'no _meta',
    post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })),
    400,
  ],
  [
    'contradictory Mcp-Method',
    post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }), {
      'Mcp-Method': 'prompts/list',
    }),
    400,
  ],
  [
    'missing MCP-Protocol-Version',
    post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }), {
      'MCP-Protocol-Version': '',
    }),
    400,
  ],
  [
    'a control character in Mcp-Name',
    post(call('create_note', { title: 'x' }), { 'Mcp-Name': 'create\x01note' }, 'tools/call'),
    400,
  ],
  [
    'a non-UTF-8 byte in Mcp-Name',
    post(call('create_note', { title: 'x' }), { 'Mcp-Name': 'caf\xe9' }, 'tools/call'),
    400,
  ],
  ['a non-UTF-8 body', post(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), 400],
  [
    'a NUL inside a JSON string',
    post(call('create_note', { title: 'a\u0000b' }), { 'Mcp-Name': 'create_note' }, 'tools/call'),
    200,
  ],
  ['an oversized body', post('x'.repeat(10_000)), 413],
  [
    'an unknown tool',
    post(call('no_such_tool', {}), { 'Mcp-Name': 'no_such_tool' }, 'tools/call'),
    200,
  ],
  [
    'wrong argument types',
    post(
      call('create_note', { title: 42, tags: 'x' }),
      { 'Mcp-Name': 'create_note' },
      'tools/call'
    ),
    200,
  ],
  [
    'a title over the limit',
    post(
      call('create_note', { title: 't'.repeat(5000) }),
      { 'Mcp-Name': 'create_note' },
      'tools/call'
    ),
    413,
  ],
  [
    'a hostile requestState',
    post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'delete_note',
          arguments: { id: 'n_x' },
          requestState: 'a.b.c.d.e',
          _meta: META,
        },
      }),
      { 'Mcp-Name': 'delete_note' },
      'tools/call'
    ),
    200,
  ],
  [
    'a chunked body over the limit',
    Buffer.from(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${'1000\r\n' + 'x'.repeat(4096) + '\r\n'}${'1000\r\n' + 'x'.repeat(4096) + '\r\n'}0\r\n\r\n`
    ),
    413,
  ],
  [
    'an unknown HTTP method',
    Buffer.from(`PATCH /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
    405,
  ],
]

describe('bad input to the real server process', () => {
  it.each(CASES)(
    'answers %s with a 4xx or a JSON-RPC error, never a 5xx',
    async (_name, request, status) => {
      const response = await raw(request)
      expect(response.status).toBe(status)
      if (status === 200)
        expect(
          JSON.parse(response.body).error ?? JSON.parse(response.body).result?.isError
        ).toBeTruthy()
      else
        expect(JSON.parse(response.body)).toMatchObject({
          jsonrpc: '2.0',
          error: { code: expect.any(Number) },
        })
    }
  )

  it('answers headers larger than the HTTP parser allows with 431, not a crash', async () => {
    const response = await raw(post('{}', { 'X-Padding': 'p'.repeat(20_000) }))
    expect(response.status).toBe(431)
    expect(JSON.parse(response.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } })
  })

  it.each([
    ['GET', { 'MCP-Protocol-Version': '2026-07-28' }],
    ['DELETE', { 'MCP-Protocol-Version': '2026-07-28' }],
    ['GET', {}],
    ['GET', { 'MCP-Protocol-Version': '2025-06-18' }],
  ])(
    'answers %s without a session id (headers %o) with 405 and Allow: POST',
    async (method, headers) => {
      const response = await fetch(server.url, {
        method,
        headers: { accept: 'application/json, text/event-stream', ...headers },
      })
      expect(response.status).toBe(405)
      expect(response.headers.get('allow')).toBe('POST')
      expect(await response.json()).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringMatching(/^Method Not Allowed: .*POST only/) },
      })
    }
  )

  it.each([
    ['no version header (2025-03-26)', {}],
    ['a 2025 version header', { 'MCP-Protocol-Version': '2025-11-25' }],
  ])(
    'answers a 2025 client’s DELETE without a session id, with %s, 400 "send initialize first"',
    async (_case, headers) => {
      const response = await fetch(server.url, { method: 'DELETE', headers })
      expect(response.status).toBe(400)
      expect(await response.json()).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringMatching(/Mcp-Session-Id.*initialize first/) },
      })
    }
  )

  it('still serves after all of it', async () => {
    expect(server.process.exitCode).toBeNull()
    const response = await raw(
      post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: META } }))
    )
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body).result.tools.length).toBeGreaterThan(0)
  })
})

describe('pathologically nested JSON', () => {
  const LEVELS = 100_000
  /** `value` wrapped in `levels` arrays, or in `levels` objects of one member "a". */
  const nest = {
    arrays: (levels: number, value = '') => '['.repeat(levels) + value + ']'.repeat(levels),
    objects: (levels: number, value = '0') => '{"a":'.repeat(levels) + value + '}'.repeat(levels),
  }
  const meta = JSON.stringify(META)
  let deepServer: ServerProcess
  let sessionId: string

  beforeAll(async () => {
    // The default body limit (1 MiB): room for ~500,000 levels of `[`.
    deepServer = await startServer('notes', { DATA_DIR: await tempDataDir() })
    sessionId = await openSessionAt(deepServer.url)
  })

  afterAll(async () => {
    await deepServer?.stop()
  })

  const modern = (method: string, name?: string) => ({
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  })
  const legacy = () => ({ 'mcp-protocol-version': LEGACY_VERSION, [HEADER_SESSION_ID]: sessionId })

  function send(body: string, headers: Record<string, string>): Promise<Response> {
    return fetch(deepServer.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body,
    })
  }

  /** Where a deep value `deep` goes, and the headers sent with it. */
  const PLACES: Array<[string, (deep: string) => string, () => Record<string, string>]> = [
    ['the whole body (2026)', (deep) => deep, () => modern('tools/list')],
    ['a batch element (2026)', (deep) => `[${deep}]`, () => modern('tools/list')],
    [
      'params (2026)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":${deep},"_meta":${meta}}}`,
      () => modern('tools/list'),
    ],
    [
      'params.arguments of tools/call (2026)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t","x":${deep}},"_meta":${meta}}}`,
      () => modern('tools/call', 'create_note'),
    ],
    [
      '_meta (2026)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":${deep},${meta.slice(1, -1)}}}}`,
      () => modern('tools/list'),
    ],
    [
      'inputResponses (2026)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_note","arguments":{"id":"n_AbCdEfGh12345678"},"inputResponses":{"confirm":${deep}},"_meta":${meta}}}`,
      () => modern('tools/call', 'delete_note'),
    ],
    ['the whole body (2025)', (deep) => deep, legacy],
    [
      'a batch of 2025 requests',
      (deep) => `[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${deep}}}]`,
      legacy,
    ],
    [
      'initialize capabilities (2025)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"${LEGACY_VERSION}","capabilities":{"experimental":${deep}},"clientInfo":{"name":"x","version":"1"}}}`,
      () => ({}),
    ],
    [
      'params.arguments of tools/call (2025)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t","x":${deep}}}}`,
      legacy,
    ],
    [
      '_meta (2025)',
      (deep) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1,"x":${deep}}}}`,
      legacy,
    ],
    [
      'a posted answer result (2025)',
      (deep) => `{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":${deep}}}`,
      legacy,
    ],
  ]

  const CASES = PLACES.flatMap(([place, wrap, headers]) =>
    (['arrays', 'objects'] as const).map(
      (shape) =>
        [
          `${LEVELS.toLocaleString('en')} levels of ${shape} in ${place}`,
          shape,
          wrap,
          headers,
        ] as const
    )
  )

  it.each(CASES)('refuses %s with 400 -32700', async (_name, shape, wrap, headers) => {
    const body = wrap(nest[shape](LEVELS))
    expect(body.length).toBeLessThan(1024 * 1024)
    const response = await send(body, headers())
    expect(response.status).toBe(400)
    expect(await response.json()).toStrictEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32700,
        message: `Parse error: the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`,
        data: { maxDepth: MAX_JSON_DEPTH },
      },
    })
  })

  it('serves a body nested exactly to the bound, in both eras', async () => {
    // body, params, arguments: three levels around the value.
    const atBound = (shape: 'arrays' | 'objects') => nest[shape](MAX_JSON_DEPTH - 3)
    for (const shape of ['arrays', 'objects'] as const) {
      const modernCall = await send(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t","x":${atBound(shape)}},"_meta":${meta}}}`,
        modern('tools/call', 'create_note')
      )
      expect(modernCall.status).toBe(200)
      expect((await modernCall.json()).result).toMatchObject({
        isError: true,
        content: [{ text: expect.stringMatching(/Unrecognized key: "x"/) }],
      })
      const legacyCall = await send(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t","x":${atBound(shape)}}}}`,
        legacy()
      )
      expect(legacyCall.status).toBe(200)
      expect(await legacyCall.text()).toMatch(/Unrecognized key: \\"x\\"/)
      // One level more is refused.
      const over = await send(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t","x":${nest[shape](MAX_JSON_DEPTH - 2)}},"_meta":${meta}}}`,
        modern('tools/call', 'create_note')
      )
      expect(over.status).toBe(400)
      expect((await over.json()).error.code).toBe(-32700)
    }
    // A 2025 session whose client capabilities (objects of objects) nest to the bound is sealed into
    // its id and served.
    const initialize = await send(
      `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"${LEGACY_VERSION}","capabilities":{"experimental":${nest.objects(MAX_JSON_DEPTH - 4, '{}')}},"clientInfo":{"name":"x","version":"1"}}}`,
      {}
    )
    expect(initialize.status).toBe(200)
    const deepSession = initialize.headers.get(HEADER_SESSION_ID)
    expect(deepSession).toBeTruthy()
    const ping = await send('{"jsonrpc":"2.0","id":2,"method":"ping"}', {
      'mcp-protocol-version': LEGACY_VERSION,
      [HEADER_SESSION_ID]: deepSession!,
    })
    expect(ping.status).toBe(200)
  })

  it('still serves after all of it, with nothing unhandled logged', async () => {
    expect(deepServer.process.exitCode).toBeNull()
    expect(deepServer.output()).not.toMatch(/unhandled|call stack/i)
    const response = await send(
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: META } }),
      modern('tools/list')
    )
    expect(response.status).toBe(200)
  })
})
