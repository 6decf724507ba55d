/**
 * @module worker
 * Cloudflare Workers entry (`wrangler dev`, `wrangler deploy`): `export default { fetch, scheduled }`
 * serving the same app as `node.ts`, on the D1 store bound as `DB`.
 *
 * Once per isolate, on its first request: the environment is parsed by the same `config.ts` as on
 * Node (string bindings only), the `STATE_KEYS` secret is imported as non-extractable keys, and the D1
 * schema is checked. Nothing about a request or a flow is kept between requests: flows live in the
 * sealed `requestState`, notes in D1. A failed setup is not cached, so the next request tries again
 * (after `wrangler secret put` or `wrangler d1 migrations apply`); until then requests get a JSON-RPC
 * error without detail (500 for a misconfiguration, 503 for an unmigrated or unreachable database),
 * and the reason goes to the Worker log (`wrangler tail`).
 *
 * Workers differ from Node in eight places, all decided here:
 * - `STATE_KEYS` is required (a Worker has no disk to keep a generated ring on); set it with
 *   `wrangler secret put STATE_KEYS`, and give every deployment that should finish each other's flows
 *   (Workers and Node alike) the same ring;
 * - links (the share approval page and shared notes, the protected-resource metadata) use `PUBLIC_URL`
 *   when it is set. Without it, each request's links use that request's own origin when its host is in
 *   `ALLOWED_HOSTS`, so a Worker reached on workers.dev and on a custom domain hands each client links
 *   it can open, and a request never sees the host of another (RFC 9728 also wants the metadata's
 *   `resource` to be the URL it was fetched under). The app for an origin is built on first use and
 *   kept, at most {@link MAX_APPS} of them (one per allowed origin in practice; beyond that the
 *   oldest is dropped and rebuilt when needed), so no request pays for building the app. Set
 *   `PUBLIC_URL` to pin one canonical URL, e.g. when OAuth tokens name it as their audience;
 * - expired rows (of the notes and of the engine's state, both in D1) are purged by the `scheduled`
 *   handler, on the cron trigger of `wrangler.toml` (the engine's `sweepExpired`; it needs only the
 *   D1 binding);
 * - there is no shutdown signal: open listen streams end when the client or the runtime closes them;
 * - the caps on held-open streams (`MAX_STREAMS_PER_SESSION`, `MAX_STREAMS_PER_PRINCIPAL`) are
 *   counted per isolate, by one `StreamLimits` the apps of every origin share: isolates share no
 *   memory, so that is the count a Worker has (a caller spread over several isolates may hold the
 *   cap in each), and it is what protects an isolate's own 128 MB;
 * - the event bus is the `EventBusObject` Durable Object bound as `EVENT_BUS` (`stateless-mcp/workers`),
 *   on `EVENT_BUS_SHARDS` shards (default 4): listen and 2025 GET streams hear changes made through
 *   any isolate, and a 2025 answer reaches the isolate whose flow waits for it; a missing binding is
 *   a misconfiguration, like a missing `DB`, and so is a shard count outside 1 to 64;
 * - tasks (`import_notes`, `export_notes`) never run in an isolate, whose work ends with its response:
 *   each is handed to its own `TaskRunnerObject` Durable Object, bound as `TASK_RUNNER`
 *   (`stateless-mcp/workers`), before `CreateTaskResult` is answered, and that object's alarm runs
 *   it, resumes it after `tasks/update`, and takes it over if the object died mid-run. The object
 *   builds its handlers' app from the same bindings ({@link TaskRunnerObject}), and the cron trigger
 *   also hands over any runnable task nothing runs (a lost hand-off). A missing binding is a
 *   misconfiguration too;
 * - the safe default is checked per request, since a Worker has no listening address: without auth,
 *   a request reaching it under a name that is not loopback (a deployment, not `wrangler dev`) gets
 *   a 500 "misconfigured" and the log names AUTH_ISSUER, unless ALLOW_UNAUTHENTICATED=1.
 *
 * With an `OTEL_*` binding, telemetry (`workers/telemetry.ts`, imported only then) exports the spans
 * and metrics of each request after it, through `ctx.waitUntil`; see README "Observability".
 *
 * With auth, the JWKS cache and the OIDC client of the approval pages live as long as the isolate
 * (built in the setup, shared by the apps of every origin): keys are fetched with `fetch` once, then
 * again only when stale or when a token names an unknown key (`stateless-mcp/bearer`'s `RemoteJwks`).
 *
 * Web standards only: this module and everything it imports must stay free of `node:*` and of the
 * Node-only adapters (tests/e2e/worker-bundle.test.ts checks the bundle).
 */
