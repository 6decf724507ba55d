/**
 * @module mcp/legacy/stream
 * The 2025-era requests without a body, once their session is open (`transport.ts`):
 * - GET opens the session's notification stream, the 2025 counterpart of `subscriptions/listen`
 *   and needing its scopes: list changes the server advertises, and updates of the resources the
 *   session subscribed to (`event-notification.ts`), from changes made through any replica. It needs
 *   an `Accept` of `text/event-stream` (406), counts against the caps of `stream-limits.ts` (429 before
 *   it opens), is bounded and ended as `event-stream.ts` says, a graceful end carrying an SSE `retry`
 *   so the client reconnects, as it does after a drop, and is counted while open with telemetry on;
 * - DELETE ends the session for every replica: its record and subscriptions leave the store (204).
 */
import { ErrorCode, errorMessage, errorResponseText } from '../errors.ts'
import { eventNotification } from '../event-notification.ts'
import { eventStream } from '../event-stream.ts'
import { METHODS } from '../protocol.ts'
import { scopeChallenge } from '../scopes.ts'
import type { StreamSlot } from '../stream-limits.ts'
import { jsonText } from '../streaming.ts'
import type { LegacySession } from './session.ts'
import type { LegacyEraContext, LegacyInput } from './transport.ts'

/**
 * The SSE `retry` a GET stream the server ends (shutdown, its maximum duration, a client fallen too
 * far behind) carries last: 2025 clients reconnect a GET stream that closes, and this is the first
 * delay of the v1 SDK's own backoff, so a reconnect comes soon but not at once.
 */
const GET_STREAM_RETRY_MS = 1_000

/** The GET stream of `session`, or the refusal to answer instead. */
export function notificationStream<Deps>(
  era: LegacyEraContext<Deps>,
  session: LegacySession,
  input: LegacyInput
): Response {
  const { server, sessions } = era
  const denied = scopeChallenge(server, { id: null, method: METHODS.listen, params: {} }, input)
  if (denied) return denied
  if (!/text\/event-stream|\*\/\*/i.test(input.headers.get('accept') ?? '')) {
    return jsonText(
      errorResponseText(null, {
        code: ErrorCode.InvalidRequest,
        message: 'Not Acceptable: the GET stream is text/event-stream.',
      }),
      406
    )
  }
  const { tools, prompts, resources } = server.capabilities
  const principal = input.principal
  let slot: StreamSlot
  try {
    slot = era.streamLimits.acquire({ principal, session: session.sid }, 'get')
  } catch (error) {
    const { text, status } = errorMessage(null, error, era.logger)
    return jsonText(text, status)
  }
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
      retryMs: GET_STREAM_RETRY_MS,
      logger: era.logger,
      logFields: { stream: 'get', session: session.sid.slice(0, 8) },
      onEnd: () => slot.release(),
      map: (event) => eventNotification(event, filter),
    })
    return era.telemetry ? era.telemetry.stream('get', session.protocolVersion, stream) : stream
  } catch (error) {
    slot.release() // nothing holds a stream that failed to open
    throw error
  }
}

/** Ends `session` on every replica (204), once the caller holds the base scopes. */
export async function endSession<Deps>(
  era: LegacyEraContext<Deps>,
  session: LegacySession,
  input: LegacyInput
): Promise<Response> {
  const denied = scopeChallenge(era.server, { id: null, method: 'DELETE', params: {} }, input)
  if (denied) return denied
  await era.sessions.endSession(session.sid)
  return new Response(null, { status: 204 })
}
