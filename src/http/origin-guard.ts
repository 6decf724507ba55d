/**
 * @module http/origin-guard
 * The Hono middleware of the engine's Host/Origin check (`mcp/request-guard.ts`: DNS-rebinding
 * defence, 403 for a foreign Origin or Host), answering the refusal with the request id echoed when
 * the body is small enough to read it.
 *
 * @example
 * app.use('/mcp', originGuard({ allowedHosts: ['localhost', '127.0.0.1'], allowedOrigins: [] }))
 */
import type { MiddlewareHandler } from 'hono'
import { hostGuard, type HostGuardOptions } from 'stateless-mcp/compose'
import { jsonRpcError, peekRequestId } from './errors.ts'

export interface OriginGuardOptions extends HostGuardOptions {
  /** Bodies up to this size are read to echo the request id in the 403. */
  maxBodyBytes?: number
}

export function originGuard({
  maxBodyBytes = 65536,
  ...hosts
}: OriginGuardOptions): MiddlewareHandler {
  const judge = hostGuard(hosts)
  return async function guardOrigin(c, next) {
    const refusal = judge(c.req.header('host'), c.req.header('origin'))
    if (refusal !== undefined)
      return jsonRpcError(await peekRequestId(c, maxBodyBytes), 403, refusal)
    await next()
  }
}
