/**
 * @module mcp/buses/redis
 * An `EventBus` for fleets past one database: Redis sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`, Redis 7
 * and later), on one `redis-server` or on a Redis Cluster, where each channel lives on its slot's
 * shard. It owns the channels, which replica subscribes to which, and what a gap in hearing does.
 *
 * - **Channels by scope** (`eventScope`): one per principal, one per session (their names carry a
 *   SHA-256 digest of the key, never the key, so `MONITOR` or a log shows no principal or session
 *   id), and one for events whose scope is everyone. A listener naming a principal needs its
 *   principal's channel and the everyone channel; one naming a session, its session's channel.
 * - **A replica subscribes only to the channels of listeners it holds now**, counted per channel:
 *   the first listener of a channel subscribes it, the last one to leave unsubscribes it. An event
 *   thus costs only the replicas that hold a listener for it. `subscribe` answers at once; what it
 *   returns carries `ready` (the port's `Unsubscribe`), a promise that settles once every channel
 *   the listener needs is subscribed on Redis: the engine's held-open streams acknowledge only
 *   then, so they miss nothing published after their client read the acknowledgement. A listener naming neither a principal nor
 *   a session would need every channel, which sharded pub/sub cannot give: it is refused.
 * - **Losing Redis** (the connection closed or cut for its output buffer, a node killed, a failover,
 *   a demoted master's `sunsubscribe`) is handled as the PostgreSQL bus handles losing its
 *   database: one warning, every channel subscribed again as soon as Redis answers (retried with a
 *   backoff of {@link RETRY_BASE_MS} doubling to {@link RETRY_MAX_MS}), one line saying it hears
 *   again, and `EVERYTHING_MAY_HAVE_CHANGED` delivered to this replica's listeners, since pub/sub
 *   stores nothing and what was published meanwhile is lost. A gap is presumed on any connection
 *   trouble the client reports, of any node: a stream told to re-read once too often costs a
 *   re-read, one left deaf costs a change.
 * - **Publishing never throws into a request and never queues without bound**: while Redis is away
 *   a publish fails at once (no offline queue), at most {@link MAX_QUEUED_COMMANDS} commands wait on
 *   a connection, and one that cannot be sent is delivered to this replica's listeners and logged
 *   (once per outage).
 *
 * The client is node-redis (`redis`, an optional peer of `stateless-mcp/redis`), chosen over ioredis
 * for its cluster pub/sub as tried on this project's machines: `createCluster` routes `sSubscribe` and
 * `sPublish` to the slot's master with no extra option and re-subscribes by itself after a failover
 * (receiving again 3–4 s after the promotion, with no error storm), where ioredis needs
 * `shardedSubscribers: true` (without it most `ssubscribe` calls failed silently) and logged about
 * ten errors a second while a node was down; node-redis also carried twice the messages per second
 * from one Node process (about 116k against 58k). For Node, Deno and Bun, not Workers.
 */
import { createHash } from 'node:crypto'
import { createClient, createCluster } from 'redis'
import type { McpLogger } from '../logger.ts'
import {
  EVERYTHING_MAY_HAVE_CHANGED,
  InProcessEventBus,
  eventScope,
  parseServerEvent,
  serializeServerEvent,
  type EventBus,
  type EventInterest,
  type EventListener,
  type EventScope,
  type ServerEvent,
} from '../event-bus.ts'

/**
 * The prefix of a {@link RedisEventBus}'s channel names unless told another.
 *
 * @example
 * ```ts
 * // Two deployments sharing one Redis: each its own prefix.
 * const bus = await RedisEventBus.start({ url, channelPrefix: `${DEFAULT_REDIS_CHANNEL_PREFIX}-staging` })
 * ```
 */
export const DEFAULT_REDIS_CHANNEL_PREFIX = 'mcp'
/** First wait before channels are subscribed again after a failure; doubled up to the maximum. */
const RETRY_BASE_MS = 100
const RETRY_MAX_MS = 5_000
/** Longest a subscribe, an unsubscribe or a publish may take before it counts as failed. */
const COMMAND_TIMEOUT_MS = 5_000
/** Most commands waiting on one connection; past it a publish fails (and is delivered locally). */
const MAX_QUEUED_COMMANDS = 10_000

