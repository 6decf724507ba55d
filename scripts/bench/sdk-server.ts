/**
 * @module scripts/bench/sdk-server
 * The official SDK's bench server, runtime-neutral so the Node process (`sdk.ts`) and the Worker build
 * (`worker-sdk.ts`) serve exactly the same thing: the factory `createMcpHandler` calls per request,
 * building a fresh `McpServer` each time, as the SDK's documentation shows. Everything that can be
 * built once is (the zod schemas, the elicitation request, the state codec), as a careful user would
 * write it: this is the SDK at its best, not at its most naive.
 *
 * Same tools as `ours-server.ts`: `echo`; `confirm_echo` returns `inputRequired(...)` with a
 * `createRequestStateCodec` (HMAC-SHA256) state bound to the method and the principal, verified by
 * `ServerOptions.requestState.verify` and checked against the arguments on round 2 (for a 2025-era
 * session the SDK's legacy shim serves the same return as a server→client request); `progress` sends
 * three `notifications/progress` (the response upgrades to SSE); `search_notes` runs the same
 * `SqliteNotesStore` query and returns the same hits (Node only). With a store it also has
 * `create_note` and a `notes` resource, so `subscriptions/listen` streams hear
 * `notifications/resources/list_changed` when a note is created (the `listen_scale` scenario).
 * The peers built on the same SDK (`mcp-handler`, `agents`' Worker handler) register these very tools
 * with the same options (`registerSdkBenchTools`, `sdkServerOptions`).
 */
import {
  acceptedContent,
  createRequestStateCodec,
  inputRequired,
  McpServer,
  type CallToolResult,
  type ServerContext,
} from '@modelcontextprotocol/server'
import * as z from 'zod'
import type { NotesStore } from '../../src/notes/store.ts'
import { ConfirmForm, EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'
import { BENCH_PRINCIPAL, searchCursor, searchHit } from './search-hits.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS, TOOL_DESCRIPTIONS } from './wire.ts'

const INFO = { name: 'notes-mcp-bench-sdk', version: '0.0.0' }
const CreateNoteInput = z.strictObject({
  title: z.string().min(1).max(200),
  body: z.string().max(10_000),
})

const CONFIRM_REQUEST = inputRequired.elicit({
  message: CONFIRM_MESSAGE,
  requestedSchema: ConfirmForm,
})

interface ConfirmState {
  tool: string
  text: string
}

/**
 * The state codec, made on first use: a Worker may not draw random values (its key) at module scope.
 * One per process or isolate, so every round of a flow meets the key that minted its state.
 */
let codec: ReturnType<typeof createRequestStateCodec<ConfirmState>> | undefined
function stateCodec() {
  codec ??= createRequestStateCodec<ConfirmState>({
    key: crypto.getRandomValues(new Uint8Array(32)),
    ttlSeconds: 600,
    bind: (ctx: ServerContext) => `${ctx.mcpReq.method}\u0000${BENCH_PRINCIPAL}`,
  })
  return codec
}

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] }
}

export interface SdkBenchOptions {
  /** The seeded notes (search) and where `create_note` writes; absent on Workers. */
  store?: NotesStore
  /** Called after `create_note` stored its note: the handler's `notify.resourcesChanged()`. */
  onNotesChanged?: () => void
}

/** The server options every SDK-built bench server takes: how a round-2 `requestState` is checked. */
export const sdkServerOptions = {
  requestState: {
    verify: (state: string, ctx: ServerContext) => stateCodec().verify(state, ctx),
  },
}

/**
 * Registers the bench tools on an SDK `McpServer`: what the SDK's factory below does, and what the
 * peers built on the same SDK (`mcp-handler`, `agents`) call from their own initializers.
 */
export function registerSdkBenchTools(
  server: McpServer,
  { store, onNotesChanged }: SdkBenchOptions = {}
): void {
  server.registerTool(
    'echo',
    { description: TOOL_DESCRIPTIONS.echo, inputSchema: EchoInput },
    async ({ text: value }) => text(value)
  )
  server.registerTool(
    'confirm_echo',
    { description: TOOL_DESCRIPTIONS.confirm_echo, inputSchema: EchoInput },
    async ({ text: value }, ctx) => {
      const state = ctx.mcpReq.requestState<ConfirmState>()
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', ConfirmForm)
      if (state?.tool !== 'confirm_echo' || state.text !== value || answer === undefined) {
        return inputRequired({
          inputRequests: { confirm: CONFIRM_REQUEST },
          requestState: await stateCodec().mint({ tool: 'confirm_echo', text: value }, ctx),
        })
      }
      return text(answer.confirm ? value : 'not confirmed')
    }
  )
  server.registerTool(
    'progress',
    { description: TOOL_DESCRIPTIONS.progress, inputSchema: NoInput },
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
      description: TOOL_DESCRIPTIONS.search_notes,
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
      return {
        content: [{ type: 'text', text: JSON.stringify(value) }],
        structuredContent: value,
      }
    }
  )
  if (store) {
    server.registerResource(
      'notes',
      'notes://all',
      { description: 'Every note, newest first.', mimeType: 'application/json' },
      async (uri) => {
        const page = await store.list(BENCH_PRINCIPAL, 0, 10)
        return { contents: [{ uri: uri.href, text: JSON.stringify(page.items.map(searchHit)) }] }
      }
    )
    server.registerTool(
      'create_note',
      { description: 'Create a note.', inputSchema: CreateNoteInput },
      async ({ title, body }) => {
        const note = await store.create(BENCH_PRINCIPAL, { title, body, tags: [] }, Date.now())
        onNotesChanged?.()
        return text(note.id)
      }
    )
  }
}

/** The factory `createMcpHandler` runs once per request (and once per 2025 session). */
export function sdkServerFactory(options: SdkBenchOptions = {}): () => McpServer {
  return function createServer(): McpServer {
    const server = new McpServer(INFO, sdkServerOptions)
    registerSdkBenchTools(server, options)
    return server
  }
}
