/**
 * @module mcp/workers/event-bus-object
 * `EventBusObject`, the Durable Object behind `DurableObjectEventBus`
 * (`event-bus.ts`, which explains the design): one object of the Workers event bus — a
 * shard, or the object of one principal or one session (the same class; what it carries depends only
 * on what is sent to it), SQLite-backed and storing nothing. It
 * - accepts subscriptions (`GET /subscribe?since=…&hear=…`, a WebSocket upgrade) with the
 *   hibernation API, tagging each socket with the channels it hears (`broadcast`, `keyed`), so it
 *   sleeps, unbilled, between events however many sockets are open, and first replays to the new
 *   socket the events of those channels it received since `since`;
 * - takes events (`POST /publish?channel=…&relay=…`), validates them (a well-formed event on the
 *   channel it belongs to), sends each to the sockets of its channel, keeps it for replay, and relays
 *   it to the shards the publisher named (`relay`, which only fan it out).
 * The replay buffer is in memory: it lives as long as the object is awake, which covers the moments
 * it is needed for (a socket connecting right after an event). The object sets no timer, so nothing
 * keeps it from hibernating. Subscribers send nothing; a socket that does is closed. Logs never name
 * the object (its name is a digest, and stays out of them anyway).
 */
import { parseServerEvent } from '../event-bus.ts'
import { logError } from '../logger.ts'
import {
  BUS_CHANNELS,
  CLOCK_SKEW_MS,
  EVENT_BUS_BINDING,
  MAX_REPLAY_EVENTS,
  MAX_SHARDS,
  PUBLISH_PATH,
  REPLAY_WINDOW_MS,
  SUBSCRIBE_PATH,
  channelOf,
  isBusNamespace,
  publishUrl,
  shardName,
  type BusChannel,
  type BusNamespace,
  type BusSocket,
} from './event-bus.ts'
import { stubOf } from './durable-objects.ts'

/** The part of `DurableObjectState` this object uses (a real state satisfies it). */
export interface BusObjectState {
  acceptWebSocket(socket: BusSocket, tags: string[]): void
  getWebSockets(tag: string): BusSocket[]
}

/** The Workers pair constructor: `[client, server]`. */
declare const WebSocketPair: new () => { 0: BusSocket; 1: BusSocket }

/** Close code for a subscriber that sent something (RFC 6455: unsupported data). */
const CLOSE_UNSUPPORTED = 1003

interface Remembered {
  /** When this object received the event (its own clock). */
  at: number
  channel: BusChannel
  text: string
}

function isChannel(value: string): value is BusChannel {
  return (BUS_CHANNELS as readonly string[]).includes(value)
}

/** The channels of a `hear` parameter (distinct, at least one), or `undefined` when it is not one. */
function hearParam(value: string | null): BusChannel[] | undefined {
  if (value === null) return undefined
  const channels = value.split(',')
  if (!channels.every(isChannel) || new Set(channels).size !== channels.length) return undefined
  return channels
}

/** The shards of a `relay` parameter (distinct indices below the maximum), or `undefined`. */
function relayParam(value: string | null): number[] | undefined {
  if (value === null) return []
  const shards = value.split(',').map((part) => (/^\d{1,2}$/.test(part) ? Number(part) : NaN))
  const valid =
    shards.every((shard) => shard < MAX_SHARDS) && new Set(shards).size === shards.length
  return valid ? shards : undefined
}

/**
 * One object of the Workers event bus (see the module header): export it from the Worker entry and
 * bind it as `EVENT_BUS`, a SQLite-backed class, in every Worker whose `DurableObjectEventBus` uses
 * the namespace.
 *
 * @example
 * ```ts
 * // worker.ts
 * export { EventBusObject } from 'stateless-mcp/workers'
 * // wrangler.toml:
 * // [[durable_objects.bindings]]
 * // name = "EVENT_BUS"
 * // class_name = "EventBusObject"
 * // [[migrations]]
 * // tag = "v1"
 * // new_sqlite_classes = ["EventBusObject"]
 * ```
 */
