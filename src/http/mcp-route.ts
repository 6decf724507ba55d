/**
 * @module http/mcp-route
 * The MCP endpoint: `POST /mcp` hands one message to the engine. Before the engine, in this order:
 * body size (413), authentication (400/401/503), Content-Type (415), strict UTF-8 (-32700).
 * `GET` and `DELETE` (authenticated) and any other method go to the engine too, which serves the first
 * two for 2025-era sessions and answers 405 otherwise (2026-07-28 has no sessions and no standalone
 * stream). The Origin/Host guard is applied by `createHttpApp` in front of this route.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono'
import { ErrorCode } from 'stateless-mcp'
import {
  decodeUtf8,
  isJsonMediaType,
  type McpHandler,
  type McpHttpInput,
  NOT_UTF8_MESSAGE,
  tooLargeMessage,
  UNSUPPORTED_MEDIA_TYPE_MESSAGE,
} from 'stateless-mcp/compose'
import { limitBody } from './body-limit.ts'
import { jsonRpcError, peekRequestId } from './errors.ts'

export interface McpRouteOptions {
  handler: McpHandler
  maxBodyBytes: number
  /**
   * Sets the `principal`, `client`, `grantedScopes`, `baseScopes` and `insufficientScope` context
   * variables (the last three only with auth) or answers 400/401/503; runs after the body-size check.
   */
  authenticate: MiddlewareHandler
}

/** What the engine needs to know of an authenticated request besides its method and body. */
function authenticated(c: Context): Omit<McpHttpInput, 'method' | 'body'> {
  return {
    headers: c.req.raw.headers,
    principal: c.get('principal'),
    client: c.get('client'),
    grantedScopes: c.get('grantedScopes'),
    baseScopes: c.get('baseScopes'),
    insufficientScope: c.get('insufficientScope'),
    signal: c.req.raw.signal,
  }
}

export function mcpRoute({ handler, maxBodyBytes, authenticate }: McpRouteOptions): Hono {
  const route = new Hono()

  route.post(
    '/mcp',
    limitBody({
      maxBytes: maxBodyBytes,
      onError: () => jsonRpcError(null, 413, tooLargeMessage(maxBodyBytes)),
    }),
    authenticate,
    async function serveMcp(c) {
      if (!isJsonMediaType(c.req.header('content-type'))) {
        return jsonRpcError(
          await peekRequestId(c, maxBodyBytes),
          415,
          UNSUPPORTED_MEDIA_TYPE_MESSAGE
        )
      }
      let body: string
      try {
        body = decodeUtf8(await c.req.arrayBuffer())
      } catch {
        return jsonRpcError(null, 400, NOT_UTF8_MESSAGE, {}, ErrorCode.ParseError)
      }
      return handler({ body, ...authenticated(c) })
    }
  )

  // GET and DELETE exist only for 2025-era sessions (a stream, an end); the engine decides, and answers
  // 405 for every method it does not serve. Anything else skips authentication: it can only be a 405.
  route.on(['GET', 'DELETE'], '/mcp', authenticate, function serveSession(c) {
    return handler({ method: c.req.method, body: '', ...authenticated(c) })
  })
  route.all('/mcp', function methodNotAllowed(c) {
    return handler({ method: c.req.method, body: '', headers: c.req.raw.headers, principal: '' })
  })

  return route
}
