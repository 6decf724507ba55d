/**
 * @module scripts/bench/peer-tmcp
 * `tmcp` as a benchmark peer: an `McpServer` with the zod adapter (`@tmcp/adapter-zod`) behind
 * `HttpTransport` (`@tmcp/transport-http`), as their READMEs show, `transport.respond(request)` as a
 * fetch handler on @hono/node-server (`serve.ts`; the README's own example uses another Node adapter
 * of the same kind). Same tools as `ours-server.ts`: `echo`, `confirm_echo` (`server.elicitation`
 * with the key `confirm`), `progress` (`server.progress`, three times) and `search_notes` (listed
 * with the same schemas; not served, the peers are not measured on search).
 *
 * Choices: tmcp serves 2026-07-28 per-request calls without sessions, so `tools_call` and
 * `tools_list` send it the same 2026-07-28 requests as ours. 2025-era clients always get a session
 * (tmcp has no stateless mode for them); the README's serverless answer is its Redis session
 * managers, and here they stay the default in-memory ones, so every 2025 session, and with it the
 * interactive flow, lives in this one process (sticky). Loopback only.
 */
import { ZodJsonSchemaAdapter } from '@tmcp/adapter-zod'
import { HttpTransport } from '@tmcp/transport-http'
import { McpServer } from 'tmcp'
import { ConfirmForm, EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'
import { serveBench } from './serve.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS, TOOL_DESCRIPTIONS } from './wire.ts'

const server = new McpServer(
  { name: 'notes-mcp-bench-tmcp', version: '0.0.0', description: 'The bench tools on tmcp.' },
  { adapter: new ZodJsonSchemaAdapter(), capabilities: { tools: {} } }
)

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] })

server.tool(
  { name: 'echo', description: TOOL_DESCRIPTIONS.echo, schema: EchoInput },
  ({ text: value }) => text(value)
)
server.tool(
  {
    name: 'confirm_echo',
    description: TOOL_DESCRIPTIONS.confirm_echo,
    schema: EchoInput,
  },
  async ({ text: value }) => {
    const answer = await server.elicitation(CONFIRM_MESSAGE, ConfirmForm, { key: 'confirm' })
    return text(answer.action === 'accept' && answer.content?.confirm ? value : 'not confirmed')
  }
)
server.tool({ name: 'progress', description: TOOL_DESCRIPTIONS.progress, schema: NoInput }, () => {
  for (let step = 1; step <= PROGRESS_STEPS; step++) server.progress(step, PROGRESS_STEPS)
  return text('done')
})
server.tool(
  {
    name: 'search_notes',
    description: TOOL_DESCRIPTIONS.search_notes,
    schema: SearchInput,
    outputSchema: SearchOutput,
  },
  () => {
    throw new Error('search_notes is not served by this peer')
  }
)

const transport = new HttpTransport(server, { path: '/mcp' })

serveBench(
  'tmcp',
  async (request) => (await transport.respond(request)) ?? new Response(null, { status: 404 })
)
