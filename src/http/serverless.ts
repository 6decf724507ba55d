/**
 * @module http/serverless
 * What a serverless entry (the Worker, and the Lambda and Netlify functions) answers in front of its
 * app, none of it cached and the reason only in the log: `setupFailure` while its setup failed (500
 * for a misconfiguration, 503 for what is likely passing, so a client may retry) and
 * `refusedExposure` for a request that reaches a deployment without auth under a name that is not
 * loopback (the safe default of `config.ts`, checked per request since such an entry has no
 * listening address; 500 "misconfigured" unless ALLOW_UNAUTHENTICATED=1).
 */
import { assertSafeExposure, type Config } from '../config.ts'
import { ErrorCode } from 'stateless-mcp'
import { logError } from 'stateless-mcp/compose'
import { jsonRpcError } from './errors.ts'

/** What a client is told while the deployment, not the request, is at fault. */
export const MISCONFIGURED =
  'Internal error: the server is misconfigured; the reason is in its log.'

/** A serverless entry's own answer: a JSON-RPC error with `status` and `message`, never cached. */
export function setupFailed(status: 500 | 503, message: string): Response {
  return jsonRpcError(
    null,
    status,
    message,
    { 'cache-control': 'no-store' },
    ErrorCode.InternalError
  )
}

/** The answer while setup failed with `error`: 500 when `misconfigured` says so, else 503. */
export function setupFailure(error: unknown, misconfigured: (error: unknown) => boolean): Response {
  return misconfigured(error)
    ? setupFailed(500, MISCONFIGURED)
    : setupFailed(503, 'Service unavailable: the server could not start; try again shortly.')
}

/** The refusal of `request` when it reaches an unsafe deployment (module header); else undefined. */
export function refusedExposure(config: Config, request: Request): Response | undefined {
  try {
    assertSafeExposure({ ...config, host: new URL(request.url).hostname })
    return undefined
  } catch (error) {
    logError('refusing an unauthenticated public deployment', error)
    return setupFailed(500, MISCONFIGURED)
  }
}
