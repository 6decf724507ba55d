/**
 * @module tests/conformance/fixture-server
 * Serves the conformance fixture (`fixture-replica.ts`) on Node (`npm run start:fixture`), Deno and
 * Bun through their Node APIs: HOST (127.0.0.1) and PORT (default 8787).
 */
import { serve } from '@hono/node-server'
import { openFixture } from './fixture-replica.ts'

const { config, app, shutdown } = await openFixture(process.env)
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
