/**
 * @module storage/postgres-events
 * An `EventBus` that fans events out across every replica sharing one PostgreSQL database, with
 * LISTEN/NOTIFY: `publish` sends a NOTIFY, and every replica (this one included) delivers what it
 * hears on the channel to its own listeners: list changes and resource updates for listen and GET
 * streams, and the 2025-era session signals (`input_delivered`, `request_cancelled`) for the replica
 * holding that request's stream. Events are hints: one that cannot be sent is delivered locally and
 * logged, never failing the change that caused it; a payload heard on the channel that is not a
 * well-formed event (strict shapes, bounded ids) is dropped. Node-only (the `postgres` driver).
 */
import postgres, { type Sql } from 'postgres'
import { z } from 'zod'
import type { McpLogger } from '../mcp/dispatch.ts'
import {
  InProcessEventBus,
  type EventBus,
  type EventListener,
  type ServerEvent,
} from '../mcp/events.ts'

export const DEFAULT_EVENT_CHANNEL = 'notes_mcp_events'

/**
 * Longest session or request id an event may carry: far above any id the engine makes, so a hostile
 * payload on the channel cannot smuggle a large string into a listener.
 */
export const MAX_EVENT_ID_CHARS = 256

const EventId = z.string().min(1).max(MAX_EVENT_ID_CHARS)

const EventSchema: z.ZodType<ServerEvent> = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('tools_list_changed') }),
  z.strictObject({ kind: z.literal('prompts_list_changed') }),
  z.strictObject({ kind: z.literal('resources_list_changed'), principal: z.string().optional() }),
  z.strictObject({
    kind: z.literal('resource_updated'),
    uri: z.string(),
    principal: z.string().optional(),
  }),
  z.strictObject({ kind: z.literal('input_delivered'), session: EventId, requestId: EventId }),
  z.strictObject({ kind: z.literal('request_cancelled'), session: EventId, requestId: EventId }),
])

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
    let event: unknown
    try {
      event = JSON.parse(payload)
    } catch {
      return
    }
    const parsed = EventSchema.safeParse(event)
    if (parsed.success) this.#local.publish(parsed.data)
  }

  async publish(event: ServerEvent): Promise<void> {
    try {
      await this.#sql.notify(this.#channel, JSON.stringify(event))
    } catch (error) {
      this.#logger?.warn('event fan-out failed; delivered on this replica only', {
        kind: event.kind,
        error: String(error),
      })
      this.#local.publish(event)
    }
  }

  subscribe(listener: EventListener): () => void {
    return this.#local.subscribe(listener)
  }

  close(): Promise<void> {
    return this.#sql.end({ timeout: 5 })
  }
}
