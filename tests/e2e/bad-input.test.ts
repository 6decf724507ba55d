/**
 * Bad input against the real notes server process, over raw TCP so nothing a client library would
 * refuse is filtered first: malformed JSON, batches, wrong id types, missing and contradictory
 * headers, control and non-UTF-8 bytes in headers and bodies, oversized and chunked bodies, unknown
 * tools, wrong argument types. Every answer must be a 4xx or a JSON-RPC error — never a 5xx — and the
 * process must still serve afterwards.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

  it('still serves after all of it', async () => {
    expect(server.process.exitCode).toBeNull()
    const response = await raw(
      post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: META } }))
    )
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body).result.tools.length).toBeGreaterThan(0)
  })
})
