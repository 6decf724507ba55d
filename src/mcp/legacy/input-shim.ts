/**
 * @module mcp/legacy/input-shim
 * Interactive flows for 2025-era clients, with the handlers unchanged. A suspendable request
 * (`tools/call`, `prompts/get`, `resources/read`) runs through the same `dispatch` as on the modern
 * path; when it answers `input_required`, this loop sends each ask to the client as a real
 * server→client request on the request's own SSE stream (`rendezvous.ts`), waits for the answers
 * (which may reach any replica), and dispatches again with them, exactly as a 2026-07-28 client would
 * retry. What the flow remembers between rounds is the state a round leaves
 * (`DispatchEnv.heldState`: the journal a 2026-07-28 round would seal into `requestState`, held
 * instead, since it never travels to the client). Before each round of asks goes out, the loop has
 * its host store a checkpoint (`FlowCheckpoint`: that state, the requests it waits for, its round
 * count) with the call's stream, so that when the replica driving it dies, another one continues
 * the loop from the checkpoint (`resumeFrom`, `call-lease.ts`). Each request it sends names the call
 * it asks for (`rendezvous.ts`), so an answer reaching any replica needs that call's scopes.
 *
 * Url-mode elicitation follows 2025-11-25: the request carries an `elicitationId` (derived from the
 * session and the question, so asking the same page again keeps the id); once the person accepted to
 * open the page, asking it again does not prompt again: the loop re-runs the handler every
 * `urlPollMs` until it moves on (the page was decided), then sends
 * `notifications/elicitation/complete` for it before the result.
 *
 * Bounded: at most `maxRounds` rounds that ask the client something, each answered within
 * `inputTimeoutMs`; a client that does not answer, answers with an error, or cancels ends the flow
 * with a clear message and nothing changed beyond what earlier, answered rounds did. A client whose
 * connection drops has not gone away: it resumes the stream (2025-11-25 "Resumability").
 */
import { canonicalJson, sha256Base64url } from '../canonical-json.ts'
import type { DispatchResult } from '../dispatch-env.ts'
import type { EventBus } from '../event-bus.ts'
import type { SessionStore } from '../session-store.ts'
import type { OpenedState } from '../sealed-state.ts'
import type { InputRequest, InputRequiredResult, JsonObject } from '../wire.ts'
import { LEGACY_NOTIFICATIONS } from './protocol.ts'
import { awaitAnswers, type ClientAnswer, type LocalAnswers } from './rendezvous.ts'
import type { LegacySession } from './session.ts'

export const DEFAULT_INPUT_TIMEOUT_MS = 600_000
export const DEFAULT_MAX_ROUNDS = 8
export const DEFAULT_URL_POLL_MS = 1_000

/** Url pages the person agreed to open, by elicitationId: their `accept`, and until when to wait. */
type OpenedPages = Record<string, { answer: JsonObject; until: number }>

/**
 * Where a flow stands while it waits for the client: everything a replica needs to continue it
 * (`call-lease.ts` stores it with the call's stream). JSON through and through.
 */
export interface FlowCheckpoint {
  /** The state the last round left (`StateSealer.hold`: never sealed, since it never leaves). */
  held: OpenedState
  /** Rounds so far that asked the client something. */
  asked: number
  pages: OpenedPages
  /**
   * The server→client requests sent and waited for: by request id, the ask's key, the ask, and the
   * number of the stream event carrying it.
   */
  waiting: Record<string, { key: string; ask: InputRequest; seq: number }>
  /** Answers the next round has without asking (pages opened earlier). */
  known: JsonObject
  /** When the answers are due (ms since the epoch). */
  answerBy: number
}

/** What the loop asks of the stream the flow runs on (`request.ts`). */
export interface FlowHost {
  /** The state the last round left. */
  held(): OpenedState | undefined
  /**
   * Sends one round's asks (by key): names each with its request id and opens its answer slot,
   * stores the checkpoint so that any replica can continue the flow from it, then writes the
   * requests on the stream. Answers the checkpoint's `waiting`.
   */
  ask(
    asks: ReadonlyMap<string, InputRequest>,
    checkpoint: Omit<FlowCheckpoint, 'waiting'>
  ): Promise<FlowCheckpoint['waiting']>
  /** Writes one server→client notification on the stream. */
  notify(message: JsonObject): void
}

