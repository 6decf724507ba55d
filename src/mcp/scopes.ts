/**
 * @module mcp/scopes
 * Per-operation authorization: which OAuth scopes an operation needs (the HTTP layer's base scopes,
 * plus the tool's own `scopes` for `tools/call`, else its method's from `ServerDefinition.scopes`),
 * decided from the parsed body, never from a header, and the answer when the caller's granted scopes
 * fall short: the HTTP layer's 403 step-up challenge (`McpHttpInput.insufficientScope`) naming them
 * all. Both eras use it. Most operations are checked before anything runs (`scopeChallenge`); the
 * tasks extension's methods learn which tool's scopes apply only from the task record, so the engine
 * checks them once it has read it (`missingScopes`) and throws `InsufficientScopeError`, which
 * `modern-era.ts` answers with the same challenge (`scopeRefusal`). 2025-era answers to server→client
 * requests need the scopes of the call that asked (`legacy/rendezvous.ts` names it in the id).
 * Verifying tokens and expanding scope hierarchies is `bearer/`'s job, applied by the HTTP layer (the
 * front door's `authenticate` hook, or a framework's middleware).
 */
import { ErrorCode, errorResponseText } from './errors.ts'
import type { McpHttpInput } from './http-input.ts'
import { METHODS } from './protocol.ts'
import type { CompiledServer } from './server.ts'
import { jsonText } from './streaming.ts'
import type { JsonObject, RequestId } from './wire.ts'
import type { RequestObservation } from './observer.ts'

const NO_SCOPES: readonly string[] = Object.freeze([])

/** What the HTTP layer reports of the caller's authorization, and how it refuses too few scopes. */
export type ScopeGrant = Pick<McpHttpInput, 'grantedScopes' | 'baseScopes' | 'insufficientScope'>

/**
 * An operation found, once under way, to need scopes the caller lacks (a task's tool's). `required`
 * names every scope it needs, base scopes first; `code` is the JSON-RPC code of the refusal.
 */
export class InsufficientScopeError extends Error {
  override name = 'InsufficientScopeError'
  readonly code = ErrorCode.InvalidRequest
  readonly required: readonly string[]

  constructor(required: readonly string[]) {
    super(`Forbidden: this operation needs the scope(s) ${required.join(' ')}.`)
    this.required = required
  }
}

/** The scopes one operation needs: the named tool's own for `tools/call`, else its method's. */
export function requiredScopes<Deps>(
  server: CompiledServer<Deps>,
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
 * Every scope an operation needing `own` needs (the base scopes first, each once) when the caller's
 * granted scopes lack any of them; `undefined` when it may go on (always, without auth).
 */
export function missingScopes(
  own: readonly string[],
  grant: Pick<ScopeGrant, 'grantedScopes' | 'baseScopes'>
): readonly string[] | undefined {
  const granted = grant.grantedScopes
  if (!granted) return undefined
  const base = grant.baseScopes ?? []
  const held = (scope: string) => granted.has(scope)
  if (base.every(held) && own.every(held)) return undefined
  // Only a refusal needs the combined list.
  return base.length > 0 ? [...new Set([...base, ...own])] : own
}

/** The 403 naming the scopes `refused` lacks: the HTTP layer's challenge, or a plain one without it. */
export function scopeRefusal(
  refused: InsufficientScopeError,
  id: RequestId | null,
  grant: Pick<ScopeGrant, 'insufficientScope'>
): Response {
  if (grant.insufficientScope) return grant.insufficientScope(refused.required, id)
  return jsonText(errorResponseText(id, { code: refused.code, message: refused.message }), 403)
}

/**
 * The 403 to answer when the caller's granted scopes lack what the operation needs (decided from the
 * parsed body: the tool's name, never a header), settling the message's `observation` as refused;
 * `undefined` to go on.
 */
export function scopeChallenge<Deps>(
  server: CompiledServer<Deps>,
  request: { id: RequestId | null; method: string; params: JsonObject },
  grant: ScopeGrant,
  observation?: Pick<RequestObservation, 'failed'>
): Response | undefined {
  const required = missingScopes(requiredScopes(server, request.method, request.params), grant)
  if (!required) return undefined
  const refused = new InsufficientScopeError(required)
  observation?.failed(refused)
  return scopeRefusal(refused, request.id, grant)
}
