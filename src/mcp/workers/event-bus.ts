/**
 * @module mcp/workers/event-bus
 * The `EventBus` of the Workers runtime: `DurableObjectEventBus` carries an event published by any
 * isolate of any Worker bound to the `EventBusObject` namespace (binding {@link EVENT_BUS_BINDING}) to
 * the subscribers, in any such isolate, that need it — `subscriptions/listen` streams, 2025-era GET
 * streams, 2025 flows waiting for an answer, 2025 requests that can be cancelled. The object is
 * `event-bus-object.ts`; this module owns the client half and the wire both halves share.
 *
 * How it is built, and why:
 * - **Keyed objects, so no object hears every event.** A subscriber says what it needs
 *   (`EventInterest`): a stream its principal's events, a 2025 request its session's signals. An
 *   event of one session goes to that session's object, an event of one principal to that
 *   principal's object, and each is heard only by those objects' sockets: a busy principal or session
 *   loads its own object, never the others' (one object per key, as Durable Objects are meant to be
 *   used). Object names are SHA-256 digests of the key ({@link keyedObject}), so a name seen in
 *   Cloudflare's tools or a log does not show whose it is.
 * - **Shards for what has no key** ({@link DEFAULT_SHARDS} unless `shards` says otherwise, at most
 *   {@link MAX_SHARDS}). A list change of the whole server (tools, prompts) is for every stream. It
 *   goes to one shard at random, which sends it to its sockets and relays it to its peers (one
 *   subrequest for the Worker, whatever the shard count); each stream joins one shard at random
 *   besides its principal's object, so no object holds every socket.
 * - **A subscriber without interest still hears everything**, as the interface promises: it joins
 *   every shard, and each keyed object relays what it receives to one shard (chosen by the key's
 *   digest, so one key's events stay in order), which sends it only to such subscribers. The engine
 *   always names its interest; this path costs a keyed event one more object request, never a
 *   fan-out to the other subscribers.
 * - **One WebSocket per object a subscription needs, opened from the subscriber's own request.**
 *   Workers bind every I/O object to the request that created it: a socket held per isolate dies
 *   with the request that opened it, and a stream may only be fed from code its own request runs. So
 *   each `subscribe` opens its own sockets (a listen stream two: its principal's object and a shard;
 *   a waiting 2025 request one per session subscription), and its listener runs in the message events
 *   of those sockets, in the context of the request that owns the stream or the flow.
 * - **Hibernatable WebSockets, not streaming fetches.** Measured on local workerd (50 subscribers, 200
 *   events published one after another): the last subscriber heard an event after 12 ms (p50) over
 *   WebSockets and 20 ms over streaming fetch responses, and the run took 3.4–4.7 s against 6.4–6.8 s.
 *   Cost decides it anyway: an open streaming response keeps the object running, billed by the second,
 *   for as long as any listen stream is open (up to an hour each); accepted with the hibernation API,
 *   the sockets stay open while the object sleeps, and it is billed only while it handles an event.
 * - **Every event goes through an object**, the publishing isolate's own subscribers included, so a
 *   listener is always called from its own socket. Only when the object cannot be reached is the event
 *   delivered to this isolate's subscribers that need it directly (and logged), as the PostgreSQL bus
 *   does.
 * - **Nothing is lost while a socket connects.** A subscription connects {@link CONNECT_DELAY_MS}
 *   after it starts (a 2025 request that ends sooner never opens a socket: most of them), and each
 *   object replays to a new socket the events it received since the subscription started, reaching
 *   back {@link CLOCK_SKEW_MS} more for clocks that disagree (it keeps those of the last {@link
 *   REPLAY_WINDOW_MS}, at most {@link MAX_REPLAY_EVENTS}). A lost socket is
 *   reopened with backoff and replayed from the moment it was lost. A listener may therefore hear an
 *   event twice, or one from just before it subscribed: events are hints, never data a listener
 *   trusts (an answer is read back from the store, where the waiting flow also polls for it), and
 *   every listener still keeps only what is its own.
 *
 * The ceiling, from Cloudflare's limits of one object (at most 32,768 hibernatable WebSockets, about
 * 1,000 requests a second before it answers `overloaded`): every subscriber with a principal holds a
 * socket on one shard, so a deployment holds at most 32,768 × shards streams (131,072 with the
 * default 4; a million needs 31 shards), and one principal at most 32,768 (all on its object). Every
 * keyed event costs one request of its object and one of a shard, so the shards together take about
 * 1,000 × shards keyed events a second; an event without a key costs one request of every shard, so
 * those stay under about 1,000 a second whatever the count.
 *
 * Events are validated where they enter an object and again where a subscriber receives them
 * (`ServerEventSchema` of `mcp/event-bus.ts`: strict shapes, bounded ids). Runtime-neutral: structural
 * types of the Workers APIs it uses, nothing from `node:*` or from workers-types.
 */
