/**
 * @module mcp/context
 * Builds the context object a handler receives: who is calling, what the client declared, the abort
 * signal, and the two opt-in notification channels (progress only with a progressToken and strictly
 * increasing; log messages only at or above the level the request asked for). Handlers that may
 * suspend get the replay methods of `replay.ts` on top. Built per request; holds nothing afterwards.
 */
import type { z } from 'zod'
import type {
  ClientCapability,
  ElicitOptions,
  ReplayContext,
  RequestContext,
} from './definitions.ts'
import type { McpRequest } from './envelope.ts'
import { LOG_LEVELS, type LogLevel } from './protocol.ts'
import { defineForm, hasCapability, type Replay } from './replay.ts'
import type { ResponseChannel } from './streaming.ts'

export interface ContextInput<App> {
  app: App
  principal: string
  request: McpRequest
  channel: ResponseChannel
  signal: AbortSignal
}

export function requestContext<App>({
  app,
  principal,
  request,
  channel,
  signal,
}: ContextInput<App>): RequestContext<App> {
  const { progressToken, logLevel, clientCapabilities } = request
  let lastProgress = -Infinity
  const minLevel = logLevel === undefined ? Infinity : LOG_LEVELS.indexOf(logLevel)
  return {
    app,
    principal,
    clientCapabilities,
    signal,
    can: (capability: ClientCapability) => hasCapability(clientCapabilities, capability),
    progress(progress: number, total?: number, message?: string) {
      if (progressToken === undefined || !(progress > lastProgress)) return
      lastProgress = progress
      const params: Record<string, unknown> = { progressToken, progress }
      if (total !== undefined) params.total = total
      if (message !== undefined) params.message = message
      channel.notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
    },
    log(level: LogLevel, data: unknown, logger?: string) {
      if (LOG_LEVELS.indexOf(level) < minLevel) return
      const params: Record<string, unknown> = { level, data }
      if (logger !== undefined) params.logger = logger
      channel.notify({ jsonrpc: '2.0', method: 'notifications/message', params })
    },
  }
}

export function replayContext<App>(
  base: RequestContext<App>,
  replay: Replay,
  idempotencyKey: string
): ReplayContext<App> {
  return {
    ...base,
    idempotencyKey,
    elicit: <S extends z.ZodObject>(key: string, { message, schema }: ElicitOptions<S>) =>
      replay.elicit(key, message, defineForm(schema)),
    elicitUrl: (key, { message, url }) => replay.elicitUrl(key, message, url),
    sample: (key, params) => replay.sample(key, params),
    roots: (key) => replay.roots(key),
    once: (key, step) => replay.once(key, step),
    askAgain: (key) => replay.askAgain(key),
  }
}
