/**
 * @module stateless-mcp/hono
 * The engine in a Hono app: {@link mcpRoute} mounts a server made by `createMcpServer` on its path,
 * for teams that compose the MCP endpoint with their own routes and middleware. The server's own
 * checks (Host/Origin, body size, `authenticate`) still apply; Hono middleware in front of the route
 * runs first. `hono` is an optional peer of the package, needed only by this entry.
 */
import { Hono } from 'hono'
import type { McpServer } from './front-door.ts'

/** Where {@link mcpRoute} mounts the server. */
export interface McpRouteOptions {
  /** The endpoint's path; the same as the server's `path` option. Default `/mcp`. */
  path?: string
}

/**
 * A Hono route serving `server` on its path, every method (POST; GET, DELETE for 2025 sessions;
 * 405 for the rest, answered by the engine).
 *
 * @example
 * import { Hono } from 'hono'
 * import { logger } from 'hono/logger'
 * import { createMcpServer } from 'stateless-mcp'
 * import { mcpRoute } from 'stateless-mcp/hono'
 *
 * const mcp = createMcpServer({ info: { name: 'notes', version: '1.0.0' }, tools: [hello] })
 * const app = new Hono()
 * app.use(logger())
 * app.get('/', (c) => c.text('see /mcp'))
 * app.route('/', mcpRoute(mcp))
 * export default app
 */
export function mcpRoute(server: McpServer, { path = '/mcp' }: McpRouteOptions = {}): Hono {
  const route = new Hono()
  route.all(path, function serveMcp(c) {
    return server.fetch(c.req.raw)
  })
  return route
}
