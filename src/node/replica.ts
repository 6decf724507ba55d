/**
 * @module node/replica
 * One notes replica on a runtime with Node's APIs (Node, Deno, Bun), before anything listens:
 * `openReplica` reads the environment, opens the store (SQLite under DATA_DIR, or PostgreSQL when
 * DATABASE_URL is set, with a LISTEN/NOTIFY event bus so notifications reach every replica, or the
 * Redis bus of `stateless-mcp/redis` when EVENT_BUS_URL is set; the notes and the engine's state
 * share the file or the pool), loads (or on first start generates) the requestState key ring,
 * purges expired rows of both stores on a timer (the engine's
 * `startExpirySweeps`), serves tasks from the engine's store, taking over those of replicas that died
 * (`mcp/tasks/`), and builds the app. On Node, with an `OTEL_*` variable or METRICS_PORT set, it loads
 * telemetry (`node/telemetry.ts`, a dynamic import: without them nothing of OpenTelemetry is loaded).
 * Each runtime's entry serves `app.fetch` with its own HTTP server and drains with `node/drain.ts`:
 * `node/server.ts` (Node), `deno.ts`, `bun.ts`; on function platforms (Lambda, Netlify), which
 * neither listen nor drain, `node/function-replica.ts` answers with it. `startOrExit` is the
 * listening entries' common way to fail at start.
 */
import type { Hono } from 'hono'
import { join } from 'node:path'
import { createApp } from '../app.ts'
import { ConfigError, assertSafeExposure, parseConfig, type Config } from '../config.ts'
import { InProcessEventBus, type EventBus } from 'stateless-mcp'
import { consoleLogger, logError, parseKeyRing, startExpirySweeps } from 'stateless-mcp/compose'
import type { NotesStore } from '../notes/store.ts'
import { openPostgresStores } from '../storage/postgres.ts'
import { PostgresEventBus } from 'stateless-mcp/postgres'
import { openSqliteStores } from '../storage/sqlite.ts'
import { createNodeSealer } from './crypto.ts'
import { loadOrCreateKeyRing } from './key-file.ts'
import type { NodeTelemetry } from './telemetry.ts'

/**
 * The LISTEN/NOTIFY channel of the notes replicas: the name they have always used, so replicas of
 * an older release and this one hear each other during a rolling update.
 */
const NOTES_EVENT_CHANNEL = 'notes_mcp_events'

/** The runtimes a replica runs on; telemetry export is Node's only. */
export type ReplicaRuntime = 'Node' | 'Deno' | 'Bun' | 'Lambda' | 'Netlify'

/** What an entry other than the runtime's own may change of the replica {@link openReplica} opens. */
export interface ReplicaOptions {
  /** Wraps the notes store, once it is migrated; the replica uses only what this answers. */
  wrapStore?: (store: NotesStore) => NotesStore
  /**
   * Whether the replica serves tasks (default true); false where nothing runs after a response
   * (the function platforms): the tasks extension is then not advertised.
   */
  serveTasks?: boolean
  /** Set where responses are sent whole: why 2025 calls cannot ask mid-call (`AppDeps`). */
  wholeResponses?: string
}

/** A replica opened, not yet served: its entry listens and drains it. */
export interface Replica {
  config: Config
  app: Hono
  /** Aborted first at a drain: `/readyz` answers 503 and no work is taken over from other replicas. */
  draining: AbortController
  /** Aborted once the listener closed: listen and 2025 streams are let go, leases released. */
  shutdown: AbortController
  /** The task runs' stop, once `shutdown` aborted. */
  tasksStopped(): Promise<void>
  /** Closes the store and flushes telemetry, each whatever the other does. */
  close(): Promise<void>
}

/** Telemetry when configured, loaded only then; prints where it exports (never a header value). */
async function startTelemetry(
  config: Config,
  runtime: ReplicaRuntime
): Promise<NodeTelemetry | undefined> {
  if (!config.telemetry && config.metricsPort === undefined) return undefined
  if (runtime !== 'Node')
    throw new ConfigError(
      `OTEL_* and METRICS_PORT: telemetry export runs on Node only (npm start), not on ${runtime}; unset them here.`
    )
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

/** Opens the replica the environment describes, as the module header says. */
export async function openReplica(
  env: Record<string, string | undefined>,
  runtime: ReplicaRuntime,
  options: ReplicaOptions = {}
): Promise<Replica> {
  const config = parseConfig(env)
  assertSafeExposure(config)
  const telemetry = await startTelemetry(config, runtime)

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

  const stores = config.databaseUrl
    ? openPostgresStores({ url: config.databaseUrl })
    : openSqliteStores({ path: join(config.dataDir, 'notes.db') })
  await stores.migrate()
  const store = options.wrapStore ? options.wrapStore(stores.notes) : stores.notes
  const engineStore = stores.engine
  const stopSweeps = startExpirySweeps([store, engineStore], { logger: consoleLogger })

  // With Redis (EVENT_BUS_URL) or PostgreSQL, list changes, resource updates and the 2025 session
  // signals reach the streams and flows of every replica.
  const bus = await openEventBus(config)

  const draining = new AbortController()
  const shutdown = new AbortController()
  shutdown.signal.addEventListener('abort', stopSweeps, { once: true })
  // Tasks live in the store: this replica runs its own and takes over those of replicas that died.
  // On shutdown its runs release their leases before the store closes.
  let tasksStopped: Promise<void> = Promise.resolve()
  const app = createApp(config, {
    store,
    engineStore,
    sealer,
    bus,
    draining: draining.signal,
    shutdown: shutdown.signal,
    tasks:
      options.serveTasks === false
        ? undefined
        : {
            replicaId: config.replicaId,
            onStopped: (stopped: Promise<void>) => {
              tasksStopped = stopped
            },
          },
    telemetry: telemetry?.telemetry,
    wholeResponses: options.wholeResponses,
  })
  return {
    config,
    app,
    draining,
    shutdown,
    tasksStopped: () => tasksStopped,
    close: async () => {
      const closing = [stores.close(), telemetry?.shutdown(), bus.close?.()]
      for (const closed of await Promise.allSettled(closing.filter((step) => step !== undefined))) {
        if (closed.status === 'rejected') logError('closing at shutdown failed', closed.reason)
      }
    },
  }
}

/**
 * The bus the replica's streams hear on: Redis sharded pub/sub when EVENT_BUS_URL is set (loaded only
 * then), else PostgreSQL's LISTEN/NOTIFY with DATABASE_URL, else this process only.
 */
async function openEventBus(config: Config): Promise<EventBus & { close?(): Promise<void> }> {
  if (config.eventBusUrl) {
    const { RedisEventBus } = await import('stateless-mcp/redis')
    return RedisEventBus.start({
      url: config.eventBusUrl,
      channelPrefix: NOTES_EVENT_CHANNEL,
      logger: consoleLogger,
    })
  }
  if (config.databaseUrl) {
    return PostgresEventBus.start({
      url: config.databaseUrl,
      channel: NOTES_EVENT_CHANNEL,
      logger: consoleLogger,
    })
  }
  return new InProcessEventBus()
}

/** Runs an entry's start; a failure is printed (a configuration error as it is) and exits with 1. */
export function startOrExit(start: () => Promise<unknown>): void {
  start().catch((error: unknown) => {
    console.error(
      error instanceof ConfigError
        ? error.message
        : `notes-mcp failed to start: ${error instanceof Error ? error.message : String(error)}`
    )
    process.exit(1)
  })
}
