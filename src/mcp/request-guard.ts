/**
 * @module mcp/request-guard
 * What an MCP endpoint checks of an HTTP request before the engine reads it, written once for every
 * face that serves the engine (the front door's `fetch`, `front-door.ts`, and the Hono face of the
 * notes app, `http/`): the DNS-rebinding defence (`Origin` validated on every request, 403 when
 * present and not allowed, as the spec requires; the classic `Host` allow-list beside it), the
 * body's declared size (413), its media type (415) and its strict UTF-8 (-32700), each refusal a
 * JSON-RPC error response ({@link jsonRpcErrorResponse}). Web standards only.
 */
import { readBounded } from './bounded-body.ts'
import { ErrorCode, errorResponseText, type ErrorCode as Code } from './errors.ts'
import { decodeUtf8 } from './utf8.ts'
import type { RequestId } from './wire.ts'

/**
 * The Host names a server answers to until told otherwise: loopback only. Start from it to allow a
 * public name beside local use.
 *
 * @example
 * ```ts
 * import { createMcpServer, LOOPBACK_HOSTS } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, {
 *   allowedHosts: [...LOOPBACK_HOSTS, 'notes.example.com'],
 * })
 * ```
 */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]']

/**
 * The default largest request body, in bytes (1 MiB): `createMcpServer`'s `maxBodyBytes` unless
 * given, and a sensible bound for a face of one's own.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_BODY_BYTES } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, { maxBodyBytes: 4 * DEFAULT_MAX_BODY_BYTES })
 * ```
 */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** What {@link hostGuard} allows: the Host names answered, and browser origins besides theirs. */
export interface HostGuardOptions {
  /** Host names (no port) the server answers to; `*` allows any. Compared case-insensitively. */
  allowedHosts: readonly string[]
  /** Extra full origins (`https://app.example.com`) allowed to call from a browser. */
  allowedOrigins?: readonly string[]
}

/**
 * Judges a request's `Host` and `Origin` headers: answers the refusal's message, or `undefined`
 * when the request may go on.
 */
export type HostGuard = (host: string | undefined, origin: string | undefined) => string | undefined

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

/**
 * The Host/Origin check of an endpoint. A request without `Origin` is allowed (not a browser's);
 * a browser page may call only from an origin whose host is allowed, or one listed in
 * `allowedOrigins`. With `allowedHosts: ['*']` any Host is answered, and a browser only from the
 * host it called.
 *
 * @example
 * const guard = hostGuard({ allowedHosts: ['notes.example.com'] })
 * guard('notes.example.com', 'https://evil.example') // → 'Forbidden: the Origin "https://evil.example" is not allowed.'
 */
export function hostGuard({ allowedHosts, allowedOrigins = [] }: HostGuardOptions): HostGuard {
  const hosts = new Set(allowedHosts.map((host) => host.toLowerCase()))
  const origins = new Set(allowedOrigins.map((origin) => origin.toLowerCase()))
  const anyHost = hosts.has('*')
  /** Host header values already judged allowed, and their names (parsing a URL per request costs). */
  const allowedHeaders = new Map<string, string>()

  return function judgeHost(host, origin) {
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
    if (!anyHost && (name === undefined || !hosts.has(name)))
      return `Forbidden: the Host header "${host ?? ''}" is not allowed.`
    if (origin === undefined || origins.has(origin.toLowerCase())) return undefined
    let originHost: string | undefined
    try {
      originHost = new URL(origin).hostname.toLowerCase()
    } catch {
      originHost = undefined
    }
    if (originHost !== undefined && (anyHost ? originHost === name : hosts.has(originHost)))
      return undefined
    return `Forbidden: the Origin "${origin}" is not allowed.`
  }
}

/**
 * A JSON-RPC error response with HTTP `status`: what an endpoint answers before (or instead of) the
 * engine. `headers` join its `content-type`.
 *
 * @example
 * return jsonRpcErrorResponse(null, 413, 'Payload Too Large: the body exceeds 1048576 bytes.')
 */