import { base64url } from 'jose'
import { canonicalJson, sha256Base64url } from '../canonical-json.ts'
import type { McpLogger } from '../logger.ts'
import {
  concerns,
  eventScope,
  parseServerEvent,
  serializeServerEvent,
  type EventBus,
  type EventInterest,
  type EventListener,
  type EventScope,
  type ServerEvent,
} from '../event-bus.ts'
import { isDurableNamespace, stubOf, type DurableNamespace } from './durable-objects.ts'

/**
 * The binding name of the `EventBusObject` namespace, in every Worker's configuration
 * (`[[durable_objects.bindings]]` of `wrangler.toml`).
 *
 * @example
 * ```ts
 * import { EVENT_BUS_BINDING, isBusNamespace } from 'stateless-mcp/workers'
 *
 * const namespace = (env as Record<string, unknown>)[EVENT_BUS_BINDING]
 * if (!isBusNamespace(namespace)) throw new Error(`bind ${EVENT_BUS_BINDING} in wrangler.toml`)
 * ```
 */
export const EVENT_BUS_BINDING = 'EVENT_BUS'
/**
 * Objects a deployment spreads the events without a key over (see the module header), unless
 * `shards` says otherwise.
 *
 * @example
 * ```ts
 * import { DEFAULT_SHARDS, DurableObjectEventBus } from 'stateless-mcp/workers'
 *
 * // past 32,768 × 4 open streams: twice the objects
 * const bus = new DurableObjectEventBus({ namespace: env.EVENT_BUS, shards: 2 * DEFAULT_SHARDS })
 * ```
 */
export const DEFAULT_SHARDS = 4
/**
 * Most shards a deployment may use (a `RangeError` above).
 *
 * @example
 * ```ts
 * import { DEFAULT_SHARDS, DurableObjectEventBus, MAX_SHARDS } from 'stateless-mcp/workers'
 *
 * const shards = Math.min(Number(env.EVENT_BUS_SHARDS ?? DEFAULT_SHARDS), MAX_SHARDS)
 * const bus = new DurableObjectEventBus({ namespace: env.EVENT_BUS, shards })
 * ```
 */
export const MAX_SHARDS = 64
/** How long a subscription waits before it connects (events meanwhile are replayed). */
const CONNECT_DELAY_MS = 100
/** How long an object keeps the events it received, to replay them to sockets still connecting. */
export const REPLAY_WINDOW_MS = 5_000
/** Most events an object keeps for replay. */
export const MAX_REPLAY_EVENTS = 512
/** How far the clocks of an isolate and an object may disagree; replays reach back this much more. */
export const CLOCK_SKEW_MS = 100
/** First wait before a lost socket is reopened; doubled after every failure, up to the maximum. */
const RECONNECT_BASE_MS = 250
const RECONNECT_MAX_MS = 10_000

/** Paths of the object's two endpoints (the host of a stub's URL is never read). */
export const SUBSCRIBE_PATH = '/subscribe'
export const PUBLISH_PATH = '/publish'
const OBJECT_ORIGIN = 'https://event-bus.internal'

