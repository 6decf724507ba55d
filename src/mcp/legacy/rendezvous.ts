/**
 * @module mcp/legacy/rendezvous
 * Server→client requests of a 2025-era session and the hand-off of their answers between replicas.
 * The replica driving a flow opens one store slot per request it sends (`SessionStore.expectInput`)
 * and writes the request as an event of the call's stream (`stream-log.ts`), then waits. The client
 * POSTs each answer to whichever replica the load balancer picks; that replica writes it into its
 * slot (`deliverInput`, which fills only an expected, unanswered, unexpired slot of the caller's own
 * session) and signals `input_delivered` on the event bus. The waiting replica, subscribed for its
 * session's signals, reads the answer from the store when the signal arrives, and also checks the
 * store on a slow timer, so an answer whose signal was lost (LISTEN/NOTIFY is at-most-once, and a
 * runtime may have no cross-replica bus) still arrives. The store is the truth; the bus is a
 * wake-up. A slot keeps its answer until the flow has moved on (`forgetInput`): a replica that takes
 * the flow over from one that died reads it again. When the answer reaches the replica driving the
 * flow, as it does without a load balancer or behind a sticky one, that replica hands it to the
 * waiting flow once it is stored (`LocalAnswers`), with no read back of what it just wrote (the bus
 * signal still goes out, for a replica that drives the flow now if this one lost its lease unaware).
 * A flow that has just sent its requests does not look in the store before it waits: only
 * microtasks run between the writing of the requests and the wait's subscriptions, so no answer to
 * them can have been received yet; and were one stored in between, the first poll
 * (`FIRST_ANSWER_POLL_MS`) would still read it.
 *
 * Request ids name where they come from: `s2c-<stream>-<seq>.<method>` (and `.<tool>` for
 * `tools/call`), the stream of the call and the number of the event that carries the request, so
 * they are unique within the session whichever replica sends them, and the same when a replica
 * taking the call over writes an event again. An answer counts only in the slot of the session whose
 * token sent it. The asking call in the id (its method and tool) tells the replica receiving the
 * answer which scopes the answer needs (those of the call: `scopes.ts`) without a lookup; the name is
 * trusted only because the slot matches the whole id: an id edited to name another call fills no
 * slot.
 */
import { MAX_EVENT_ID_CHARS, type EventBus } from '../event-bus.ts'
import { METHODS } from '../protocol.ts'
import type { SessionStore } from '../session-store.ts'
import type { JsonObject } from '../wire.ts'

/**
 * How often, at most, a waiting flow checks the store for answers whose bus signal it did not hear.
 * Checks start after `FIRST_ANSWER_POLL_MS` and double up to that interval: a machine answers within
 * milliseconds, a person within seconds, and a replica without a shared bus (SQLite replicas on one
 * host) still continues a flow quickly.
 */
export const DEFAULT_ANSWER_POLL_MS = 2_000
export const FIRST_ANSWER_POLL_MS = 50
/**
 * Longest server→client request id accepted in an answer: what the bus carries (`input_delivered`).
 * Ours are at most 182 characters (`newRequestId`): `s2c-`, the stream's 17 characters, a dash and
 * up to 9 digits, a dot and the asking method, the longest being `tools/call` (10; `resources/read`,
 * 14, names no tool), then a dot and the tool's name, at most 128 (`server.ts`): 32 + 10 + 1 + 128.
 */
export const MAX_ANSWER_ID_CHARS = MAX_EVENT_ID_CHARS

/**
 * The call a server→client request was sent for, as far as its scopes go (`scopes.ts`
 * `requiredScopes`): its method, and the tool's name in `params` for `tools/call`.
 */
export interface AskingCall {
  method: string
  params: JsonObject
}

/** `s2c-`, the stream, `-` and the event's number, then `.` and the asking call. */
const REQUEST_ID = /^s2c-([pg][A-Za-z0-9_-]{16})-\d{1,9}\.([^.]+)(?:\.(.+))?$/

/** The client's answer to one server→client request: a JSON-RPC result or error. */
export type ClientAnswer =
  | { kind: 'result'; result: JsonObject }
  | { kind: 'error'; error: { code: number; message: string } }

export type AnswersOutcome =
  | { kind: 'answered'; answers: Map<string, ClientAnswer> }
  | { kind: 'timeout'; missing: string[] }
  | { kind: 'cancelled' }

/**
 * The flows waiting on this replica for answers, by session and request id: an answer stored by
 * this replica for one of them is handed over at once (module header).
 */
export class LocalAnswers {
  readonly #waiting = new Map<string, (payload: string) => void>()

  /**
   * Hands the stored answer `payload` to the flow waiting here for `requestId` of session `sid`;
   * false when none waits for it on this replica.
   */
  deliver(sid: string, requestId: string, payload: string): boolean {
    const take = this.#waiting.get(`${sid} ${requestId}`)
    take?.(payload)
    return take !== undefined
  }

