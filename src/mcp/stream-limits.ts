/**
 * @module mcp/stream-limits
 * How many streams one caller may hold open on this replica at once: `subscriptions/listen` streams
 * (2026-07-28), 2025-era GET streams, and 2025-era interactive POSTs held open while they wait for
 * the client's answer (a `tools/call` whose `elicitation/create` is out). Each held stream costs this
 * process memory for as long as it lives (its queue is bounded by `event-stream.ts`, but their
 * number was not), so the caps are counted here, in memory, **per replica** (per isolate on Workers,
 * which is all a Worker can count: nothing is shared between isolates, and a fleet of N replicas
 * lets a caller hold N times the cap in all). A stream counts against its principal and, for the
 * 2025 kinds, against its session too; a listen stream has no session.
 *
 * A stream over a cap is refused before anything is opened, with the `CapExceededError` every
 * per-caller cap answers (`errors.ts`: -32602, `data` `{ cap: 'streams', scope, limit, held }`, a
 * message saying how many streams are open and what to do). Opening a listen or GET stream is
 * refused with HTTP 429 Too Many Requests (RFC 6585: the client sent too much, by its own doing, and
 * may try again later; the 2025 SDKs report a refused GET and keep working); an interactive call,
 * an operation that would have waited, is refused with 200 like any error of a call, before it asks
 * anything. Nothing about the caller beyond its count is kept, and the count is gone when its last
 * slot is released. Each is released exactly once, by what holds it: a listen or GET stream when its
 * connection is done (the client gone, the stream's end read, or the stream dropped and its
 * connection reset: `event-stream.ts`), never merely when the server gives up on it, so a client
 * that stops reading cannot keep connections past the cap; an interactive call when its final
 * message is settled. The streams and waiting calls of a 2025 session that ends (DELETE, eviction at
 * its principal's session cap, expiry) end with it on every replica (`legacy/session-end.ts`), and
 * give their slots back so.
 */
import { CapExceededError } from './errors.ts'
import { MAX_CAP, positiveWholeNumber } from './options.ts'

/**
 * Streams one 2025 session may hold at once: its GET stream (a client reconnecting before the server
 * noticed the old connection gone may briefly hold two or three) and the interactive calls waiting
 * for the person at the same time. No client needs more than a handful; 300 unread GET streams on one
 * session were accepted before this cap.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_STREAMS_PER_SESSION } from 'stateless-mcp'
 *
 * const server = createMcpServer(definition, {
 *   maxStreamsPerSession: DEFAULT_MAX_STREAMS_PER_SESSION / 2,
 * })
 * ```
 */
export const DEFAULT_MAX_STREAMS_PER_SESSION = 16
/**
 * Streams one principal may hold at once over all its sessions and listen streams: a person with a
 * few hosts open (each a listen or GET stream plus some waiting calls) stays far below it, while a
 * loop opening streams stops here. Without auth every caller is the one local principal, so this is
 * the replica's whole count: raise it when `ALLOW_UNAUTHENTICATED` serves many people.
 *
 * @example
 * ```ts
 * import { createMcpServer, DEFAULT_MAX_STREAMS_PER_PRINCIPAL } from 'stateless-mcp'
 *
 * // no authentication, a team behind one principal
 * const server = createMcpServer(definition, {
 *   maxStreamsPerPrincipal: 8 * DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
 * })
 * ```
 */
export const DEFAULT_MAX_STREAMS_PER_PRINCIPAL = 64

/**
 * A held-open stream: a `subscriptions/listen` stream (2026-07-28) or a 2025-era session's GET
 * stream, which open one, or a 2025-era interactive call, which waits in one for the client's answer.
 * The caps count all three; telemetry's open-stream count is told of the first two.
 *
 * @example
 * const kind: StreamKind = 'listen'
 */
export type StreamKind = 'listen' | 'get' | 'interactive'

/**
 * The caps on held-open streams, per 2025 session and per principal (`createMcpServer`'s options,
 * or a {@link StreamLimits}): whole numbers from 1 to `MAX_CAP`.
 *
 * @example
 * const caps: StreamLimitOptions = { maxStreamsPerSession: 4, maxStreamsPerPrincipal: 256 }
 */