import type { Hono } from 'hono'
import { createApp, notesServer, type AppDeps } from './app.ts'
import { createAuthServices } from './auth/services.ts'
import { ConfigError, parseConfig, type Config } from './config.ts'
import { publicBaseUrl } from './http/app.ts'
import { refusedExposure, setupFailed, setupFailure } from './http/serverless.ts'
import {
  consoleLogger,
  importKeyRing,
  logError,
  parseKeyRing,
  StateSealer,
  StreamLimits,
} from 'stateless-mcp/compose'
import type { NotesDeps } from './notes/deps.ts'
import type { D1Like } from 'stateless-mcp/d1'
import { sweepExpired } from 'stateless-mcp/compose'
import { D1SchemaMissingError, openD1Stores } from './storage/d1.ts'
import type { WorkerTelemetry } from './workers/telemetry.ts'
import {
  DurableObjectEventBus,
  DurableObjectTaskScheduler,
  EVENT_BUS_BINDING,
  TASK_RUNNER_BINDING,
  defineTaskRunnerObject,
  handOverRunnableTasks,
  isBusNamespace,
  isTaskRunnerNamespace,
} from 'stateless-mcp/workers'

/** The Durable Object class of the event bus, bound as `EVENT_BUS` (wrangler.toml). */
export { EventBusObject } from 'stateless-mcp/workers'

/** Bindings of the notes Worker (wrangler.toml vars, secrets, the D1 and Durable Object bindings). */
interface WorkerEnv {
  DB: D1Like
  STATE_KEYS?: string
  [name: string]: unknown
}

/** What the runtime hands the `scheduled` handler (the part of `ScheduledController` used here). */
interface ScheduledEvent {
  /** When the cron trigger fired, in milliseconds since the epoch. */
  scheduledTime: number
}

/** The part of the runtime's `ExecutionContext` used here: work that may outlive the response. */
interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void
}

/** Thrown while setting up when the deployment, not the request, is at fault; logged, never sent. */
class WorkerSetupError extends Error {
  override name = 'WorkerSetupError'
}

/** Most apps one isolate keeps (one per origin its links use; see the module header). */
const MAX_APPS = 16

/** What every request's app is built from, once per isolate. */
interface Setup {
  config: Config
  deps: AppDeps
  /** With an `OTEL_*` binding: exported after each request, in `ctx.waitUntil`. */
  telemetry?: WorkerTelemetry
}

let setup: Promise<Setup> | undefined
/** Apps by the base URL of their links, oldest first; bounded by {@link MAX_APPS}. */
const apps = new Map<string, Hono>()

/** The string-valued bindings, i.e. vars and secrets: what `parseConfig` reads. */
function stringBindings(env: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string')
  )
}

function d1Binding(env: WorkerEnv): D1Like {
  if (typeof env.DB?.prepare !== 'function') {
    throw new WorkerSetupError(
      'the D1 binding DB is missing: see [[d1_databases]] in wrangler.toml'
    )
  }
  return env.DB
}

/**
 * The event bus over the `EventBusObject` namespace every isolate of the deployment shares, on
 * `EVENT_BUS_SHARDS` shards (the bus's default when unset or empty; a var of wrangler.toml, a
 * string or a number there, the same in every Worker bound to the namespace).
 */
function eventBus(env: WorkerEnv): DurableObjectEventBus {
  const namespace = env[EVENT_BUS_BINDING]
  if (!isBusNamespace(namespace)) {
    throw new WorkerSetupError(
      `the Durable Object binding ${EVENT_BUS_BINDING} is missing: see [[durable_objects.bindings]] in wrangler.toml`
    )
  }
  const value = env.EVENT_BUS_SHARDS
  const shards = value === undefined || value === '' ? undefined : Number(value)
  try {
    return new DurableObjectEventBus({ namespace, shards, logger: consoleLogger })
  } catch (error) {
    if (!(error instanceof RangeError)) throw error
    throw new ConfigError(`Invalid configuration: EVENT_BUS_SHARDS: ${error.message}`)
  }
}

/** The scheduler that hands tasks to their `TaskRunnerObject`, the namespace every isolate shares. */
function taskScheduler(env: WorkerEnv): DurableObjectTaskScheduler {
  const namespace = env[TASK_RUNNER_BINDING]
  if (!isTaskRunnerNamespace(namespace)) {
    throw new WorkerSetupError(
      `the Durable Object binding ${TASK_RUNNER_BINDING} is missing: see [[durable_objects.bindings]] in wrangler.toml`
    )
  }
  return new DurableObjectTaskScheduler({ namespace })
}

