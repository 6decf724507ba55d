/**
 * @module scripts/bench/peer-hono-mcp
 * `@hono/mcp` as a benchmark peer: its `StreamableHTTPTransport` (Hono middleware) over the v1 SDK's
 * `McpServer` (`@modelcontextprotocol/sdk`), on @hono/node-server (`serve.ts`). Same tools as
 * `ours-server.ts`: `echo`, `confirm_echo` (`server.server.elicitInput`, a server→client request),
 * `progress` (three `notifications/progress` through `extra.sendNotification`) and `search_notes`
 * (listed with the same schemas; not served, the peers are not measured on search).
 *
 * Choices: the README connects one `McpServer` to one transport at module scope. A transport without
 * `sessionIdGenerator` is stateless, but one transport shared by concurrent clients routes answers
 * by JSON-RPC id, and every client's first request is id 1: answers would reach the wrong client.
 * So the stateless wiring is the v1 SDK's own stateless pattern: a fresh `McpServer` and transport
 * per request (the zod schemas built once). @hono/mcp speaks only the 2025 revisions (the v1 SDK),
 * so `tools_call` and `tools_list` send it a `2025-11-25` POST without a session. Stateless, the
 * answer to `elicitation/create` would reach another transport; for the 2025 interactive flow
 * (`BENCH_PEER_LEGACY=sessions`) it runs sessionful instead, as the v1 SDK's session example does: a
 * transport per session (`sessionIdGenerator`), held in this process's memory (sticky: every request
 * of a session must reach this process), 404 for an unknown session. Loopback only.
 */
import { StreamableHTTPTransport } from '@hono/mcp'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { Hono } from 'hono'
import { randomUUID } from 'node:crypto'
import { EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'
import { serveBench } from './serve.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS, TOOL_DESCRIPTIONS } from './wire.ts'

const INFO = { name: 'notes-mcp-bench-hono-mcp', version: '0.0.0' }
const CONFIRM_SCHEMA = {
  type: 'object' as const,
  properties: { confirm: { type: 'boolean' as const } },
  required: ['confirm'],
}

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] }
}

function createServer(): McpServer {
  const server = new McpServer(INFO)
  server.registerTool(
    'echo',
    { description: TOOL_DESCRIPTIONS.echo, inputSchema: EchoInput },
    async ({ text: value }) => text(value)
  )
  server.registerTool(
    'confirm_echo',
    { description: TOOL_DESCRIPTIONS.confirm_echo, inputSchema: EchoInput },
    async ({ text: value }, extra) => {
      // Related to the call, so the request goes out on the call's own SSE stream.
      const answer = await server.server.elicitInput(
        { message: CONFIRM_MESSAGE, requestedSchema: CONFIRM_SCHEMA },
        { relatedRequestId: extra.requestId }
      )
      return text(
        answer.action === 'accept' && answer.content?.confirm === true ? value : 'not confirmed'
      )
    }
  )
  server.registerTool(
    'progress',
    { description: TOOL_DESCRIPTIONS.progress, inputSchema: NoInput },
    async (_args, extra) => {
      const progressToken = extra._meta?.progressToken
      if (progressToken !== undefined) {
        for (let step = 1; step <= PROGRESS_STEPS; step++) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: step, total: PROGRESS_STEPS },
          })
        }
      }
      return text('done')
    }
  )
  server.registerTool(
    'search_notes',
    {
      description: TOOL_DESCRIPTIONS.search_notes,
      inputSchema: SearchInput,
      outputSchema: SearchOutput,
    },
    () => {
      throw new Error('search_notes is not served by this peer')
    }
  )
  return server
}

const sessions = process.env.BENCH_PEER_LEGACY === 'sessions'
/** Live sessions of this process, by session id (sessionful wiring only). */
const transports = new Map<string, StreamableHTTPTransport>()

async function sessionTransport(id: string | undefined): Promise<StreamableHTTPTransport | null> {
  if (id !== undefined) return transports.get(id) ?? null
  const transport = new StreamableHTTPTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sessionId) => void transports.set(sessionId, transport),
    onsessionclosed: (sessionId) => void transports.delete(sessionId),
  })
  await createServer().connect(transport)
  return transport
}

const app = new Hono()
app.all('/mcp', async (c) => {
  if (!sessions) {
    const transport = new StreamableHTTPTransport()
    await createServer().connect(transport)
    return transport.handleRequest(c)
  }
  const transport = await sessionTransport(c.req.header('mcp-session-id'))
  if (transport === null) {
    return c.json(
      { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } },
      404
    )
  }
  return transport.handleRequest(c)
})

serveBench(sessions ? 'hono-mcp-sessions' : 'hono-mcp', app.fetch)
