/**
 * @module mcp/event-bus
 * The event bus behind `subscriptions/listen` and the 2025-era GET streams: applications publish list
 * changes and resource updates, and every open stream on this replica hears them. The same bus carries
 * the engine's signals for 2025 sessions: an answer to a server→client request was delivered to the
 * store (`input_delivered`), or the client cancelled a request (`request_cancelled`); the replica
 * holding that request's stream acts on it, or a resumable stream has a new event in the store
 * (`stream_appended`), which a replica serving its resumed connection reads back, or the session
 * ended (`session_ended`: deleted, or evicted at its principal's session cap), and every replica
 * ends the GET streams and waiting calls it holds of it (`legacy/session-end.ts`). `InProcessEventBus` reaches streams of the same process
 * only; a deployment with several replicas plugs in a bus that fans out across them (same interface).
 * Events scoped to a principal reach only that principal's streams. Events are signals, never data a
 * listener trusts: an answer is read back from the store, for the session it was expected in.
 *
 * A subscriber may tell the bus what it listens for (`EventInterest`): a stream, its principal's events
 * and those of no principal; a 2025 request, its session's signals. That is a promise of what the
 * listener needs, so a bus routes by it (the in-process bus indexes its listeners by principal and
 * session, the Workers bus keeps one Durable Object per principal and per session), but a bus MAY
 * deliver more, and every listener still keeps only what is its own. This module also owns the one
 * wire shape of an event for buses that carry events between processes (`ServerEventSchema`:
 * strict, with bounded ids and URIs), so what a hostile or broken peer puts on the wire never
 * reaches a listener.
 */
import * as z from 'zod'

/**
 * An event the engine carries between requests, and between replicas on a shared bus: the list
 * changes and resource updates an application publishes, and the signals of 2025-era sessions the
 * engine publishes itself.
 */
export type ServerEvent =
  | { kind: 'tools_list_changed' }
  | { kind: 'prompts_list_changed' }
  | { kind: 'resources_list_changed'; principal?: string }
  | { kind: 'resource_updated'; uri: string; principal?: string }
  | { kind: 'input_delivered'; session: string; requestId: string }
  | { kind: 'request_cancelled'; session: string; requestId: string }
  | { kind: 'stream_appended'; session: string; stream: string }
  | { kind: 'session_ended'; session: string }

/** What a bus hands each event to (`EventBus.subscribe`). */
export type EventListener = (event: ServerEvent) => void

/**
 * The events that tell every stream "anything may have changed": each list changed, for every
 * principal (a stream passes on only those its client asked for). A bus that may have missed events
 * (its connection was lost) delivers them locally once it hears again; updates of single resources
 * cannot be named, and a client that re-reads its lists re-reads what it shows.
 */
export const EVERYTHING_MAY_HAVE_CHANGED: readonly ServerEvent[] = [
  { kind: 'tools_list_changed' },
  { kind: 'prompts_list_changed' },
  { kind: 'resources_list_changed' },
]

/**
 * What a listener needs: with `principal`, that principal's events and every event without one; with
 * `session`, that 2025 session's signals; with both, all of those. Without either it needs every event.
 */
export interface EventInterest {
  principal?: string
  session?: string
}

/**
 * What `EventBus.subscribe` returns: the function that removes the listener, and, from a bus whose
 * subscription takes a round trip (Redis), `ready`, settled once what is published from then on
 * reaches the listener. Absent, the listener hears at once.
 */
export type Unsubscribe = (() => void) & { readonly ready?: Promise<void> }

/**
 * Carries events between the requests of one process, or of every replica sharing one (the `bus`
 * of `createMcpServer`): an application publishes list changes and resource updates on it, and the
 * streams of both eras listen.
 */
export interface EventBus {
  publish(event: ServerEvent): void | Promise<void>
  /**
   * Returns the function that removes the listener (with `ready`, {@link Unsubscribe}). `interest`
   * promises what the listener needs; the bus may deliver more, and the listener filters.
   */
  subscribe(listener: EventListener, interest?: EventInterest): Unsubscribe
}

