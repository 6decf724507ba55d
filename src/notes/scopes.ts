/**
 * @module notes/scopes
 * The notes server's OAuth scopes: `notes:read` for everything that reads notes (get, search, tags,
 * summaries, resources, prompts, completions, subscriptions), `notes:write` for everything that changes
 * them (create, update, delete, templates, sharing); `notes:write` implies `notes:read`. Tools declare
 * theirs with `scopes`; the methods here are the rest. Listing tools, prompts and templates needs
 * neither: the lists are the same for everyone, so a client can show what a token could do before
 * asking for more. The engine checks (`mcp/scopes.ts`); the auth layer verifies tokens and applies
 * `SCOPE_IMPLIES`.
 */
import { LEGACY_METHODS, METHODS } from 'stateless-mcp'

export const NOTES_READ = 'notes:read'
export const NOTES_WRITE = 'notes:write'

/** Scopes every scope grants besides itself. */
export const SCOPE_IMPLIES: Readonly<Record<string, readonly string[]>> = {
  [NOTES_WRITE]: [NOTES_READ],
}

export const READ: readonly string[] = [NOTES_READ]
export const WRITE: readonly string[] = [NOTES_WRITE]

/** Scopes per method; `tools/call` is per tool. */
export const METHOD_SCOPES: Readonly<Record<string, readonly string[]>> = {
  [METHODS.resourcesList]: READ,
  [METHODS.resourcesRead]: READ,
  [METHODS.promptsGet]: READ,
  [METHODS.complete]: READ,
  [METHODS.listen]: READ,
  [LEGACY_METHODS.subscribe]: READ,
  [LEGACY_METHODS.unsubscribe]: READ,
}
