/**
 * @module mcp/http-input
 * What the HTTP layer hands the engine for one request (`McpHttpInput`: the method, body, headers, the
 * authenticated caller and what its token grants) and the shape of the engine's answer to it
 * (`McpHandler`), so that both eras' faces, the scope checks and any HTTP framework meet in a module
 * that depends on nothing but the wire types.
 */
import type { RequestId } from './wire.ts'

/** One HTTP request to the MCP endpoint, as the engine sees it. */
export interface McpHttpInput {
  /** The HTTP method; `POST` when absent. GET and DELETE are served for 2025-era sessions only. */
  method?: string
  /** The POSTed body (empty for other methods). */
  body: string
  headers: Headers
  /** The caller, as authenticated by the HTTP layer (or the single local principal). */
  principal: string
  /** The OAuth client the caller authenticated through, if any (sealed states are bound to it). */
  client?: string
  /** Aborted when the client goes away. */
  signal?: AbortSignal
  /**
   * The scopes the caller's token grants (hierarchy already applied), when auth is configured; without
   * it every operation is allowed. An operation needing more than `baseScopes` (which every operation
   * needs) plus its own (`scopes.ts`) is answered by `insufficientScope`, the HTTP layer's 403 step-up
   * challenge naming all of them, before anything runs.
   */
  grantedScopes?: ReadonlySet<string>
  baseScopes?: readonly string[]
  insufficientScope?: (required: readonly string[], id: RequestId | null) => Response
}

/**
 * The engine's handler, as `createMcpHandler` makes it: answers one request to the MCP endpoint.
 * An HTTP face calls it for POST, and for GET and DELETE (2025-era sessions; a 405 otherwise).
 */
export type McpHandler = (input: McpHttpInput) => Promise<Response>