export function jsonRpcErrorResponse(
  id: RequestId | null,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code: Code = ErrorCode.InvalidRequest
): Response {
  return new Response(errorResponseText(id, { code, message }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}

/**
 * The 413 message of a body over `maxBytes`, for a refusal of one's own that reads as the engine's.
 *
 * @example
 * ```ts
 * import { jsonRpcErrorResponse, tooLargeMessage } from 'stateless-mcp/compose'
 *
 * return jsonRpcErrorResponse(null, 413, tooLargeMessage(1_048_576))
 * ```
 */
export function tooLargeMessage(maxBytes: number): string {
  return `Payload Too Large: the body exceeds ${maxBytes} bytes.`
}

/**
 * Whether a declared `Content-Length` is over `maxBytes` (or not a length at all). A request with
 * none, or chunked, is judged while its body is read ({@link readBody}).
 *
 * @example
 * ```ts
 * import { declaredTooLarge, jsonRpcErrorResponse, tooLargeMessage } from 'stateless-mcp/compose'
 *
 * if (declaredTooLarge(request.headers, maxBytes)) {
 *   return jsonRpcErrorResponse(null, 413, tooLargeMessage(maxBytes))
 * }
 * ```
 */
export function declaredTooLarge(headers: Headers, maxBytes: number): boolean {
  const length = headers.get('content-length')
  if (length === null || headers.has('transfer-encoding')) return false
  return !/^\d+$/.test(length) || Number(length) > maxBytes
}

/**
 * Whether the request says its body is JSON (`application/json`, any parameters): an MCP POST
 * whose `Content-Type` is not is answered 415.
 *
 * @example
 * ```ts
 * import { isJsonMediaType } from 'stateless-mcp/compose'
 *
 * isJsonMediaType('application/json; charset=utf-8') // true
 * isJsonMediaType('text/plain') // false
 * ```
 */
export function isJsonMediaType(contentType: string | null | undefined): boolean {
  return contentType != null && /^application\/json\s*(;|$)/i.test(contentType)
}

/**
 * The 415 message of a POST whose body is not declared JSON.
 *
 * @example
 * ```ts
 * import {
 *   isJsonMediaType,
 *   jsonRpcErrorResponse,
 *   UNSUPPORTED_MEDIA_TYPE_MESSAGE,
 * } from 'stateless-mcp/compose'
 *
 * if (!isJsonMediaType(request.headers.get('content-type'))) {
 *   return jsonRpcErrorResponse(null, 415, UNSUPPORTED_MEDIA_TYPE_MESSAGE)
 * }
 * ```
 */
export const UNSUPPORTED_MEDIA_TYPE_MESSAGE =
  'Unsupported Media Type: send the JSON-RPC message as application/json.'

/**
 * The -32700 message of a body that is not UTF-8 (answered with HTTP 400).
 *
 * @example
 * ```ts
 * import { ErrorCode } from 'stateless-mcp'
 * import { jsonRpcErrorResponse, NOT_UTF8_MESSAGE } from 'stateless-mcp/compose'
 *
 * return jsonRpcErrorResponse(null, 400, NOT_UTF8_MESSAGE, {}, ErrorCode.ParseError)
 * ```
 */
export const NOT_UTF8_MESSAGE = 'Parse error: the body is not valid UTF-8.'

/**
 * The body of `request` as text, read at most `maxBytes` into memory: `undefined` when it grows
 * past that (the reading stops there), a `TypeError` when it is not well-formed UTF-8.
 *
 * @example
 * ```ts
 * import { ErrorCode } from 'stateless-mcp'
 * import {
 *   jsonRpcErrorResponse,
 *   NOT_UTF8_MESSAGE,
 *   readBody,
 *   tooLargeMessage,
 * } from 'stateless-mcp/compose'
 *
 * let body: string | undefined
 * try {
 *   body = await readBody(request, maxBytes)
 * } catch {
 *   return jsonRpcErrorResponse(null, 400, NOT_UTF8_MESSAGE, {}, ErrorCode.ParseError)
 * }
 * if (body === undefined) return jsonRpcErrorResponse(null, 413, tooLargeMessage(maxBytes))
 * ```
 */
export async function readBody(request: Request, maxBytes: number): Promise<string | undefined> {
  const bytes = await readBounded(request.body, maxBytes)
  return bytes && decodeUtf8(bytes)
}
