/**
 * @module mcp/legacy/renewal
 * Sessions that never strand a host: use keeps a 2025-era session's record alive (sliding), and the
 * answers to POSTs carry a re-sealed `Mcp-Session-Id` for the clients that adopt one.
 *
 * Sliding: a session is live while its record is (`transport.ts` `openSession` answers 404 for a
 * record ended or expired at the session clock's now, purged or not). When a message finds its
 * session's record with half the session lifetime (`SESSION_TTL_SECONDS`) or less left,
 * `SessionStore.renewSession` moves it, with its subscriptions, to a lifetime from now: one write
 * per session per half-lifetime, however many requests it serves. Every POST (JSON, SSE or 202,
 * whatever the message) and every GET stream's opening (a host that only listens is in use too, and
 * reconnects at least every `STREAM_MAX_SECONDS`) slides it; a DELETE ends it. A session DELETEd
 * meanwhile stays ended (`renewSession` never brings one back) and an idle one dies a lifetime after
 * it last slid.
 *
 * Re-sealed ids: the answer to a POST carries the session re-sealed (`SessionCodec.reseal`: a fresh
 * expiry, the ring's first key) when its record slid or its id was sealed with a key that is not the
 * ring's first; GET and DELETE answers carry none (no client reads one there). The v1 SDK client
 * takes `mcp-session-id` from every POST answer and adopts it; the v2 client (and mcp-remote, which
 * bundles it) and the Python SDK take it only from `initialize` and keep theirs, which keeps opening
 * while the record lives (until its key is retired). Both ids name one session. Sliding is
 * best-effort: a store that fails it is logged and the answer goes without a new id (the session
 * lives until its record's expiry, and the next message tries again).
 */
import { callerBinding } from '../dispatch-env.ts'
import { HEADER_SESSION_ID } from './protocol.ts'
import type { LegacyEraContext, LegacyInput, OpenedSession } from './transport.ts'

type RenewalContext = Pick<LegacyEraContext<unknown>, 'codec' | 'sessions' | 'logger'>

/** What a message did to its session's record: nothing (`fresh`), moved it, or found it ended. */
type Sliding = 'fresh' | 'slid' | 'ended'

/** Slides `opened`'s record to a lifetime from now when half of one or less is left. */
async function slide(era: RenewalContext, { session, record }: OpenedSession): Promise<Sliding> {
  const now = era.codec.now()
  const lifetime = era.codec.lifetimeMs
  if (record.expiresAt - now > lifetime / 2) return 'fresh'
  return (await era.sessions.renewSession(session.sid, now + lifetime, now)) ? 'slid' : 'ended'
}

function logFailure(era: RenewalContext, opened: OpenedSession, error: unknown): undefined {
  era.logger.warn('keeping a 2025-era session live failed; it lives until its record expires', {
    session: opened.session.sid.slice(0, 8),
    error: error instanceof Error ? error.message : String(error),
  })
  return undefined
}

/**
 * Slides the record of `opened` (named by a POST of `input`'s caller) when due, and answers the
 * re-sealed id its answer carries: when the record slid, or the id is sealed with a key that is not
 * the ring's first; `undefined` otherwise, and for a session that ended meanwhile.
 */
export async function renewedSessionId(
  era: RenewalContext,
  opened: OpenedSession,
  input: LegacyInput
): Promise<string | undefined> {
  try {
    const sliding = await slide(era, opened)
    if (sliding === 'ended') return undefined
    if (sliding === 'fresh' && era.codec.sealedWithSealingKey(opened.session)) return undefined
    const principal = callerBinding(input.principal, input.client)
    return (await era.codec.reseal(opened.session, principal)).token
  } catch (error) {
    return logFailure(era, opened, error)
  }
}

/** Slides the record of `opened`, named by a GET stream's opening, when due (no id is sent there). */
export async function keepListenerLive(era: RenewalContext, opened: OpenedSession): Promise<void> {
  try {
    await slide(era, opened)
  } catch (error) {
    logFailure(era, opened, error)
  }
}

/** `response` with `token` as its `Mcp-Session-Id`, when there is one. */
export function withSessionId(response: Response, token: string | undefined): Response {
  if (token !== undefined) response.headers.set(HEADER_SESSION_ID, token)
  return response
}