/** Who an event is for: one session, one principal, or everyone (`undefined`). */
export type EventScope = { session: string } | { principal: string } | undefined

export function eventScope(event: ServerEvent): EventScope {
  switch (event.kind) {
    case 'input_delivered':
    case 'request_cancelled':
    case 'stream_appended':
    case 'session_ended':
      return { session: event.session }
    case 'resources_list_changed':
    case 'resource_updated':
      return event.principal === undefined ? undefined : { principal: event.principal }
    default:
      return undefined
  }
}

/** Whether a listener with `interest` needs `event` (see {@link EventInterest}). */
export function concerns(interest: EventInterest | undefined, event: ServerEvent): boolean {
  if (interest?.principal === undefined && interest?.session === undefined) return true
  const scope = eventScope(event)
  if (scope === undefined) return interest.principal !== undefined
  return 'session' in scope
    ? scope.session === interest.session
    : scope.principal === interest.principal
}

/**
 * Longest session or request id an event may carry: far above any id the engine makes, so a hostile
 * payload cannot smuggle a large string into a listener.
 */
export const MAX_EVENT_ID_CHARS = 256
/**
 * Longest principal an event may carry: a token's issuer and subject joined (`tokenPrincipal`), where
 * OpenID Connect bounds the subject at 255 characters.
 */
const MAX_EVENT_PRINCIPAL_CHARS = 1_024
/** Longest resource URI an event may carry (what `resources/subscribe` accepts). */
export const MAX_EVENT_URI_CHARS = 2_048
/**
 * Longest serialised event a bus carries, in characters: an ASCII event this long still fits a
 * PostgreSQL NOTIFY (under 8000 bytes); the bounds above keep real events far shorter.
 */
const MAX_EVENT_CHARS = 7_900

const EventId = z.string().min(1).max(MAX_EVENT_ID_CHARS)
const Principal = z.string().min(1).max(MAX_EVENT_PRINCIPAL_CHARS).optional()

/** The events a bus carries between processes, exactly: anything else is dropped where it arrives. */
export const ServerEventSchema: z.ZodType<ServerEvent> = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('tools_list_changed') }),
  z.strictObject({ kind: z.literal('prompts_list_changed') }),
  z.strictObject({ kind: z.literal('resources_list_changed'), principal: Principal }),
  z.strictObject({
    kind: z.literal('resource_updated'),
    uri: z.string().min(1).max(MAX_EVENT_URI_CHARS),
    principal: Principal,
  }),
  z.strictObject({ kind: z.literal('input_delivered'), session: EventId, requestId: EventId }),
  z.strictObject({ kind: z.literal('request_cancelled'), session: EventId, requestId: EventId }),
  z.strictObject({ kind: z.literal('stream_appended'), session: EventId, stream: EventId }),
  z.strictObject({ kind: z.literal('session_ended'), session: EventId }),
])

/** The event in a JSON text, or `undefined` when it is not one a bus carries. */
export function parseServerEvent(text: unknown): ServerEvent | undefined {
  if (typeof text !== 'string' || text.length > MAX_EVENT_CHARS) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  const parsed = ServerEventSchema.safeParse(value)
  return parsed.success ? parsed.data : undefined
}

/**
 * The JSON text a bus sends for `event`, or `undefined` when the event is outside the bounds above
 * (the receiving side would drop it: the bus delivers it locally instead, and logs).
 */
export function serializeServerEvent(event: ServerEvent): string | undefined {
  if (!ServerEventSchema.safeParse(event).success) return undefined
  const text = JSON.stringify(event)
  return text.length > MAX_EVENT_CHARS ? undefined : text
}

