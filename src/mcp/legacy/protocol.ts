/**
 * @module mcp/legacy/protocol
 * Wire constants of the 2025-era revisions (2025-11-25, 2025-06-18, 2025-03-26) that the engine serves
 * beside 2026-07-28: the versions `initialize` negotiates, the session header, the methods that exist
 * only in that era, the JSON-RPC code for an unknown or ended session, and which client capabilities
 * each revision defines (`capabilitiesOfRevision`). Behaviour lives in the sibling modules; the
 * 2026-07-28 constants stay in `../protocol.ts`.
 */
import type { ClientCapabilities } from '../wire.ts'

/**
 * Revisions negotiated through `initialize`, newest first. 2026-07-28 is never negotiated this way.
 *
 * @example
 * ```ts
 * import { LEGACY_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS } from 'stateless-mcp'
 *
 * const served = [...SUPPORTED_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS]
 * // ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']
 * ```
 */
export const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const
export type LegacyProtocolVersion = (typeof LEGACY_PROTOCOL_VERSIONS)[number]

/** Offered when a client asks for a revision this server does not speak. */
export const LATEST_LEGACY_VERSION: LegacyProtocolVersion = '2025-11-25'

/**
 * The HTTP header carrying a 2025-era session's id (`Mcp-Session-Id`), which `initialize` answers
 * with and every later request of the session repeats.
 *
 * @example
 * ```ts
 * import { HEADER_SESSION_ID } from 'stateless-mcp/compose'
 *
 * // a proxy that keeps 2025 sessions' GET streams on a pool of their own
 * const heldStream = request.method === 'GET' && request.headers.has(HEADER_SESSION_ID)
 * ```
 */
export const HEADER_SESSION_ID = 'mcp-session-id'

/**
 * Default lifetime of a session id (`sessionTtlSeconds`): a week (2025 SDK clients do not
 * re-initialise after a 404).
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_SESSION_TTL_SECONDS } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, {
 *   sessionTtlSeconds: 2 * DEFAULT_SESSION_TTL_SECONDS,
 * })
 * ```
 */
export const DEFAULT_SESSION_TTL_SECONDS = 7 * 86_400
/**
 * Longest lifetime a session id may be given (and that a retired key must outlive).
 *
 * @example
 * ```ts
 * import { MAX_SESSION_TTL_SECONDS } from 'stateless-mcp'
 *
 * // retire an old state key only once every session sealed with it has expired
 * const retireAfterMs = MAX_SESSION_TTL_SECONDS * 1000
 * ```
 */
export const MAX_SESSION_TTL_SECONDS = 30 * 86_400

/**
 * Methods that exist only for 2025-era clients, by name: for a server's `scopes` per method beside
 * `METHODS`'s.
 *
 * @example
 * ```ts
 * import { createMcpServer, LEGACY_METHODS, METHODS } from 'stateless-mcp'
 *
 * const server = createMcpServer(
 *   {
 *     info: { name: 'notes', version: '1.0.0' },
 *     resources: [readme],
 *     subscribe: true,
 *     scopes: {
 *       [METHODS.resourcesRead]: ['notes:read'],
 *       [LEGACY_METHODS.subscribe]: ['notes:read'],
 *     },
 *   },
 *   { authenticate }
 * )
 * ```
 */
export const LEGACY_METHODS = {
  initialize: 'initialize',
  ping: 'ping',
  setLogLevel: 'logging/setLevel',
  subscribe: 'resources/subscribe',
  unsubscribe: 'resources/unsubscribe',
} as const

/** Notifications that exist only for 2025-era clients, by name. */
export const LEGACY_NOTIFICATIONS = {
  initialized: 'notifications/initialized',
  cancelled: 'notifications/cancelled',
  elicitationComplete: 'notifications/elicitation/complete',
} as const

/** Answered with HTTP 404 when a session id is unknown, tampered with, expired or ended. */
export const SESSION_NOT_FOUND_CODE = -32001

/**
 * What a session of `version` may use of the capabilities its client declared: elicitation exists
 * from 2025-06-18, url-mode elicitation and tool use in sampling from 2025-11-25. A client declaring
 * more than its revision defines is never sent a request its revision does not have.
 */
export function capabilitiesOfRevision(
  version: LegacyProtocolVersion,
  declared: ClientCapabilities
): ClientCapabilities {
  if (version === '2025-11-25') return declared
  const { elicitation, sampling, ...rest } = declared
  const usable: ClientCapabilities = rest
  if (sampling !== undefined) {
    const { tools: _tools, ...samplingRest } = sampling
    usable.sampling = samplingRest
  }
  if (elicitation !== undefined && version === '2025-06-18') {
    const { url: _url, ...form } = elicitation
    // `{}` means form; a declaration of url mode alone leaves form, which 2025-06-18 always meant.
    usable.elicitation = form
  }
  return usable
}

export function isLegacyVersion(version: unknown): version is LegacyProtocolVersion {
  return LEGACY_PROTOCOL_VERSIONS.includes(version as LegacyProtocolVersion)
}
