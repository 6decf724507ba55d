/**
 * @module mcp/legacy/input-shim
 * Interactive flows for 2025-era clients, with the handlers unchanged. A suspendable request
 * (`tools/call`, `prompts/get`, `resources/read`) runs through the same `dispatch` as on the modern
 * path; when it answers `input_required`, this loop sends each ask to the client as a real
 * server→client request on the request's own SSE stream (`rendezvous.ts`), waits for the answers
 * (which may reach any replica), and dispatches again with them, exactly as a 2026-07-28 client would
 * retry. What the flow remembers between rounds is the state a round leaves in this process
 * (`DispatchEnv.heldState`: the journal a 2026-07-28 round would seal into `requestState`, held
 * instead, since these rounds never leave the process), inside the lifetime of the client's POST;
 * only the answers travel between replicas, through the store. Each request it sends
 * names the call it asks for (`rendezvous.ts`), so an answer reaching any replica needs that call's
 * scopes.
 *
 * Url-mode elicitation follows 2025-11-25: the request carries an `elicitationId` (derived from the
 * session and the question, so asking the same page again keeps the id); once the person accepted to
 * open the page, asking it again does not prompt again: the loop re-runs the handler every
 * `urlPollMs` until it moves on (the page was decided), then sends
 * `notifications/elicitation/complete` for it before the result.
 *
 * Bounded: at most `maxRounds` rounds that ask the client something, each answered within
 * `inputTimeoutMs`; a client that does not answer, answers with an error, or goes away ends the flow
 * with a clear message and nothing changed beyond what earlier, answered rounds did.
 */
import { canonicalJson, sha256Base64url } from '../canonical-json.ts'
import { DEFAULT_KEEPALIVE_MS } from '../event-stream.ts'
import type { DispatchResult } from '../dispatch-env.ts'
import type { EventBus } from '../event-bus.ts'
import type { SessionStore } from '../session-store.ts'
import type { InputRequest, InputRequiredResult, JsonObject } from '../wire.ts'
import { LEGACY_NOTIFICATIONS } from './protocol.ts'
import { exchange, type AskingCall, type ClientAnswer } from './rendezvous.ts'
import type { LegacySession } from './session.ts'

export const DEFAULT_INPUT_TIMEOUT_MS = 600_000
export const DEFAULT_MAX_ROUNDS = 8
export const DEFAULT_URL_POLL_MS = 1_000

export interface InputShimOptions {
  session: LegacySession
  /** The call whose asks these are: its answers need that call's scopes. */
  call: AskingCall
  sessions: SessionStore
  bus: EventBus
  /** Writes one server→client message (request or notification) to the POST's SSE stream. */
  send: (message: JsonObject) => void
  signal: AbortSignal
  now: () => number
  inputTimeoutMs?: number
  maxRounds?: number
  urlPollMs?: number
  answerPollMs?: number
  /** Keeps the SSE stream open while the flow waits (an SSE comment every `keepAliveMs`). */
  keepAlive?: () => void
  keepAliveMs?: number
}

/** Ends a 2025-era flow early; `tools/call` turns it into a tool error, other methods into -32603. */
export class FlowEndedError extends Error {
  override name = 'FlowEndedError'
}

function isInputRequired(result: JsonObject): result is JsonObject & InputRequiredResult {
  return result.resultType === 'input_required'
}

function isUrlElicitation(ask: InputRequest): boolean {
  return ask.method === 'elicitation/create' && ask.params?.mode === 'url'
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
  })
}

function describe(ask: InputRequest): string {
  return ask.method === 'elicitation/create'
    ? 'the question'
    : ask.method === 'sampling/createMessage'
      ? 'the request for a model completion'
      : 'the request for roots'
}

/**
 * Runs `round` (one dispatch with this round's `inputResponses`, in the state the previous round
 * left) until it completes, serving each `input_required` through server→client requests. Returns
 * the final result.
 */
