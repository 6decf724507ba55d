/**
 * @module scripts/bench/peer-mcp-handler
 * `mcp-handler` (Vercel's framework-agnostic Request → Response adapter over the official SDK v2,
 * `@modelcontextprotocol/server`) as a benchmark peer, wired as its README shows:
 * `createMcpHandler(initialize, options)` once at module scope, mounted as the fetch handler of a
 * Node HTTP server (`serve.ts`; on Vercel it would be a route handler). The initializer registers the
 * SDK bench server's very tools with the same `requestState` check (`sdk-server.ts`), so what differs
 * from the `sdk` kind is only what mcp-handler puts around the SDK. `search_notes` is listed with
 * the same schemas; there is no store here (the peers are not measured on search).
 *
 * Serving is stateless, as the README says: 2026-07-28 natively (the same requests as ours), 2025-era
 * clients through the SDK's stateless legacy fallback (no `Mcp-Session-Id`; GET and DELETE answer
 * 405). That fallback has no session to carry a server→client `elicitation/create`, and mcp-handler
 * offers no sessionful mode, so it is not in the 2025 interactive flow. Loopback only.
 */
import { createMcpHandler } from 'mcp-handler'
import { registerSdkBenchTools, sdkServerOptions } from './sdk-server.ts'
import { serveBench } from './serve.ts'

const handler = createMcpHandler((server) => registerSdkBenchTools(server), {
  ...sdkServerOptions,
  serverInfo: { name: 'notes-mcp-bench-mcp-handler', version: '0.0.0' },
})

serveBench('mcp-handler', handler)
