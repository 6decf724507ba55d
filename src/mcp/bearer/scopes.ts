/**
 * @module mcp/bearer/scopes
 * Scopes as bearer authentication sees them: what a verified access token grants (`scope`, the RFC 9068 /
 * RFC 8693 space-separated string, or `scp`, the array or string some authorization servers send),
 * widened by the application's hierarchy (`implies`: a scope grants the scopes it implies, transitively;
 * MCP authorization: servers MUST account for scope hierarchies), and the one way scope lists are merged
 * (deduplicated, in first-seen order). Which scopes an operation needs is the engine's
 * (`mcp/scopes.ts`: a tool's `scopes`, a method's) and the application's to declare.
 */

/**
 * Scopes each scope grants besides itself (e.g. `notes:write` → `notes:read`).
 *
 * @example
 * const implies: ScopeImplications = { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] }
 */
export type ScopeImplications = Readonly<Record<string, readonly string[]>>

/**
 * The scopes a token's claims grant, as sent (no hierarchy applied).
 *
 * @example
 * tokenScopes({ scope: 'notes:read notes:write' }) // ['notes:read', 'notes:write']
 * tokenScopes({ scp: ['notes:read'] }) // ['notes:read']
 */
export function tokenScopes(claims: Record<string, unknown>): string[] {
  const { scope, scp } = claims
  if (typeof scope === 'string') return scope.split(' ').filter(Boolean)
  if (typeof scp === 'string') return scp.split(' ').filter(Boolean)
  if (Array.isArray(scp)) return scp.filter((item): item is string => typeof item === 'string')
  return []
}

/**
 * `granted` and everything it implies, transitively (a cycle in `implies` is harmless).
 *
 * @example
 * expandScopes(['notes:write'], { 'notes:write': ['notes:read'] }) // Set { 'notes:write', 'notes:read' }
 */
export function expandScopes(granted: Iterable<string>, implies: ScopeImplications): Set<string> {
  const expanded = new Set<string>()
  const pending = [...granted]
  for (let scope = pending.pop(); scope !== undefined; scope = pending.pop()) {
    if (expanded.has(scope)) continue
    expanded.add(scope)
    if (Object.hasOwn(implies, scope)) pending.push(...(implies[scope] as readonly string[]))
  }
  return expanded
}

/**
 * The scopes of every list, each once, in first-seen order.
 *
 * @example
 * mergeScopes(['notes:read'], ['notes:read', 'notes:write']) // ['notes:read', 'notes:write']
 */
export function mergeScopes(...lists: ReadonlyArray<readonly string[]>): string[] {
  return [...new Set(lists.flat())]
}