  /** Waits here for the answer to `requestId` of `sid`; returns the function that stops it. */
  wait(sid: string, requestId: string, take: (payload: string) => void): () => void {
    const key = `${sid} ${requestId}`
    this.#waiting.set(key, take)
    return () => {
      if (this.#waiting.get(key) === take) this.#waiting.delete(key)
    }
  }
}

export interface AwaitAnswersOptions {
  sid: string
  sessions: SessionStore
  bus: EventBus
  /** Where answers stored by this replica are handed over without the store. */
  local?: LocalAnswers
  /**
   * The requests were sent just now, after their slots were opened: no answer can be in the store
   * yet, so the first look there is skipped (a flow taken over looks at once).
   */
  justAsked?: boolean
  /** When the answers are due (ms since the epoch). */
  answerBy: number
  /** The longest pause between two store checks; `Infinity` checks only on bus signals. */
  pollMs?: number
  signal: AbortSignal
  now: () => number
}

/** The id of the server→client request carried by event `seq` of `stream`, asked for `call`. */
export function newRequestId(stream: string, seq: number, { method, params }: AskingCall): string {
  const id = `s2c-${stream}-${seq}.${method}`
  return method === METHODS.toolsCall && typeof params.name === 'string'
    ? `${id}.${params.name}`
    : id
}

/** The call an answer's id names, or `undefined` when the id is none the server sends. */
export function askingCall(id: string): AskingCall | undefined {
  const [, , method, name] = REQUEST_ID.exec(id) ?? []
  if (method === undefined) return undefined
  return { method, params: name === undefined ? {} : { name } }
}

/** The stream whose event carried the server→client request `id`, or `undefined` for none of ours. */
export function streamOfRequestId(id: string): string | undefined {
  return REQUEST_ID.exec(id)?.[1]
}

function parseAnswer(payload: string): ClientAnswer {
  try {
    const message = JSON.parse(payload) as JsonObject
    const result = message.result
    if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
      return { kind: 'result', result: result as JsonObject }
    }
    const error = message.error as { code?: unknown; message?: unknown } | undefined
    if (error && typeof error === 'object') {
      return {
        kind: 'error',
        error: {
          code: typeof error.code === 'number' ? error.code : -32603,
          message:
            typeof error.message === 'string' ? error.message.slice(0, 500) : 'unknown error',
        },
      }
    }
  } catch {
    // fall through: a slot only ever holds what the receiving replica checked, but stay closed
  }
  return { kind: 'error', error: { code: -32603, message: 'malformed answer' } }
}

/**
 * Waits for the answers to the requests `keyOf` names (request id → the ask's key), already sent
 * with their slots open: every answer, the deadline, or the signal. Slots stay as they are (the
 * caller forgets them once the round they answer has moved the flow on).
 */
export async function awaitAnswers(
  keyOf: ReadonlyMap<string, string>,
  options: AwaitAnswersOptions
): Promise<AnswersOutcome> {
  const { sid, sessions, bus, signal } = options
  if (signal.aborted) return { kind: 'cancelled' }
  const waiting = new Map(keyOf)
  const answers = new Map<string, ClientAnswer>()
  const reading = new Set<string>()
  let finish!: (outcome: AnswersOutcome) => void
  const done = new Promise<AnswersOutcome>((resolve) => (finish = resolve))

  const take = (id: string, payload: string) => {
    const key = waiting.get(id)
    if (key === undefined) return
    answers.set(key, parseAnswer(payload))
    waiting.delete(id)
    if (waiting.size === 0) finish({ kind: 'answered', answers })
  }
  const read = async (id: string) => {
    if (reading.has(id) || !waiting.has(id)) return
    reading.add(id)
    try {
      const payload = await sessions.readInput(sid, id)
      if (payload !== undefined) take(id, payload)
    } finally {
      reading.delete(id)
    }
  }
  const readAll = () => {
    for (const id of waiting.keys()) void read(id).catch(() => {})
  }

  const unsubscribe = bus.subscribe(
    (event) => {
      if (event.kind === 'input_delivered' && event.session === sid) {
        void read(event.requestId).catch(() => {})
      }
    },
    { session: sid }
  )
  const handedOver = [...waiting.keys()].map(
    (id) => options.local?.wait(sid, id, (payload) => take(id, payload)) ?? (() => {})
  )
  const onAbort = () => finish({ kind: 'cancelled' })
  signal.addEventListener('abort', onAbort, { once: true })
  const maxPollMs = options.pollMs ?? DEFAULT_ANSWER_POLL_MS
  let poll: ReturnType<typeof setTimeout> | undefined
  const schedulePoll = (delay: number) => {
    if (!Number.isFinite(maxPollMs)) return
    poll = setTimeout(() => {
      readAll()
      schedulePoll(Math.min(delay * 2, maxPollMs))
    }, delay)
  }
  // Answers may be in already (delivered while no replica held the flow): look once at the start.
  if (!options.justAsked) readAll()
  schedulePoll(Math.min(FIRST_ANSWER_POLL_MS, maxPollMs))
  const timeout = setTimeout(
    () => finish({ kind: 'timeout', missing: [...waiting.values()] }),
    Math.max(0, options.answerBy - options.now())
  )
  try {
    return await done
  } finally {
    unsubscribe()
    for (const stop of handedOver) stop()
    signal.removeEventListener('abort', onAbort)
    clearTimeout(poll)
    clearTimeout(timeout)
  }
}
