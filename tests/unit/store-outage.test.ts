/**
 * A store that cannot be reached: which failures of the `postgres` driver count as unreachable
 * (`mcp/stores/postgres/outage.ts`), calls refused at once while it is down (but one probe at a time:
 * `OutageBreaker`), the one error they become (`StoreUnavailableError`: -32030, HTTP 503,
 * `Retry-After`, a frozen message, never the driver's text), and how both eras answer it through the
 * whole app (a 2026 `tools/call`; in the 2025 era a request in a session, the session lookup itself
 * and an `initialize`), and a task whose handler met it is handed back, not failed. The real outage (a PostgreSQL server
 * stopped and killed) is `tests/e2e/postgres-outage.test.ts`.
 */
import { describe, expect, it } from 'vitest'
import * as z from 'zod'
import { definitions, text } from '../../src/mcp/definitions.ts'
import {
  ErrorCode,
  STORE_RETRY_AFTER_SECONDS,
  STORE_UNAVAILABLE_MESSAGE,
  StoreUnavailableError,
  errorMessage,
  httpStatusFor,
} from '../../src/mcp/errors.ts'
import { failure } from '../../src/mcp/legacy/call-flow.ts'
import type { LegacyEraContext } from '../../src/mcp/legacy/transport.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { HEADER_PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { compileServer } from '../../src/mcp/server.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import { OutageBreaker, isUnreachable, withOutages } from '../../src/mcp/stores/postgres/outage.ts'
import { MCP_URL, mcpInit } from '../support/mcp-request.ts'
import { useNotesHarness } from '../support/notes-harness.ts'
import { initializeMessage, startSession } from '../support/legacy-request.ts'
import { RecordingLogger } from '../support/recording-logger.ts'
import { newTask, storeTask } from '../support/store-contract.ts'
import { TASKS, soloTaskRunner } from '../support/tasks.ts'

/** An error as the driver throws it: a message and a `code` (Node's, the driver's or a SQLSTATE). */
function driverError(code: string, message = `driver says ${code} at 10.0.0.7:5432`): Error {
  return Object.assign(new Error(message), { code })
}

const UNREACHABLE = [
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
]

const REACHABLE = [
  // A protocol violation the server answers to a malformed message: the request's fault.
  '08P01',
  '23505',
  '40001',
  '42P01',
  '57014',
  '53300',
  'UNDEFINED_VALUE',
  'CONNECTION_ENDED',
]

describe('which driver failures mean the store cannot be reached', () => {
  it.each(UNREACHABLE)('%s is unreachable', (code) => {
    expect(isUnreachable(driverError(code))).toBe(true)
  })

  it.each(REACHABLE)('%s is not', (code) => {
    expect(isUnreachable(driverError(code))).toBe(false)
  })

  it('reads every address of a host name that has several', () => {
    const refused = new AggregateError([driverError('ECONNREFUSED'), driverError('ECONNREFUSED')])
    expect(isUnreachable(refused)).toBe(true)
    expect(isUnreachable(new AggregateError([new Error('other')]))).toBe(false)
  })

  it('is false for what carries no code', () => {
    for (const value of [new Error('x'), new RangeError('bad limit'), null, 'ECONNREFUSED', 42]) {
      expect(isUnreachable(value)).toBe(false)
    }
  })

  it('wraps port methods: `this` and arguments pass, unreachable failures become the one error', async () => {
    const methods = withOutages({
      async echo(this: { tag: string }, value: number) {
        return `${this.tag}:${value}`
      },
      async conflict() {
        throw driverError('23505')
      },
      async refuse() {
        throw driverError('57P01', 'terminating connection due to administrator command')
      },
    })
    const store = { tag: 'store', ...methods }
    expect(await store.echo(7)).toBe('store:7')
    await expect(store.conflict()).rejects.toMatchObject({ code: '23505' })
    const refused = await store.refuse().catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StoreUnavailableError)
    expect((refused as StoreUnavailableError).cause).toMatchObject({ code: '57P01' })
  })
})

