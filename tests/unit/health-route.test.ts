/**
 * The probes of the notes app (`src/http/health-route.ts`), through `createApp` as a runtime builds
 * it: `/readyz` answers 200 while the replica takes new work and 503 with `Retry-After` once its
 * `draining` signal aborted, while `/healthz` stays 200 throughout; an app given no such signal (the
 * Worker's) is always ready. Neither probe reads the store (one whose every call fails still answers
 * ready) nor asks for a token when auth is configured.
 */
import { describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { requestApp } from '../support/mcp-request.ts'
import { TEST_AUTH_ENV } from '../support/test-tokens.ts'

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const { store: sqlite, engineStore } = await sqliteStores()

/** A store whose every call fails, as a database that is down. */
const unreachable = new Proxy(sqlite, {
  get(target, key): unknown {
    const value: unknown = Reflect.get(target, key, target)
    if (typeof value !== 'function') return value
    return () => Promise.reject(new Error('the database is down'))
  },
})

function app(options: { draining?: AbortSignal; store?: NotesStore; env?: object } = {}) {
  return createApp(parseConfig({ ...options.env }), {
    store: options.store ?? sqlite,
    engineStore,
    sealer,
    bus: new InProcessEventBus(),
    draining: options.draining,
  })
}

async function probe(target: ReturnType<typeof app>, path: string) {
  const response = await target.request(`http://127.0.0.1${path}`, {
    headers: { host: '127.0.0.1' },
  })
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: await response.json(),
  }
}

describe('the readiness and liveness probes', () => {
  it('answers /readyz 200 until draining aborts, then 503 with Retry-After; /healthz stays 200', async () => {
    const draining = new AbortController()
    const served = app({ draining: draining.signal })
    expect(await probe(served, '/readyz')).toEqual({
      status: 200,
      retryAfter: null,
      body: { status: 'ready' },
    })
    draining.abort()
    expect(await probe(served, '/readyz')).toEqual({
      status: 503,
      retryAfter: '5',
      body: { status: 'draining' },
    })
    expect(await probe(served, '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } })
  })

  it('is always ready without a draining signal (the Worker)', async () => {
    expect(await probe(app(), '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } })
  })

  it('answers ready while the store fails: a database blip takes no replica out', async () => {
    const served = app({ store: unreachable })
    expect((await requestApp(served, '/readyz')).status).toBe(200)
  })

  it('asks for no token when auth is configured', async () => {
    const served = app({ env: TEST_AUTH_ENV })
    expect((await requestApp(served, '/readyz')).status).toBe(200)
    expect((await requestApp(served, '/healthz')).status).toBe(200)
  })
})
