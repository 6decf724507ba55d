/**
 * @module mcp/legacy/stream
 * The 2025-era requests without a body, once their session is open (`transport.ts`):
 * - GET opens the session's notification stream, the 2025 counterpart of `subscriptions/listen`
 *   and needing its scopes: list changes the server advertises, and updates of the resources the
 *   session subscribed to (`event-notification.ts`), from changes made through any replica. It needs
 *   an `Accept` of `text/event-stream` (406), counts against the caps of `stream-limits.ts` (429 before
 *   it opens), is bounded and ended as `event-stream.ts` says, a graceful end carrying an SSE `retry`
 *   so the client reconnects, as it does after a drop, and is counted while open with telemetry on.
 *   Its messages carry ids (`g…`, `stream-log.ts`), so a client resumes it with `Last-Event-ID`;
 *   nothing it sent is kept, so a resumed one opens with list-changed hints instead (`resume.ts`),
 *   numbered on from where it was left unless that runs near the ids' range (then afresh). It ends
 *   when its session does (`session-end.ts`), on whichever replica holds it;
 * - DELETE ends the session for every replica: its record and subscriptions leave the store (204),
 *   and every replica is told (`session_ended`), so its GET streams and waiting calls end too.
 */
import { ErrorCode, errorMessage, errorResponseText } from '../errors.ts'
import { eventNotification } from '../event-notification.ts'
import type { ServerEvent } from '../event-bus.ts'
import { eventStream } from '../event-stream.ts'
import { METHODS } from '../protocol.ts'
import { scopeChallenge } from '../scopes.ts'
import type { StreamSlot } from '../stream-limits.ts'
import { jsonText } from '../streaming.ts'
import type { LegacySession } from './session.ts'
import { announceSessionEnded, watchSessionEnd } from './session-end.ts'
import { MAX_EVENT_SEQ, STREAM_RETRY_MS, newStreamId } from './stream-log.ts'
import type { LegacyEraContext, LegacyInput, OpenedSession } from './transport.ts'

/**
 * The GET stream of the session `opened` (its record as read), or the refusal to answer instead, to
 * end when the session ends. `resumed` names the stream a client
 * resumes (`Last-Event-ID`, `resume.ts`): it goes on under the same id, numbered on, and opens with
 * the list-changed notifications the server advertises, since what changed while the client was
 * away was not kept (a re-read hint, as after any reconnect).
 */
export function notificationStream<Deps>(
  era: LegacyEraContext<Deps>,
  { session, record }: OpenedSession,
  input: LegacyInput,
  resumed?: { stream: string; seq: number }
): Response {
  const { server, sessions } = era
  const denied = scopeChallenge(server, { id: null, method: METHODS.listen, params: {} }, input)
  if (denied) return denied
  const unacceptable = notAcceptable(input)
  if (unacceptable) return unacceptable
  const { tools, prompts, resources } = server.capabilities
  const principal = input.principal
  let slot: StreamSlot
  try {
    slot = era.streamLimits.acquire({ principal, session: session.sid }, 'get')
  } catch (error) {
    const { text, status } = errorMessage(null, error, era.logger)
    return jsonText(text, status)
  }
  const watch = watchSessionEnd(era, session.sid, record.expiresAt)
  try {
    const filter = {
      principal,
      toolsListChanged: tools?.listChanged,
      promptsListChanged: prompts?.listChanged,
      resourcesListChanged: resources?.listChanged,
      subscribed: resources?.subscribe
        ? (uri: string) => sessions.isSubscribed(session.sid, uri)
        : undefined,
    }
    const stream = eventStream({
      ...era.stream,
      bus: era.bus,
      interest: { principal },
      signal: input.signal ?? new AbortController().signal,
      shutdown: era.shutdown,
      ended: watch.ended,
      retryMs: STREAM_RETRY_MS,
      ids: numbering(resumed),
      opening: resumed
        ? CATCH_UP.map((event) => eventNotification(event, filter)).filter(
            (hint) => hint !== undefined
          )
        : undefined,
      logger: era.logger,
      logFields: { stream: 'get', session: session.sid.slice(0, 8) },
      onEnd: () => {
        watch.stop()
        slot.release()
      },
      map: (event) => eventNotification(event, filter),
    })
    return era.telemetry ? era.telemetry.stream('get', session.protocolVersion, stream) : stream
  } catch (error) {
    // nothing holds a stream that failed to open
    watch.stop()
    slot.release()
    throw error
  }
}

/**
 * How a GET stream's messages are numbered: a new stream from 1, a resumed one on from where its
 * client left it while half the numbers an id accepts are still ahead (far more than one connection
 * sends before `STREAM_MAX_SECONDS` ends it), else afresh under a new id, so that every id sent is one
 * `parseEventId` accepts back. Nothing of a GET stream is kept, so a new id loses nothing.
 */
function numbering(resumed: { stream: string; seq: number } | undefined): {
  stream: string
  after: number
} {
  if (resumed && resumed.seq <= MAX_EVENT_SEQ / 2)
    return { stream: resumed.stream, after: resumed.seq }
  return { stream: newStreamId('get'), after: 0 }
}

/** The 406 of a GET whose `Accept` takes no `text/event-stream`; `undefined` when it does. */
export function notAcceptable(input: LegacyInput): Response | undefined {
  if (/text\/event-stream|\*\/\*/i.test(input.headers.get('accept') ?? '')) return undefined
  return jsonText(
    errorResponseText(null, {
      code: ErrorCode.InvalidRequest,
      message: 'Not Acceptable: the GET stream is text/event-stream.',
    }),
    406
  )
}

/**
 * What a resumed GET stream opens with: the notification of every list change, as its filter hears
 * them (the lists the server says may change, the resources list being the caller's own).
 */
const CATCH_UP: readonly ServerEvent[] = [
  { kind: 'tools_list_changed' },
  { kind: 'prompts_list_changed' },
  { kind: 'resources_list_changed' },
]

/** Ends `session` on every replica (204), once the caller holds the base scopes. */
export async function endSession<Deps>(
  era: LegacyEraContext<Deps>,
  session: LegacySession,
  input: LegacyInput
): Promise<Response> {
  const denied = scopeChallenge(era.server, { id: null, method: 'DELETE', params: {} }, input)
  if (denied) return denied
  await era.sessions.endSession(session.sid)
  await announceSessionEnded(era, [session.sid])
  return new Response(null, { status: 204 })
}
