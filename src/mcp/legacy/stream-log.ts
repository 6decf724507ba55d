/**
 * @module mcp/legacy/stream-log
 * The resumable SSE streams of a 2025-era session (2025-11-25 "Resumability and Redelivery", and
 * SEP-1699 polling). Every stream has an id unique within its session, `p…` for the stream of a
 * POSTed request and `g…` for the session's GET notification stream, and every event it carries the
 * id `<stream>.<seq>`, numbered from 1 (0 is the priming event's): any replica reads from it which
 * stream of the session to resume, and where.
 * - `StreamLog` writes one POST stream, on the replica driving its call: each event is stored
 *   (`../stream-store.ts`; at most `MAX_KEPT_EVENTS_PER_STREAM` of them, and none for a stream whose
 *   record was not kept, `call-stream.ts`) before it is written to the connection attached, if any,
 *   and, once no connection of its own is open, announced on the bus (`stream_appended`) for a
 *   replica serving a resumed connection of it, which reads it back from the store. A number another replica stored first means that replica
 *   took the call over: the log has lost the stream and writes nothing more.
 * - `SseConnection` is one HTTP response carrying a stream's events: keep-alive comments, and an end
 *   with an SSE `retry` hint when the server lets go of the connection while the stream goes on (its
 *   maximum duration, shutdown, a handler's `ctx.closeStream()`), so the client resumes; a client
 *   that stops reading is cut off once a bounded queue is full, and resumes from the store too.
 */
import type { EventBus } from '../event-bus.ts'
import type { McpLogger } from '../logger.ts'
import { randomBase64url } from '../random.ts'
import type { StreamStore } from '../stream-store.ts'
import {
  SSE_HEADERS,
  SSE_KEEPALIVE,
  closeQuietly,
  sseIdentified,
  sseRetry,
  sseText,
} from '../streaming.ts'
import { isObject } from '../wire.ts'

/** `p` or `g`, then 16 random characters (96 bits). */
const STREAM_ID = /^[pg][A-Za-z0-9_-]{16}$/
const EVENT_ID = /^([pg][A-Za-z0-9_-]{16})\.(\d{1,9})$/

/** The highest event number an id may carry (nine digits, what {@link parseEventId} accepts). */
export const MAX_EVENT_SEQ = 999_999_999

/** What a resumable 2025 stream carries: one POST's answer, or a session's GET notifications. */
export type LoggedStreamKind = 'post' | 'get'

/**
 * The SSE `retry` sent when the server lets go of a connection (its maximum duration, shutdown, a
 * handler's `closeStream`, a GET stream it ends): 2025 clients reconnect, and this is the first delay
 * of the v1 SDK's own backoff, so a reconnect comes soon but not at once.
 */
export const STREAM_RETRY_MS = 1_000
/**
 * How much longer than a flow's answer timeout a stream's events are kept: a client that lost its
 * connection comes back within its own reconnect backoff (seconds), and this leaves minutes.
 */
export const DEFAULT_RESUME_WINDOW_MS = 5 * 60_000
/**
 * Bytes a connection may hold unread before its client counts as not reading and is cut off: a
 * call's stream carries a few messages, one of them possibly large (a result), which always goes
 * out; past this much unread, nothing is lost by cutting it, since the client resumes from the store.
 */
export const MAX_UNREAD_STREAM_BYTES = 1024 * 1024
/**
 * Events of one stream kept in the store: a call's stream carries its questions (at most the input
 * shim's rounds), its final response and whatever progress and log messages the handler sends. Past
 * this many, later events are still written live but not kept, so a handler that logs without end
 * cannot grow the store; a client resuming after them misses what was not kept.
 */
export const MAX_KEPT_EVENTS_PER_STREAM = 1_000
/**
 * How long a stream's record is kept once it has ended: long enough for a client whose connection
 * dropped just before the answer to come back for it (the v1 SDK's backoff waits at most 30 s).
 */
export const ENDED_STREAM_RETENTION_MS = 2 * 60_000

/** A new stream id of `kind`. */
export function newStreamId(kind: LoggedStreamKind): string {
  return `${kind === 'post' ? 'p' : 'g'}${randomBase64url(12)}`
}

export function isStreamId(text: string): boolean {
  return STREAM_ID.test(text)
}

/** The SSE id of event `seq` of `stream`. */
export function eventId(stream: string, seq: number): string {
  return `${stream}.${seq}`
}

/** What a `Last-Event-ID` names, or `undefined` when it is no id this server sends. */
export function parseEventId(
  text: string
): { stream: string; seq: number; kind: LoggedStreamKind } | undefined {
  const [, stream, seq] = EVENT_ID.exec(text) ?? []
  if (stream === undefined || seq === undefined) return undefined
  return { stream, seq: Number(seq), kind: stream.startsWith('p') ? 'post' : 'get' }
}