/**
 * The listeners of one process, indexed by what they listen for, so that an event costs its own
 * listeners and not every stream of the replica: a session's signal reaches that session's
 * listeners, a principal's event that principal's, an event for everyone every listener that hears
 * such events (those with a principal). A listener that named no interest hears everything. What it
 * delivers is exactly what {@link concerns} allows, no more: a listener still checks for itself.
 * The default bus of a server, enough for one process; give it to handlers in `deps` to publish.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import {
 *   createMcpServer,
 *   definitions,
 *   InProcessEventBus,
 *   text,
 *   type EventBus,
 * } from 'stateless-mcp'
 *
 * const bus = new InProcessEventBus()
 * const { tool } = definitions<{ bus: EventBus }>()
 * const touch = tool({
 *   name: 'touch',
 *   description: 'Marks a note as changed.',
 *   input: z.object({ id: z.string() }),
 *   run: async ({ id }, ctx) => {
 *     await ctx.deps.bus.publish({ kind: 'resource_updated', uri: `note://${id}` })
 *     return text('done')
 *   },
 * })
 * const server = createMcpServer(
 *   { info: { name: 'notes', version: '1.0.0' }, tools: [touch], subscribe: true },
 *   { bus, deps: { bus } }
 * )
 * ```
 */
export class InProcessEventBus implements EventBus {
  /** Listeners that named no interest: they hear every event. */
  readonly #everything = new Set<Subscription>()
  /** Listeners that named a principal: they hear events for everyone. */
  readonly #withPrincipal = new Set<Subscription>()
  readonly #byPrincipal = new Map<string, Set<Subscription>>()
  readonly #bySession = new Map<string, Set<Subscription>>()
  #listeners = 0

  publish(event: ServerEvent): void {
    deliver(this.#everything, event)
    const scope = eventScope(event)
    if (scope === undefined) deliver(this.#withPrincipal, event)
    else if ('session' in scope) deliver(this.#bySession.get(scope.session), event)
    else deliver(this.#byPrincipal.get(scope.principal), event)
  }

  subscribe(listener: EventListener, interest?: EventInterest): () => void {
    // One entry per call, so the same function subscribed twice is two listeners, removed one by one.
    const subscription: Subscription = { listener }
    const { principal, session } = interest ?? {}
    this.#listeners += 1
    if (principal === undefined && session === undefined) this.#everything.add(subscription)
    if (principal !== undefined) {
      this.#withPrincipal.add(subscription)
      addTo(this.#byPrincipal, principal, subscription)
    }
    if (session !== undefined) addTo(this.#bySession, session, subscription)
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      this.#listeners -= 1
      this.#everything.delete(subscription)
      if (principal !== undefined) {
        this.#withPrincipal.delete(subscription)
        removeFrom(this.#byPrincipal, principal, subscription)
      }
      if (session !== undefined) removeFrom(this.#bySession, session, subscription)
    }
  }

  /** Listeners subscribed now, and the principals and sessions they are indexed under. */
  get size(): { listeners: number; principals: number; sessions: number } {
    return {
      listeners: this.#listeners,
      principals: this.#byPrincipal.size,
      sessions: this.#bySession.size,
    }
  }
}

/** One `subscribe` call: its own object, whatever function it carries. */
interface Subscription {
  readonly listener: EventListener
}

function deliver(subscriptions: Iterable<Subscription> | undefined, event: ServerEvent): void {
  if (subscriptions === undefined) return
  for (const { listener } of subscriptions) {
    try {
      listener(event)
    } catch {
      // One broken stream must not keep the event from the others.
    }
  }
}

function addTo(index: Map<string, Set<Subscription>>, key: string, entry: Subscription): void {
  const entries = index.get(key)
  if (entries) entries.add(entry)
  else index.set(key, new Set([entry]))
}

function removeFrom(index: Map<string, Set<Subscription>>, key: string, entry: Subscription): void {
  const entries = index.get(key)
  if (entries?.delete(entry) && entries.size === 0) index.delete(key)
}
