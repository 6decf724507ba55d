/**
 * @module node/postgres-event-bus
 * An `EventBus` that fans events out across every replica sharing one PostgreSQL database, with
 * LISTEN/NOTIFY: `publish` sends a NOTIFY, and every replica (this one included) delivers what it
 * hears on the channel to its own listeners: list changes and resource updates for listen and GET
 * streams, and the 2025-era session signals (`input_delivered`, `request_cancelled`) for the replica
 * holding that request's stream. Events are hints: one that cannot be sent is delivered locally and
 * logged, never failing the change that caused it (so is one outside the bounds of
 * `ServerEventSchema`, which the other replicas would drop); a payload heard on the channel that is
 * not a well-formed event (`ServerEventSchema`: strict shapes, bounded ids) is dropped. Every replica
 * hears the whole channel, so a subscriber's `EventInterest` is not needed here. Node-only (the
 * `postgres` driver).
 */
import postgres, { type Sql } from 'postgres'
import type { McpLogger } from '../mcp/logger.ts'
import {
  InProcessEventBus,
  parseServerEvent,
  serializeServerEvent,
  type EventBus,
  type EventListener,
  type ServerEvent,
} from '../mcp/event-bus.ts'

export const DEFAULT_EVENT_CHANNEL = 'notes_mcp_events'

export interface PostgresEventBusOptions {
  url: string
  channel?: string
  logger?: McpLogger
}

export class PostgresEventBus implements EventBus {
  readonly #sql: Sql
  readonly #channel: string
  readonly #local = new InProcessEventBus()
  readonly #logger: McpLogger | undefined

  private constructor(sql: Sql, channel: string, logger: McpLogger | undefined) {
    this.#sql = sql
    this.#channel = channel
    this.#logger = logger
  }

  /** Connects and starts listening; resolves once LISTEN is in place. */
  static async start({
    url,
    channel = DEFAULT_EVENT_CHANNEL,
    logger,
  }: PostgresEventBusOptions): Promise<PostgresEventBus> {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel))
      throw new TypeError('channel must be a lower-case SQL identifier')
    const sql = postgres(url, { max: 2, onnotice: () => {} })
    const bus = new PostgresEventBus(sql, channel, logger)
    await sql.listen(channel, (payload) => bus.#hear(payload))
    return bus
  }

  #hear(payload: string): void {
    const event = parseServerEvent(payload)
    if (event !== undefined) this.#local.publish(event)
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

  /** Every replica hears every event (one channel), so `interest` is not needed. */
  subscribe(listener: EventListener): () => void {
    return this.#local.subscribe(listener)
  }

  close(): Promise<void> {
    return this.#sql.end({ timeout: 5 })
  }
}
