/**
 * @module scripts/bench/bare-app
 * The ceiling: a bare Hono app whose `POST /mcp` parses the JSON body and answers a small JSON-RPC
 * result — the echo of `tools/call`, or a fixed `tools/list` naming the same four tools as the real
 * servers — with none of the protocol's checks. Nothing an MCP server does can be cheaper than this on
 * the same stack. Runtime-neutral: served on Node by `bare.ts` and on workerd by `worker-bare.ts`.
 */
import { Hono } from 'hono'

interface Message {
  id?: unknown
  method?: unknown
  params?: { arguments?: { text?: unknown } }
}

const TOOLS = ['echo', 'confirm_echo', 'progress', 'search_notes'].map((name) => ({
  name,
  description: `The ${name} tool.`,
  inputSchema: { type: 'object' },
}))

export const bareApp = new Hono()
bareApp.post('/mcp', async (c) => {
  const message = await c.req.json<Message>()
  if (message.method === 'tools/list') {
    return c.json({
      jsonrpc: '2.0',
      id: message.id,
      result: { tools: TOOLS, resultType: 'complete' },
    })
  }
  return c.json({
    jsonrpc: '2.0',
    id: message.id,
    result: {
      content: [{ type: 'text', text: message.params?.arguments?.text }],
      resultType: 'complete',
    },
  })
})