export interface InputShimOptions {
  session: LegacySession
  sessions: SessionStore
  bus: EventBus
  /** Where answers this replica stores are handed to the flow at once (`rendezvous.ts`). */
  answers?: LocalAnswers
  host: FlowHost
  /** Aborted when the flow must stop: the client cancelled it, or another replica holds it now. */
  signal: AbortSignal
  now: () => number
  /** Where a flow taken over from another replica continues: its wait for the client's answers. */
  resumeFrom?: FlowCheckpoint
  inputTimeoutMs?: number
  maxRounds?: number
  urlPollMs?: number
  answerPollMs?: number
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
 * left) until it completes, serving each `input_required` through server→client requests; or, with
 * `resumeFrom`, continues a flow from the answers it waits for. Returns the final result.
 */
export async function runWithClientInput(
  round: (inputResponses?: JsonObject) => Promise<DispatchResult>,
  options: InputShimOptions
): Promise<DispatchResult> {
  const { session, signal, host, resumeFrom } = options
  const timeoutMs = options.inputTimeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS
  const maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS
  const urlPollMs = options.urlPollMs ?? DEFAULT_URL_POLL_MS
  const pages: OpenedPages = { ...resumeFrom?.pages }
  let asked = resumeFrom?.asked ?? 0
  let outcome = resumeFrom ? await answered(resumeFrom) : await round()

  while (isInputRequired(outcome.result)) {
    if (signal.aborted)
      throw new FlowEndedError('The request was cancelled; nothing more was done.')
    const { inputRequests = {} } = outcome.result
    const inputResponses: JsonObject = {}
    const toSend = new Map<string, InputRequest>()
    for (const [key, ask] of Object.entries(inputRequests)) {
      if (!isUrlElicitation(ask)) {
        toSend.set(key, ask)
        continue
      }
      const elicitationId = await elicitationIdFor(session.sid, ask)
      const opened = pages[elicitationId]
      if (opened) inputResponses[key] = opened.answer
      else toSend.set(key, { ...ask, params: { ...ask.params, elicitationId } })
    }

    if (toSend.size === 0) {
      // Only pages already opened are pending: wait for their out-of-band decision, then re-run.
      const deadline = Math.min(...Object.values(pages).map((page) => page.until))
      if (options.now() >= deadline) {
        throw new FlowEndedError(
          `Nobody completed the page within ${Math.ceil(timeoutMs / 1000)} s; nothing more was done.`
        )
      }
      await sleep(urlPollMs, signal)
      // A flow stopped meanwhile (cancelled, its session ended) runs no round more.
      if (!signal.aborted) outcome = await round(inputResponses)
      continue
    }
    asked += 1
    if (asked > maxRounds) {
      throw new FlowEndedError(
        `The flow asked more than ${maxRounds} times without finishing; nothing more was done.`
      )
    }
    const held = host.held() as OpenedState
    const checkpoint = {
      held,
      asked,
      pages,
      known: inputResponses,
      answerBy: options.now() + timeoutMs,
    }
    const waiting = await host.ask(toSend, checkpoint)
    outcome = await answered({ ...checkpoint, waiting }, true)
  }

  for (const elicitationId of Object.keys(pages)) {
    host.notify({
      jsonrpc: '2.0',
      method: LEGACY_NOTIFICATIONS.elicitationComplete,
      params: { elicitationId },
    })
  }
  return outcome

  /**
   * Waits for the answers `checkpoint` waits for (`justAsked`: their requests were sent just now),
   * then runs the round they answer.
   */
  async function answered(checkpoint: FlowCheckpoint, justAsked = false): Promise<DispatchResult> {
    const keyOf = new Map(Object.entries(checkpoint.waiting).map(([id, { key }]) => [id, key]))
    const outcome = await awaitAnswers(keyOf, {
      sid: session.sid,
      sessions: options.sessions,
      bus: options.bus,
      local: options.answers,
      justAsked,
      answerBy: checkpoint.answerBy,
      pollMs: options.answerPollMs,
      signal,
      now: options.now,
    })
    if (outcome.kind === 'cancelled')
      throw new FlowEndedError('The request was cancelled; nothing more was done.')
    const asks = new Map(Object.values(checkpoint.waiting).map(({ key, ask }) => [key, ask]))
    if (outcome.kind === 'timeout') {
      const ask = asks.get(outcome.missing[0] as string) as InputRequest
      throw new FlowEndedError(
        `The client did not answer ${describe(ask)} within ${Math.ceil(timeoutMs / 1000)} s; nothing more was done.`
      )
    }
    const inputResponses: JsonObject = { ...checkpoint.known }
    for (const [key, answer] of outcome.answers) {
      const ask = asks.get(key) as InputRequest
      const response = answerFor(ask, answer)
      inputResponses[key] = response
      const elicitationId = ask.params?.elicitationId
      if (typeof elicitationId === 'string' && response.action === 'accept') {
        pages[elicitationId] = { answer: response, until: options.now() + timeoutMs }
      }
    }
    return round(inputResponses)
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
