/**
 * @module mcp/buses/postgres
 * An `EventBus` that fans events out across every replica sharing one PostgreSQL database, with
 * LISTEN/NOTIFY: `publish` sends a NOTIFY, and every replica (this one included) delivers what it
 * hears on the channel to its own listeners: list changes and resource updates for listen and GET
 * streams, and the 2025-era session signals (`input_delivered`, `request_cancelled`) for the replica
 * holding that request's stream. Events are hints: one that cannot be sent is delivered locally and
 * logged, never failing the change that caused it (so is one outside the bounds of
 * `ServerEventSchema`, which the other replicas would drop); a payload heard on the channel that is
 * not a well-formed event (`ServerEventSchema`: strict shapes, bounded ids) is dropped. Every replica
 * hears the whole channel, and hands each event to the listeners its `EventInterest` names (the
 * in-process bus's index). On the `postgres` driver (the optional peer of `stateless-mcp/postgres`,
which exports this bus), so for Node, Deno and Bun, not Workers.
 *
 * The channel is heard on one connection of its own, which never idles out. When the database goes
 * away (restart, failover, kill), that connection is lost and what is notified until it is back is
 * never heard: the bus logs one warning, LISTENs again as soon as the database answers (the pool
 * reconnecting at most a second apart: `OUTAGE_CONNECTION_OPTIONS`), logs that it hears again, and
 * delivers locally `EVERYTHING_MAY_HAVE_CHANGED` (`mcp/event-bus.ts`), so every listen
 * and GET stream of this replica tells its client to re-read its lists.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import postgres, { type Sql } from 'postgres'
import type { McpLogger } from '../logger.ts'
import { OUTAGE_CONNECTION_OPTIONS } from '../stores/postgres/outage.ts'
import {
  EVERYTHING_MAY_HAVE_CHANGED,
  InProcessEventBus,
  parseServerEvent,
  serializeServerEvent,
  type EventBus,
  type EventInterest,
  type EventListener,
  type ServerEvent,
} from '../event-bus.ts'

/**
 * The channel a {@link PostgresEventBus} NOTIFYs and LISTENs on unless told another. Give each
 * deployment sharing one database a channel of its own.
 *
 * @example
 * ```ts
 * import { DEFAULT_EVENT_CHANNEL, PostgresEventBus } from 'stateless-mcp/postgres'
 *
 * const bus = await PostgresEventBus.start({
 *   url: process.env.DATABASE_URL!,
 *   channel: `${DEFAULT_EVENT_CHANNEL}_staging`,
 * })
 * ```
 */
export const DEFAULT_EVENT_CHANNEL = 'mcp_events'

/** How {@link PostgresEventBus.start} reaches the database, and where it carries events. */
export interface PostgresEventBusOptions {
  /** `postgres://user:password@host:port/database`: the database every replica shares. */
  url: string
  /**
   * The LISTEN/NOTIFY channel, a lower-case SQL identifier; every replica of one deployment uses the
   * same, and deployments sharing a database each their own. Default {@link DEFAULT_EVENT_CHANNEL}.
   */
  channel?: string
  /** Where the bus says it lost and regained the database, and which events it could not send. */
  logger?: McpLogger
}

/**
 * The event bus of replicas sharing one PostgreSQL database (see the module header): pass it as the
 * `bus` of every replica's server, and `close()` it after the server.
 *
 * @example
 * ```ts
 * import { createMcpServer } from 'stateless-mcp'
 * import { PostgresEngineStore, PostgresEventBus } from 'stateless-mcp/postgres'
 *
 * const url = process.env.DATABASE_URL!
 * const bus = await PostgresEventBus.start({ url })
 * const server = createMcpServer(definition, {
 *   stateKeys: process.env.STATE_KEYS,
 *   store: new PostgresEngineStore({ url }),
 *   bus,
 * })
 * ```
 */
export class PostgresEventBus implements EventBus {
  /** The pool NOTIFYs are sent on. */
  readonly #sql: Sql
  /** The connection the channel is heard on (`max: 1`), never idled out or recycled. */
  readonly #listening: Sql
  readonly #channel: string
  readonly #local = new InProcessEventBus()
  readonly #logger: McpLogger | undefined
  /** Whether LISTEN is in place on the listening connection now. */
  #hearing = false
  /** A LISTEN is on its way after the connection was lost (one at a time). */
  #resubscribing = false
  #closed = false
  /** Aborted by `close()`: cuts short the wait between two attempts to LISTEN again. */
  readonly #closing = new AbortController()