describe('calls while the server is down', () => {
  /** A breaker, and a call that reaches the "server", counted, and waits for the test to answer it. */
  function breakerWith() {
    const breaker = new OutageBreaker()
    const server = { up: false, reached: 0, pending: [] as Array<() => void> }
    const call = () =>
      breaker.run(async () => {
        server.reached++
        await new Promise<void>((resolve) => server.pending.push(resolve))
        if (!server.up) throw driverError('ECONNREFUSED')
        return 'answered'
      })
    const answerAll = () => server.pending.splice(0).forEach((answer) => answer())
    return { breaker, server, call, answerAll }
  }

  /** `breakerWith()` after its first call failed: the breaker holds the store for down. */
  async function brokenBreaker() {
    const broken = breakerWith()
    const first = broken.call()
    broken.answerAll()
    await expect(first).rejects.toBeInstanceOf(StoreUnavailableError)
    return broken
  }

  it('go one at a time to the driver (the probe); the others are refused at once', async () => {
    const { server, call, answerAll } = await brokenBreaker()
    const probe = call()
    const refusals = await Promise.all(
      Array.from({ length: 100 }, () => call().catch((error: unknown) => error))
    )
    expect(refusals.every((error) => error instanceof StoreUnavailableError)).toBe(true)
    // The last driver failure is the cause, for the log.
    expect((refusals[0] as StoreUnavailableError).cause).toMatchObject({ code: 'ECONNREFUSED' })
    expect(server.reached).toBe(2)
    answerAll()
    await expect(probe).rejects.toBeInstanceOf(StoreUnavailableError)
    // The next call probes again.
    const again = call()
    expect(server.reached).toBe(3)
    answerAll()
    await expect(again).rejects.toBeInstanceOf(StoreUnavailableError)
  })

  it('serve everything again once a probe is answered', async () => {
    const { server, call, answerAll } = await brokenBreaker()
    server.up = true
    const probe = call()
    answerAll()
    expect(await probe).toBe('answered')
    const both = Promise.all([call(), call()])
    answerAll()
    expect(await both).toEqual(['answered', 'answered'])
  })

  it('do not count a failure before any query (no SQLSTATE) as the server being back', async () => {
    const { breaker, server, call, answerAll } = await brokenBreaker()
    await expect(
      breaker.run(() => Promise.reject(new RangeError('bad page size')))
    ).rejects.toThrow(RangeError)
    // Still down: the next call probes, and the one made meanwhile is refused at once.
    const probe = call()
    await expect(call()).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(server.reached).toBe(2)
    answerAll()
    await expect(probe).rejects.toBeInstanceOf(StoreUnavailableError)
  })

  it('count an error the server answered (a conflict) as the server being back', async () => {
    const { breaker } = await brokenBreaker()
    await expect(breaker.run(() => Promise.reject(driverError('23505')))).rejects.toMatchObject({
      code: '23505',
    })
    await expect(
      Promise.all([breaker.run(async () => 1), breaker.run(async () => 2)])
    ).resolves.toEqual([1, 2])
  })
})

describe('the error a request gets', () => {
  const refused = new StoreUnavailableError(driverError('ECONNREFUSED', 'secret-host:5432 refused'))

  it('is -32030 with a message a person can act on, 503 and Retry-After', () => {
    expect(ErrorCode.StoreUnavailable).toBe(-32030)
    expect(refused.code).toBe(-32030)
    expect(refused.message).toBe(
      'Service unavailable: the database cannot be reached; retry in a few seconds.'
    )
    expect(STORE_UNAVAILABLE_MESSAGE).toBe(refused.message)
    expect(httpStatusFor(refused, 'method')).toBe(503)
    const logger = new RecordingLogger()
    const message = errorMessage(7, refused, logger)
    expect(message.status).toBe(503)
    expect(message.headers?.get('retry-after')).toBe(String(STORE_RETRY_AFTER_SECONDS))
    expect(message.headers?.get('content-type')).toBe('application/json')
    expect(JSON.parse(message.text)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32030, message: STORE_UNAVAILABLE_MESSAGE },
    })
    expect(message.text).not.toContain('secret-host')
    // The driver's failure goes to the log only.
    expect(logger.count('request refused: the store cannot be reached')).toBe(1)
    expect(JSON.stringify(logger.warnings)).toContain('secret-host')
  })

  it('keeps its 503 in the 2025 era, where other in-request failures answer 200', () => {
    const era = { logger: new RecordingLogger() } as unknown as LegacyEraContext<unknown>
    expect(failure(era, 1, refused).status).toBe(503)
    expect(failure(era, 1, new RangeError('x')).status).toBe(200)
  })
})

