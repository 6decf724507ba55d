/**
 * @module http/body-limit
 * The request-size limit of the MCP endpoint (413 above it). A body with a `Content-Length` is judged
 * from that header alone (Node's HTTP parser and workerd guarantee the body matches it), without
 * touching `c.req.raw.body`: on @hono/node-server, that getter turns the lightweight request into a
 * full web `Request` with a stream adapter, which costs more than the rest of a small MCP request. A
 * chunked body, whose size is known only by reading it, goes through Hono's streaming `bodyLimit`.
 *
 * @example
 * route.post('/mcp', limitBody({ maxBytes: 1 << 20, onError: (c) => c.text('Too large', 413) }), serve)
 */
import type { Context, MiddlewareHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { declaredTooLarge } from 'stateless-mcp/compose'

export interface LimitBodyOptions {
  maxBytes: number
  onError: (c: Context) => Response | Promise<Response>
}

export function limitBody({ maxBytes, onError }: LimitBodyOptions): MiddlewareHandler {
  const streamingLimit = bodyLimit({ maxSize: maxBytes, onError })
  return async function limitBody(c, next) {
    const headers = c.req.raw.headers
    if (headers.has('content-length') && !headers.has('transfer-encoding')) {
      return declaredTooLarge(headers, maxBytes) ? onError(c) : next()
    }
    return streamingLimit(c, next)
  }
}
