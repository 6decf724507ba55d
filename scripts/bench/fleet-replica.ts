/**
 * @module scripts/bench/fleet-replica
 * One replica of a bench fleet (`bus-fanout.ts`): the bench tools (`ours-server.ts`) on the engine
 * behind the shared HTTP face, as `ours.ts` serves them, but with what replicas share: the engine's
 * state (2025 sessions, their calls, answers and streams) in PostgreSQL (`BENCH_STORE_URL`) and the
 * event bus `BENCH_BUS` (`postgres` or `redis`) at `BENCH_BUS_URL` (`bus-agent.ts`). So a 2025
 * interactive call held by one replica hears the answer POSTed to another through that bus. Started
 * with an IPC channel, it also answers the fan-out driver's commands (`serveBusAgent`). Run as its
 * own process; loopback only.
 */
import { MAX_CAP } from 'stateless-mcp'
import { createMcpHandler, parseKeyRing, StreamLimits } from 'stateless-mcp/compose'
import { PostgresEngineStore } from 'stateless-mcp/postgres'
import postgres from 'postgres'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { createNodeSealer } from '../../src/node/crypto.ts'
import { openBenchBus, serveBusAgent } from './bus-agent.ts'
import { benchServer } from './ours-server.ts'
import { serveBench } from './serve.ts'

const storeUrl = process.env.BENCH_STORE_URL
if (!storeUrl) throw new Error('BENCH_STORE_URL (a postgres:// URL) is required')
const config = parseConfig({
  HOST: '127.0.0.1',
  PORT: '0',
  MAX_STREAMS_PER_PRINCIPAL: String(MAX_CAP),
})
// One key ring for the fleet, as replicas of a deployment share one (`bus-fanout.ts` generates it).
const keys = process.env.BENCH_STATE_KEYS
if (!keys) throw new Error('BENCH_STATE_KEYS is required')
const sealer = await createNodeSealer(parseKeyRing(keys), 600)
// Few connections, closed when idle: 16 replicas share one server with whatever else runs there.
const sql = postgres(storeUrl, { max: 2, idle_timeout: 5, onnotice: () => {} })
const engineStore = new PostgresEngineStore({ sql })
// The driver migrated the database before any replica started: this finds it current.
await engineStore.migrate()
const bus = await openBenchBus(process.env.BENCH_BUS, process.env.BENCH_BUS_URL)
const handler = createMcpHandler({
  server: benchServer,
  deps: { notes: undefined },
  sealer,
  bus,
  legacy: { sessions: engineStore, maxSessionsPerPrincipal: Infinity },
  streamLimits: new StreamLimits(config.streamLimits),
})
if (process.send) serveBusAgent(bus)
serveBench(
  `fleet replica on the ${process.env.BENCH_BUS} bus`,
  createHttpApp({ config, handler }).fetch,
  async () => {
    await bus.close?.()
    await engineStore.close()
    await sql.end({ timeout: 5 })
  }
)
