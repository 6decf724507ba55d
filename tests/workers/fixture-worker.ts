/**
 * @module tests/workers/fixture-worker
 * The conformance fixture as a Worker (`tests/workers/wrangler.fixture.toml`), for the Worker leg of
 * the conformance referee and the cross-runtime retry tests. Like `src/worker.ts` it builds the app
 * once per isolate from the string bindings, parsed by the same `config.ts`; `STATE_KEYS` is required
 * (the cross-runtime tests give the Worker and the Node fixture the same ring). The fixture has no
 * store: its interactive tools keep all their memory in the sealed requestState.
 */
import type { Hono } from 'hono'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/events.ts'
import { importKeyRing, parseKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { createFixtureApp } from '../conformance/fixture-app.ts'

let app: Promise<Hono> | undefined

async function build(env: Record<string, unknown>): Promise<Hono> {
  const strings = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string')
  )
  const config = parseConfig(strings)
  if (!config.stateKeys) throw new Error('STATE_KEYS is not set')
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(parseKeyRing(config.stateKeys)),
    ttlSeconds: config.stateTtlSeconds,
  })
  return createFixtureApp(config, { sealer, bus: new InProcessEventBus() })
}

export default {
  async fetch(request: Request, env: Record<string, unknown>): Promise<Response> {
    app ??= build(env)
    let ready: Hono
    try {
      ready = await app
    } catch (error) {
      app = undefined
      console.error(
        `fixture worker setup failed: ${error instanceof Error ? error.message : error}`
      )
      return Response.json(
        { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } },
        { status: 500 }
      )
    }
    return ready.fetch(request)
  },
}