/**
 * The two kinds of event an object carries: `broadcast`, events without a principal or session (on
 * the shards); `keyed`, events of one principal or session (on that key's object, and relayed to a
 * shard for subscribers without interest). A socket hears the channels it subscribed to.
 */
export type BusChannel = 'broadcast' | 'keyed'
export const BUS_CHANNELS: readonly BusChannel[] = ['broadcast', 'keyed']

/** The channel `event` travels on. */
export function channelOf(event: ServerEvent): BusChannel {
  return eventScope(event) === undefined ? 'broadcast' : 'keyed'
}

/** What a keyed event belongs to: one principal or one session. */
type EventKey = NonNullable<EventScope>

/** The name of shard `index`. */
export function shardName(index: number): string {
  return `shard-${index}`
}

/**
 * The object of one principal's or one session's events (its name: a digest of the key), and the
 * shard it relays them to for subscribers without interest.
 */
export async function keyedObject(
  key: EventKey,
  shards: number
): Promise<{ name: string; shard: number }> {
  const [kind, value] = 'session' in key ? ['session', key.session] : ['principal', key.principal]
  // The tag names the digest's purpose; kept from the first deployments, so objects keep their names.
  const digest = await sha256Base64url(canonicalJson(['notes-mcp/event-bus', kind, value]))
  const bytes = base64url.decode(digest)
  return { name: `${kind}-${digest}`, shard: ((bytes[0]! << 8) | bytes[1]!) % shards }
}

/**
 * The object's URL that takes an event of `channel` and relays it to the shards `relay` (which do
 * not relay it further).
 */
export function publishUrl(channel: BusChannel, relay: readonly number[] = []): string {
  const query = new URLSearchParams({ channel })
  if (relay.length > 0) query.set('relay', relay.join(','))
  return `${OBJECT_ORIGIN}${PUBLISH_PATH}?${query}`
}

/** The object's URL that opens a socket on `hear`, replaying what arrived from `since` on. */
export function subscribeUrl(since: number, hear: readonly BusChannel[]): string {
  return `${OBJECT_ORIGIN}${SUBSCRIBE_PATH}?since=${since}&hear=${hear.join(',')}`
}

/** A Workers WebSocket, as far as both halves of the bus use it. */
export interface BusSocket {
  accept(): void
  send(message: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  addEventListener(type: 'close' | 'error', listener: () => void): void
}

/** A Durable Object stub, as far as the bus uses it (a real stub satisfies it). */
export interface BusStub {
  fetch(url: string, init?: RequestInit): Promise<Response & { webSocket?: BusSocket | null }>
}

/** The `EventBusObject` namespace binding, as far as the bus uses it. */
export type BusNamespace = DurableNamespace<BusStub>

/**
 * Whether a binding looks like the bus's namespace (checked once, at setup): a missing or misnamed
 * binding is then reported by name instead of failing at the first event.
 *
 * @example
 * ```ts
 * import { DurableObjectEventBus, isBusNamespace } from 'stateless-mcp/workers'
 *
 * if (!isBusNamespace(env.EVENT_BUS)) throw new Error('bind EVENT_BUS in wrangler.toml')
 * const bus = new DurableObjectEventBus({ namespace: env.EVENT_BUS })
 * ```
 */
export const isBusNamespace: (value: unknown) => value is BusNamespace = isDurableNamespace

/** Where a {@link DurableObjectEventBus} carries events, over how many shards. */
export interface DurableObjectEventBusOptions {
  /** The `EventBusObject` namespace (`env.EVENT_BUS`). */
  namespace: BusNamespace
  /**
   * How many objects carry the events without a key and hold one socket of every stream, from 1 to
   * {@link MAX_SHARDS}; default {@link DEFAULT_SHARDS}. Each holds at most 32,768 streams: raise it
   * past 32,768 × shards open streams. Every Worker bound to the namespace must use the same number.
   */
  shards?: number
  /** Where the bus says an event could not be sent, or a subscription could not connect. */
  logger?: McpLogger
}

/** One socket of a subscription: the object it is opened to, reopened while the subscription lasts. */
class Feed {
  readonly #deliver: EventListener
  readonly #connect: (since: number) => Promise<BusSocket>
  readonly #logger: McpLogger | undefined
  #closed = false
  #socket: BusSocket | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  #failures = 0
  /** Events from this moment on have not been heard yet (a replay starts here). */
  #heardUntil: number

