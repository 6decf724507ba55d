/**
 * @module http/origin-guard
 * DNS-rebinding defence for the MCP endpoint (spec: validate `Origin` on every request; 403 when present
 * and not allowed) plus the classic `Host` allow-list. A request without `Origin` is allowed; a browser
 * page may reach the server only from an origin whose host is allowed or that is listed explicitly.
 *
 * @example
 * app.use('/mcp', originGuard({ allowedHosts: ['localhost', '127.0.0.1'], allowedOrigins: [] }))
 */
import type { MiddlewareHandler } from 'hono'
import { jsonRpcError, peekRequestId } from './errors.ts'

export interface OriginGuardOptions {
  /** Host names (no port) the server answers to, lower case. */
  allowedHosts: string[]
  /** Extra full origins (`https://app.example.com`) allowed to call from a browser. */
  allowedOrigins?: string[]
  /** Bodies up to this size are read to echo the request id in the 403. */
  maxBodyBytes?: number
}

/** Distinct allowed Host values remembered (a name with each port it is reached on). */
const ALLOWED_HEADERS_LIMIT = 64

/** Host name without the port, lower case; `undefined` when the header is malformed. */
function hostName(host: string): string | undefined {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase()
  } catch {
    return undefined
  }
}

export function originGuard({
  allowedHosts,
  allowedOrigins = [],
  maxBodyBytes = 65536,
}: OriginGuardOptions): MiddlewareHandler {
  const hosts = new Set(allowedHosts.map((host) => host.toLowerCase()))
  const origins = new Set(allowedOrigins.map((origin) => origin.toLowerCase()))
  const anyHost = hosts.has('*')
  /** Host header values already judged allowed, and their names (parsing a URL per request costs). */
  const allowedHeaders = new Map<string, string>()

  return async function guardOrigin(c, next) {
    const host = c.req.header('host')
    let name = host === undefined ? undefined : allowedHeaders.get(host)
    if (name === undefined && host !== undefined) {
      name = hostName(host)
      if (
        name !== undefined &&
        (anyHost || hosts.has(name)) &&
        allowedHeaders.size < ALLOWED_HEADERS_LIMIT
      ) {
        allowedHeaders.set(host, name)
      }
    }
    if (!anyHost && (name === undefined || !hosts.has(name))) {
      return jsonRpcError(
        await peekRequestId(c, maxBodyBytes),
        403,
        `Forbidden: the Host header "${host ?? ''}" is not allowed.`
      )
    }
    const origin = c.req.header('origin')
    if (origin !== undefined && !origins.has(origin.toLowerCase())) {
      let originHost: string | undefined
      try {
        originHost = new URL(origin).hostname.toLowerCase()
      } catch {
        originHost = undefined
      }
      if (originHost === undefined || !(anyHost ? originHost === name : hosts.has(originHost))) {
        return jsonRpcError(
          await peekRequestId(c, maxBodyBytes),
          403,
          `Forbidden: the Origin "${origin}" is not allowed.`
        )
      }
    }
    await next()
  }
}
