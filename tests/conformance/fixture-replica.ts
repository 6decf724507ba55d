/**
 * @module tests/conformance/fixture-replica
 * The conformance fixture opened on a runtime with Node's APIs, as its entries serve it
 * (`fixture-server.ts` on Node, Deno and Bun; `fixture-lambda.ts` on Lambda, `netlify/` on Netlify):
 * the configuration from the environment, the key ring from STATE_KEYS or a fresh one per process,
 * and 2025-era session records in the engine's memory store (sessions end with the process, as their
 * key ring does), or in the PostgreSQL database of DATABASE_URL, as on the function platforms, where
 * every invocation may run in another process.
 */
import type { Hono } from 'hono'
import { parseConfig, type Config } from '../../src/config.ts'
import { InProcessEventBus } from 'stateless-mcp'
import { formatKeyRing, generateKey, parseKeyRing } from 'stateless-mcp/compose'
import { createNodeSealer } from '../../src/node/crypto.ts'
import { MemoryEngineStore } from 'stateless-mcp'
import { PostgresEngineStore } from 'stateless-mcp/postgres'
import { createFixtureApp } from './fixture-app.ts'

export interface FixtureReplica {
  config: Config
  app: Hono
  /** Aborted to let open streams go before the process ends. */
  shutdown: AbortController
}

export async function openFixture(
  env: Record<string, string | undefined>
): Promise<FixtureReplica> {
  const config = parseConfig(env)
  const keys = parseKeyRing(config.stateKeys ?? formatKeyRing([generateKey()]))
  const sealer = await createNodeSealer(keys, config.stateTtlSeconds)
  const sessions = config.databaseUrl
    ? new PostgresEngineStore({ url: config.databaseUrl })
    : new MemoryEngineStore()
  await sessions.migrate()
  const shutdown = new AbortController()
  const app = createFixtureApp(config, {
    sealer,
    bus: new InProcessEventBus(),
    sessions,
    shutdown: shutdown.signal,
  })
  return { config, app, shutdown }
}
