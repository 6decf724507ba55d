/**
 * @module client/exchange
 * One HTTP exchange of the driver. `postRequest` sends one JSON-RPC request as a POST with the
 * headers of revision 2026-07-28: `Content-Type`, `Accept`, `MCP-Protocol-Version`, `Mcp-Method`, and
 * `Mcp-Name` for `tools/call`/`prompts/get` (`params.name`), `resources/read` (`params.uri`) and the
 * tasks extension's `tasks/get`, `tasks/update` and `tasks/cancel` (`params.taskId`), sent as
 * `=?base64?…?=` unless it is plain visible ASCII (`encodeHeaderValue`). `readAnswer` reads what
 * came back: one `application/json` message, or a `text/event-stream` whose notifications go to the
 * caller and which ends at the response carrying the request's id. A server→client request on a
 * stream is a protocol error (servers never send them in this revision); a 502/503/504 is a transport
 * failure (no replica answered), which the round loop may retry.
 *
 * The `_meta` of a request and the multi round-trip loop are the caller's (`client/client`,
 * `client/rounds`).
 */
import {
  HEADER_METHOD,
  HEADER_NAME,
  HEADER_PROTOCOL_VERSION,
  NAMED_METHODS,
  PROTOCOL_VERSION,
} from '../mcp/protocol.ts'
import { isObject, type JsonObject, type RequestId } from '../mcp/wire.ts'
import { transportFailure, untilAborted } from './abort.ts'
import { McpClientError, McpDriverError, protocolError } from './errors.ts'
import type { HeadersOption } from './options.ts'
import { sseData } from './sse.ts'

const ACCEPT = 'application/json, text/event-stream'
/** Gateway answers that mean no replica produced a response. */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([502, 503, 504])
const PLAIN_HEADER_VALUE = /^[\x21-\x7e]*$/
/** A literal that a server would read as the sentinel must itself be encoded. */
const SENTINEL_LIKE = /^=\?base64\?.*\?=$/
const encoder = new TextEncoder()

export interface JsonRpcNotification {
  jsonrpc: '2.0'
  method: string
  params?: JsonObject
}

/** A JSON-RPC error object as the server sent it (shape checked). */
export interface ErrorObject {
  code: number
  message: string
  data?: unknown
}

/** The message that ends an exchange: the request's result or its JSON-RPC error. */
export type FinalMessage = { result: JsonObject } | { error: ErrorObject }

/** What one exchange needs from its client. */
export interface Transport {
  readonly fetch: typeof fetch
  /** Extra headers, set before the protocol headers (which they cannot replace). */
  readonly headers: HeadersOption | undefined
}

/**
 * The value to send in `Mcp-Name` (or an `Mcp-Param-*` header): unchanged when it is visible ASCII,
 * otherwise `=?base64?<Base64 of its UTF-8>?=`. A literal that looks like the sentinel is encoded too,
 * so the server never decodes a value that was not encoded.
 */
export function encodeHeaderValue(value: string): string {
  if (PLAIN_HEADER_VALUE.test(value) && !SENTINEL_LIKE.test(value)) return value
  let binary = ''
  for (const byte of encoder.encode(value)) binary += String.fromCharCode(byte)
  return `=?base64?${btoa(binary)}?=`
}

/** POSTs request `id`; rejects with a transport failure, or the signal's reason after an abort. */
export async function postRequest(
  transport: Transport,
  url: string,
  id: RequestId,
  method: string,
  params: JsonObject,
  signal: AbortSignal
): Promise<Response> {
  const extra = typeof transport.headers === 'function' ? transport.headers() : transport.headers
  const headers = new Headers(await untilAborted(Promise.resolve(extra), signal))
  headers.set('content-type', 'application/json')
  headers.set('accept', ACCEPT)
  headers.set(HEADER_PROTOCOL_VERSION, PROTOCOL_VERSION)
  headers.set(HEADER_METHOD, method)
  const field = NAMED_METHODS[method]
  if (field) headers.set(HEADER_NAME, encodeHeaderValue(params[field] as string))
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params })
  try {
    return await untilAborted(
      transport.fetch(url, { method: 'POST', headers, body, signal }),
      signal
    )
  } catch (error) {
    throw transportFailure(error, signal, `POST ${url} failed`)
  }
}

/** Reads the answer to request `id`: the final message, or `undefined` if a stream ended without it. */
export async function readAnswer(
  response: Response,
  id: RequestId,
  signal: AbortSignal,
  onNotification: ((notification: JsonRpcNotification) => void) | undefined
): Promise<FinalMessage | undefined> {
  const { status } = response
  const type = response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() ?? ''
  if (RETRYABLE_STATUSES.has(status)) {
    await discard(response)
    throw new McpDriverError('transport', `HTTP ${status}: no replica answered`)
  }
  if (type === 'text/event-stream' && response.ok && response.body) {
    for await (const data of sseData(response.body, signal)) {
      const message = parseMessage(data)
      if (typeof message.method === 'string' && !('id' in message)) {
        onNotification?.(message as unknown as JsonRpcNotification)
        continue
      }
      return finalMessage(message, id)
    }
    return undefined
  }
  if (type === 'application/json') {
    let text: string
    try {
      text = await untilAborted(response.text(), signal)
    } catch (error) {
      throw transportFailure(error, signal, 'reading the response failed')
    }
    const final = finalMessage(parseMessage(text), id)
    if ('result' in final && !response.ok) {
      throw protocolError(`HTTP ${status} carried a result instead of an error`)
    }
    return final
  }
  await discard(response)
  throw protocolError(`unexpected answer: HTTP ${status} ${type || 'without a content type'}`)
}

/** The server's JSON-RPC error as the caller sees it. */
export function serverError(error: ErrorObject, httpStatus: number): McpClientError {
  return new McpClientError(error.code, error.message, error.data, httpStatus)
}

function parseMessage(text: string): JsonObject {
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    throw protocolError('the server sent a message that is not valid JSON')
  }
  if (!isObject(message) || message.jsonrpc !== '2.0') {
    throw protocolError('the server sent something that is not a JSON-RPC 2.0 message')
  }
  return message
}

/** The error for an answer that carries another request's id. */
function answeredAnother(id: unknown): McpDriverError {
  return protocolError(`the server answered another request (id ${String(id)})`)
}

function finalMessage(message: JsonObject, id: RequestId): FinalMessage {
  if (typeof message.method === 'string') {
    throw protocolError(
      'id' in message
        ? `the server sent a ${message.method} request; 2026-07-28 servers never send requests`
        : `the server sent a ${message.method} notification where the response belongs`
    )
  }
  if ('error' in message) {
    const { error } = message
    if (message.id !== id && message.id !== null) {
      throw answeredAnother(message.id)
    }
    if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      throw protocolError('the server sent a malformed JSON-RPC error')
    }
    return { error: { code: error.code as number, message: error.message, data: error.data } }
  }
  if (message.id !== id) {
    throw answeredAnother(message.id)
  }
  if (!isObject(message.result)) {
    throw protocolError('the server sent a response without a result object')
  }
  return { result: message.result }
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {})
}
