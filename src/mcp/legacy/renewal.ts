/**
 * @module mcp/legacy/renewal
 * Sessions that never strand a host: the answer to a POST in a live 2025-era session (JSON, SSE or
 * 202, whatever the message) carries the session's renewed `Mcp-Session-Id` when the id it named is
 * due (`SessionCodec.renew`: past half its life, or sealed with a key that is not the ring's first),
 * once the store keeps the session's record and subscriptions until the renewed expiry
 * (`SessionStore.renewSession`, which never brings back a session that was DELETEd meanwhile: then
 * no id is sent). GET and DELETE answers carry none: no client reads one there.
 *
 * Which clients adopt it: the v1 SDK client takes `mcp-session-id` from every POST answer, whatever
 * its status, so a session it uses keeps working across `SESSION_TTL_SECONDS` and a key rotation. The
 * v2 client (and mcp-remote, which bundles it) and the Python SDK take it only from `initialize`:
 * they keep the id they have, which opens for its own lifetime, as it did before renewal. The id a
 * client replaced keeps opening until its own expiry (a request sent before the answer arrived still
 * works); the record lives until the later one. Renewal is best-effort: a store that fails it is
 * logged and the answer goes without a new id (the one the client has still works).
 */
import { callerBinding } from '../dispatch-env.ts'
import { HEADER_SESSION_ID } from './protocol.ts'
import type { LegacySession } from './session.ts'
import type { LegacyEraContext, LegacyInput } from './transport.ts'

/** The renewed id of `session` (opened for `input`'s caller) when it is due and still live. */
export async function renewedSessionId(
  era: Pick<LegacyEraContext<unknown>, 'codec' | 'sessions' | 'logger' | 'now'>,
  session: LegacySession,
  input: LegacyInput
): Promise<string | undefined> {
  try {
    const renewed = await era.codec.renew(session, callerBinding(input.principal, input.client))
    if (renewed === undefined) return undefined
    const live = await era.sessions.renewSession(session.sid, renewed.expiresAt, era.now())
    return live ? renewed.token : undefined
  } catch (error) {
    era.logger.warn('renewing a 2025-era session id failed; the answer keeps the old one', {
      session: session.sid.slice(0, 8),
      error: error instanceof Error ? error.message : String(error),
    })
    return undefined
  }
}

/** `response` with `token` as its `Mcp-Session-Id`, when there is one. */
export function withSessionId(response: Response, token: string | undefined): Response {
  if (token !== undefined) response.headers.set(HEADER_SESSION_ID, token)
  return response
}
