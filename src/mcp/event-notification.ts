/**
 * @module mcp/event-notification
 * The one mapping from a bus `ServerEvent` to the JSON-RPC notification a client's stream is sent for
 * it, for both eras: `subscriptions/listen` (2026-07-28, its `_meta` tagging each notification with
 * the listen request) and the 2025 GET stream. A stream hears a list change when its filter asks for
 * that list, a resource update when it is subscribed to the URI (a lookup the caller supplies: the
 * listen filter, or the 2025 session's subscriptions in the store), and an event scoped to a
 * principal only when it is the stream's own. The engine's own signals (`input_delivered`,
 * `request_cancelled`) are never a notification.
 */
import type { ServerEvent } from './event-bus.ts'
import type { JsonObject } from './wire.ts'

/** What one stream hears of the bus's events. */
export interface NotificationFilter {
  /** The principal the stream serves: events scoped to another are not its own. */
  readonly principal: string
  readonly toolsListChanged?: boolean
  readonly promptsListChanged?: boolean
  readonly resourcesListChanged?: boolean
  /** Whether the stream hears updates of `uri`; absent: none. May look it up in the store. */
  readonly subscribed?: (uri: string) => boolean | Promise<boolean>
  /** The `_meta` every notification carries in its `params`; absent: none (and no empty `params`). */
  readonly meta?: JsonObject
}

/**
 * The notification `filter`'s stream is sent for `event`, or `undefined` when it hears none; a
 * promise only when the filter's `subscribed` lookup answers one.
 */
export function eventNotification(
  event: ServerEvent,
  filter: NotificationFilter
): JsonObject | undefined | Promise<JsonObject | undefined> {
  switch (event.kind) {
    case 'tools_list_changed':
      return filter.toolsListChanged
        ? notification('notifications/tools/list_changed', filter.meta)
        : undefined
    case 'prompts_list_changed':
      return filter.promptsListChanged
        ? notification('notifications/prompts/list_changed', filter.meta)
        : undefined
    case 'resources_list_changed':
      if (event.principal !== undefined && event.principal !== filter.principal) return undefined
      return filter.resourcesListChanged
        ? notification('notifications/resources/list_changed', filter.meta)
        : undefined
    case 'resource_updated': {
      if (event.principal !== undefined && event.principal !== filter.principal) return undefined
      const subscribed = filter.subscribed?.(event.uri)
      if (!subscribed) return undefined
      const updated = notification('notifications/resources/updated', filter.meta, event.uri)
      return subscribed === true ? updated : subscribed.then((yes) => (yes ? updated : undefined))
    }
    default:
      return undefined
  }
}

function notification(method: string, meta: JsonObject | undefined, uri?: string): JsonObject {
  if (meta !== undefined) {
    return {
      jsonrpc: '2.0',
      method,
      params: uri === undefined ? { _meta: meta } : { uri, _meta: meta },
    }
  }
  return uri === undefined
    ? { jsonrpc: '2.0', method }
    : { jsonrpc: '2.0', method, params: { uri } }
}
