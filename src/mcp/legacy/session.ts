/**
 * @module mcp/legacy/session
 * 2025-era sessions without server memory: the `Mcp-Session-Id` a client receives from `initialize` is
 * itself the session, sealed with the same key ring as `requestState` (compact JWE, `dir`/A256GCM,
 * through `StateSealer` with the session lifetime). It carries the negotiated version, the client's
 * capabilities (what its revision defines of them) and a trimmed client info, bound to the principal
 * (and OAuth client) that initialised it; its random nonce is the session's id (`sid`) in the store
 * and on the event bus. Any replica, on any runtime, opens it without a lookup of its contents.
 *
 * Sliding sessions: a session is live while its record in the store is (`../session-store.ts`; the
 * engine reads it once per message, `transport.ts` `openSession`), and use keeps the record alive
 * (`renewal.ts`); the expiry sealed in the token (its `exp`) no longer ends a session in use. So
 * `open` accepts an authentic token past its `exp` (`StateSealer.open` with `expired: 'accept'`)
 * and fails closed and quietly on everything else: a token that is malformed, tampered with, sealed
 * under a retired key, issued in the future or sealed for another principal is `undefined` (the
 * caller answers 404, as the 2025 transport specifies for an unknown session). A session DELETEd has
 * no record and stays dead; an idle one dies a lifetime after its record last slid.
 *
 * Re-sealing (`reseal`): the same `sid` and claims, a fresh `exp`, the ring's first key. `renewal.ts`
 * sends it as the `Mcp-Session-Id` of a POST's answer when the record slides or the token was sealed
 * with a key that is not the ring's first. The v1 SDK client takes the header from every POST answer
 * and adopts it; the v2 client, mcp-remote (which bundles it) and the Python SDK take the id only
 * from `initialize` and keep the token they have, which keeps opening while the record lives. The id
 * a client sends never changes its `sid`, so every replica, the store and the bus see one session
 * however often it is re-sealed.
 *
 * Opened once per replica: what a token opens to, for a given principal, depends only on the token,
 * the principal and the key ring (fixed for the codec's life), since its age is not judged here and
 * a token issued in the future stays refused only until its time comes. So the sessions opened last
 * are remembered by token and principal (bounded in count and characters), and a message of a
 * session in use costs no decryption; a token that fails to open is never remembered.
 *
 * Key rotation: a token opens while the key that sealed it is in the ring. A host that adopts ids
 * moves to the ring's first key on its next POST; a host that never adopts one keeps a token sealed
 * with the key it started under, so retiring that key ends its session (404; it must initialize
 * again). See the README's "Key rotation".
 */
import { InvalidRequestStateError } from '../errors.ts'
import type { StateSealer } from '../sealed-state.ts'
import type { ClientCapabilities, Implementation } from '../wire.ts'
import { capabilitiesOfRevision, isLegacyVersion, type LegacyProtocolVersion } from './protocol.ts'

/** What a session token is bound to besides the principal: never a `requestState`'s method. */
const SESSION_BINDING = { method: 'mcp-session', target: '', args: null } as const
/** Longest client name and version kept in the token (clients may send anything). */
const MAX_CLIENT_INFO_CHARS = 200
/** Sessions remembered as opened (module header): at most this many, … */
export const OPENED_SESSIONS_KEPT = 1_024
/**
 * … and at most this many characters of their tokens (~3 MiB with what they open to, whatever a
 * client puts in its capabilities: ~100 of the longest tokens the sealer's payload limit allows).
 */
export const OPENED_SESSION_CHARS = 1_048_576

export interface LegacySession {
  /** The token itself, as sent in `Mcp-Session-Id`. */
  readonly token: string
  /** Random id of the session (the token's nonce): the key in the store and on the bus. */
  readonly sid: string
  readonly protocolVersion: LegacyProtocolVersion
  readonly clientCapabilities: ClientCapabilities
  readonly clientInfo: Implementation
  /**
   * Milliseconds since the epoch: the expiry sealed in the token (a lifetime after it was issued or
   * re-sealed). What `initialize` records; later, the store's record decides, not this.
   */
  readonly expiresAt: number
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
  /** Sessions opened, by principal and token, the one used last at the end. */
  readonly #opened = new Map<string, LegacySession>()
  /** Characters of the keys of {@link #opened}. */
  #openedChars = 0

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

  /** A session's lifetime, in milliseconds: how long its record lives after it slid. */
  get lifetimeMs(): number {
    return this.#sealer.ttlSeconds * 1000
  }

  /** The sealer's clock, in milliseconds since the epoch: what a session's record is judged by. */
  now(): number {
    return this.#sealer.now()
  }

  /**
   * The session `token` names, if it is authentic and sealed for `principal`, whatever its age (the
   * store's record decides whether it is live); otherwise `undefined`.
   */
  async open(token: string, principal: string): Promise<LegacySession | undefined> {
    const key = `${principal}\u0000${token}`
    const known = this.#opened.get(key)
    if (known) {
      this.#opened.delete(key)
      this.#opened.set(key, known)
      return known
    }
    const session = await this.#open(token, principal)
    if (session) this.#remember(key, session)
    return session
  }

  /** Keeps `session` as opened, forgetting those used longest ago past either bound. */
  #remember(key: string, session: LegacySession): void {
    if (this.#opened.has(key)) return
    for (const [oldest] of this.#opened) {
      if (
        this.#opened.size < OPENED_SESSIONS_KEPT &&
        this.#openedChars + key.length <= OPENED_SESSION_CHARS
      )
        break
      this.#opened.delete(oldest)
      this.#openedChars -= oldest.length
    }
    this.#opened.set(key, session)
    this.#openedChars += key.length
  }

  async #open(token: string, principal: string): Promise<LegacySession | undefined> {
    let opened
    try {
      opened = await this.#sealer.open(
        token,
        { principal, ...SESSION_BINDING },
        { expired: 'accept' }
      )
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
    }
  }

  /** Whether `session`'s token is sealed with the ring's first key (one sealed before a rotation is not). */
  sealedWithSealingKey(session: LegacySession): boolean {
    return this.#sealer.sealedWithSealingKey(session.token)
  }

  /** `session` of `principal` re-sealed: the same `sid` and claims, a fresh expiry, the ring's first key. */
  async reseal(session: LegacySession, principal: string): Promise<LegacySession> {
    return this.#seal(
      principal,
      { v: session.protocolVersion, c: session.clientCapabilities, i: session.clientInfo },
      session.sid
    )
  }

  async #seal(principal: string, claims: SessionClaims, sid?: string): Promise<LegacySession> {
    const sealed = await this.#sealer.seal({ principal, ...SESSION_BINDING }, claims, sid)
    return {
      token: sealed.token,
      sid: sealed.nonce,
      protocolVersion: claims.v,
      clientCapabilities: claims.c,
      clientInfo: claims.i,
      expiresAt: sealed.expiresAt * 1000,
    }
  }
}
