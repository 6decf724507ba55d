/**
 * @module scripts/bench/worker-agents
 * Cloudflare's stateless MCP handler for Workers, `createMcpHandler` from `agents/mcp/server`, as a
 * benchmark peer on workerd, wired as its guide (`agents/docs/mcp-servers.md`) shows: the handler
 * made once at module scope from a factory that builds a fresh SDK v2 `McpServer` per request, and
 * `handler(request, env, ctx)` as the Worker's `fetch`. The factory is the SDK bench server's own
 * (`sdk-server.ts`: same tools, same `requestState` check), so what differs from the `sdk` Worker is
 * only what agents puts around the SDK. Its guide asks for `nodejs_compat` (the handler uses
 * `AsyncLocalStorage`), which is the default at our compatibility date, so no flag is set.
 *
 * It serves 2026-07-28 natively, MRTR included (`inputRequired`, state and answers carried by the
 * client), so it runs in `workerd_tools_call` and `workerd_mrtr_flow` with the same requests as ours.
 * Bundled and served by `workerd.ts`.
 */
import { createMcpHandler } from 'agents/mcp/server'
import { sdkServerFactory } from './sdk-server.ts'

const handler = createMcpHandler(sdkServerFactory())

export default {
  fetch: (...[request, env, ctx]: Parameters<typeof handler>) => handler(request, env, ctx),
}