  private constructor(url: string, channel: string, logger: McpLogger | undefined) {
    this.#channel = channel
    this.#logger = logger
    this.#sql = postgres(url, { max: 2, ...OUTAGE_CONNECTION_OPTIONS, onnotice: () => {} })
    // One connection that hears every NOTIFY on it (`onnotify`) and says when it is lost.
    this.#listening = postgres(url, {
      max: 1,
      max_lifetime: null,
      fetch_types: false,
      ...OUTAGE_CONNECTION_OPTIONS,
      onnotice: () => {},
      onnotify: (heardOn: string, payload: string) => {
        if (heardOn === channel) this.#hear(payload)
      },
      onclose: () => this.#connectionLost(),
    })
  }

  /**
   * Connects and starts listening; resolves once LISTEN is in place (rejects, closed, if it fails).
   * Throws `TypeError` for a channel that is not a lower-case SQL identifier.
   *
   * @example
   * ```ts
   * const bus = await PostgresEventBus.start({ url: process.env.DATABASE_URL!, channel: 'greeter_events' })
   * ```
   */
  static async start({
    url,
    channel = DEFAULT_EVENT_CHANNEL,
    logger,
  }: PostgresEventBusOptions): Promise<PostgresEventBus> {
    if (typeof url !== 'string' || !/^postgres(ql)?:\/\//.test(url))
      throw new TypeError('PostgresEventBus: url must be a postgres:// URL')
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel))
      throw new TypeError(
        'PostgresEventBus: channel must be a lower-case SQL identifier (a-z, 0-9 and _, at most 63)'
      )
    const bus = new PostgresEventBus(url, channel, logger)
    try {
      await bus.#listen()
    } catch (error) {
      await bus.close()
      throw error
    }
    bus.#hearing = true
    return bus
  }

  #listen(): Promise<unknown> {
    return this.#listening.unsafe(`LISTEN ${this.#channel}`)
  }

  #hear(payload: string): void {
    const event = parseServerEvent(payload)
    if (event !== undefined) this.#local.publish(event)
  }

  /** The listening connection closed, or an attempt to reconnect it failed: LISTEN again. */
  #connectionLost(): void {
    if (this.#closed) return
    if (this.#hearing) {
      this.#hearing = false
      this.#logger?.warn(
        'event bus lost its database connection; events of other replicas go unheard until it is back'
      )
    }
    if (this.#resubscribing) return
    this.#resubscribing = true
    void this.#subscribe()
  }

  /**
   * LISTENs until it is in place, attempts spaced as the pool's reconnects are
   * (`OUTAGE_CONNECTION_OPTIONS.backoff`), then tells this replica's streams that anything may have
   * changed meanwhile.
   */
  async #subscribe(): Promise<void> {
    for (let attempt = 1; !this.#closed; attempt++) {
      try {
        await this.#listen()
        break
      } catch {
        // Still away. The driver refuses at once until its next reconnect is due, so an attempt
        // made without waiting would spin (and starve the event loop) for the whole outage.
        const seconds = OUTAGE_CONNECTION_OPTIONS.backoff(attempt)
        await sleep(seconds * 1000, undefined, { signal: this.#closing.signal }).catch(() => {})
      }
    }
    this.#resubscribing = false
    if (this.#closed) return
    this.#hearing = true
    this.#logger?.warn('event bus hears again; streams are told to re-read their lists')
    for (const event of EVERYTHING_MAY_HAVE_CHANGED) this.#local.publish(event)
  }

  async publish(event: ServerEvent): Promise<void> {
    try {
      const payload = serializeServerEvent(event)
      if (payload === undefined) throw new RangeError('the event exceeds the bounds of the bus')
      await this.#sql.notify(this.#channel, payload)
    } catch (error) {
      this.#logger?.warn('event fan-out failed; delivered on this replica only', {
        kind: event.kind,
        error: String(error),
      })
      this.#local.publish(event)
    }
  }

  /** Every replica hears every event (one channel); this replica's listeners are indexed by `interest`. */
  subscribe(listener: EventListener, interest?: EventInterest): () => void {
    return this.#local.subscribe(listener, interest)
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#closing.abort()
    await Promise.all([this.#sql.end({ timeout: 5 }), this.#listening.end({ timeout: 5 })])
  }
}