export class EventBusObject {
  readonly #state: BusObjectState
  readonly #namespace: BusNamespace | undefined
  /** Events received in the last {@link REPLAY_WINDOW_MS}, oldest first. */
  readonly #recent: Remembered[] = []

  constructor(state: BusObjectState, env: Record<string, unknown>) {
    this.#state = state
    const binding = env[EVENT_BUS_BINDING]
    this.#namespace = isBusNamespace(binding) ? binding : undefined
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    if (url.pathname === SUBSCRIBE_PATH && request.method === 'GET')
      return this.#subscribe(request, url)
    if (url.pathname === PUBLISH_PATH && request.method === 'POST')
      return this.#publish(request, url)
    return new Response(null, { status: 404 })
  }

  webSocketMessage(socket: BusSocket): void {
    socket.close(CLOSE_UNSUPPORTED, 'subscribers send nothing')
  }

  webSocketClose(socket: BusSocket, code: number): void {
    try {
      // 1005 and 1006 are what the runtime reports, never codes one may send.
      socket.close(code === 1005 || code === 1006 ? 1000 : code, 'closed')
    } catch {
      // Already answered.
    }
  }

  webSocketError(): void {
    // The runtime closes the socket; nothing is kept per socket.
  }

  #subscribe(request: Request, url: URL): Response {
    if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
      return new Response('expected a WebSocket upgrade', { status: 426 })
    }
    const hear = hearParam(url.searchParams.get('hear'))
    if (hear === undefined) return new Response('hear names no channel of the bus', { status: 400 })
    const since = Number(url.searchParams.get('since') ?? Number.NaN)
    const pair = new WebSocketPair()
    const server = pair[1]
    this.#state.acceptWebSocket(server, hear)
    if (Number.isFinite(since)) {
      for (const { at, channel, text } of this.#prune()) {
        if (at >= since - CLOCK_SKEW_MS && hear.includes(channel)) server.send(text)
      }
    }
    return new Response(null, { status: 101, webSocket: pair[0] } as ResponseInit)
  }

  async #publish(request: Request, url: URL): Promise<Response> {
    const channel = url.searchParams.get('channel') ?? ''
    const relay = relayParam(url.searchParams.get('relay'))
    if (!isChannel(channel) || relay === undefined) {
      return new Response('not a publication of the bus', { status: 400 })
    }
    const text = await request.text()
    const event = parseServerEvent(text)
    if (event === undefined || channelOf(event) !== channel) {
      return new Response(`not an event of the ${channel} channel`, { status: 400 })
    }
    this.#prune().push({ at: Date.now(), channel, text })
    if (this.#recent.length > MAX_REPLAY_EVENTS) this.#recent.shift()
    for (const socket of this.#state.getWebSockets(channel)) {
      try {
        socket.send(text)
      } catch {
        // A socket closing meanwhile; the runtime reports it through webSocketClose.
      }
    }
    if (relay.length > 0) await this.#relay(channel, text, relay)
    return new Response(null, { status: 204 })
  }

  /** Sends the event to the shards the publisher named, which do not relay it further. */
  async #relay(channel: BusChannel, text: string, shards: number[]): Promise<void> {
    const namespace = this.#namespace
    if (namespace === undefined) {
      logError('event bus relay failed', new Error(`the ${EVENT_BUS_BINDING} binding is missing`))
      return
    }
    const outcomes = await Promise.allSettled(
      shards.map(async (shard) => {
        const response = await stubOf(namespace, shardName(shard)).fetch(publishUrl(channel), {
          method: 'POST',
          body: text,
        })
        if (!response.ok) throw new Error(`shard ${shard} answered ${response.status}`)
      })
    )
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') logError('event bus relay failed', outcome.reason)
    }
  }

  /** The replay buffer without the events older than the window. */
  #prune(): Remembered[] {
    const oldest = Date.now() - REPLAY_WINDOW_MS
    const first = this.#recent.findIndex(({ at }) => at >= oldest)
    // Usually nothing has expired: the buffer is changed in place, and only then.
    if (first !== 0) this.#recent.splice(0, first < 0 ? this.#recent.length : first)
    return this.#recent
  }
}