/** How {@link RedisEventBus.start} reaches Redis, and how it names its channels. */
export interface RedisEventBusOptions {
  /**
   * `redis://[user:password@]host:port[/db]` (or `rediss://`) for one server;
   * `redis+cluster://[user:password@]host:port,host:port…` (or `rediss+cluster://`) for a Redis
   * Cluster, any of its nodes (the client discovers the rest).
   */
  url: string
  /**
   * What every channel name starts with: the same on every replica of one deployment, a different
   * one for deployments sharing Redis. Letters, digits, `_`, `-`, `.`, at most 64; default
   * {@link DEFAULT_REDIS_CHANNEL_PREFIX}.
   */
  channelPrefix?: string
  /** Where the bus says it lost and regained Redis, and which events it could not send. */
  logger?: McpLogger
}

/** What `RedisEventBus.subscribe` returns: the function that removes the listener, and `ready`. */
export interface RedisSubscription {
  (): void
  /** Settles once every channel the listener needs is subscribed on Redis (never rejects). */
  readonly ready: Promise<void>
}

/** The channels `interest` needs (see the module header); `undefined` when it names nothing. */
function channelsOf(prefix: string, interest: EventInterest | undefined): string[] | undefined {
  const { principal, session } = interest ?? {}
  if (principal === undefined && session === undefined) return undefined
  const channels: string[] = []
  if (principal !== undefined) channels.push(keyedChannel(prefix, { principal }), `${prefix}:all`)
  if (session !== undefined) channels.push(keyedChannel(prefix, { session }))
  return channels
}

/** The channel an event of `scope` travels on. */
function channelOfScope(prefix: string, scope: EventScope): string {
  return scope === undefined ? `${prefix}:all` : keyedChannel(prefix, scope)
}

function keyedChannel(prefix: string, key: NonNullable<EventScope>): string {
  const [kind, value] = 'session' in key ? ['s', key.session] : ['p', key.principal]
  const digest = createHash('sha256').update(value).digest('base64url').slice(0, 22)
  return `${prefix}:${kind}:${digest}`
}

type MessageHandler = (message: string, channel: string) => void

/** The commands the bus sends, on one server or a cluster alike. */
interface RedisCarrier {
  sPublish(channel: string, message: string): Promise<unknown>
  sSubscribe(channel: string, handler: MessageHandler): Promise<void>
  sUnsubscribe(channel: string, handler: MessageHandler): Promise<void>
  close(): Promise<void>
}

/** Client options for a bounded queue: nothing waits for a connection that is not there. */
const BOUNDED = { disableOfflineQueue: true, commandsQueueMaxLength: MAX_QUEUED_COMMANDS } as const

/**
 * Whether `url` names a cluster, and the `redis://` URL of each node it names (credentials kept).
 * Throws `TypeError` for a URL the bus cannot use.
 */