/**
 * The Durable Object class that runs the notes tasks, bound as `TASK_RUNNER` (wrangler.toml): its
 * handlers get the app `createApp` gives them, on the same D1 database and event bus (links from
 * `PUBLIC_URL`, which the task tools never make).
 */
export const TaskRunnerObject = defineTaskRunnerObject(async (env: WorkerEnv) => {
  const config = parseConfig(stringBindings(env))
  const stores = openD1Stores(d1Binding(env))
  await stores.migrate()
  const deps: NotesDeps = {
    notes: stores.notes,
    bus: eventBus(env),
    baseUrl: publicBaseUrl(config),
    now: Date.now,
  }
  return { server: notesServer, deps, store: stores.engine, tasks: config.tasks }
})

async function prepare(env: WorkerEnv): Promise<Setup> {
  const config = parseConfig(stringBindings(env))
  if (!config.stateKeys) {
    throw new WorkerSetupError('STATE_KEYS is not set: run `wrangler secret put STATE_KEYS`')
  }
  const db = d1Binding(env)
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(parseKeyRing(config.stateKeys)),
    ttlSeconds: config.stateTtlSeconds,
  })
  const stores = openD1Stores(db)
  await stores.migrate()
  const auth = config.auth && createAuthServices(config.auth, { logger: consoleLogger })
  const bus = eventBus(env)
  // Loaded only when an OTEL_* binding asks for it (workers/telemetry.ts).
  const telemetry =
    config.telemetry &&
    (await import('./workers/telemetry.ts')).startWorkerTelemetry(
      config.telemetry,
      config.replicaId
    )
  // No loop (a scheduler implies none): the tasks' objects take them over.
  const tasks = { replicaId: config.replicaId, scheduler: taskScheduler(env) }
  // One count of held-open streams for every app of this isolate: the most a Worker can count.
  const streamLimits = new StreamLimits(config.streamLimits)
  return {
    config,
    deps: {
      store: stores.notes,
      engineStore: stores.engine,
      sealer,
      bus,
      auth,
      tasks,
      streamLimits,
      telemetry: telemetry?.telemetry,
    },
    telemetry,
  }
}

/** The base URL of this request's links: PUBLIC_URL, else the request's origin if its host is allowed. */
function linkBase(config: Config, request: Request): string | undefined {
  if (config.publicUrl !== undefined) return config.publicUrl
  const url = new URL(request.url)
  return config.allowedHosts.includes(url.hostname.toLowerCase()) ? url.origin : undefined
}

/** The app whose links use this request's base URL, built on first use. */
function appFor({ config, deps }: Setup, request: Request): Hono {
  const base = linkBase(config, request)
  const key = base ?? ''
  let app = apps.get(key)
  if (app === undefined) {
    app = createApp(base === undefined ? config : { ...config, publicUrl: base }, deps)
    apps.set(key, app)
    if (apps.size > MAX_APPS) apps.delete(apps.keys().next().value as string)
  }
  return app
}

export default {
  async fetch(request: Request, env: WorkerEnv, ctx?: WaitUntil): Promise<Response> {
    setup ??= prepare(env)
    let ready: Setup
    try {
      ready = await setup
    } catch (error) {
      setup = undefined
      logError('worker setup failed', error)
      if (error instanceof D1SchemaMissingError) {
        return setupFailed(503, 'Service unavailable: the database is not migrated yet.')
      }
      // A misconfiguration is 500; anything else (D1 unreachable, say) is most likely passing: 503.
      return setupFailure(
        error,
        (cause) => cause instanceof ConfigError || cause instanceof WorkerSetupError
      )
    }
    const refused = refusedExposure(ready.config, request)
    if (refused) return refused
    const response = await appFor(ready, request).fetch(request)
    if (ready.telemetry) ctx?.waitUntil(ready.telemetry.afterRequest())
    return response
  },

  /**
   * The cron trigger: one bounded sweep of expired rows (what is left goes at the next one), then
   * one bounded hand-over of the runnable tasks nothing runs.
   */
  async scheduled(event: ScheduledEvent, env: WorkerEnv): Promise<void> {
    try {
      const { notes, engine, ...stores } = openD1Stores(d1Binding(env))
      await stores.migrate()
      let removed = 0
      for (const store of [notes, engine]) removed += await sweepExpired(store, event.scheduledTime)
      console.log(JSON.stringify({ level: 'info', message: 'purged expired rows', removed }))
      const handedOver = await handOverRunnableTasks(
        engine,
        taskScheduler(env),
        event.scheduledTime
      )
      if (handedOver > 0)
        console.log(JSON.stringify({ level: 'info', message: 'handed over tasks', handedOver }))
    } catch (error) {
      logError('expired-row sweep failed', error)
      throw error
    }
  },
}
