/**
 * @module scripts/bench/worker-sdk
 * The official SDK's bench server (`sdk-server.ts`) as a Worker, wired as on Node (`sdk.ts`):
 * `createMcpHonoApp()` and `createMcpHandler(factory)`, `handler.fetch(c.req.raw, { parsedBody })`.
 * Bundled and served by `workerd.ts`.
 */
import { createMcpHonoApp } from '@modelcontextprotocol/hono'
import { createMcpHandler } from '@modelcontextprotocol/server'
import { sdkServerFactory } from './sdk-server.ts'

const handler = createMcpHandler(sdkServerFactory())
const app = createMcpHonoApp({ host: '127.0.0.1' })
app.all('/mcp', (c) => {
  const parsedBody = (c as unknown as { get(key: string): unknown }).get('parsedBody')
  return handler.fetch(c.req.raw, { parsedBody })
})

export default app