export async function runWithClientInput(
  round: (inputResponses?: JsonObject) => Promise<DispatchResult>,
  options: InputShimOptions
): Promise<DispatchResult> {
  const { session, signal } = options
  const timeoutMs = options.inputTimeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS
  const maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS
  const urlPollMs = options.urlPollMs ?? DEFAULT_URL_POLL_MS
  /** Url pages the person agreed to open, by elicitationId: their `accept`, and until when to wait. */
  const openedPages = new Map<string, { answer: JsonObject; until: number }>()
  const keepAlive =
    options.keepAlive && setInterval(options.keepAlive, options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS)
  try {
    return await serve()
  } finally {
    clearInterval(keepAlive)
  }

  async function serve(): Promise<DispatchResult> {
    let asked = 0
    let outcome = await round()

    while (isInputRequired(outcome.result)) {
      if (signal.aborted) throw new FlowEndedError('The client went away; nothing more was done.')
      const { inputRequests = {} } = outcome.result
      const inputResponses: JsonObject = {}
      const toSend = new Map<string, InputRequest>()
      for (const [key, ask] of Object.entries(inputRequests)) {
        if (!isUrlElicitation(ask)) {
          toSend.set(key, ask)
          continue
        }
        const elicitationId = await elicitationIdFor(session.sid, ask)
        const opened = openedPages.get(elicitationId)
        if (opened) inputResponses[key] = opened.answer
        else toSend.set(key, { ...ask, params: { ...ask.params, elicitationId } })
      }

      if (toSend.size === 0) {
        // Only pages already opened are pending: wait for their out-of-band decision, then re-run.
        const deadline = Math.min(...[...openedPages.values()].map((page) => page.until))
        if (options.now() >= deadline) {
          throw new FlowEndedError(
            `Nobody completed the page within ${Math.ceil(timeoutMs / 1000)} s; nothing more was done.`
          )
        }
        await sleep(urlPollMs, signal)
      } else {
        asked += 1
        if (asked > maxRounds) {
          throw new FlowEndedError(
            `The flow asked more than ${maxRounds} times without finishing; nothing more was done.`
          )
        }
        const exchanged = await exchange(toSend, {
          sid: session.sid,
          call: options.call,
          sessions: options.sessions,
          bus: options.bus,
          send: options.send,
          timeoutMs,
          pollMs: options.answerPollMs,
          signal,
          now: options.now,
        })
        if (exchanged.kind === 'cancelled')
          throw new FlowEndedError('The request was cancelled; nothing more was done.')
        if (exchanged.kind === 'timeout') {
          const ask = toSend.get(exchanged.missing[0] as string) as InputRequest
          throw new FlowEndedError(
            `The client did not answer ${describe(ask)} within ${Math.ceil(timeoutMs / 1000)} s; nothing more was done.`
          )
        }
        for (const [key, answer] of exchanged.answers) {
          const ask = toSend.get(key) as InputRequest
          inputResponses[key] = answerFor(ask, answer)
          const elicitationId = ask.params?.elicitationId
          const accepted = (inputResponses[key] as JsonObject).action === 'accept'
          if (typeof elicitationId === 'string' && accepted) {
            openedPages.set(elicitationId, {
              answer: inputResponses[key] as JsonObject,
              until: options.now() + timeoutMs,
            })
          }
        }
      }
      outcome = await round(inputResponses)
    }

    for (const elicitationId of openedPages.keys()) {
      options.send({
        jsonrpc: '2.0',
        method: LEGACY_NOTIFICATIONS.elicitationComplete,
        params: { elicitationId },
      })
    }
    return outcome
  }
}

/** The `inputResponses` entry for one answer; a JSON-RPC error from the client ends the flow. */
function answerFor(ask: InputRequest, answer: ClientAnswer): JsonObject {
  if (answer.kind === 'result') return answer.result
  throw new FlowEndedError(
    `The client could not answer ${describe(ask)} (${answer.error.code}: ${answer.error.message}); nothing more was done.`
  )
}

async function elicitationIdFor(sid: string, ask: InputRequest): Promise<string> {
  const { message, url } = ask.params ?? {}
  return (await sha256Base64url(`${sid}\u0000${canonicalJson([message, url])}`)).slice(0, 22)
}
