/**
 * @module worker
 * Cloudflare Workers entry (`wrangler dev`, `wrangler deploy`): `export default { fetch }` serving the
 * same app as `node.ts`, on the D1 store bound as `DB`.
 *
 * Once per isolate, on its first request: the environment is parsed by the same `config.ts` as on
 * Node (string bindings only), the `STATE_KEYS` secret is imported as non-extractable keys, the D1
 * schema is checked, and the Hono app is built; every later request reuses it. Nothing about a request
 * or a flow is kept between requests: flows live in the sealed `requestState`, notes in D1. A failed
 * build is not cached, so the next request tries again (after `wrangler secret put` or
 * `wrangler d1 migrations apply`); until then requests get a JSON-RPC error without detail (500 for a
 * misconfiguration, 503 for an unmigrated or unreachable database), and the reason goes to the Worker
 * log (`wrangler tail`).
 *
 * Workers differ from Node in three places, all decided here:
 * - `STATE_KEYS` is required (a Worker has no disk to keep a generated ring on); set it with
 *   `wrangler secret put STATE_KEYS`, and give every deployment that should finish each other's flows
 *   (Workers and Node alike) the same ring;
 * - without `PUBLIC_URL`, links (the share approval page, the protected-resource metadata) use the
 *   origin of the first request whose host is in `ALLOWED_HOSTS`; set `PUBLIC_URL` when the Worker
 *   answers on several hostnames;
 * - there is no shutdown signal: open listen streams end when the client or the runtime closes them.
 *
 * Web standards only: this module and everything it imports must stay free of `node:*` and of the
 * Node-only adapters (tests/e2e/worker-bundle.test.ts checks the bundle).
 */
import type { Hono } from 'hono'
import { createApp } from './app.ts'
import { ConfigError, parseConfig, type Config } from './config.ts'
import { InProcessEventBus } from './mcp/events.ts'
import { importKeyRing, parseKeyRing } from './mcp/key-ring.ts'
import { StateSealer } from './mcp/sealed-state.ts'
import { D1NotesStore, D1SchemaMissingError, type D1Like } from './storage/d1.ts'

/** Bindings of the notes Worker (wrangler.toml vars, secrets and the D1 binding). */
interface WorkerEnv {
  DB: D1Like
  STATE_KEYS?: string
  [name: string]: unknown
}

/** Thrown while building when the deployment, not the request, is at fault; logged, never sent. */
class WorkerSetupError extends Error {
  override name = 'WorkerSetupError'
}

let app: Promise<Hono> | undefined

/** The string-valued bindings, i.e. vars and secrets: what `parseConfig` reads. */
function stringBindings(env: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string')
  )
}

/** `config` with PUBLIC_URL defaulted to the request's origin when its host is an allowed one. */
function withPublicUrl(config: Config, request: Request): Config {
  if (config.publicUrl !== undefined) return config
  const url = new URL(request.url)
  if (!config.allowedHosts.includes(url.hostname.toLowerCase())) return config
  return { ...config, publicUrl: url.origin }
}

async function build(env: WorkerEnv, request: Request): Promise<Hono> {
  const config = withPublicUrl(parseConfig(stringBindings(env)), request)
  if (!config.stateKeys) {
    throw new WorkerSetupError('STATE_KEYS is not set: run `wrangler secret put STATE_KEYS`')
  }
  if (typeof env.DB?.prepare !== 'function') {
    throw new WorkerSetupError(
      'the D1 binding DB is missing: see [[d1_databases]] in wrangler.toml'
    )
  }
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(parseKeyRing(config.stateKeys)),
    ttlSeconds: config.stateTtlSeconds,
  })
  const store = new D1NotesStore({ db: env.DB })
  await store.migrate()
  return createApp(config, { store, sealer, bus: new InProcessEventBus() })
}

function unavailable(status: 500 | 503, message: string): Response {
  return Response.json(
    { jsonrpc: '2.0', id: null, error: { code: -32603, message } },
    { status, headers: { 'cache-control': 'no-store' } }
  )
}

export default {
  async fetch(request: Request, env: WorkerEnv): Promise<Response> {
    app ??= build(env, request)
    let ready: Hono
    try {
      ready = await app
    } catch (error) {
      app = undefined
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      console.error(JSON.stringify({ level: 'error', message: 'worker setup failed', reason }))
      if (error instanceof D1SchemaMissingError) {
        return unavailable(503, 'Service unavailable: the database is not migrated yet.')
      }
      if (error instanceof ConfigError || error instanceof WorkerSetupError) {
        return unavailable(
          500,
          'Internal error: the server is misconfigured; the reason is in its log.'
        )
      }
      // Anything else (D1 unreachable, say) is most likely passing: a client may retry.
      return unavailable(503, 'Service unavailable: the server could not start; try again shortly.')
    }
    return ready.fetch(request)
  },
}
