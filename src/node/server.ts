/**
 * @module node/server
 * The Node server that `npm start` runs (`node.ts` is its entry). `runNodeServer` reads the
 * environment, opens the store (SQLite under DATA_DIR, or PostgreSQL when DATABASE_URL is set, with a
 * LISTEN/NOTIFY event bus so notifications reach every replica), loads (or on first start generates)
 * the requestState key ring, and serves the app with @hono/node-server on 127.0.0.1 by default;
 * without auth it refuses any HOST that is not loopback unless ALLOW_UNAUTHENTICATED=1
 * (`assertSafeExposure`). It purges expired store rows on a timer (`storage/purge.ts`) and serves
 * tasks from the store, taking over those of replicas that died (`mcp/tasks/`). With an `OTEL_*`
 * variable or METRICS_PORT set it loads telemetry (`node/telemetry.ts`, a dynamic import: without
 * them nothing of OpenTelemetry is loaded) and prints where it exports. On SIGINT/SIGTERM it drains
 * (`node/drain.ts`): `/readyz` turns 503, it serves on for SHUTDOWN_DELAY_SECONDS, stops accepting
 * connections, lets listen and 2025 streams go with `retry`, releases call and task leases, lets
 * the requests in flight finish within SHUTDOWN_GRACE_SECONDS, flushes telemetry, closes the store
 * and exits 0.
 * Importing it starts nothing: each entry calls {@link runNodeServer}, `node.ts` as it is, and the
 * fault-injection replica of the tests and the load test (`scripts/support/held-import-replica.ts`)
 * with its store wrapped, so no switch in here changes how a deployment runs.
 */
import { serve } from '@hono/node-server'
import type { Server } from 'node:http'
import { join } from 'node:path'
import type { Duplex } from 'node:stream'
import { createApp } from '../app.ts'
import { ConfigError, assertSafeExposure, parseConfig, type Config } from '../config.ts'
import { ErrorCode, errorResponseText } from '../mcp/errors.ts'
import type { NodeTelemetry } from './telemetry.ts'
import { consoleLogger, logError } from '../mcp/logger.ts'
import { InProcessEventBus } from '../mcp/event-bus.ts'
import { parseKeyRing } from '../mcp/key-ring.ts'
import { loadOrCreateKeyRing } from './key-file.ts'
import type { NotesStore } from '../notes/store.ts'
import { PostgresNotesStore } from '../storage/postgres.ts'
import { PostgresEventBus } from './postgres-event-bus.ts'
import { startExpirySweeps } from '../storage/purge.ts'
import { SqliteNotesStore } from '../storage/sqlite.ts'
import { createNodeSealer } from './crypto.ts'
import { drainOnSignals } from './drain.ts'

/**
 * Requests Node's HTTP parser refuses (control characters in a header, oversized headers) never reach
 * the app; answer them with a JSON-RPC error body too, as every other 4xx of the endpoint.
 */
function answerMalformedHttp(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW'
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'
  const message = tooLarge
    ? 'Request Header Fields Too Large: the request headers exceed the server limit.'
    : 'Bad Request: the HTTP request is malformed (e.g. a control character in a header).'
  const body = errorResponseText(null, { code: ErrorCode.InvalidRequest, message })
  socket.end(
    `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  )
}

/** Telemetry when configured, loaded only then; prints where it exports (never a header value). */
async function startTelemetry(config: Config): Promise<NodeTelemetry | undefined> {
  if (!config.telemetry && config.metricsPort === undefined) return undefined
  const { startNodeTelemetry } = await import('./telemetry.ts')
  const telemetry = await startNodeTelemetry({
    config: config.telemetry,
    replicaId: config.replicaId,
    database: config.databaseUrl ? 'postgresql' : 'sqlite',
    metricsPort: config.metricsPort,
    host: config.host,
  })
  const { traces, metrics } = config.telemetry ?? {}
  if (traces) console.log(`OpenTelemetry traces to ${traces.url} (${traces.protocol})`)
  if (metrics) console.log(`OpenTelemetry metrics to ${metrics.url} (${metrics.protocol})`)
  if (telemetry.metricsUrl) console.log(`notes-mcp metrics on ${telemetry.metricsUrl}`)
  return telemetry
}

/** What an entry other than this one may change of the server {@link runNodeServer} starts. */
export interface NodeServerOptions {
  /** Wraps the store, once it is migrated; the server uses only what this answers. */
  wrapStore?: (store: NotesStore) => NotesStore
}

async function main(options: NodeServerOptions): Promise<void> {
  const config = parseConfig(process.env)
  assertSafeExposure(config)
  const telemetry = await startTelemetry(config)

  let keyText = config.stateKeys
  if (!keyText) {
    const file = await loadOrCreateKeyRing(config.dataDir)
    if (file.created)
      console.log(
        `Generated a requestState key ring in ${file.path} (mode 0600). Share it with every replica.`
      )
    keyText = file.text
  }
  const sealer = await createNodeSealer(parseKeyRing(keyText), config.stateTtlSeconds)

  const opened: NotesStore = config.databaseUrl
    ? new PostgresNotesStore({ url: config.databaseUrl })
    : new SqliteNotesStore({ path: join(config.dataDir, 'notes.db') })
  await opened.migrate()
  const store = options.wrapStore ? options.wrapStore(opened) : opened
  const stopSweeps = startExpirySweeps(store, { logger: consoleLogger })

  // With PostgreSQL, list changes and resource updates reach listen streams on every replica.
  const bus = config.databaseUrl
    ? await PostgresEventBus.start({ url: config.databaseUrl, logger: consoleLogger })
    : new InProcessEventBus()

  const draining = new AbortController()
  const shutdown = new AbortController()
  shutdown.signal.addEventListener('abort', stopSweeps, { once: true })
  // Tasks live in the store: this replica runs its own and takes over those of replicas that died.
  // On shutdown its runs release their leases before the store closes.
  let tasksStopped: Promise<void> = Promise.resolve()
  const tasks = {
    replicaId: config.replicaId,
    onStopped: (stopped: Promise<void>) => {
      tasksStopped = stopped
    },
  }
  const app = createApp(config, {
    store,
    sealer,
    bus,
    draining: draining.signal,
    shutdown: shutdown.signal,
    tasks,
    telemetry: telemetry?.telemetry,
  })
  // HTTP/1.1 (no `createServer` option): a plain `http.Server`.
  const server = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, (info) => {
    const host = info.family === 'IPv6' ? `[${info.address}]` : info.address
    console.log(`notes-mcp listening on http://${host}:${info.port}/mcp`)
  }) as Server
  server.keepAliveTimeout = config.keepAliveMs
  server.on('clientError', answerMalformedHttp)
  drainOnSignals({
    server,
    ...config.shutdown,
    draining,
    shutdown,
    tasksStopped: () => tasksStopped,
    // Each closes whatever the other does: the telemetry flush does not wait on a store that failed.
    close: async () => {
      for (const closed of await Promise.allSettled([store.close(), telemetry?.shutdown()])) {
        if (closed.status === 'rejected') logError('closing at shutdown failed', closed.reason)
      }
    },
  })
}

/**
 * Starts the server from the environment, as `npm start` does; a failure to start is printed and
 * exits the process with 1.
 */
export function runNodeServer(options: NodeServerOptions = {}): void {
  main(options).catch((error: unknown) => {
    console.error(
      error instanceof ConfigError
        ? error.message
        : `notes-mcp failed to start: ${error instanceof Error ? error.message : String(error)}`
    )
    process.exit(1)
  })
}