/** Whether a stored event is the final response of its stream's call (nothing follows it). */
export function isFinalEvent(payload: string): boolean {
  try {
    const message: unknown = JSON.parse(payload)
    return (
      isObject(message) && !('method' in message) && ('result' in message || 'error' in message)
    )
  } catch {
    return false
  }
}

/** The bounds of one connection (defaults in `resumable.ts`'s caller). */
export interface ConnectionBounds {
  keepAliveMs: number
  /** The connection is let go (with `retry`) after this long; the stream goes on. */
  maxDurationMs: number
  /** The SSE `retry` sent when the server lets go of a connection. */
  retryMs: number
  /** Bytes queued unread after which the client counts as not reading and is cut off. */
  maxQueuedBytes: number
  /** Aborted when the server shuts down: the connection is let go, with `retry`. */
  shutdown?: AbortSignal
}

/** One HTTP response carrying a stream's events (see the module header). */
export class SseConnection {
  readonly response: Response
  readonly #bounds: ConnectionBounds
  #controller!: ReadableStreamDefaultController<Uint8Array>
  #open = true
  readonly #onClose: () => void
  readonly #timers: ReturnType<typeof setTimeout>[] = []
  /** How a let-go the connection decides itself (its bound, shutdown) is carried out. */
  #schedule: (letGo: () => void) => void = (letGo) => letGo()
  readonly #letGoDue = (): void => this.#schedule(this.letGo)

