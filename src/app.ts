/**
 * @module app
 * `createApp(config, deps)` builds the notes server's Hono app for either runtime: the notes MCP
 * server compiled once, the engine handler bound to the store, sealer and event bus, the shared HTTP
 * face (`http/app.ts`), and the share-approval pages behind the url-mode elicitation. This is the notes
 * app's composition root: the one module under `src/` that imports `routes/` (the app's own pages);
 * the engine, HTTP, notes and storage modules never do. The runtime entry (`node.ts`, `worker.ts`)
 * chooses the store and the key ring; nothing here imports `node:*`.
 */
import type { Hono } from 'hono'
import { shareRoute } from '../routes/share.ts'
import type { Config } from './config.ts'
import { createHttpApp, publicBaseUrl } from './http/app.ts'
import type { McpLogger } from './mcp/dispatch.ts'
import type { EventBus } from './mcp/events.ts'
import { createMcpHandler } from './mcp/handler.ts'
import type { StateSealer } from './mcp/sealed-state.ts'
import { createNotesServer } from './notes/server.ts'
import type { NotesStore } from './notes/store.ts'

export interface AppDeps {
  store: NotesStore
  sealer: StateSealer
  bus: EventBus
  logger?: McpLogger
  /** Aborted on shutdown: open listen streams end gracefully. */
  shutdown?: AbortSignal
  now?: () => number
}

const notesServer = createNotesServer()

export function createApp(config: Config, deps: AppDeps): Hono {
  const baseUrl = publicBaseUrl(config)
  const now = deps.now ?? Date.now
  const handler = createMcpHandler({
    server: notesServer,
    app: { notes: deps.store, bus: deps.bus, baseUrl, now },
    sealer: deps.sealer,
    bus: deps.bus,
    logger: deps.logger,
    shutdown: deps.shutdown,
    legacy: { sessions: deps.store, sessionTtlSeconds: config.sessionTtlSeconds },
  })
  const app = createHttpApp({ config, handler })
  app.route('/', shareRoute({ notes: deps.store, now }))
  return app
}