  constructor(
    deliver: EventListener,
    connect: (since: number) => Promise<BusSocket>,
    logger: McpLogger | undefined
  ) {
    this.#deliver = deliver
    this.#connect = connect
    this.#logger = logger
    this.#heardUntil = Date.now()
    this.#schedule(CONNECT_DELAY_MS)
  }

  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    const socket = this.#socket
    this.#socket = undefined
    closeQuietly(socket)
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(() => void this.#open(), delayMs)
  }

  async #open(): Promise<void> {
    let socket: BusSocket
    try {
      socket = await this.#connect(this.#heardUntil)
    } catch (error) {
      this.#logger?.warn('event bus subscription could not connect; retrying', {
        failures: this.#failures + 1,
        error: String(error),
      })
      this.#retry()
      return
    }
    socket.accept()
    if (this.#closed) {
      closeQuietly(socket)
      return
    }
    this.#socket = socket
    this.#failures = 0
    socket.addEventListener('message', ({ data }) => {
      const event = parseServerEvent(data)
      if (event !== undefined) this.#deliver(event)
    })
    const lost = () => {
      if (this.#socket !== socket) return
      this.#socket = undefined
      this.#heardUntil = Date.now()
      this.#retry()
    }
    socket.addEventListener('close', lost)
    socket.addEventListener('error', lost)
  }

  #retry(): void {
    if (this.#closed) return
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** this.#failures)
    this.#failures++
    this.#schedule(delay)
  }
}

/** A listener, what it needs, and the feeds that bring it. */
class Subscription {
  readonly interest: EventInterest | undefined
  readonly #listener: EventListener
  readonly #feeds: Feed[] = []
  #closed = false

  constructor(listener: EventListener, interest: EventInterest | undefined) {
    this.#listener = listener
    this.interest = interest
  }

  add(feed: Feed): void {
    this.#feeds.push(feed)
  }

