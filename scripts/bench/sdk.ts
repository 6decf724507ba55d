/**
 * @module scripts/bench/sdk
 * The official SDK under load, wired the way its documentation shows for a stateless 2026-07-28
 * endpoint on Hono: `createMcpHonoApp()` (Host/Origin checks and a JSON body parser) and
 * `createMcpHandler(factory)` with `handler.fetch(c.req.raw, { parsedBody })`, the factory building a
 * fresh `McpServer` per request. Everything that can be built once is (the zod schemas, the elicitation
 * request, the state codec), as a careful user would write it: this is the SDK at its best, not at
 * its most naive.
 *
 * Same tools as `ours.ts`: `echo`; `confirm_echo` returns `inputRequired(...)` with a
 * `createRequestStateCodec` (HMAC-SHA256) state bound to the method and the principal, verified by
 * `ServerOptions.requestState.verify` and checked against the arguments on round 2; `progress` sends
 * three `notifications/progress` (the response upgrades to SSE); `search_notes` runs the same
 * `SqliteNotesStore` query and returns the same hits. Environment: `BENCH_DB` (SQLite file).
 */
import { createMcpHonoApp } from '@modelcontextprotocol/hono'
import {
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  McpServer,
  type CallToolResult,
  type ServerContext,
} from '@modelcontextprotocol/server'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { BENCH_PRINCIPAL, searchCursor, searchHit } from './notes-data.ts'
import { serveBench } from './serve.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS } from './wire.ts'
import { ConfirmForm, EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'

const INFO = { name: 'notes-mcp-bench-sdk', version: '0.0.0' }

const CONFIRM_REQUEST = inputRequired.elicit({
  message: CONFIRM_MESSAGE,
  requestedSchema: ConfirmForm,
})

interface ConfirmState {
  tool: string
  text: string
}

const codec = createRequestStateCodec<ConfirmState>({
  key: crypto.getRandomValues(new Uint8Array(32)),
  ttlSeconds: 600,
  bind: (ctx: ServerContext) => `${ctx.mcpReq.method}\u0000${BENCH_PRINCIPAL}`,
})

const path = process.env.BENCH_DB
const store = path ? new SqliteNotesStore({ path }) : undefined
await store?.migrate()

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] }
}

function createServer(): McpServer {
  const server = new McpServer(INFO, { requestState: { verify: codec.verify } })
  server.registerTool(
    'echo',
    { description: 'Echo the text back.', inputSchema: EchoInput },
    async ({ text: value }) => text(value)
  )
  server.registerTool(
    'confirm_echo',
    { description: 'Ask the user to confirm, then echo the text back.', inputSchema: EchoInput },
    async ({ text: value }, ctx) => {
      const state = ctx.mcpReq.requestState<ConfirmState>()
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', ConfirmForm)
      if (state?.tool !== 'confirm_echo' || state.text !== value || answer === undefined) {
        return inputRequired({
          inputRequests: { confirm: CONFIRM_REQUEST },
          requestState: await codec.mint({ tool: 'confirm_echo', text: value }, ctx),
        })
      }
      return text(answer.confirm ? value : 'not confirmed')
    }
  )
  server.registerTool(
    'progress',
    { description: 'Report progress three times, then answer.', inputSchema: NoInput },
    async (_args, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken
      if (progressToken !== undefined) {
        for (let step = 1; step <= PROGRESS_STEPS; step++) {
          await ctx.mcpReq.notify({
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
      description: 'Full-text search over the notes, best match first.',
      inputSchema: SearchInput,
      outputSchema: SearchOutput,
    },
    async ({ query, limit }) => {
      if (!store) throw new Error('BENCH_DB is not set')
      const page = await store.search(BENCH_PRINCIPAL, { text: query, offset: 0, limit })
      const value = {
        notes: page.items.map(searchHit),
        ...(page.nextOffset !== undefined && { nextCursor: searchCursor(page.nextOffset) }),
      }
      return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
    }
  )
  return server
}

const handler = createMcpHandler(createServer)
const app = createMcpHonoApp({ host: '127.0.0.1' })
app.all('/mcp', (c) => {
  const parsedBody = (c as unknown as { get(key: string): unknown }).get('parsedBody')
  return handler.fetch(c.req.raw, { parsedBody })
})

serveBench('sdk', app.fetch, () => (store ? store.close() : Promise.resolve()))
