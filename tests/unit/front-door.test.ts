/**
 * The engine's front door (`createMcpServer`, `stateless-mcp`) in process, trying to break its
 * defaults: Host and Origin limited to loopback (403), other paths (404), the body limit (413,
 * declared or not), the media type (415), malformed UTF-8 (-32700), the `authenticate` hook (its
 * refusal answered as is, its principal binding sealed state), the ephemeral key's warning, a
 * misconfiguration thrown at construction with its fix named, a 2026-only server's answer to
 * `initialize` (-32022 naming the revisions served), HEAD answered as GET (the same `Allow`), and a
 * resumed GET stream at the top of the id range still sending ids the server accepts back, and the
 * store's expired rows swept as requests come.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  createMcpServer,
  generateStateKeys,
  InProcessEventBus,
  MemoryEngineStore,
  type McpLogger,
} from 'stateless-mcp'
import { mcpRoute } from 'stateless-mcp/hono'
import { Hono } from 'hono'
import { parseEventId } from '../../src/mcp/legacy/stream-log.ts'
import { greet } from '../support/greet-tool.ts'
import { firstMessage, mcpInit } from '../support/mcp-request.ts'

const definition = {
  info: { name: 'greeter', version: '1.0.0' },
  tools: [greet],
  listChanged: { tools: true },
}

/** A logger that keeps what it is told. */
function recordingLogger(): McpLogger & { lines: string[] } {
  const lines: string[] = []
  const keep = (message: string) => void lines.push(message)
  return { lines, warn: keep, error: keep }
}

const quiet = recordingLogger()
const stateKeys = generateStateKeys()
const server = createMcpServer(definition, { stateKeys, logger: quiet })

/** A POST of `method` to `server` at `path` as a 2026-07-28 client sends it. */
function post(method: string, init: Parameters<typeof mcpInit>[1] = {}, path = '/mcp') {
  return new Request(`http://127.0.0.1${path}`, mcpInit(method, init))
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'front-door-test', version: '1.0.0' },
  },
}

/** A 2025 session opened on `target`; answers its id. */
async function openSession(target: { fetch(request: Request): Promise<Response> }) {
  const response = await target.fetch(
    new Request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(INITIALIZE),
    })
  )
  expect(response.status).toBe(200)
  const sid = response.headers.get('mcp-session-id')
  expect(sid).toBeTruthy()
  return sid as string
}

