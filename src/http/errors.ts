/**
 * @module http/errors
 * JSON-RPC error bodies for answers the HTTP layer gives before the engine sees a message (403 for a
 * foreign Origin/Host, 405, 413, 415, 401/403 from auth). Every 4xx carries a JSON-RPC error body, and
 * echoes the request id when the body is small enough to read it cheaply.
 */
import type { Context } from 'hono'
import { ErrorCode, type ErrorCode as Code } from '../mcp/errors.ts'
import type { RequestId } from '../mcp/wire.ts'

/** Best-effort id of a JSON-RPC request body (`null` when it cannot be read). */
export async function peekRequestId(c: Context, maxBytes: number): Promise<RequestId | null> {
  const length = Number(c.req.header('content-length'))
  if (c.req.method !== 'POST' || !Number.isFinite(length) || length > maxBytes) return null
  try {
    const message = JSON.parse(await c.req.text()) as { id?: unknown }
    const id = message?.id
    return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id))
      ? id
      : null
  } catch {
    return null
  }
}

export function jsonRpcError(
  id: RequestId | null,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code: Code = ErrorCode.InvalidRequest
): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}
