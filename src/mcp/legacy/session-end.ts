/**
 * @module mcp/legacy/session-end
 * What ends with a 2025-era session, on every replica: its open GET streams (`stream.ts`), its
 * resumed call streams (`resume.ts`) and its calls waiting for the client (`call-flow.ts`). A session
 * ends by `DELETE` (`stream.ts`), by eviction at its principal's session cap when a later
 * `initialize` makes room (`request.ts`: the store answers the sids it ended), or by the expiry of
 * its record. The first two are announced on the event bus by the replica that ended the session
 * (`session_ended`, scoped to the session like its other signals: `announceSessionEnded`); every
 * holder watches for it with its session's interest, so the bus routes the event to it, and for the
 * record's expiry (`watchSessionEnd`): one timer to the expiry the replica read, which re-reads the
 * record once when it fires (use may have slid it) and, when the session still lives, waits for its
 * new expiry the same way. A store that cannot be read then is tried once more a minute later.
 * Bounded: one bus listener and one timer per holder, both gone when it stops watching.
 *
 * What a holder does then is its own: a GET stream ends gracefully (its client reconnects and is
 * told 404), a waiting call ends with {@link SESSION_ENDED_MESSAGE} (-32001, the code the transport
 * answers for an ended session), a resumed stream carries that error and closes. Each gives back its
 * stream slot (`../stream-limits.ts`) as it always does, so the caps count it no more.
 */
import { errorResponseText } from '../errors.ts'
import type { RequestId } from '../wire.ts'
import { SESSION_NOT_FOUND_CODE } from './protocol.ts'
import type { LegacyEraContext } from './transport.ts'

/** What a call waiting when its session ended is answered with (code `SESSION_NOT_FOUND_CODE`). */
export const SESSION_ENDED_MESSAGE =
  'Session ended: it was deleted, ended for a newer session of the same user at the session cap, or it expired, and this request ended with it; send initialize to start a new session.'

/** The JSON-RPC error response of request `id`, which was waiting when its session ended. */
export function sessionEndedResponse(id: RequestId | null): string {
  return errorResponseText(id, { code: SESSION_NOT_FOUND_CODE, message: SESSION_ENDED_MESSAGE })
}

/** The longest delay one timer takes (32-bit milliseconds); a later expiry is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1
/** How long a holder waits to read its session's record again after a read that failed. */
const RECHECK_AFTER_FAILURE_MS = 60_000

export type SessionEndContext = Pick<
  LegacyEraContext<unknown>,
  'bus' | 'sessions' | 'codec' | 'logger'
>

/** Tells every replica that the sessions `sids` ended (a failure to tell is logged, not thrown). */
export async function announceSessionEnded(
  era: Pick<SessionEndContext, 'bus' | 'logger'>,
  sids: readonly string[]
): Promise<void> {
  await Promise.all(
    sids.map((sid) =>
      Promise.resolve(era.bus.publish({ kind: 'session_ended', session: sid })).catch(
        (error: unknown) =>
          era.logger.warn('the end of a session could not be announced to other replicas', {
            session: sid.slice(0, 8),
            error: error instanceof Error ? error.message : String(error),
          })
      )
    )
  )
}

/** A holder's watch on its session: `ended` aborts when the session ends; `stop` ends the watch. */
export interface SessionEndWatch {
  readonly ended: AbortSignal
  stop(): void
}

/**
 * Watches session `sid`, whose record the caller read live until `expiresAt`, for its end (module
 * header). The watch stops by itself once the session ended.
 */
export function watchSessionEnd(
  era: SessionEndContext,
  sid: string,
  expiresAt: number
): SessionEndWatch {
  const ending = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  let watching = true
  const stop = () => {
    watching = false
    unsubscribe()
    clearTimeout(timer)
  }
  const end = () => {
    if (!watching) return
    stop()
    ending.abort('the session ended')
  }
  const unsubscribe = era.bus.subscribe(
    (event) => {
      if (event.kind === 'session_ended' && event.session === sid) end()
    },
    { session: sid }
  )
  const waitUntil = (at: number) => {
    const delay = Math.min(Math.max(0, at - era.codec.now()), MAX_TIMER_MS)
    timer = setTimeout(recheck, delay)
  }
  const recheck = () => {
    era.sessions.getSession(sid).then(
      (record) => {
        if (!watching) return
        if (record === undefined || record.expiresAt <= era.codec.now()) end()
        else waitUntil(record.expiresAt)
      },
      (error: unknown) => {
        if (!watching) return
        era.logger.warn('a session could not be read to see whether it expired', {
          session: sid.slice(0, 8),
          error: error instanceof Error ? error.message : String(error),
        })
        waitUntil(era.codec.now() + RECHECK_AFTER_FAILURE_MS)
      }
    )
  }
  waitUntil(expiresAt)
  return { ended: ending.signal, stop }
}