export interface StreamLimitOptions {
  /** Default {@link DEFAULT_MAX_STREAMS_PER_SESSION}. */
  maxStreamsPerSession?: number
  /** Default {@link DEFAULT_MAX_STREAMS_PER_PRINCIPAL}. */
  maxStreamsPerPrincipal?: number
}

/** Whose stream it is: its principal and, for the 2025 kinds, its session's random id. */
export interface StreamHolder {
  principal: string
  session?: string
}

/**
 * A held stream's place in the counts; `release` gives it back (once; later calls do nothing), and
 * may be handed on alone (a stream's `onEnd`).
 */
export interface StreamSlot {
  readonly release: () => void
}

/**
 * The count of held-open streams (listen, 2025 GET, waiting interactive calls) per session and per
 * principal, and their caps: one per process or isolate, shared by every handler it serves
 * (`createMcpHandler`'s `streamLimits`). Throws `RangeError` for a cap that is not a whole number
 * from 1 to `MAX_CAP`.
 *
 * @example
 * ```ts
 * import { compileServer, createMcpHandler, StreamLimits } from 'stateless-mcp/compose'
 *
 * const streamLimits = new StreamLimits({ maxStreamsPerPrincipal: 256 })
 * const server = compileServer(definition)
 * const handler = createMcpHandler({ server, deps: undefined, sealer, bus, streamLimits })
 * ```
 */
export class StreamLimits {
  readonly maxStreamsPerSession: number
  readonly maxStreamsPerPrincipal: number
  readonly #byPrincipal = new Map<string, number>()
  readonly #bySession = new Map<string, number>()

  constructor(options: StreamLimitOptions = {}) {
    const bounds = { max: MAX_CAP }
    this.maxStreamsPerSession = positiveWholeNumber(
      'maxStreamsPerSession',
      options.maxStreamsPerSession ?? DEFAULT_MAX_STREAMS_PER_SESSION,
      bounds
    )
    this.maxStreamsPerPrincipal = positiveWholeNumber(
      'maxStreamsPerPrincipal',
      options.maxStreamsPerPrincipal ?? DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
      bounds
    )
  }

  /**
   * Takes a slot for a stream of `kind` held by `holder`, or throws the `CapExceededError` that
   * refuses it when the session or the principal holds its cap (429 for a stream that would open,
   * a listen or GET stream; 200 for an interactive call).
   */
  acquire(holder: StreamHolder, kind: StreamKind): StreamSlot {
    const { principal, session } = holder
    const principalOpen = this.#byPrincipal.get(principal) ?? 0
    const sessionOpen = session === undefined ? 0 : (this.#bySession.get(session) ?? 0)
    if (session !== undefined && sessionOpen >= this.maxStreamsPerSession) {
      throw refusal(kind, 'session', this.maxStreamsPerSession, sessionOpen)
    }
    if (principalOpen >= this.maxStreamsPerPrincipal) {
      throw refusal(kind, 'principal', this.maxStreamsPerPrincipal, principalOpen)
    }
    this.#byPrincipal.set(principal, principalOpen + 1)
    if (session !== undefined) this.#bySession.set(session, sessionOpen + 1)
    let held = true
    return {
      release: () => {
        if (!held) return
        held = false
        decrement(this.#byPrincipal, principal)
        if (session !== undefined) decrement(this.#bySession, session)
      },
    }
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1
  if (left > 0) counts.set(key, left)
  else counts.delete(key)
}

function refusal(
  kind: StreamKind,
  scope: 'session' | 'principal',
  limit: number,
  held: number
): CapExceededError {
  const message =
    scope === 'session'
      ? `Too many open streams: this session holds ${held} streams open on this server (GET streams and calls waiting for an answer), and at most ${limit} are allowed; close one, or let a waiting call finish, then try again.`
      : `Too many open streams: you hold ${held} streams open on this server (subscriptions/listen and GET streams, and calls waiting for an answer), and at most ${limit} are allowed; close some, or let waiting calls finish, then try again.`
  return new CapExceededError({ cap: 'streams', scope, limit, held }, message, {
    opensStream: kind !== 'interactive',
  })
}
