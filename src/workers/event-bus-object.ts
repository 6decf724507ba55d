/**
 * @module workers/event-bus-object
 * `EventBusObject`, the Durable Object behind `DurableObjectEventBus` (`event-bus.ts`, which explains
 * the design): one shard of the Workers event bus, a SQLite-backed class that stores nothing. It
 * - accepts subscriptions (`GET /subscribe?since=…`, a WebSocket upgrade) with the hibernation API,
 *   so it sleeps, unbilled, between events however many sockets are open, and first replays to the
 *   new socket the events it received since `since`;
 * - takes events (`POST /publish`), validates them, sends each to every socket it holds, keeps it for
 *   replay, and, when the publisher named the shard set (`?shard=k&shards=n`), relays it to the
 *   other shards, which only fan it out.
 * The replay buffer is in memory: it lives as long as the object is awake, which covers the moments
 * it is needed for (a socket connecting right after an event). The object sets no timer, so nothing
 * keeps it from hibernating. Subscribers send nothing; a socket that does is closed.
 */
import {
  CLOCK_SKEW_MS,
  EVENT_BUS_BINDING,
  MAX_REPLAY_EVENTS,
  PUBLISH_PATH,
  REPLAY_WINDOW_MS,
  SUBSCRIBE_PATH,
  isBusNamespace,
  parseEvent,
  relayUrl,
  shardStub,
  type BusNamespace,
  type BusSocket,
} from './event-bus.ts'

/** The part of `DurableObjectState` this object uses. */
interface BusObjectState {
  acceptWebSocket(socket: BusSocket): void
  getWebSockets(): BusSocket[]
}

/** The Workers pair constructor: `[client, server]`. */
declare const WebSocketPair: new () => { 0: BusSocket; 1: BusSocket }

/** Close code for a subscriber that sent something (RFC 6455: unsupported data). */
const CLOSE_UNSUPPORTED = 1003

interface Remembered {
  /** When this object received the event (its own clock). */
  at: number
  text: string
}

function logError(message: string, error: unknown): void {
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  console.error(JSON.stringify({ level: 'error', message, reason }))
}

/** A shard index from a query parameter, or `undefined` when absent or not one. */
function shardParam(value: string | null, below: number): number | undefined {
  if (value === null || !/^\d{1,2}$/.test(value)) return undefined
  const index = Number(value)
  return index < below ? index : undefined
}

export class EventBusObject {
  readonly #state: BusObjectState
  readonly #namespace: BusNamespace | undefined
  /** Events received in the last {@link REPLAY_WINDOW_MS}, oldest first. */
  #recent: Remembered[] = []

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
    const since = Number(url.searchParams.get('since') ?? Number.NaN)
    const pair = new WebSocketPair()
    const server = pair[1]
    this.#state.acceptWebSocket(server)
    if (Number.isFinite(since)) {
      for (const { at, text } of this.#prune()) if (at >= since - CLOCK_SKEW_MS) server.send(text)
    }
    return new Response(null, { status: 101, webSocket: pair[0] } as ResponseInit)
  }

  async #publish(request: Request, url: URL): Promise<Response> {
    const text = await request.text()
    if (parseEvent(text) === undefined) {
      return new Response('not an event of the bus', { status: 400 })
    }
    this.#prune().push({ at: Date.now(), text })
    if (this.#recent.length > MAX_REPLAY_EVENTS) this.#recent.shift()
    for (const socket of this.#state.getWebSockets()) {
      try {
        socket.send(text)
      } catch {
        // A socket closing meanwhile; the runtime reports it through webSocketClose.
      }
    }
    await this.#relay(text, url)
    return new Response(null, { status: 204 })
  }

  /** Sends the event to the other shards when the publisher named them. */
  async #relay(text: string, url: URL): Promise<void> {
    const shards = shardParam(url.searchParams.get('shards'), 65)
    const self =
      shards === undefined ? undefined : shardParam(url.searchParams.get('shard'), shards)
    if (shards === undefined || self === undefined || shards === 1) return
    const namespace = this.#namespace
    if (namespace === undefined) {
      logError('event bus relay failed', new Error(`the ${EVENT_BUS_BINDING} binding is missing`))
      return
    }
    const peers = Array.from({ length: shards }, (_, index) => index).filter((i) => i !== self)
    const outcomes = await Promise.allSettled(
      peers.map(async (index) => {
        const response = await shardStub(namespace, index).fetch(relayUrl(), {
          method: 'POST',
          body: text,
        })
        if (!response.ok) throw new Error(`shard ${index} answered ${response.status}`)
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
    this.#recent = first < 0 ? [] : this.#recent.slice(first)
    return this.#recent
  }
}
