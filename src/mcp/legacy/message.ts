/**
 * @module mcp/legacy/message
 * The POSTed 2025-era messages that are not requests, each answered 202 with no body once its scopes
 * are granted (the 403 challenge otherwise, nothing done or stored):
 * - a notification; `notifications/cancelled` reaches the replica running the request it names
 *   through the bus (`request_cancelled`), the others change nothing;
 * - a JSON-RPC response, the client's answer to a server→client request of an interactive flow: it
 *   needs the scopes of the call that asked (named in its id: `rendezvous.ts`) and is stored in its
 *   slot for the replica driving the flow, which the bus wakes (`input_delivered`), and which takes
 *   it at once when that is this replica (`rendezvous.ts` `LocalAnswers`); when that
 *   replica is gone (the flow's lease ran out), this one takes the flow over (`resume.ts`); an
 *   answer no slot expects is logged and changes nothing.
 */
import type { RequestObservation } from '../observer.ts'
import { scopeChallenge } from '../scopes.ts'
import * as z from 'zod'
import { LEGACY_NOTIFICATIONS } from './protocol.ts'
import type { LegacySession } from './session.ts'
import { adoptWaitingCall } from './resume.ts'
import {
  cancelKey,
  type LegacyEraContext,
  type LegacyInput,
  type Message,
  type OpenedSession,
} from './transport.ts'

const CancelledParamsSchema = z.looseObject({ requestId: z.union([z.string(), z.number()]) })

export async function notification<Deps>(
  era: LegacyEraContext<Deps>,
  message: Extract<Message, { kind: 'notification' }>,
  session: LegacySession,
  input: LegacyInput,
  observation: RequestObservation | undefined
): Promise<Response> {
  const denied = scopeChallenge(era.server, { id: null, ...message }, input, observation)
  if (denied) return denied
  if (message.method === LEGACY_NOTIFICATIONS.cancelled) {
    const parsed = CancelledParamsSchema.safeParse(message.params)
    if (parsed.success) {
      await era.bus.publish({
        kind: 'request_cancelled',
        session: session.sid,
        requestId: await cancelKey(parsed.data.requestId),
      })
    }
  }
  observation?.succeeded()
  return new Response(null, { status: 202 })
}

/**
 * Stores an answer in its slot for the replica holding the flow. It needs the scopes of the call
 * that asked (named in its id); refused, it stores nothing.
 */
export async function answer<Deps>(
  era: LegacyEraContext<Deps>,
  message: Extract<Message, { kind: 'response' }>,
  opened: OpenedSession,
  input: LegacyInput,
  observation: RequestObservation | undefined
): Promise<Response> {
  const { session } = opened
  const denied = scopeChallenge(era.server, { id: null, ...message.call }, input, observation)
  if (denied) return denied
  const payload = JSON.stringify(message.raw)
  const delivered = await era.sessions.deliverInput(session.sid, message.id, payload, era.now())
  if (!delivered) {
    era.logger.warn('answer for no pending request', { session: session.sid.slice(0, 8) })
  } else {
    // The flow waiting here for it, if any, takes it at once (`LocalAnswers`); the bus still wakes
    // one waiting elsewhere, which may drive the flow now if this replica lost its lease unaware.
    const handedOver = era.answers.deliver(session.sid, message.id, payload)
    await era.bus.publish({ kind: 'input_delivered', session: session.sid, requestId: message.id })
    // No flow waits for it here: the replica driving it may be gone, and then this one goes on.
    if (!handedOver) {
      void adoptWaitingCall(era, opened, input, message.id).catch((error: unknown) =>
        era.logger.warn('a waiting call could not be taken over', {
          session: session.sid.slice(0, 8),
          error: error instanceof Error ? error.message : String(error),
        })
      )
    }
  }
  return new Response(null, { status: 202 })
}
