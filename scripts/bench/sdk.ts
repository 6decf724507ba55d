/**
 * @module scripts/bench/sdk
 * The official SDK under load on Node, wired the way its documentation shows: `createMcpHonoApp()`
 * (Host/Origin checks and a JSON body parser) and `createMcpHandler(factory)` with
 * `handler.fetch(c.req.raw, { parsedBody })`, the factory (`sdk-server.ts`) building a fresh
 * `McpServer` per request. 2025-era clients get the handler's default, its stateless legacy fallback
 * (no `Mcp-Session-Id`: a fresh instance per POST).
 *
 * With `BENCH_SDK_LEGACY=sessions` 2025-era clients get what the SDK needs for their interactive flows
 * instead (its legacy `input_required` shim answers through server→client requests, which only a
 * session can carry): the routing of its `examples/legacy-routing`, `isLegacyRequest` in front of a
 * modern-only handler, one `WebStandardStreamableHTTPServerTransport` per session held in this
 * process's memory (sticky: every request of a session must reach this process), 404 for an unknown
 * session id. Environment: `BENCH_DB` (SQLite file, for search and `create_note`).
 */
import { createMcpHonoApp } from '@modelcontextprotocol/hono'
import {
  createMcpHandler,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
  type McpHttpHandler,
} from '@modelcontextprotocol/server'
import { randomUUID } from 'node:crypto'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { sdkServerFactory } from './sdk-server.ts'
import { serveBench } from './serve.ts'

const path = process.env.BENCH_DB
const store = path ? new SqliteNotesStore({ path }) : undefined
await store?.migrate()

let handler: McpHttpHandler | undefined
const createServer = sdkServerFactory({
  store,
  onNotesChanged: () => handler?.notify.resourcesChanged(),
})
const sessions = process.env.BENCH_SDK_LEGACY === 'sessions'
handler = createMcpHandler(createServer, sessions ? { legacy: 'reject' } : {})
const modern = handler

/** Live 2025-era sessions of this process, by session id. */
const transports = new Map<string, WebStandardStreamableHTTPServerTransport>()

async function legacySession(request: Request, parsedBody: unknown): Promise<Response> {
  const id = request.headers.get('mcp-session-id')
  if (id !== null) {
    const transport = transports.get(id)
    if (transport) return transport.handleRequest(request, { parsedBody })
    return Response.json(
      { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } },
      { status: 404 }
    )
  }
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sessionId) => void transports.set(sessionId, transport),
  })
  transport.onclose = () => {
    if (transport.sessionId !== undefined) transports.delete(transport.sessionId)
  }
  await createServer().connect(transport)
  return transport.handleRequest(request, { parsedBody })
}

const app = createMcpHonoApp({ host: '127.0.0.1' })
app.all('/mcp', async (c) => {
  const parsedBody = (c as unknown as { get(key: string): unknown }).get('parsedBody')
  if (sessions && (await isLegacyRequest(c.req.raw, parsedBody))) {
    return legacySession(c.req.raw, parsedBody)
  }
  return modern.fetch(c.req.raw, { parsedBody })
})

serveBench(sessions ? 'sdk-sessions' : 'sdk', app.fetch, () =>
  store ? store.close() : Promise.resolve()
)
