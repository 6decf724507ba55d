/**
 * @module mcp/scopes
 * Per-operation authorization: which OAuth scopes an operation needs (the HTTP layer's base scopes,
 * plus the tool's own `scopes` for `tools/call`, else its method's from `ServerDefinition.scopes`),
 * decided from the parsed body, never from a header, and the answer when the caller's granted scopes fall short: the HTTP layer's 403
 * step-up challenge (`McpHttpInput.insufficientScope`), sent before anything runs. Both eras use it.
 * Verifying tokens and expanding scope hierarchies is the HTTP layer's job (`src/auth/`).
 */
import { ErrorCode, McpError } from './errors.ts'
import type { McpHttpInput } from './handler.ts'
import { METHODS } from './protocol.ts'
import type { CompiledServer } from './server.ts'
import { jsonText } from './streaming.ts'
import type { JsonObject, RequestId } from './wire.ts'

const NO_SCOPES: readonly string[] = Object.freeze([])

/** The scopes one operation needs: the named tool's own for `tools/call`, else its method's. */
export function requiredScopes<App>(
  server: CompiledServer<App>,
  method: string,
  params: JsonObject
): readonly string[] {
  if (method === METHODS.toolsCall) {
    const name = params.name
    return (typeof name === 'string' && server.tools.get(name)?.definition.scopes) || NO_SCOPES
  }
  return server.methodScopes.get(method) ?? NO_SCOPES
}

/**
 * The 403 to answer when the caller's granted scopes lack what the operation needs (decided from the
 * parsed body: the tool's name, never a header), or `undefined` to go on.
 */
export function scopeChallenge<App>(
  server: CompiledServer<App>,
  request: { id: RequestId | null; method: string; params: JsonObject },
  input: Pick<McpHttpInput, 'grantedScopes' | 'baseScopes' | 'insufficientScope'>
): Response | undefined {
  const granted = input.grantedScopes
  if (!granted) return undefined
  const own = requiredScopes(server, request.method, request.params)
  const base = input.baseScopes ?? []
  const held = (scope: string) => granted.has(scope)
  if (base.every(held) && own.every(held)) return undefined
  // Only a refusal needs the combined list: the base scopes first, each scope once.
  const required = base.length > 0 ? [...new Set([...base, ...own])] : own
  if (input.insufficientScope) return input.insufficientScope(required, request.id)
  const error = new McpError(
    ErrorCode.InvalidRequest,
    `Forbidden: this operation needs the scope(s) ${required.join(' ')}.`
  )
  return jsonText(JSON.stringify({ jsonrpc: '2.0', id: request.id, error: error.toJSON() }), 403)
}
