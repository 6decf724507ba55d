/**
 * The front door's options for 2025 sessions, held streams and tasks (`createMcpServer`,
 * `stateless-mcp`), each through the server it builds: a value out of bounds refused at
 * construction naming the option; `maxSessionsPerPrincipal` ending the oldest session,
 * `maxSubscriptionsPerPrincipal` refusing one subscription more, `sessionTtlSeconds` ending an idle
 * session, `maxStreamsPerSession` and `maxStreamsPerPrincipal` refusing one GET stream more (429);
 * `tasks` with a `scheduler` handing each task to it (and no takeover loop to configure), its
 * `maxLiveTasksPerPrincipal` refusing one task more, and `close()` returning only once the tasks
 * running here have let their leases go.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  createMcpServer,
  DEFAULT_MAX_STREAMS_PER_SESSION,
  generateStateKeys,
  MAX_CAP,
  MAX_SESSION_TTL_SECONDS,
  MAX_STATE_TTL_SECONDS,
  MemoryEngineStore,
  resource,
  text,
  type McpServerOptions,
  type ServerDefinition,
  type TaskScheduler,
} from 'stateless-mcp'
import { greet } from '../support/greet-tool.ts'
import { noArgsTools } from '../support/no-args-tool.ts'
import { expectError, expectResult, firstMessage, mcpInit } from '../support/mcp-request.ts'
import { TASKS } from '../support/tasks.ts'

const stateKeys = generateStateKeys()
const quiet = { warn() {}, error() {} }
const greeter = { info: { name: 'greeter', version: '1.0.0' }, tools: [greet] }

/** Called once a `hold` task has started; its run then waits until it is stopped. */
let holding: (() => void) | undefined

/** A task tool that holds its run until the run is stopped (the server's close). */
const hold = {
  ...noArgsTools<undefined>()('hold', 'Runs as a task until stopped.', async (ctx) => {
    await ctx.startTask()
    holding?.()
    await new Promise((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true })
    })
    return text('stopped')
  }),
  task: 'required' as const,
}
const tasker = { info: { name: 'tasker', version: '1.0.0' }, tools: [hold] }

const doc = (name: string) =>
  resource({
    uri: `docs://${name}`,
    name,
    read: () => ({ contents: [{ uri: `docs://${name}`, text: name }] }),
  })
const subscribable = { ...greeter, resources: [doc('a'), doc('b')], subscribe: true }

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  vi.useRealTimers()
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** A server of `definition` with `options`, closed after the test. */
function serve(definition: ServerDefinition<undefined>, options: McpServerOptions<undefined>) {
  const server = createMcpServer(definition, { stateKeys, logger: quiet, ...options })
  servers.push(server)
  return server
}

type Server = ReturnType<typeof serve>

/** Headers of a 2025-era request of session `sid` (none for `initialize`). */
function legacyHeaders(sid?: string): Record<string, string> {
  return {
    host: '127.0.0.1',
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    ...(sid === undefined ? {} : { 'mcp-session-id': sid }),
  }
}

/** POSTs one 2025-era request of session `sid` to `server`. */
function legacyPost(server: Server, method: string, params: object, sid?: string) {
  return server.fetch(
    new Request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: legacyHeaders(sid),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
  )
}

/** A 2025 session opened on `server`; answers its id. */
async function openSession(server: Server): Promise<string> {
  const response = await legacyPost(server, 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'front-door-options-test', version: '1.0.0' },
  })
  expect(response.status).toBe(200)
  await response.body?.cancel()
  return response.headers.get('mcp-session-id') as string
}

/** Opens session `sid`'s GET stream on `server`: the response, its body not read. */
function openStream(server: Server, sid: string) {
  return server.fetch(
    new Request('http://127.0.0.1/mcp', { method: 'GET', headers: legacyHeaders(sid) })
  )
}

/** A 2026-07-28 `tools/call` of `name` declaring the tasks extension; answers its result. */
async function callTask(server: Server, name: string, id = 1) {
  const init = mcpInit('tools/call', { id, params: { name, arguments: {} }, capabilities: TASKS })
  return server.fetch(new Request('http://127.0.0.1/mcp', init))
}

/** A scheduler that records what it is told and runs nothing. */
function recordingScheduler(): TaskScheduler & { scheduled: string[] } {
  const scheduled: string[] = []
  return {
    scheduled,
    schedule: async (id) => void scheduled.push(id),
    cancel: async () => {},
  }
}

