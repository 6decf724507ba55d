/**
 * @module mcp/pagination
 * Opaque, replica-independent list cursors: the position and the list they belong to, base64url
 * encoded. A cursor from another list, a tampered or a foreign cursor is a -32602, and so is one
 * longer than any cursor this module makes (refused on its length, before it is decoded). Cursors
 * carry no secret and grant nothing: every page is still scoped to the caller.
 */
import { base64url } from 'jose'
import { ErrorCode, McpError } from './errors.ts'
import { decodeUtf8 } from './utf8.ts'

export const DEFAULT_PAGE_SIZE = 50
/**
 * Longest cursor accepted, in characters. The longest this module makes (a 20-character list name
 * and a position of 2^53) is under 70; anything longer is refused before any work is spent on it.
 */
export const MAX_CURSOR_LENGTH = 200

/**
 * The opaque cursor of position `offset` in the list named `list`, as `nextCursor` carries it;
 * {@link decodeCursor} reads it back.
 *
 * @example
 * ```ts
 * import { decodeCursor, encodeCursor } from 'stateless-mcp'
 *
 * const nextCursor = encodeCursor('notes', 50)
 * decodeCursor('notes', nextCursor) // 50
 * ```
 */
export function encodeCursor(list: string, offset: number): string {
  return base64url.encode(JSON.stringify({ l: list, o: offset }))
}

/**
 * The offset a cursor points at; `undefined` (no cursor) is the first page. A cursor of another
 * list, tampered with or too long is an `McpError` -32602.
 *
 * @example
 * ```ts
 * import { decodeCursor } from 'stateless-mcp'
 *
 * const offset = decodeCursor('notes', params.cursor) // 0 without a cursor
 * ```
 */
export function decodeCursor(list: string, cursor: string | undefined): number {
  if (cursor === undefined) return 0
  if (cursor.length > MAX_CURSOR_LENGTH) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `Invalid params: the cursor is longer than any cursor this server returns (${MAX_CURSOR_LENGTH} characters at most).`
    )
  }
  try {
    const decoded: unknown = JSON.parse(decodeUtf8(base64url.decode(cursor)))
    if (typeof decoded === 'object' && decoded !== null) {
      const { l, o } = decoded as { l?: unknown; o?: unknown }
      if (l === list && typeof o === 'number' && Number.isSafeInteger(o) && o >= 0) return o
    }
  } catch {
    // fall through to the error below
  }
  throw new McpError(
    ErrorCode.InvalidParams,
    'Invalid params: the cursor is invalid or belongs to another list.'
  )
}

/** The page of an in-memory list that starts at `offset`, with the next cursor when more items follow. */
export function paginate<T>(list: string, items: readonly T[], offset: number, pageSize: number) {
  const page = items.slice(offset, offset + pageSize)
  const next = offset + pageSize < items.length ? encodeCursor(list, offset + pageSize) : undefined
  return { page, nextCursor: next }
}
