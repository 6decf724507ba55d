/**
 * @module mcp/legacy/classify
 * Which protocol era one POSTed JSON value belongs to: the single place that decides. The body decides,
 * headers only break the tie for what the body cannot say:
 * - a request whose `params._meta` claims a protocol version is 2026-07-28 (modern);
 * - `initialize`, a request without a claim and a posted JSON-RPC response are 2025-era;
 * - a request or notification without a claim but sent with a modern `MCP-Protocol-Version` header is
 *   modern, so the modern envelope answers it exactly as before (a request then gets its -32602
 *   "params._meta is required"; a notification its 202);
 * - a batch is modern if any element is (the modern envelope then refuses the batch), else 2025-era
 *   when any element is (`batch.ts` serves it, or refuses it with what is wrong); an element that is
 *   no JSON-RPC message claims no era (batches do not nest: an array element is no message), so an
 *   empty batch or one of nothing but such elements goes where the headers say;
 * - anything else that is not a JSON-RPC message at all is modern, so it gets the modern envelope's
 *   error.
 * It looks at most one level into a batch and never recurses, whatever the value's depth (the body's
 * nesting is bounded before, by `parseJson`). GET and DELETE have no body and never reach it: one
 * naming a session is 2025-era by definition; for one naming none, `headerEra` says who is asking.
 */
import {
  HEADER_PROTOCOL_VERSION,
  META_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '../protocol.ts'
import { isObject } from '../wire.ts'

export type Era = 'modern' | 'legacy'

export function classifyMessage(message: unknown, headers: Headers): Era {
  if (!Array.isArray(message)) return claimedEra(message, headers) ?? 'modern'
  const claims = message.map((item) => claimedEra(item, headers))
  if (claims.includes('modern')) return 'modern'
  return claims.includes('legacy') ? 'legacy' : headerEra(headers)
}

/**
 * The era one value that should be a single JSON-RPC message claims; `undefined` when it is no
 * message at all (an array is not one).
 */
function claimedEra(message: unknown, headers: Headers): Era | undefined {
  if (!isObject(message)) return undefined
  if (typeof message.method !== 'string') {
    // A reply to a server→client request: only 2025 sessions have that channel.
    return 'id' in message && ('result' in message || 'error' in message) ? 'legacy' : undefined
  }
  const meta = isObject(message.params) ? message.params._meta : undefined
  if (isObject(meta) && META_PROTOCOL_VERSION in meta) return 'modern'
  if (message.method === 'initialize') return 'legacy'
  return headerEra(headers)
}

/**
 * The era the headers alone claim: modern when `MCP-Protocol-Version` names a 2026-07-28 version,
 * else 2025-era (a 2025-03-26 client sends no version header; a later one its negotiated 2025 one).
 */
export function headerEra(headers: Headers): Era {
  const header = headers.get(HEADER_PROTOCOL_VERSION)?.trim()
  return header !== undefined && SUPPORTED_PROTOCOL_VERSIONS.includes(header) ? 'modern' : 'legacy'
}
