/**
 * @module mcp/subscriptions
 * `subscriptions/listen`: a held-open SSE stream that first acknowledges the subset of the requested
 * notifications this server honours, then forwards matching events from the bus (subscribed for the
 * caller's principal), each tagged with the listen request's id as `subscriptionId`. Keep-alive
 * comments keep proxies from timing it out; the client closing the stream ends the subscription;
 * server shutdown or the maximum duration end it gracefully with the listen result, and a client
 * fallen too far behind has its stream dropped (the stream itself, its bounded queue and how it ends
 * are `event-stream.ts`'s). The filter's size is bounded by `ListenParamsSchema` (`wire.ts`), the
 * number of streams a caller holds by `stream-limits.ts`. Nothing about a subscription outlives its
 * stream. `serveListen` serves a listen request: its filter read, a stream slot of the caller's
 * taken, the stream opened and, with telemetry on, counted while open.
 */
import type { McpLogger } from './logger.ts'
import type { McpRequest } from './envelope.ts'
import { eventStream, type EventStreamBounds } from './event-stream.ts'
import type { EventBus } from './event-bus.ts'
import { eventNotification, type NotificationFilter } from './event-notification.ts'
import type { McpHttpInput } from './http-input.ts'
import type { RequestObservation, ServerTelemetry } from './observer.ts'
import { parseParams } from './params.ts'
import { META_SERVER_INFO, META_SUBSCRIPTION_ID } from './protocol.ts'
import type { CompiledServer } from './server.ts'
import type { StreamLimits, StreamSlot } from './stream-limits.ts'
import { Cancellation } from './streaming.ts'
import { ListenParamsSchema, type JsonObject, type RequestId } from './wire.ts'

export interface ListenFilter {
  toolsListChanged?: boolean
  promptsListChanged?: boolean
  resourcesListChanged?: boolean
  resourceSubscriptions?: string[]
}

export interface ListenOptions extends EventStreamBounds {
  id: RequestId
  requested: ListenFilter
  principal: string
  bus: EventBus
  /** Aborted when the client goes away. */
  signal: AbortSignal
  /** Aborted when the server shuts down: the stream then ends gracefully. */
  shutdown?: AbortSignal
  /** Where a stream dropped for its client (fallen behind, its end unread) is reported. */
  logger: McpLogger
  /** Runs once when the stream's connection is done, however it ends (releases the stream slot). */
  onEnd?: () => void
}

/** Whether the server can honour any kind of subscription (otherwise listen is not advertised). */
export function canListen<Deps>(server: CompiledServer<Deps>): boolean {
  const { tools, prompts, resources } = server.capabilities
  return Boolean(
    tools?.listChanged || prompts?.listChanged || resources?.listChanged || resources?.subscribe
  )
}

/** The part of the requested filter this server honours (sent in the acknowledgment). */
function honouredFilter<Deps>(server: CompiledServer<Deps>, requested: ListenFilter): ListenFilter {
  const { tools, prompts, resources } = server.capabilities
  const honoured: ListenFilter = {}
  if (requested.toolsListChanged && tools?.listChanged) honoured.toolsListChanged = true
  if (requested.promptsListChanged && prompts?.listChanged) honoured.promptsListChanged = true
  if (requested.resourcesListChanged && resources?.listChanged) honoured.resourcesListChanged = true
  if (requested.resourceSubscriptions?.length && resources?.subscribe) {
    honoured.resourceSubscriptions = [...new Set(requested.resourceSubscriptions)]
  }
  return honoured
}

/** What a listen stream hears (`event-notification.ts`): its honoured filter, each heard tagged. */
function notificationFilter(
  filter: ListenFilter,
  principal: string,
  tag: JsonObject
): NotificationFilter {
  const { resourceSubscriptions } = filter
  return {
    principal,
    toolsListChanged: filter.toolsListChanged,
    promptsListChanged: filter.promptsListChanged,
    resourcesListChanged: filter.resourcesListChanged,
    subscribed: resourceSubscriptions && ((uri) => resourceSubscriptions.includes(uri)),
    meta: tag,
  }
}

export function listen<Deps>(server: CompiledServer<Deps>, options: ListenOptions): Response {
  const { id, principal } = options
  const filter = honouredFilter(server, options.requested)
  const tag = { [META_SUBSCRIPTION_ID]: id }
  const heard = notificationFilter(filter, principal, tag)
  return eventStream({
    bus: options.bus,
    // The principal events carry is the caller's, as handlers publish it (`ctx.principal`).
    interest: { principal },
    signal: options.signal,
    shutdown: options.shutdown,
    keepAliveMs: options.keepAliveMs,
    maxDurationMs: options.maxDurationMs,
    maxQueuedBytes: options.maxQueuedBytes,
    maxBacklogEvents: options.maxBacklogEvents,
    endGraceMs: options.endGraceMs,
    logger: options.logger,
    logFields: { stream: 'listen' },
    onEnd: options.onEnd,
    opening: [
      {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: filter, _meta: tag },
      },
    ],
    map: (event) => eventNotification(event, heard),
    closing: () => ({
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', _meta: { ...tag, [META_SERVER_INFO]: server.info } },
    }),
  })
}

/** What serving `subscriptions/listen` needs of its handler: the same for each of its streams. */
export interface ListenService<Deps> {
  server: CompiledServer<Deps>
  bus: EventBus
  /** Bounds of every stream (`event-stream.ts` defaults). */
  bounds?: EventStreamBounds
  /** The streams each caller holds open, counted with the 2025 era's. */
  streamLimits: StreamLimits
  /** Aborted when the process shuts down: open streams then end gracefully. */
  shutdown?: AbortSignal
  logger: McpLogger
  /** Counts the open streams, when telemetry is on. */
  observer?: ServerTelemetry
}

/**
 * Serves a `subscriptions/listen` request that passed the envelope and its scopes: reads its filter
 * (-32602), takes one of the caller's stream slots (over a cap, the `CapExceededError` answered
 * 429) and opens the stream, which gives the slot back when its connection is done. Throws what
 * refuses it, the slot given back first: nothing holds a stream that failed to open.
 */
export function serveListen<Deps>(
  service: ListenService<Deps>,
  request: McpRequest,
  caller: Pick<McpHttpInput, 'principal' | 'signal'>,
  observation: RequestObservation | undefined
): Response {
  const { principal } = caller
  const cancellation = new Cancellation(caller.signal)
  let slot: StreamSlot | undefined
  try {
    const { notifications } = parseParams(ListenParamsSchema, request.params)
    slot = service.streamLimits.acquire({ principal }, 'listen')
    const stream = listen(service.server, {
      ...service.bounds,
      id: request.id,
      requested: notifications,
      principal,
      bus: service.bus,
      signal: cancellation.signal,
      shutdown: service.shutdown,
      logger: service.logger,
      onEnd: slot.release,
    })
    if (!service.observer) return stream
    observation?.succeeded()
    return service.observer.stream('listen', request.protocolVersion, stream)
  } catch (error) {
    slot?.release()
    throw error
  }
}
