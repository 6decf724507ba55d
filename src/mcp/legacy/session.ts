/**
 * @module mcp/legacy/session
 * 2025-era sessions without server memory: the `Mcp-Session-Id` a client receives from `initialize` is
 * itself the session, sealed with the same key ring as `requestState` (compact JWE, `dir`/A256GCM,
 * through `StateSealer` with the session lifetime). It carries the negotiated version, the client's
 * capabilities (what its revision defines of them) and a trimmed client info, bound to the principal (and OAuth client) that initialised
 * it; its random nonce is the session's id (`sid`) in the store and on the event bus. Any replica, on
 * any runtime, opens it without a lookup.
 *
 * `open` fails closed and quietly: a token that is malformed, tampered with, sealed under a retired
 * key, expired, or sealed for another principal is `undefined` (the caller answers 404, as the 2025
 * transport specifies for an unknown session). Both `issue` and `open` answer the expiry sealed in
 * the token (its `exp`), whatever lifetime the replica at hand would give a new one; what the store
 * keeps of a session (`../session-store.ts`: its record, which must exist for the session to be live,
 * log level, subscriptions) lives at least that long.
 *
 * Renewal (`renew`): a session in use outlives its lifetime and a key rotation. Once a token is past
 * half its life, or was sealed with a key that is no longer the ring's first, `renew` re-seals it:
 * the same `sid` and claims, a fresh expiry, the ring's first key. `renewal.ts` sends it as the
 * `Mcp-Session-Id` of the answer to a POST; a client that adopts it (the v1 SDK takes the header from
 * every POST answer) keeps its session while it uses it. A client that takes the id only from
 * `initialize` (the v2 client, mcp-remote, the Python SDK) keeps the token it has, which opens for
 * its own lifetime as before. The id a client sends never changes its `sid`, so every replica, the
 * store and the bus see one session however often it is renewed.
 *
 * Key rotation: a token opens while the key that sealed it is in the ring; see the README's "Key
 * rotation" for when a key may be retired.
 */
import { InvalidRequestStateError } from '../errors.ts'
import type { StateSealer } from '../sealed-state.ts'
import type { ClientCapabilities, Implementation } from '../wire.ts'
import { capabilitiesOfRevision, isLegacyVersion, type LegacyProtocolVersion } from './protocol.ts'

/** What a session token is bound to besides the principal: never a `requestState`'s method. */
const SESSION_BINDING = { method: 'mcp-session', target: '', args: null } as const
/** Longest client name and version kept in the token (clients may send anything). */
const MAX_CLIENT_INFO_CHARS = 200

export interface LegacySession {
  /** The token itself, as sent in `Mcp-Session-Id`. */
  readonly token: string
  /** Random id of the session (the token's nonce): the key in the store and on the bus. */
  readonly sid: string
  readonly protocolVersion: LegacyProtocolVersion
  readonly clientCapabilities: ClientCapabilities
  readonly clientInfo: Implementation
  /** Milliseconds since the epoch after which the token no longer opens. */
  readonly expiresAt: number
  /** Milliseconds since the epoch (whole seconds) when the token was sealed. */
  readonly issuedAt: number
}

interface SessionClaims {
  v: LegacyProtocolVersion
  c: ClientCapabilities
  i: Implementation
}

function trimInfo(info: Implementation): Implementation {
  return {
    name: String(info.name).slice(0, MAX_CLIENT_INFO_CHARS),
    version: String(info.version).slice(0, MAX_CLIENT_INFO_CHARS),
  }
}

export class SessionCodec {
  readonly #sealer: StateSealer

  /** `sealer` seals with the session lifetime (`StateSealer.withTtl`). */
  constructor(sealer: StateSealer) {
    this.#sealer = sealer
  }

  /** Seals a new session; throws `StateTooLargeError` when the client's capabilities are too large. */
  async issue(
    principal: string,
    init: {
      protocolVersion: LegacyProtocolVersion
      capabilities: ClientCapabilities
      clientInfo: Implementation
    }
  ): Promise<LegacySession> {
    return this.#seal(principal, {
      v: init.protocolVersion,
      c: capabilitiesOfRevision(init.protocolVersion, init.capabilities),
      i: trimInfo(init.clientInfo),
    })
  }

  /** The session `token` names, if it is valid for `principal`; otherwise `undefined`. */
  async open(token: string, principal: string): Promise<LegacySession | undefined> {
    let opened
    try {
      opened = await this.#sealer.open(token, { principal, ...SESSION_BINDING })
    } catch (error) {
      if (error instanceof InvalidRequestStateError) return undefined
      throw error
    }
    const claims = opened.journal as Partial<SessionClaims> | null
    if (!claims || !isLegacyVersion(claims.v) || typeof claims.c !== 'object' || !claims.i) {
      return undefined
    }
    return {
      token,
      sid: opened.nonce,
      protocolVersion: claims.v,
      clientCapabilities: claims.c,
      clientInfo: claims.i,
      expiresAt: opened.expiresAt * 1000,
      issuedAt: opened.issuedAt * 1000,
    }
  }

  /**
   * Whether `session` (opened now) is due for renewal: past half the lifetime sealed in it, or sealed
   * with a key that is not the ring's first.
   */
  isDue(session: LegacySession): boolean {
    const halfLife = session.issuedAt + (session.expiresAt - session.issuedAt) / 2
    return this.#sealer.now() >= halfLife || !this.#sealer.sealedWithSealingKey(session.token)
  }

  /**
   * `session` of `principal` re-sealed when it is due (`isDue`): the same `sid` and claims, a fresh
   * expiry, the ring's first key. `undefined` when it is not due, or when the new token would expire
   * sooner (a replica with a shorter lifetime never shortens a session).
   */
  async renew(session: LegacySession, principal: string): Promise<LegacySession | undefined> {
    if (!this.isDue(session)) return undefined
    const claims: SessionClaims = {
      v: session.protocolVersion,
      c: session.clientCapabilities,
      i: session.clientInfo,
    }
    const renewed = await this.#seal(principal, claims, session.sid)
    return renewed.expiresAt < session.expiresAt ? undefined : renewed
  }

  async #seal(principal: string, claims: SessionClaims, sid?: string): Promise<LegacySession> {
    const sealed = await this.#sealer.seal({ principal, ...SESSION_BINDING }, claims, sid)
    const expiresAt = sealed.expiresAt * 1000
    return {
      token: sealed.token,
      sid: sealed.nonce,
      protocolVersion: claims.v,
      clientCapabilities: claims.c,
      clientInfo: claims.i,
      expiresAt,
      issuedAt: expiresAt - this.#sealer.ttlSeconds * 1000,
    }
  }
}
