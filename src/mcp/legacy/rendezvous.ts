/**
 * @module mcp/legacy/rendezvous
 * Server→client requests of a 2025-era session and the hand-off of their answers between replicas.
 * The replica holding a flow's SSE stream opens one store slot per request it sends
 * (`SessionStore.expectInput`), then waits. The client POSTs each answer to whichever replica the load
 * balancer picks; that replica writes it into its slot (`deliverInput`, which fills only an expected,
 * unanswered, unexpired slot of the caller's own session) and signals `input_delivered` on the event
 * bus. The waiting replica, subscribed for its session's signals, takes the answer from the store
 * when the signal arrives, and also checks the store on a slow timer, so an answer whose signal was
 * lost (LISTEN/NOTIFY is at-most-once, and a runtime may have no cross-replica bus) still arrives. The store is the truth; the bus is a wake-up.
 *
 * Request ids are random (96 bits) so they are unique within the session whichever replica sends them,
 * and an answer counts only in the slot of the session whose token sent it. Each id also names the
 * call that asked (`s2c-<random>.<method>`, and `.<tool>` for `tools/call`): the replica receiving
 * the answer learns from it which scopes the answer needs (those of the call: `scopes.ts`) without
 * a lookup. The name is trusted only because the slot matches the whole id: an id edited to name
 * another call fills no slot.
 */
import { MAX_EVENT_ID_CHARS, type EventBus } from '../event-bus.ts'
import { METHODS } from '../protocol.ts'
import { randomBase64url } from '../random.ts'
import type { SessionStore } from '../session-store.ts'
import type { InputRequest, JsonObject } from '../wire.ts'

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
 * Ours are at most 160 characters (`newRequestId`): `s2c-` and 16 random characters (12 bytes in
 * base64url), a dot and the asking method, the longest being `tools/call` (10; `resources/read`,
 * 14, names no tool), then a dot and the tool's name, at most 128 (`server.ts`): 21 + 10 + 1 + 128.
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

/** `s2c-`, 16 random characters, then `.` and the asking call. */
const REQUEST_ID = /^s2c-[A-Za-z0-9_-]{16}\.([^.]+)(?:\.(.+))?$/

/** The client's answer to one server→client request: a JSON-RPC result or error. */
export type ClientAnswer =
  | { kind: 'result'; result: JsonObject }
  | { kind: 'error'; error: { code: number; message: string } }

export type ExchangeOutcome =
  | { kind: 'answered'; answers: Map<string, ClientAnswer> }
  | { kind: 'timeout'; missing: string[] }
  | { kind: 'cancelled' }

export interface ExchangeOptions {
  sid: string
  /** The call the asks are for, named in each request id. */
  call: AskingCall
  sessions: SessionStore
  bus: EventBus
  /** Writes one server→client JSON-RPC request to the flow's SSE stream. */
  send: (message: JsonObject) => void
  timeoutMs: number
  /** The longest pause between two store checks; `Infinity` checks only on bus signals. */
  pollMs?: number
  signal: AbortSignal
  now: () => number
}

function newRequestId({ method, params }: AskingCall): string {
  const id = `s2c-${randomBase64url(12)}.${method}`
  return method === METHODS.toolsCall && typeof params.name === 'string'
    ? `${id}.${params.name}`
    : id
}

/** The call an answer's id names, or `undefined` when the id is none the server sends. */
export function askingCall(id: string): AskingCall | undefined {
  const [, method, name] = REQUEST_ID.exec(id) ?? []
  if (method === undefined) return undefined
  return { method, params: name === undefined ? {} : { name } }
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
 * Sends `asks` (by key) as server→client requests and waits for every answer, the timeout, or the
 * signal. Slots still open at the end are removed.
 */
export async function exchange(
  asks: ReadonlyMap<string, InputRequest>,
  options: ExchangeOptions
): Promise<ExchangeOutcome> {
  const { sid, sessions, bus, signal } = options
  if (signal.aborted) return { kind: 'cancelled' }
  const keyOf = new Map<string, string>()
  for (const key of asks.keys()) keyOf.set(newRequestId(options.call), key)
  const expiresAt = options.now() + options.timeoutMs
  await Promise.all([...keyOf.keys()].map((id) => sessions.expectInput(sid, id, expiresAt)))

  const answers = new Map<string, ClientAnswer>()
  const taking = new Set<string>()
  let finish!: (outcome: ExchangeOutcome) => void
  const done = new Promise<ExchangeOutcome>((resolve) => (finish = resolve))

  const take = async (id: string) => {
    if (taking.has(id) || !keyOf.has(id)) return
    taking.add(id)
    try {
      const payload = await sessions.takeInput(sid, id)
      if (payload === undefined) return
      answers.set(keyOf.get(id) as string, parseAnswer(payload))
      keyOf.delete(id)
      if (keyOf.size === 0) finish({ kind: 'answered', answers })
    } finally {
      taking.delete(id)
    }
  }
  const takeAll = () => {
    for (const id of keyOf.keys()) void take(id).catch(() => {})
  }

  const unsubscribe = bus.subscribe(
    (event) => {
      if (event.kind === 'input_delivered' && event.session === sid) {
        void take(event.requestId).catch(() => {})
      }
    },
    { session: sid }
  )
  const onAbort = () => finish({ kind: 'cancelled' })
  signal.addEventListener('abort', onAbort, { once: true })
  const maxPollMs = options.pollMs ?? DEFAULT_ANSWER_POLL_MS
  let poll: ReturnType<typeof setTimeout> | undefined
  const schedulePoll = (delay: number) => {
    if (!Number.isFinite(maxPollMs)) return
    poll = setTimeout(() => {
      takeAll()
      schedulePoll(Math.min(delay * 2, maxPollMs))
    }, delay)
  }
  schedulePoll(Math.min(FIRST_ANSWER_POLL_MS, maxPollMs))
  const timeout = setTimeout(
    () => finish({ kind: 'timeout', missing: [...keyOf.values()] }),
    options.timeoutMs
  )
  try {
    for (const [id, key] of keyOf) {
      const ask = asks.get(key) as InputRequest
      options.send({ jsonrpc: '2.0', id, method: ask.method, params: ask.params ?? {} })
    }
    return await done
  } finally {
    unsubscribe()
    signal.removeEventListener('abort', onAbort)
    clearTimeout(poll)
    clearTimeout(timeout)
    await Promise.all([...keyOf.keys()].map((id) => sessions.forgetInput(sid, id).catch(() => {})))
  }
}