function parseRedisUrl(url: string): { cluster: boolean; nodes: string[] } {
  const match = /^(rediss?)(\+cluster)?:\/\/(?:([^@/]*)@)?([^/?#]+)(.*)$/.exec(url)
  if (match === null) {
    throw new TypeError(
      'RedisEventBus: url must be redis://host:port (one server) or redis+cluster://host:port,host:port (a cluster)'
    )
  }
  const [, scheme, cluster, credentials, hosts, rest] = match
  const auth = credentials === undefined ? '' : `${credentials}@`
  const nodes = hosts!.split(',').map((host) => `${scheme}://${auth}${host}${cluster ? '' : rest}`)
  for (const node of nodes) {
    if (!URL.canParse(node) || new URL(node).hostname === '') {
      throw new TypeError(`RedisEventBus: ${JSON.stringify(host(node))} is not a host:port`)
    }
  }
  if (!cluster && nodes.length > 1) {
    throw new TypeError('RedisEventBus: several hosts need redis+cluster:// (a Redis Cluster)')
  }
  return { cluster: cluster !== undefined, nodes }
}

/** The host part of a node URL, for messages (never its credentials). */
function host(node: string): string {
  return node.replace(/^[^@]*@|^rediss?:\/\//, '')
}

async function connect(url: string, onTrouble: (error: unknown) => void): Promise<RedisCarrier> {
  const { cluster, nodes } = parseRedisUrl(url)
  if (cluster) {
    const client = createCluster({
      rootNodes: nodes.map((node) => ({ url: node })),
      defaults: BOUNDED,
    })
    client
      .on('error', onTrouble)
      .on('node-error', onTrouble)
      .on('node-reconnecting', () => onTrouble('a node is reconnecting'))
      // node-redis moves a demoted master's or a moved slot's listeners with this internal event.
      .on('__resubscribeListeners', () => onTrouble('channels moved to another node'))
    await client.connect()
    // A master demoted by a failover sends `sunsubscribe` to its subscribers; node-redis moves their
    // channels to the new master on its own, reporting it only on the node's pub/sub client.
    const watched = new WeakSet<object>()
    const watchPubSubClients = () => {
      for (const master of client.masters) {
        const pubSub = master.pubSub?.client
        if (pubSub === undefined || watched.has(pubSub)) continue
        watched.add(pubSub)
        pubSub.on('sharded-channel-moved', () => onTrouble('a channel moved to another node'))
      }
    }
    return {
      sPublish: (channel, message) => client.sPublish(channel, message),
      sSubscribe: async (channel, handler) => {
        await client.sSubscribe(channel, handler)
        watchPubSubClients()
      },
      sUnsubscribe: (channel, handler) => client.sUnsubscribe(channel, handler),
      close: () => client.close(),
    }
  }
  const publisher = createClient({ url: nodes[0], ...BOUNDED })
  const subscriber = publisher.duplicate()
  for (const client of [publisher, subscriber]) {
    client
      .on('error', onTrouble)
      .on('reconnecting', () => onTrouble('reconnecting'))
      .on('sharded-channel-moved', () => onTrouble('channels moved to another node'))
  }
  try {
    await Promise.all([publisher.connect(), subscriber.connect()])
  } catch (error) {
    publisher.destroy()
    subscriber.destroy()
    throw error
  }
  return {
    sPublish: (channel, message) => publisher.sPublish(channel, message),
    sSubscribe: (channel, handler) => subscriber.sSubscribe(channel, handler),
    sUnsubscribe: (channel, handler) => subscriber.sUnsubscribe(channel, handler),
    close: async () => {
      await Promise.allSettled([publisher.close(), subscriber.close()])
    },
  }
}

/** `promise`, or a rejection after {@link COMMAND_TIMEOUT_MS} (a connection that hangs counts as lost). */
function bounded<T>(promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Redis did not answer within ${COMMAND_TIMEOUT_MS} ms`)),
      COMMAND_TIMEOUT_MS
    )
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** One channel this replica holds listeners for, and the promise of its subscription on Redis. */
interface HeldChannel {
  listeners: number
  subscribed: Promise<void>
}

/**
 * The event bus of replicas sharing Redis (see the module header): pass it as the `bus` of every
 * replica's server, and `close()` it after the server.
 *
 * @example
 * ```ts
 * import { createMcpServer } from 'stateless-mcp'
 * import { PostgresEngineStore } from 'stateless-mcp/postgres'
 * import { RedisEventBus } from 'stateless-mcp/redis'
 *
 * const bus = await RedisEventBus.start({ url: 'redis+cluster://10.0.0.5:6379,10.0.0.6:6379' })
 * const server = createMcpServer(definition, {
 *   stateKeys: process.env.STATE_KEYS,
 *   store: new PostgresEngineStore({ url: process.env.DATABASE_URL! }),
 *   bus,
 * })
 * ```
 */
export class RedisEventBus implements EventBus {
  readonly #carrier: RedisCarrier
  readonly #prefix: string
  readonly #logger: McpLogger | undefined
  readonly #local = new InProcessEventBus()
  readonly #held = new Map<string, HeldChannel>()
  /** The last subscribe or unsubscribe of each channel: the next one waits for it. */
  readonly #tail = new Map<string, Promise<void>>()
  /** Whether a gap in hearing was logged and not yet healed. */
  #deaf = false
  /** A pass subscribing every held channel again is running; `#lostAgain`: one more is needed. */
  #recovering = false
  #lostAgain = false
  /** Whether the last publish failed (publish failures are logged once per outage). */
  #publishFailing = false
  #closed = false

  private constructor(carrier: RedisCarrier, prefix: string, logger: McpLogger | undefined) {
    this.#carrier = carrier
    this.#prefix = prefix
    this.#logger = logger
  }

  /**
   * Connects (to every master of a cluster); resolves once Redis answers, rejects if it does not.
   * Throws `TypeError` for a URL or a prefix it cannot use.
   *
   * @example
   * ```ts
   * const bus = await RedisEventBus.start({ url: 'redis://127.0.0.1:6379', channelPrefix: 'greeter' })
   * ```
   */
  static async start({
    url,
    channelPrefix = DEFAULT_REDIS_CHANNEL_PREFIX,
    logger,
  }: RedisEventBusOptions): Promise<RedisEventBus> {
    if (typeof url !== 'string') throw new TypeError('RedisEventBus: url must be a redis:// URL')
    parseRedisUrl(url)
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(channelPrefix)) {
      throw new TypeError(
        'RedisEventBus: channelPrefix must be 1 to 64 letters, digits, "_", "-" or "."'
      )
    }
    let bus: RedisEventBus | undefined
    const carrier = await connect(url, (error) => {
      if (bus !== undefined) bus.#lost(error)
    })
    bus = new RedisEventBus(carrier, channelPrefix, logger)
    return bus
  }

  /**
   * Sends `event` on its scope's channel; resolves when Redis took it. Never rejects: an event that
   * cannot be sent is delivered to this replica's listeners, and logged once per outage.
   *
   * @example
   * ```ts
   * await bus.publish({ kind: 'resources_list_changed', principal: ctx.principal })
   * ```
   */
  async publish(event: ServerEvent): Promise<void> {
    try {
      const payload = serializeServerEvent(event)
      if (payload === undefined) throw new RangeError('the event exceeds the bounds of the bus')
      await bounded(
        this.#carrier.sPublish(channelOfScope(this.#prefix, eventScope(event)), payload)
      )
      if (this.#publishFailing) {
        this.#publishFailing = false
        this.#logger?.warn('event fan-out works again')
      }
    } catch (error) {
      if (!this.#publishFailing) {
        this.#publishFailing = true
        this.#logger?.warn('event fan-out failed; delivered on this replica only', {
          kind: event.kind,
          error: String(error),
        })
      }
      this.#local.publish(event)
    }
  }

  /**
   * Adds a listener for the events `interest` names (a principal, a session or both), subscribing
   * its channels on Redis unless this replica holds them already. Returns the function that removes
   * it (unsubscribing channels no listener holds any more), with `ready` (module header). Throws
   * `TypeError` for an interest naming neither a principal nor a session.
   *
   * @example
   * ```ts
   * const stop = bus.subscribe((event) => console.log(event.kind), { principal: 'alice' })
   * await stop.ready // subscribed on Redis: what is published from now on is heard
   * stop()
   * ```
   */
  subscribe(listener: EventListener, interest?: EventInterest): RedisSubscription {
    const channels = channelsOf(this.#prefix, interest)
    if (channels === undefined) {
      throw new TypeError(
        'RedisEventBus: a listener must name a principal or a session (sharded pub/sub has no channel for every event)'
      )
    }
    const removeLocal = this.#local.subscribe(listener, interest)
    const ready = Promise.all(channels.map((channel) => this.#hold(channel))).then(() => {})
    let subscribed = true
    const stop = () => {
      if (!subscribed) return
      subscribed = false
      removeLocal()
      for (const channel of channels) this.#release(channel)
    }
    return Object.assign(stop, { ready })
  }

  /** Closes the connections; listeners hear nothing more. */
  async close(): Promise<void> {
    this.#closed = true
    await this.#carrier.close()
  }

  /** Channels this replica is subscribed to (or subscribing) now. */
  get channels(): string[] {
    return [...this.#held.keys()]
  }

  #hold(channel: string): Promise<void> {
    const held = this.#held.get(channel)
    if (held !== undefined) {
      held.listeners += 1
      return held.subscribed
    }
    const subscribed = this.#serially(channel, () => this.#subscribeUntilDone(channel))
    this.#held.set(channel, { listeners: 1, subscribed })
    return subscribed
  }

  #release(channel: string): void {
    const held = this.#held.get(channel)
    if (held === undefined || --held.listeners > 0) return
    this.#held.delete(channel)
    void this.#serially(channel, async () => {
      // Held again meanwhile: the new holder's subscribe, queued behind this, finds it subscribed.
      if (this.#held.has(channel) || this.#closed) return
      await bounded(this.#carrier.sUnsubscribe(channel, this.#hear)).catch(() => {
        // Unheard from Redis: the subscription died with its connection, or goes at the next gap.
      })
    })
  }

  /** Runs `step` after the channel's previous subscribe or unsubscribe; never rejects. */
  #serially(channel: string, step: () => Promise<void>): Promise<void> {
    const done = (this.#tail.get(channel) ?? Promise.resolve()).then(step).catch(() => {})
    this.#tail.set(channel, done)
    void done.then(() => {
      if (this.#tail.get(channel) === done) this.#tail.delete(channel)
    })
    return done
  }

  /** Subscribes `channel` while it is held, retrying through a gap (which the gap's pass heals). */
  async #subscribeUntilDone(channel: string): Promise<void> {
    for (let delay = RETRY_BASE_MS; this.#held.has(channel) && !this.#closed;) {
      try {
        await bounded(this.#carrier.sSubscribe(channel, this.#hear))
        return
      } catch (error) {
        this.#lost(error)
        await pause(delay)
        delay = Math.min(delay * 2, RETRY_MAX_MS)
      }
    }
  }

  /** A message on a subscribed channel: delivered if it is an event of that channel. */
  readonly #hear = (message: string, channel: string): void => {
    const event = parseServerEvent(message)
    if (event === undefined || channelOfScope(this.#prefix, eventScope(event)) !== channel) return
    this.#local.publish(event)
  }

  /** Redis reported trouble: what was published may go unheard; heal it (module header). */
  #lost(error: unknown): void {
    if (this.#closed) return
    if (!this.#deaf) {
      this.#deaf = true
      this.#logger?.warn(
        'event bus lost Redis; events of other replicas go unheard until it is back',
        { error: String(error) }
      )
    }
    if (this.#recovering) {
      this.#lostAgain = true
      return
    }
    this.#recovering = true
    void this.#recover()
  }

  /**
   * Subscribes every held channel again (each unsubscribed first, so Redis confirms it anew), until
   * a whole pass succeeds with no trouble reported meanwhile; then logs that the bus hears again
   * and tells this replica's listeners that anything may have changed.
   */
  async #recover(): Promise<void> {
    for (let delay = RETRY_BASE_MS; !this.#closed;) {
      this.#lostAgain = false
      let failed = false
      await Promise.all(
        [...this.#held.keys()].map((channel) =>
          this.#serially(channel, async () => {
            if (!this.#held.has(channel)) return
            try {
              await bounded(this.#carrier.sUnsubscribe(channel, this.#hear)).catch(() => {})
              await bounded(this.#carrier.sSubscribe(channel, this.#hear))
            } catch {
              failed = true
            }
          })
        )
      )
      if (!failed && !this.#lostAgain) break
      await pause(delay)
      delay = Math.min(delay * 2, RETRY_MAX_MS)
    }
    this.#recovering = false
    if (this.#closed) return
    this.#deaf = false
    this.#logger?.warn('event bus hears Redis again; streams are told to re-read their lists')
    for (const event of EVERYTHING_MAY_HAVE_CHANGED) this.#local.publish(event)
  }
}