/** The `id:` of the first SSE event of `response`, reading no further. */
async function firstEventId(response: Response): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let seen = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the stream ended before an event id:\n${seen}`)
      seen += decoder.decode(value, { stream: true })
      const id = /^id: ?(.+)$/m.exec(seen)?.[1]
      if (id !== undefined) return id.trim()
    }
  } finally {
    await reader.cancel()
  }
}

describe('the front door’s checks before the engine', () => {
  it('serves a tools/call on its path', async () => {
    const message = await firstMessage(
      await server.fetch(
        post('tools/call', { params: { name: 'greet', arguments: { name: 'Ada' } } })
      )
    )
    expect(message.result.content).toEqual([{ type: 'text', text: 'Hello, Ada' }])
  })

  it('answers 404 on any other path', async () => {
    const response = await server.fetch(post('tools/list', {}, '/other'))
    expect(response.status).toBe(404)
  })

  it.each([
    ['a foreign Host', { host: 'evil.example' }, 'Host header "evil.example"'],
    ['a foreign Origin', { origin: 'https://evil.example' }, 'Origin "https://evil.example"'],
  ])('refuses %s with 403 until told otherwise', async (_, headers, named) => {
    const response = await server.fetch(post('tools/list', { headers }))
    expect(response.status).toBe(403)
    const message = await firstMessage(response)
    expect(message.error.message).toContain(named)
  })

  it('answers a host it is told to allow', async () => {
    const open = createMcpServer(definition, {
      stateKeys,
      logger: quiet,
      allowedHosts: ['mcp.example.com'],
    })
    const response = await open.fetch(post('tools/list', { headers: { host: 'mcp.example.com' } }))
    expect(response.status).toBe(200)
    await open.close()
  })

  it('refuses a body over the limit with 413, declared or streamed', async () => {
    const small = createMcpServer(definition, { stateKeys, logger: quiet, maxBodyBytes: 2048 })
    const big = 'x'.repeat(4096)
    const declared = await small.fetch(post('tools/list', { params: { big } }))
    expect(declared.status).toBe(413)
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(JSON.stringify({ big })))
        controller.close()
      },
    })
    const streamed = await small.fetch(
      new Request('http://127.0.0.1/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chunked,
        duplex: 'half',
      } as RequestInit)
    )
    expect(streamed.status).toBe(413)
    await small.close()
  })

  it('refuses a body not declared JSON with 415, and one not UTF-8 with -32700', async () => {
    const plain = await server.fetch(
      post('tools/list', { headers: { 'content-type': 'text/plain' } })
    )
    expect(plain.status).toBe(415)
    const malformed = await server.fetch(
      new Request('http://127.0.0.1/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: new Uint8Array([0x7b, 0xff, 0x7d]),
      })
    )
    expect(malformed.status).toBe(400)
    const message = await firstMessage(malformed)
    expect(message.error.code).toBe(-32700)
  })
})

describe('authenticate', () => {
  const challenge = new Response('{"error":"sign in"}', {
    status: 401,
    headers: { 'www-authenticate': 'Bearer realm="mcp"' },
  })
  const guarded = createMcpServer(definition, {
    stateKeys,
    logger: quiet,
    authenticate: (request) => {
      const user = request.headers.get('x-user')
      return user ? { principal: user } : challenge.clone()
    },
  })

  it('answers its refusal as it is', async () => {
    const response = await guarded.fetch(post('tools/list'))
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="mcp"')
  })

  it('binds a sealed round to the principal it found', async () => {
    const capabilities = { elicitation: { form: {} } }
    const params = { name: 'greet', arguments: {} }
    const asked = await firstMessage(
      await guarded.fetch(
        post('tools/call', { params, capabilities, headers: { 'x-user': 'ada' } })
      )
    )
    const answer = {
      ...params,
      inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: asked.result.requestState,
    }
    const stolen = await firstMessage(
      await guarded.fetch(
        post('tools/call', { params: answer, capabilities, headers: { 'x-user': 'mallory' } })
      )
    )
    expect(stolen.error).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' })
    const finished = await firstMessage(
      await guarded.fetch(
        post('tools/call', { params: answer, capabilities, headers: { 'x-user': 'ada' } })
      )
    )
    expect(finished.result.content).toEqual([{ type: 'text', text: 'Hello, Ada' }])
  })
})

describe('the store’s expired rows', () => {
  afterEach(() => vi.useRealTimers())

  it('are swept by the first request ten minutes after the last sweep, once at a time', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const store = new MemoryEngineStore()
    const purges: number[] = []
    const purgeExpired = store.purgeExpired.bind(store)
    store.purgeExpired = (now, limit) => {
      purges.push(now)
      return purgeExpired(now, limit)
    }
    const swept = createMcpServer(definition, { stateKeys, logger: quiet, store })
    await swept.fetch(post('tools/list'))
    vi.setSystemTime(Date.now() + 9 * 60_000)
    await swept.fetch(post('tools/list'))
    expect(purges).toEqual([])
    vi.setSystemTime(Date.now() + 2 * 60_000)
    await Promise.all([swept.fetch(post('tools/list')), swept.fetch(post('tools/list'))])
    expect(purges).toEqual([Date.now()])
    await swept.close()
  })

  it('are not swept again while a sweep runs, and close() waits for it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const store = new MemoryEngineStore()
    let purges = 0
    let release = () => {}
    store.purgeExpired = () => {
      purges++
      return new Promise((resolve) => (release = () => resolve(0)))
    }
    const swept = createMcpServer(definition, { stateKeys, logger: quiet, store })
    try {
      await swept.fetch(post('tools/list'))
      vi.setSystemTime(Date.now() + 11 * 60_000)
      await swept.fetch(post('tools/list'))
      vi.setSystemTime(Date.now() + 11 * 60_000)
      await swept.fetch(post('tools/list'))
      expect(purges).toBe(1)
      let closing = false
      const close = swept.close().then(() => (closing = true))
      // In memory: once a macrotask has passed, close() would have ended had it not waited.
      await new Promise((resolve) => setImmediate(resolve))
      expect(closing).toBe(false)
      release()
      await close
      vi.setSystemTime(Date.now() + 11 * 60_000)
      await swept.fetch(post('tools/list')).catch(() => undefined)
      expect(purges).toBe(1)
    } finally {
      release()
    }
  })
})

describe('construction', () => {
  it('warns once that an ephemeral key seals when no stateKeys are given', async () => {
    const logger = recordingLogger()
    const ephemeral = createMcpServer(definition, { logger })
    await ephemeral.fetch(post('tools/list'))
    await ephemeral.fetch(post('tools/list'))
    expect(logger.lines.filter((line) => line.includes('ephemeral key'))).toHaveLength(1)
    await ephemeral.close()
  })

  it.each([
    ['nothing to serve', { info: definition.info }, /at least one tool/],
    ['a tool defined twice', { ...definition, tools: [greet, greet] }, /'greet' is defined twice/],
  ])('throws for %s, naming the fix', (_, bad, message) => {
    expect(() => createMcpServer(bad, { stateKeys })).toThrow(message)
  })

  it('throws for a key ring that does not parse, naming the fix', () => {
    expect(() => createMcpServer(definition, { stateKeys: 'k1:short' })).toThrow(
      /stateKeys is not a key ring .*generateStateKeys\(\)/
    )
  })

  it('answers a 2025 initialize on a 2026-only server with -32022 naming the revisions', async () => {
    const modern = createMcpServer(definition, { stateKeys, logger: quiet, legacy: false })
    const response = await modern.fetch(
      new Request('http://127.0.0.1/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(INITIALIZE),
      })
    )
    expect(response.status).toBe(400)
    const message = await firstMessage(response)
    expect(message).toMatchObject({
      id: 1,
      error: {
        code: -32022,
        data: { supported: ['2026-07-28'], requested: '2025-11-25' },
      },
    })
    expect(message.error.message).toContain('2026-07-28')
    await modern.close()
  })
})

describe('HEAD and GET', () => {
  it('answer a session-less request alike: 405 with Allow: POST', async () => {
    const [get, head] = await Promise.all(
      ['GET', 'HEAD'].map((method) =>
        server.fetch(
          new Request('http://127.0.0.1/mcp', { method, headers: { accept: 'text/event-stream' } })
        )
      )
    )
    expect([get?.status, head?.status]).toEqual([405, 405])
    expect(head?.headers.get('allow')).toBe(get?.headers.get('allow'))
    expect(get?.headers.get('allow')).toBe('POST')
  })

  it('answer a session’s stream alike, HEAD without a body and without holding a stream', async () => {
    const sid = await openSession(server)
    const request = (method: string) =>
      new Request('http://127.0.0.1/mcp', {
        method,
        headers: {
          accept: 'text/event-stream',
          'mcp-session-id': sid,
          'mcp-protocol-version': '2025-11-25',
        },
      })
    const head = await server.fetch(request('HEAD'))
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(await head.text()).toBe('')
    const get = await server.fetch(request('GET'))
    expect(get.status).toBe(200)
    expect(get.headers.get('content-type')).toBe(head.headers.get('content-type'))
    await get.body?.cancel()
  })
})

describe('a resumed GET stream', () => {
  const bus = new InProcessEventBus()
  const resumable = createMcpServer(definition, { stateKeys, logger: quiet, bus })

  it.each([
    ['at the top of the id range', 'gZZZZZZZZZZZZZZZZ.999999999', false],
    ['low in the range', 'gZZZZZZZZZZZZZZZZ.41', true],
  ])('%s sends ids the server accepts back', async (_, lastEventId, sameStream) => {
    const sid = await openSession(resumable)
    const response = await resumable.fetch(
      new Request('http://127.0.0.1/mcp', {
        method: 'GET',
        headers: {
          accept: 'text/event-stream',
          'mcp-session-id': sid,
          'mcp-protocol-version': '2025-11-25',
          'last-event-id': lastEventId,
        },
      })
    )
    expect(response.status).toBe(200)
    const id = await firstEventId(response)
    const named = parseEventId(id)
    expect(named, `the server sent the id ${id}, which it refuses`).toBeDefined()
    expect(named?.stream === 'gZZZZZZZZZZZZZZZZ').toBe(sameStream)
  })
})

describe('the Hono route', () => {
  it('serves the server on its path inside an app', async () => {
    const app = new Hono()
    app.get('/', (c) => c.text('home'))
    app.route('/', mcpRoute(server))
    const message = await firstMessage(await app.fetch(post('tools/list')))
    expect(message.result.tools.map((listed: { name: string }) => listed.name)).toEqual(['greet'])
    expect(await (await app.fetch(new Request('http://127.0.0.1/'))).text()).toBe('home')
  })
})
