/**
 * @module tests/conformance/fixture-server
 * Serves the conformance fixture on Node (`npm run start:fixture`): 127.0.0.1, port from PORT
 * (default 8787), key ring from STATE_KEYS or a fresh one per process, and 2025-era session records in
 * an in-memory SQLite store (sessions end with the process, as their key ring does).
 */
import { serve } from '@hono/node-server'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { formatKeyRing, generateKey, parseKeyRing } from '../../src/mcp/key-ring.ts'
import { createFixtureApp } from './fixture-app.ts'
import { createNodeSealer } from '../../src/node/crypto.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'

const config = parseConfig(process.env)
const keys = parseKeyRing(config.stateKeys ?? formatKeyRing([generateKey()]))
const sealer = await createNodeSealer(keys, config.stateTtlSeconds)
const sessions = new SqliteNotesStore({ path: ':memory:' })
await sessions.migrate()
const shutdown = new AbortController()
const app = createFixtureApp(config, {
  sealer,
  bus: new InProcessEventBus(),
  sessions,
  shutdown: shutdown.signal,
})
const server = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, (info) => {
  console.log(`conformance fixture listening on http://${info.address}:${info.port}/mcp`)
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    shutdown.abort()
    server.close(() => process.exit(0))
    setTimeout(() => process.exit(0), 1000).unref()
  })
}