  /** `onClose` runs once, when the connection is done whichever way. */
  constructor(bounds: ConnectionBounds, onClose: () => void = () => {}) {
    this.#bounds = bounds
    this.#onClose = onClose
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller
        },
        cancel: () => this.#finish(),
      },
      { highWaterMark: bounds.maxQueuedBytes, size: (chunk) => chunk.byteLength }
    )
    this.response = new Response(body, { status: 200, headers: SSE_HEADERS })
    // A keep-alive goes out only when nothing else waits: an unread queue needs none.
    const keepAlive = setInterval(() => {
      if (this.#controller.desiredSize === bounds.maxQueuedBytes) this.#write(SSE_KEEPALIVE)
    }, bounds.keepAliveMs)
    this.#timers.push(keepAlive, setTimeout(this.#letGoDue, bounds.maxDurationMs))
    bounds.shutdown?.addEventListener('abort', this.#letGoDue)
    if (bounds.shutdown?.aborted) queueMicrotask(this.#letGoDue)
  }

  /**
   * Has the let-go the connection decides itself (at its maximum duration, at shutdown) go through
   * `schedule`: a stream log lets go only after what it has queued (`StreamLog.attach`), so a
   * client is never let go of before the event id it would resume from.
   */
  letGoThrough(schedule: (letGo: () => void) => void): void {
    this.#schedule = schedule
  }

  get open(): boolean {
    return this.#open
  }

  /**
   * Writes event `id` carrying `data` (JSON text; empty for a priming event); without an id, an
   * event nothing can resume from.
   */
  event(id: string | undefined, data: string): void {
    this.#write(id === undefined ? sseText(data) : sseIdentified(id, data))
  }

  /** Lets go of the connection while the stream goes on: `retry` first, so the client resumes. */
  readonly letGo = (): void => {
    if (!this.#open) return
    this.#write(sseRetry(this.#bounds.retryMs))
    this.close()
  }

  /** Ends the connection (after a stream's last event, or to let go of it). */
  close(): void {
    if (!this.#open) return
    closeQuietly(this.#controller)
    this.#finish()
  }

  #write(chunk: Uint8Array): void {
    if (!this.#open) return
    if ((this.#controller.desiredSize ?? 0) < 0) {
      // More than the bound waits unread: the client is not reading. Cut it off (the runtime
      // resets the connection); it resumes from the store.
      this.#controller.error(new Error('the client stopped reading its stream'))
      return this.#finish()
    }
    try {
      this.#controller.enqueue(chunk)
    } catch {
      this.#finish() // the reader went away
    }
  }

  #finish(): void {
    if (!this.#open) return
    this.#open = false
    for (const timer of this.#timers) clearTimeout(timer)
    this.#bounds.shutdown?.removeEventListener('abort', this.#letGoDue)
    this.#onClose()
  }
}

/** What a stream log writes with. */
export interface StreamLogContext {
  store: StreamStore
  bus: EventBus
  logger: McpLogger
  now: () => number
  /** How long a stored event is kept for a client to resume from. */
  retentionMs: number
}

/** The writer of one POST stream on the replica driving its call (see the module header). */
export class StreamLog {
  readonly sid: string
  readonly stream: string
  readonly #context: StreamLogContext
  #seq: number
  #connection: SseConnection | undefined
  /** Every append, in order: each waits for the one before it. */
  #written: Promise<unknown>
  readonly #kept: Promise<boolean>
  #lost = false
  /**
   * Settles once the client holds an id to resume from (the priming event or a stored event was
   * written), or once the stream is known not to be kept (nothing will ever give it one).
   */
  readonly #resumable: Promise<void>
  #markResumable!: () => void

  /**
   * `lastSeq`: the number of the last event the stream already has (0 for a new stream). `kept`,
   * for a new stream only, settles before its first event is stored (its record created): whether
   * its events are stored; false for a stream whose record was not kept (`call-stream.ts`), which
   * nothing can resume: its events are written live only. Without it, the stream exists already
   * (taken over): stored, and its client holds an id of it.
   */
  constructor(
    context: StreamLogContext,
    sid: string,
    stream: string,
    lastSeq = 0,
    kept?: Promise<boolean>
  ) {
    this.#context = context
    this.sid = sid
    this.stream = stream
    this.#seq = lastSeq
    this.#kept = kept ?? Promise.resolve(true)
    this.#written = this.#kept
    this.#resumable = new Promise((resolve) => (this.#markResumable = resolve))
    if (kept) void kept.then((isKept) => isKept || this.#markResumable())
    else this.#markResumable()
  }

  /** Whether another replica stored an event first: it drives the stream now, not this one. */
  get lost(): boolean {
    return this.#lost
  }

  get connection(): SseConnection | undefined {
    return this.#connection
  }

  /**
   * Writes the stream's events to `connection` from now on (none before it: it replayed them); the
   * connection lets go of its client only after what is queued here, and never before the client
   * holds an id to resume from (`SseConnection.letGoThrough`): a stream opened while the server
   * already shuts down is let go only once its priming event, written after its record is stored
   * (maybe later than this), is out.
   */
  attach(connection: SseConnection): void {
    this.#connection = connection
    connection.letGoThrough((letGo) => {
      const queued = this.#written
      void this.#resumable.then(() => queued).then(letGo)
    })
  }

  /**
   * Writes the priming event (`<stream>.0`, empty data) once everything before it is done; none for
   * a stream that is not kept, whose events carry no id (nothing could resume from one).
   */
  prime(): void {
    this.#written = this.#written.then(async () => {
      if (!(await this.#kept)) return
      this.#connection?.event(eventId(this.stream, 0), '')
      this.#markResumable()
    })
  }

  /**
   * Writes `text` live only (no id: nothing of the stream is kept any more, its session having
   * ended) and closes the connection, once what was written before is out.
   */
  endLive(text: string): void {
    this.#written = this.#written.then(() => {
      this.#connection?.event(undefined, text)
      this.#connection?.close()
    })
  }

  /** Lets go of the connection (`SseConnection.letGo`) once what was written before is out. */
  letGo(): void {
    this.#written = this.#written.then(() => this.#connection?.letGo())
  }

  /** The number the next event takes; `append` it with that number, in the same order. */
  reserve(): number {
    return ++this.#seq
  }

  /**
   * Stores `text` as event `seq` (by default the next number), then writes it to the connection;
   * resolves false, writing nothing, when the stream has lost that number to another replica. A
   * store that fails is logged and the event still written live (only a resume would miss it).
   */
  append(text: string, seq = this.reserve()): Promise<boolean> {
    const { store, bus, logger, now, retentionMs } = this.#context
    const written = this.#written.then(async () => {
      if (this.#lost) return false
      const kept = await this.#kept
      if (!kept || seq > MAX_KEPT_EVENTS_PER_STREAM) {
        if (kept && seq === MAX_KEPT_EVENTS_PER_STREAM + 1) {
          logger.warn('a stream sent more events than are kept; later ones are sent live only', {
            session: this.sid.slice(0, 8),
            kept: MAX_KEPT_EVENTS_PER_STREAM,
          })
        }
        this.#connection?.event(kept ? eventId(this.stream, seq) : undefined, text)
        return true
      }
      try {
        if (!(await store.appendEvent(this.sid, this.stream, seq, text, now() + retentionMs))) {
          this.#lost = true
          return false
        }
      } catch (error) {
        logger.error('a stream event could not be stored', {
          session: this.sid.slice(0, 8),
          seq,
          error: error instanceof Error ? error.message : String(error),
        })
      }
      const connection = this.#connection
      connection?.event(eventId(this.stream, seq), text)
      this.#markResumable()
      // Only a client that lost this connection follows the stream elsewhere: while it is open,
      // nobody needs the signal (a follower misses none: it checks the store on a timer too).
      if (!connection?.open) {
        void Promise.resolve(
          bus.publish({ kind: 'stream_appended', session: this.sid, stream: this.stream })
        ).catch(() => {})
      }
      return true
    })
    this.#written = written
    return written
  }
}