describe('construction', () => {
  it.each([
    [
      { maxStreamsPerSession: 0 },
      'maxStreamsPerSession must be a whole number from 1 to 100000, got 0',
    ],
    [
      { maxStreamsPerPrincipal: MAX_CAP + 1 },
      'maxStreamsPerPrincipal must be a whole number from 1 to 100000',
    ],
    [
      { maxSessionsPerPrincipal: 1.5 },
      'maxSessionsPerPrincipal must be a whole number from 1 to 100000, or Infinity',
    ],
    [{ maxSubscriptionsPerPrincipal: -1 }, 'maxSubscriptionsPerPrincipal must be'],
    [
      { stateTtlSeconds: MAX_STATE_TTL_SECONDS + 1 },
      'stateTtlSeconds must be a whole number from 1 to 86400',
    ],
    [
      { sessionTtlSeconds: MAX_SESSION_TTL_SECONDS + 1 },
      'sessionTtlSeconds must be a whole number from 1 to 2592000',
    ],
  ] as const)('refuses %o before any request, naming the option', (options, message) => {
    const build = () => createMcpServer(greeter, { stateKeys, ...options })
    expect(build).toThrow(RangeError)
    expect(build).toThrow(`createMcpServer: ${message}`)
  })

  it.each([
    [
      { maxLiveTasksPerPrincipal: 0 },
      RangeError,
      'createMcpServer: maxLiveTasksPerPrincipal must be',
    ],
    [{ resultTtlMs: 8 * 86_400_000 }, RangeError, 'createMcpServer: resultTtlMs must be'],
    [
      { scheduler: recordingScheduler(), takeoverIntervalMs: 1_000 },
      TypeError,
      'createMcpServer: takeoverIntervalMs must be 0 with a scheduler',
    ],
  ] as const)('refuses the tasks %o before any request', (tasks, kind, message) => {
    const build = () => createMcpServer(tasker, { stateKeys, tasks })
    expect(build).toThrow(kind)
    expect(build).toThrow(message)
  })

  it('refuses tasks for a server with no task tool, naming the fix', () => {
    expect(() => createMcpServer(greeter, { stateKeys, tasks: {} })).toThrow(
      /no tool declares `task`: add `task: 'optional'`/
    )
  })
})

describe('2025 sessions', () => {
  it('end the oldest session of a principal at maxSessionsPerPrincipal', async () => {
    const server = serve(greeter, { maxSessionsPerPrincipal: 1 })
    const first = await openSession(server)
    expect((await legacyPost(server, 'tools/list', {}, first)).status).toBe(200)
    await openSession(server)
    expect((await legacyPost(server, 'tools/list', {}, first)).status).toBe(404)
  })

  it('refuse one subscription more than maxSubscriptionsPerPrincipal', async () => {
    const server = serve(subscribable, { maxSubscriptionsPerPrincipal: 1 })
    const sid = await openSession(server)
    const subscribe = (uri: string) => legacyPost(server, 'resources/subscribe', { uri }, sid)
    expect(await firstMessage(await subscribe('docs://a'))).toMatchObject({ result: {} })
    const refused = await firstMessage(await subscribe('docs://b'))
    expect(refused.error).toMatchObject({ code: -32602, data: { cap: 'subscriptions', limit: 1 } })
  })

  it('end once unused for sessionTtlSeconds', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const short = serve(greeter, { sessionTtlSeconds: 60 })
    const long = serve(greeter, {})
    const sids = [await openSession(short), await openSession(long)]
    vi.setSystemTime(Date.now() + 61_000)
    expect((await legacyPost(short, 'tools/list', {}, sids[0])).status).toBe(404)
    expect((await legacyPost(long, 'tools/list', {}, sids[1])).status).toBe(200)
  })
})

describe('held streams', () => {
  it('refuse a session’s GET stream past maxStreamsPerSession with 429', async () => {
    const server = serve(greeter, { maxStreamsPerSession: 1 })
    const sid = await openSession(server)
    const held = await openStream(server, sid)
    expect(held.status).toBe(200)
    expect((await openStream(server, sid)).status).toBe(429)
    await held.body?.cancel()
  })

  it('refuse a principal’s GET stream past maxStreamsPerPrincipal with 429', async () => {
    const server = serve(greeter, {
      maxStreamsPerPrincipal: 1,
      maxStreamsPerSession: DEFAULT_MAX_STREAMS_PER_SESSION,
    })
    const held = await openStream(server, await openSession(server))
    expect(held.status).toBe(200)
    expect((await openStream(server, await openSession(server))).status).toBe(429)
    await held.body?.cancel()
  })
})

describe('tasks', () => {
  it('are handed to a scheduler, which needs no takeoverIntervalMs', async () => {
    const scheduler = recordingScheduler()
    const store = new MemoryEngineStore()
    const server = serve(tasker, { store, tasks: { scheduler } })
    const created = await expectResult(await callTask(server, 'hold'), 1)
    expect(created).toMatchObject({ resultType: 'task', status: 'working' })
    expect(scheduler.scheduled).toEqual([created.taskId])
    expect(await store.getTask(created.taskId)).not.toHaveProperty('leaseOwner')
    await server.close()
    await store.close()
  })

  it('refuse one live task more than maxLiveTasksPerPrincipal', async () => {
    const server = serve(tasker, {
      tasks: { scheduler: recordingScheduler(), maxLiveTasksPerPrincipal: 1 },
    })
    await expectResult(await callTask(server, 'hold'), 1)
    const refused = await expectError(await callTask(server, 'hold', 2), {
      status: 200,
      code: -32602,
      id: 2,
    })
    expect(refused.data).toStrictEqual({ cap: 'tasks', scope: 'principal', limit: 1, held: 1 })
  })

  it('running here have let their leases go once close() returns', async () => {
    const store = new MemoryEngineStore()
    const server = createMcpServer(tasker, { stateKeys, logger: quiet, store })
    const started = new Promise<void>((resolve) => (holding = resolve))
    const created = await expectResult(await callTask(server, 'hold'), 1)
    await started
    expect(await store.getTask(created.taskId)).toHaveProperty('leaseOwner')
    await server.close()
    expect(await store.getTask(created.taskId)).toMatchObject({ status: 'working' })
    expect(await store.getTask(created.taskId)).not.toHaveProperty('leaseOwner')
    await store.close()
  })
})