  readonly deliver = (event: ServerEvent): void => {
    if (this.#closed) return
    try {
      this.#listener(event)
    } catch {
      // A broken listener must not close the sockets the next events arrive on.
    }
  }

  close(): void {
    this.#closed = true
    for (const feed of this.#feeds) feed.close()
  }
}

function closeQuietly(socket: BusSocket | undefined): void {
  try {
    socket?.close(1000, 'unsubscribed')
  } catch {
    // Already closed.
  }
}

function randomShard(shards: number): number {
  return Math.floor(Math.random() * shards)
}

/** What one feed of a subscription opens a socket to (a shard, or a key's object), and hears there. */
interface FeedPlan {
  object: { shard: number } | { key: EventKey }
  hear: BusChannel[]
}

/**
 * The event bus of a Worker (see the module header): build it once per isolate from the
 * `EventBusObject` namespace binding, pass it as the server's `bus`, and export `EventBusObject`
 * from the Worker entry. Throws `TypeError` for a binding that is not a
 * namespace, and `RangeError` for a shard count outside 1 to {@link MAX_SHARDS}.
 *
 * @example
 * ```ts
 * import { createMcpServer } from 'stateless-mcp'
 * import { DurableObjectEventBus, type BusNamespace } from 'stateless-mcp/workers'
 *
 * export { EventBusObject } from 'stateless-mcp/workers' // bound as EVENT_BUS (wrangler.toml)
 *
 * let server: ReturnType<typeof createMcpServer> | undefined
 * export default {
 *   fetch(request: Request, env: { EVENT_BUS: BusNamespace; STATE_KEYS: string }) {
 *     server ??= createMcpServer(definition, {
 *       stateKeys: env.STATE_KEYS,
 *       bus: new DurableObjectEventBus({ namespace: env.EVENT_BUS, shards: 8 }),
 *     })
 *     return server.fetch(request)
 *   },
 * }
 * ```
 */
export class DurableObjectEventBus implements EventBus {
  readonly #namespace: BusNamespace
  readonly #shards: number
  readonly #logger: McpLogger | undefined
  /** This isolate's live subscriptions: only for delivery when the object cannot be reached. */
  readonly #subscriptions = new Set<Subscription>()

  constructor({ namespace, shards = DEFAULT_SHARDS, logger }: DurableObjectEventBusOptions) {
    if (!isBusNamespace(namespace)) {
      throw new TypeError('namespace must be the EventBusObject Durable Object namespace binding')
    }
    if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
      throw new RangeError(
        `DurableObjectEventBus: shards must be an integer from 1 to ${MAX_SHARDS}, the same in every Worker bound to the namespace (got ${String(shards)})`
      )
    }
    this.#namespace = namespace
    this.#shards = shards
    this.#logger = logger
  }

  async publish(event: ServerEvent): Promise<void> {
    try {
      const text = serializeServerEvent(event)
      if (text === undefined) throw new RangeError('the event exceeds the bounds of the bus')
      const scope = eventScope(event)
      let name: string
      let url: string
      if (scope === undefined) {
        const shard = randomShard(this.#shards)
        const peers = Array.from({ length: this.#shards }, (_, index) => index)
        name = shardName(shard)
        url = publishUrl(
          'broadcast',
          peers.filter((index) => index !== shard)
        )
      } else {
        const keyed = await keyedObject(scope, this.#shards)
        name = keyed.name
        url = publishUrl('keyed', [keyed.shard])
      }
      const response = await stubOf(this.#namespace, name).fetch(url, {
        method: 'POST',
        body: text,
      })
      if (!response.ok) throw new Error(`the event bus answered ${response.status}`)
    } catch (error) {
      this.#logger?.warn('event fan-out failed; delivered on this isolate only', {
        kind: event.kind,
        error: String(error),
      })
      for (const subscription of this.#subscriptions) {
        if (concerns(subscription.interest, event)) subscription.deliver(event)
      }
    }
  }

  subscribe(listener: EventListener, interest?: EventInterest): () => void {
    const subscription = new Subscription(listener, interest)
    for (const { object, hear } of this.#plan(interest)) {
      const connect = async (since: number): Promise<BusSocket> => {
        const name =
          'shard' in object
            ? shardName(object.shard)
            : (await keyedObject(object.key, this.#shards)).name
        const response = await stubOf(this.#namespace, name).fetch(subscribeUrl(since, hear), {
          headers: { upgrade: 'websocket' },
        })
        if (!response.webSocket) throw new Error(`the event bus answered ${response.status}`)
        return response.webSocket
      }
      subscription.add(new Feed(subscription.deliver, connect, this.#logger))
    }
    this.#subscriptions.add(subscription)
    return () => {
      this.#subscriptions.delete(subscription)
      subscription.close()
    }
  }

  /** The sockets a subscription with `interest` opens (see the module header). */
  #plan(interest: EventInterest | undefined): FeedPlan[] {
    const { principal, session } = interest ?? {}
    const broadcast = randomShard(this.#shards)
    if (principal === undefined && session === undefined) {
      return Array.from({ length: this.#shards }, (_, shard) => ({
        object: { shard },
        hear: shard === broadcast ? ['broadcast', 'keyed'] : ['keyed'],
      }))
    }
    const plan: FeedPlan[] = []
    if (principal !== undefined) {
      plan.push(
        { object: { key: { principal } }, hear: ['keyed'] },
        { object: { shard: broadcast }, hear: ['broadcast'] }
      )
    }
    if (session !== undefined) plan.push({ object: { key: { session } }, hear: ['keyed'] })
    return plan
  }
}
