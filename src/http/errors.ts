/**
 * @module http/errors
 * The JSON-RPC error responses the HTTP layer answers with before (or instead of) the engine, their
 * text written by the engine's one writer (`mcp/errors.ts`, `errorResponseText`): 403 for a foreign
 * Origin/Host, 413, 415 and the -32700 of a body that is not UTF-8, the refusals of auth
 * (`bearer-auth.ts`: 400/401/503, and the 403 step-up the engine asks for), 500 from `app.onError`,
 * and a serverless entry's 500/503 when it cannot set up (`serverless.ts`). Every 4xx carries a
 * JSON-RPC error body, and echoes the request id when the body is small enough to read it cheaply
 * (`peekRequestId`).
 */
import type { Context } from 'hono'
import { jsonRpcErrorResponse, type RequestId, requestIdOf } from 'stateless-mcp/compose'

/** Best-effort id of a JSON-RPC request body, read as the envelope reads it (`null` when it cannot be). */
export async function peekRequestId(c: Context, maxBytes: number): Promise<RequestId | null> {
  const length = Number(c.req.header('content-length'))
  if (c.req.method !== 'POST' || !Number.isFinite(length) || length > maxBytes) return null
  try {
    return requestIdOf(JSON.parse(await c.req.text()))
  } catch {
    return null
  }
}

/** A JSON-RPC error response with `status` (the engine's writer, `mcp/request-guard.ts`). */
export const jsonRpcError = jsonRpcErrorResponse
