/**
 * @module tests/workers/fixture-worker
 * The conformance fixture as a Worker (`tests/workers/wrangler.fixture.toml`, `npm run
 * dev:fixture-worker`), for both Worker legs of the conformance referee (2026-07-28 and 2025-11-25),
 * the cross-runtime retry tests and the cross-isolate bus tests. Like `src/worker.ts` it builds the app
 * once per isolate from the string bindings, parsed by the same `config.ts`; `STATE_KEYS` is required
 * (the cross-runtime tests give the Worker and the Node fixture the same ring). Its interactive tools
 * keep all their memory in the sealed requestState; what 2025-era sessions change after `initialize`
 * lives in the D1 database bound as `DB`, and events travel on the `EventBusObject` Durable Object
 * bound as `EVENT_BUS`, as in the notes Worker.
 *
 * Tasks run as in the notes Worker: each is handed to its own `TaskRunnerObject` (bound as
 * `TASK_RUNNER`, `createFixtureApp`'s task scheduler), whose alarm runs it after the response, on the
 * same D1 database.
 *
 * One test-only binding: `ANSWER_POLL_MS`, the longest wait of a 2025 flow between two checks of the
 * store for an answer whose bus signal it missed (default the engine's); `Infinity` turns the checks
 * off, so a test can show that an answer crossing isolates arrives by the bus alone.
 */
import type { Hono } from 'hono'
import { parseConfig } from '../../src/config.ts'
import { consoleLogger } from '../../src/mcp/logger.ts'
import { importKeyRing, parseKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { D1EngineStore, type D1Like } from '../../src/mcp/d1.ts'
import {
  DurableObjectEventBus,
  DurableObjectTaskScheduler,
  EVENT_BUS_BINDING,
  TASK_RUNNER_BINDING,
  defineTaskRunnerObject,
  isBusNamespace,
  isTaskRunnerNamespace,
} from 'stateless-mcp/workers'
import { createFixtureApp, fixtureServer } from '../conformance/fixture-app.ts'

export { EventBusObject } from 'stateless-mcp/workers'

type Env = Record<string, unknown>

let app: Promise<Hono> | undefined

function eventBus(env: Env): DurableObjectEventBus {
  const namespace = env[EVENT_BUS_BINDING]
  if (!isBusNamespace(namespace)) throw new Error(`the ${EVENT_BUS_BINDING} binding is missing`)
  return new DurableObjectEventBus({ namespace, logger: consoleLogger })
}

/** The Durable Object that runs the fixture's tasks, bound as `TASK_RUNNER`. */
export const TaskRunnerObject = defineTaskRunnerObject(async (env: Env) => {
  const store = new D1EngineStore({ db: env.DB as D1Like })
  await store.migrate()
  return { server: fixtureServer, deps: { bus: eventBus(env) }, store }
})

async function build(env: Env): Promise<Hono> {
  const strings = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string')
  )
  const config = parseConfig(strings)
  if (!config.stateKeys) throw new Error('STATE_KEYS is not set')
  const runners = env[TASK_RUNNER_BINDING]
  if (!isTaskRunnerNamespace(runners))
    throw new Error(`the ${TASK_RUNNER_BINDING} binding is missing`)
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(parseKeyRing(config.stateKeys)),
    ttlSeconds: config.stateTtlSeconds,
  })
  const sessions = new D1EngineStore({ db: env.DB as D1Like })
  await sessions.migrate()
  const answerPollMs =
    strings.ANSWER_POLL_MS === undefined ? undefined : Number(strings.ANSWER_POLL_MS)
  if (answerPollMs !== undefined && !(answerPollMs > 0)) {
    throw new Error('ANSWER_POLL_MS must be a positive number of milliseconds, or Infinity')
  }
  return createFixtureApp(config, {
    sealer,
    bus: eventBus(env),
    sessions,
    answerPollMs,
    taskScheduler: new DurableObjectTaskScheduler({ namespace: runners }),
    replicaId: 'fixture-worker',
  })
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
        `fixture worker setup failed: ${error instanceof Error ? error.message : String(error)}`
      )
      return Response.json(
        { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } },
        { status: 500 }
      )
    }
    return ready.fetch(request)
  },
}