describe('both eras through the app while the store is away', () => {
  const harness = useNotesHarness()

  /**
   * Makes `name` of the harness's store that has it (the notes' `create`, the engine's session
   * methods) refuse as an unreachable PostgreSQL would.
   */
  function refuse(name: 'create' | 'getSession' | 'createSession'): void {
    const { store: notes, engineStore } = harness()
    const store = (name === 'create' ? notes : engineStore) as unknown as Record<string, unknown>
    store[name] = () => Promise.reject(new StoreUnavailableError(driverError('ECONNREFUSED')))
  }

  async function expectRefused(response: Response, id: number | string): Promise<void> {
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe(String(STORE_RETRY_AFTER_SECONDS))
    const body = await response.json()
    expect(body).toEqual({
      jsonrpc: '2.0',
      id,
      error: { code: -32030, message: STORE_UNAVAILABLE_MESSAGE },
    })
  }

  it('a 2026 tools/call gets 503 -32030', async () => {
    refuse('create')
    const response = await harness().app.request(
      MCP_URL,
      mcpInit('tools/call', {
        id: 41,
        params: { name: 'create_note', arguments: { title: 'during the outage', body: 'b' } },
      })
    )
    await expectRefused(response, 41)
  })

  it('a 2025 tools/call in a session gets 503 -32030', async () => {
    const { session } = await startSession(harness().app)
    refuse('create')
    const response = await harness().app.request(MCP_URL, legacyInit(session.id, 42))
    await expectRefused(response, 42)
  })

  it('a 2025 request whose session lookup meets the outage gets 503 -32030', async () => {
    const { session } = await startSession(harness().app)
    refuse('getSession')
    const response = await harness().app.request(MCP_URL, legacyInit(session.id, 43))
    await expectRefused(response, 43)
  })

  it('a 2025 initialize that cannot record its session gets 503 -32030', async () => {
    refuse('createSession')
    const response = await harness().app.request(MCP_URL, {
      method: 'POST',
      headers: {
        host: '127.0.0.1',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(initializeMessage({ id: 44 })),
    })
    await expectRefused(response, 44)
  })
})

/** A 2025 `tools/call` of `create_note` in session `sid`, as raw request options. */
function legacyInit(sid: string, id: number): RequestInit {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'create_note', arguments: { title: 'during the outage', body: 'b' } },
  })
  return {
    method: 'POST',
    headers: {
      host: '127.0.0.1',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': String(Buffer.byteLength(body)),
      [HEADER_SESSION_ID]: sid,
      [HEADER_PROTOCOL_VERSION]: '2025-11-25',
    },
    body,
  }
}

describe('a task whose handler meets the outage', () => {
  it('is handed back, still working, and the next run finishes it', async () => {
    let outage = true
    const { tool } = definitions<Record<string, never>>()
    const server = compileServer({
      info: { name: 'outage-tasks', version: '0.0.0' },
      tools: [
        tool({
          name: 'needs_store',
          description: 'Reads the store.',
          input: z.object({}),
          task: 'required',
          async run(_args, ctx) {
            await ctx.startTask()
            if (outage) throw new StoreUnavailableError(driverError('ECONNREFUSED'))
            return text('done')
          },
        }),
      ],
    })
    const store = new SqliteEngineStore({ path: ':memory:' })
    await store.migrate()
    const logger = new RecordingLogger()
    const runner = soloTaskRunner({ server, deps: {}, store, logger })
    const now = Date.now()
    const { id } = await storeTask(
      store,
      newTask('local', now, {
        tool: 'needs_store',
        args: JSON.stringify({ a: {}, p: 'local', c: TASKS }),
        journal: JSON.stringify({ r: {}, i: {} }),
      })
    )
    const handedBack = await runner.run(id)
    expect(handedBack).toMatchObject({ status: 'working' })
    expect(handedBack?.leaseOwner).toBeUndefined()
    outage = false
    const finished = await runner.run(id)
    expect(finished).toMatchObject({ status: 'completed' })
    await store.close()
  })
})
