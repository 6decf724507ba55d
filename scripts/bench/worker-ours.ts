/**
 * @module scripts/bench/worker-ours
 * Our bench server (`ours-server.ts`) as a Worker, wired as the notes Worker (`src/worker.ts`) wires
 * the engine: the state key ring from the `STATE_KEYS` binding imported once per isolate on its first
 * request as Web Crypto keys, `StateSealer` with its defaults (Web Crypto, jose's base64url), the
 * shared HTTP face (`createHttpApp`). No store and no 2025-era sessions: the workerd scenarios are the
 * modern `tools/call` and MRTR flow. Bundled and served by `workerd.ts`.
 */
import type { Hono } from 'hono'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { createMcpHandler, importKeyRing, parseKeyRing, StateSealer } from 'stateless-mcp/compose'
import { benchServer } from './ours-server.ts'

interface Env {
  STATE_KEYS: string
}

let app: Promise<Hono> | undefined

async function build(env: Env): Promise<Hono> {
  const config = parseConfig({ STATE_KEYS: env.STATE_KEYS })
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(parseKeyRing(env.STATE_KEYS)),
    ttlSeconds: config.stateTtlSeconds,
  })
  const handler = createMcpHandler({ server: benchServer, deps: { notes: undefined }, sealer })
  return createHttpApp({ config, handler })
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    app ??= build(env)
    return (await app).fetch(request)
  },
}
