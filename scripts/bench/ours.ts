/**
 * @module scripts/bench/ours
 * Our server under load on Node: the bench tools (`ours-server.ts`) on the engine (`createMcpHandler`)
 * behind the shared HTTP face (`createHttpApp`: Origin/Host guard, 405/413/415, auth → local
 * principal), exactly as the notes server and the conformance fixture are wired: the sealer options
 * of the Node entry, and 2025-era clients served as the notes server serves them (sealed session ids,
 * session records in the SQLite store, the in-process bus), except that one principal may open any
 * number of sessions.
 *
 * With `BENCH_APP=notes` it serves the real notes application instead (`src/app.ts` `createApp`) on
 * the same seeded database, for the `notes_search_app` and `listen_scale` scenarios. Environment:
 * `BENCH_DB` (SQLite file; without it a private in-memory database, and no search), and the
 * `OTEL_*` variables, which turn telemetry on exactly as `npm start` does (`node/telemetry.ts`,
 * loaded only then), to measure what it costs. Run as its own process by `scripts/bench.ts`.
 */
import type { Hono } from 'hono'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { InProcessEventBus, MAX_CAP } from 'stateless-mcp'
import { createMcpHandler, generateKey, StreamLimits } from 'stateless-mcp/compose'
import { createNodeSealer } from '../../src/node/crypto.ts'
import { openSqliteStores } from '../../src/storage/sqlite.ts'
import { benchServer } from './ours-server.ts'
import { serveBench } from './serve.ts'

const otel = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_'))
)
// Every bench connection is the one local principal, so its cap on held-open streams would stop the
// scale scenario's listen streams and the 2025 flow's connections: it is lifted to the highest allowed.
const config = parseConfig({
  ...otel,
  HOST: '127.0.0.1',
  PORT: '0',
  MAX_STREAMS_PER_PRINCIPAL: String(MAX_CAP),
})
const running =
  config.telemetry &&
  (await import('../../src/node/telemetry.ts')).startNodeTelemetry({
    config: config.telemetry,
    replicaId: 'bench',
    database: 'sqlite',
    host: config.host,
  })
const telemetry = (await running)?.telemetry
// The sealer as the Node entry (`src/node.ts`) configures it, with a fresh key ring per process.
const sealer = await createNodeSealer([generateKey()], 600)
const path = process.env.BENCH_DB
const stores = openSqliteStores({ path: path ?? ':memory:' })
await stores.migrate()
const { notes: store, engine: engineStore } = stores
const bus = new InProcessEventBus()

let app: Hono
if (process.env.BENCH_APP === 'notes') {
  const { createApp } = await import('../../src/app.ts')
  app = createApp(config, { store, engineStore, sealer, bus, telemetry })
} else {
  const handler = createMcpHandler({
    server: benchServer,
    deps: { notes: path ? store : undefined },
    sealer,
    bus,
    // No cap on the sessions of one principal: the legacy_session scenario opens tens of
    // thousands, all of the one local principal, and past the default cap of 1,000 every one would
    // also end the oldest, which is not the cost this scenario measures.
    legacy: { sessions: engineStore, maxSessionsPerPrincipal: Infinity },
    streamLimits: new StreamLimits(config.streamLimits),
    telemetry,
  })
  app = createHttpApp({ config, handler })
}

serveBench(process.env.BENCH_APP === 'notes' ? 'ours-notes-app' : 'ours', app.fetch, () =>
  stores.close()
)
