/**
 * The tasks extension in the engine (`src/mcp/tasks/`), in-process against real node:sqlite stores:
 * the wire (advertised only with a store, -32021 before anything else, Mcp-Name = taskId, removed
 * methods 404, flat CreateTaskResult, detailed tasks/get without requestState), every status
 * transition, tasks/update with partial, unknown and re-asked keys, cancel while working and while
 * input_required, other principals answered as unknown ids, and the replica-agnostic part: records on
 * a shared SQLite file, a stalled replica's task taken over and finished by another one with its
 * `ctx.once` step replayed (not run again), leases released on shutdown, and no task leased to a
 * replica whose shutdown began. And the bounds on what a
 * principal can make the store keep: the cap on its live tasks (across its clients; an ended task
 * counts until its outcome expires), the retention of an ended task, the answers one task stores.
 */
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as z from 'zod'
import { definitions, text, toolError, type ToolContext } from '../../src/mcp/definitions.ts'
import { ErrorCode, McpError } from '../../src/mcp/errors.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { type McpHandler } from '../../src/mcp/http-input.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import type { McpLogger } from '../../src/mcp/logger.ts'
import { TASKS_EXTENSION } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer } from '../../src/mcp/server.ts'
import type { TaskOptions } from '../../src/mcp/tasks/options.ts'
import { issueKeys } from '../../src/mcp/tasks/record.ts'
import type { TaskStore } from '../../src/mcp/task-store.ts'
import type { CallToolResult } from '../../src/mcp/wire.ts'
import { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import {
  callMcp,
  expectError,
  expectResult,
  type HandlerCallOptions,
  type JsonObject,
} from '../support/mcp-request.ts'
import { tempDataDir } from '../support/server-process.ts'
import { newTask, storeTask } from '../support/store-contract.ts'
import {
  TASKS,
  TASKS_AND_FORMS,
  isTerminal,
  soloTaskRunner,
  waitForTask,
} from '../support/tasks.ts'

/** Named gates a tool waits at until the test opens them; a run that is stopped stops waiting. */
class Gates {
  readonly #gates = new Map<string, { promise: Promise<void>; open: () => void }>()

  #gate(name: string) {
    let gate = this.#gates.get(name)
    if (!gate) {
      let open!: () => void
      const promise = new Promise<void>((resolve) => (open = resolve))
      gate = { promise, open }
      this.#gates.set(name, gate)
    }
    return gate
  }

  wait(name: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason)
      signal.addEventListener('abort', () => reject(signal.reason), { once: true })
      void this.#gate(name).promise.then(resolve)
    })
  }

  open(name: string): void {
    this.#gate(name).open()
  }
}

interface TestDeps {
  gates: Gates
  /** Side effects of `effect_once` (a counter standing for, e.g., an e-mail sent). */
  effects: number
  /** How often each tool's handler started. */
  starts: Map<string, number>
  /** Whether a run of `work` saw its signal abort. */
  aborted: Set<string>
}

const { tool } = definitions<TestDeps>()
const noArgs = z.object({})
const gateArg = z.object({ gate: z.string() })
const answerForm = z.object({ answer: z.string() })
const numberForm = z.object({ n: z.int() })

function started(app: TestDeps, name: string) {
  app.starts.set(name, (app.starts.get(name) ?? 0) + 1)
}

/** A tool that runs only as a task, started on its first line: `body` runs once it started. */
function startedTask<S extends z.ZodObject>(
  name: string,
  description: string,
  input: S,
  body: (args: z.output<S>, ctx: ToolContext<TestDeps>) => Promise<CallToolResult> | CallToolResult
) {
  return tool({
    name,
    description,
    input,
    task: 'required',
    async run(args, ctx) {
      await ctx.startTask()
      return body(args, ctx)
    },
  })
}

const server = compileServer<TestDeps>({
  info: { name: 'tasks-test', version: '0.0.0' },
  tools: [
    tool({
      name: 'plain',
      description: 'No task.',
      input: noArgs,
      run: () => text('plain'),
    }),
    tool({
      name: 'work',
      description: 'A task that waits at its gate.',
      input: gateArg,
      task: 'optional',
      async run({ gate }, ctx) {
        await ctx.startTask()
        started(ctx.deps, 'work')
        ctx.progress(1, 2, `waiting at ${gate}`)
        try {
          await ctx.deps.gates.wait(gate, ctx.signal)
        } catch (error) {
          ctx.deps.aborted.add(gate)
          throw error
        }
        return text(`passed ${gate}`)
      },
    }),
    startedTask('tool_error', 'A task ending in an isError result.', noArgs, () =>
      toolError('it went wrong')
    ),
    startedTask('protocol_error', 'A task ending in a JSON-RPC error.', noArgs, () => {
      throw new McpError(ErrorCode.InvalidParams, 'Invalid params: no such thing')
    }),
    startedTask('crash', 'A task whose handler throws.', noArgs, () => {
      throw new Error('boom')
    }),
    startedTask(
      'two_questions',
      'A task that asks two questions at once (then waits at its gate, if any).',
      z.object({ gate: z.string().optional() }),
      async ({ gate }, ctx) => {
        const [a, b] = await Promise.all([
          ctx.elicit('a', { message: 'First?', schema: answerForm }),
          ctx.elicit('b', { message: 'Second?', schema: answerForm }),
        ])
        if (gate) await ctx.deps.gates.wait(gate, ctx.signal)
        const show = (x: typeof a) => (x.action === 'accept' ? x.content.answer : x.action)
        return text(`a=${show(a)} b=${show(b)}`)
      }
    ),
    startedTask(
      'number',
      'A task that asks for a number until it gets one.',
      noArgs,
      async (_, ctx) => {
        const answer = await ctx.elicit('n', { message: 'A number?', schema: numberForm })
        return text(answer.action === 'accept' ? `n=${answer.content.n}` : answer.action)
      }
    ),
    startedTask('sample_in_task', "A task that asks the host's model.", noArgs, async (_, ctx) => {
      await ctx.sample('llm', { messages: [], maxTokens: 10 })
      return text('sampled')
    }),
    tool({
      name: 'ask_then_task',
      description: 'Asks in the request, then runs as a task.',
      input: noArgs,
      task: 'required',
      async run(_args, ctx) {
        const answer = await ctx.elicit('who', { message: 'Who?', schema: answerForm })
        await ctx.startTask()
        started(ctx.deps, 'ask_then_task')
        return text(answer.action === 'accept' ? `hello ${answer.content.answer}` : answer.action)
      },
    }),
    startedTask(
      'effect_once',
      'A side effect in a ctx.once step, then a gate.',
      gateArg,
      async ({ gate }, ctx) => {
        started(ctx.deps, 'effect_once')
        const effect = await ctx.once('effect', () => ++ctx.deps.effects)
        await ctx.deps.gates.wait(gate, ctx.signal)
        return text(`effect ${effect}`)
      }
    ),
  ],
})

const dir = await tempDataDir('notes-mcp-tasks-')
/** Each test's SQLite file; each "replica" opens it with its own store, as separate processes do. */
let path = ''
let files = 0
const stores: SqliteEngineStore[] = []
async function openStore(): Promise<SqliteEngineStore> {
  const store = new SqliteEngineStore({ path })
  await store.migrate()
  stores.push(store)
  return store
}
const shutdowns: AbortController[] = []
afterEach(() => {
  for (const shutdown of shutdowns.splice(0)) shutdown.abort()
})
afterAll(async () => {
  for (const store of stores) await store.close()
})

const sealer = StateSealer.create({
  keyRing: await importKeyRing([generateKey()]),
  ttlSeconds: 600,
})
const logged: string[] = []
const logger: McpLogger = {
  warn: (message) => logged.push(message),
  error: (message) => logged.push(message),
}

let app: TestDeps
beforeEach(() => {
  app = { gates: new Gates(), effects: 0, starts: new Map(), aborted: new Set() }
  path = join(dir, `tasks-${++files}.db`)
})

/**
 * A replica: the engine handler over its own store on the test's file, with no takeover loop unless
 * asked; every replica of a test shuts down after it.
 */
async function replica(
  tasks: Partial<TaskOptions> | false = {},
  store?: TaskStore
): Promise<McpHandler> {
  const shutdown = new AbortController()
  shutdowns.push(shutdown)
  return createMcpHandler({
    server,
    deps: app,
    sealer,
    logger,
    shutdown: shutdown.signal,
    tasks:
      tasks === false
        ? undefined
        : { store: store ?? (await openStore()), takeoverIntervalMs: 0, ...tasks },
  })
}

/** The result of one request (asserting success). */
async function rpc(
  handler: McpHandler,
  method: string,
  params: JsonObject,
  options: HandlerCallOptions = {}
): Promise<JsonObject> {
  return expectResult(
    await callMcp(handler, method, { capabilities: TASKS_AND_FORMS, ...options, params }),
    options.id ?? 1
  )
}

function call(
  handler: McpHandler,
  name: string,
  args: JsonObject = {},
  options?: HandlerCallOptions
) {
  return rpc(handler, 'tools/call', { name, arguments: args }, options)
}

function getTask(handler: McpHandler, taskId: string, options?: HandlerCallOptions) {
  return rpc(handler, 'tasks/get', { taskId }, options)
}

function waitFor(
  handler: McpHandler,
  taskId: string,
  reached: (task: JsonObject) => boolean,
  what: string
) {
  return waitForTask(() => getTask(handler, taskId), reached, what)
}

const terminal = (handler: McpHandler, taskId: string) =>
  waitFor(handler, taskId, isTerminal, 'a terminal status')
const parked = (handler: McpHandler, taskId: string) =>
  waitFor(handler, taskId, (task) => task.status === 'input_required', 'input_required')

describe('the tasks wire', () => {
  it('advertises the extension in server/discover only when the handler has a task store', async () => {
    const withTasks = await rpc(await replica(), 'server/discover', {})
    expect(withTasks.capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {} })
    expect(withTasks.capabilities).not.toHaveProperty('tasks')
    const without = await rpc(await replica(false), 'server/discover', {})
    expect(without.capabilities).not.toHaveProperty('extensions')
  })

  it('answers a task tool with a flat CreateTaskResult once the record is stored', async () => {
    const store = await openStore()
    const handler = await replica({}, store)
    const created = await call(handler, 'work', { gate: 'create' })
    expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 1000 })
    expect(created.taskId).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(created.ttlMs).toBe(3_600_000)
    expect(Date.parse(created.createdAt)).toBe(Date.parse(created.lastUpdatedAt))
    for (const key of ['result', 'error', 'inputRequests', 'requestState', 'task', 'content'])
      expect(created).not.toHaveProperty(key)
    expect(await store.getTask(created.taskId)).toMatchObject({ status: 'working', tool: 'work' })
    app.gates.open('create')
    await terminal(handler, created.taskId)
  })

  it('gives every task a different id of 192 random bits', async () => {
    const handler = await replica()
    const ids = new Set<string>()
    for (let i = 0; i < 20; i++) ids.add((await call(handler, 'tool_error')).taskId)
    expect(ids.size).toBe(20)
  })

  it('answers -32021 to tasks/* from a request that did not declare the extension, before reading params', async () => {
    const handler = await replica()
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const error = await expectError(
        await callMcp(handler, method, { params: { taskId: 'gate-test' }, capabilities: {} }),
        { status: 400, code: -32021, id: 1 }
      )
      expect(error.data).toEqual({
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      })
    }
  })

  it('answers -32021 to a task-required tool called without the extension, and runs an optional one synchronously', async () => {
    const handler = await replica()
    const error = await expectError(
      await callMcp(handler, 'tools/call', {
        params: { name: 'tool_error', arguments: {} },
        capabilities: {},
      }),
      { status: 400, code: -32021, id: 1 }
    )
    expect(error.data.requiredCapabilities.extensions).toHaveProperty([TASKS_EXTENSION])
    app.gates.open('sync')
    const sync = await call(handler, 'work', { gate: 'sync' }, { capabilities: {} })
    expect(sync).toMatchObject({ resultType: 'complete', content: [{ text: 'passed sync' }] })
  })

  it('serves no task without a store: tasks/* are unknown methods and every request counts as undeclared', async () => {
    const handler = await replica(false)
    await expectError(
      await callMcp(handler, 'tasks/get', { params: { taskId: 'x' }, capabilities: TASKS }),
      {
        status: 404,
        code: -32601,
        id: 1,
      }
    )
    await expectError(
      await callMcp(handler, 'tools/call', {
        params: { name: 'tool_error', arguments: {} },
        capabilities: TASKS,
      }),
      { status: 400, code: -32021, id: 1 }
    )
  })

  it('answers 404 -32601 to the removed tasks/result and tasks/list', async () => {
    const handler = await replica()
    for (const method of ['tasks/result', 'tasks/list'])
      await expectError(
        await callMcp(handler, method, { params: { taskId: 'x' }, capabilities: TASKS }),
        {
          status: 404,
          code: -32601,
          id: 1,
        }
      )
  })

  it('requires Mcp-Name to equal params.taskId on tasks/get, tasks/update and tasks/cancel', async () => {
    const handler = await replica()
    const { taskId } = await call(handler, 'tool_error')
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const error = await expectError(
        await callMcp(handler, method, {
          params: { taskId, inputResponses: {} },
          capabilities: TASKS,
          headers: { 'mcp-name': 'another-task' },
        }),
        { status: 400, code: -32020, id: 1 }
      )
      expect(error.data).toEqual({ header: 'Mcp-Name' })
    }
  })

  it('answers an unknown id and another principal’s task with the same -32602', async () => {
    const handler = await replica()
    const { taskId } = await call(handler, 'work', { gate: 'owner' }, { principal: 'alice' })
    const unknown = await expectError(
      await callMcp(handler, 'tasks/get', {
        params: { taskId: 'tasks-unknown' },
        capabilities: TASKS,
      }),
      { status: 200, code: -32602, id: 1 }
    )
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const other = await expectError(
        await callMcp(handler, method, {
          params: { taskId, inputResponses: {} },
          capabilities: TASKS,
          principal: 'bob',
        }),
        { status: 200, code: -32602, id: 1 }
      )
      expect(other).toEqual(unknown)
    }
    expect(await getTask(handler, taskId, { principal: 'alice' })).toMatchObject({
      status: 'working',
    })
    app.gates.open('owner')
    await waitForTask(() => getTask(handler, taskId, { principal: 'alice' }), isTerminal, 'the end')
  })

  it('forgets a task once its ttl has passed (-32602), without expiring it early', async () => {
    let clock = Date.now()
    const handler = await replica({ ttlMs: 60_000, now: () => clock })
    const { taskId } = await call(handler, 'tool_error')
    const done = await terminal(handler, taskId)
    expect(done.ttlMs).toBe(60_000)
    clock += 59_999
    await getTask(handler, taskId)
    clock += 1
    await expectError(
      await callMcp(handler, 'tasks/get', { params: { taskId }, capabilities: TASKS }),
      {
        status: 200,
        code: -32602,
        id: 1,
      }
    )
  })

  it('keeps a plain tools/call away from the task store', async () => {
    const store = await openStore()
    const touched: string[] = []
    const watched = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          touched.push(String(property))
          return value.apply(target, args)
        }
      },
    })
    const handler = await replica({ takeoverIntervalMs: 0 }, watched)
    expect(await call(handler, 'plain')).toMatchObject({ content: [{ text: 'plain' }] })
    expect(touched).toEqual([])
  })
})

describe('task status transitions', () => {
  it('working → completed, with the tool result and the progress as statusMessage', async () => {
    const handler = await replica()
    const { taskId } = await call(handler, 'work', { gate: 'done' })
    const working = await waitFor(
      handler,
      taskId,
      (t) => t.statusMessage === 'waiting at done',
      'progress'
    )
    expect(working).toMatchObject({ resultType: 'complete', status: 'working' })
    expect(working).not.toHaveProperty('result')
    app.gates.open('done')
    const done = await terminal(handler, taskId)
    expect(done).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: 'passed done' }] },
    })
    for (const key of ['requestState', 'error', 'inputRequests'])
      expect(done).not.toHaveProperty(key)
    expect(Date.parse(done.lastUpdatedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt))
  })

  it('working → completed with an isError result for a tool error, and for a handler that throws', async () => {
    const handler = await replica()
    const toolFailure = await terminal(handler, (await call(handler, 'tool_error')).taskId)
    expect(toolFailure).toMatchObject({ status: 'completed', result: { isError: true } })
    const crash = await terminal(handler, (await call(handler, 'crash')).taskId)
    expect(crash).toMatchObject({ status: 'completed', result: { isError: true } })
    expect(crash.result.content[0].text).not.toContain('boom')
  })

  it('working → failed with the JSON-RPC error a handler throws, and no result', async () => {
    const handler = await replica()
    const failed = await terminal(handler, (await call(handler, 'protocol_error')).taskId)
    expect(failed).toMatchObject({
      status: 'failed',
      statusMessage: 'Invalid params: no such thing',
      error: { code: -32602, message: 'Invalid params: no such thing' },
    })
    expect(failed).not.toHaveProperty('result')
  })

  it('working → failed with -32021 when the task asks what the creating request cannot answer', async () => {
    const handler = await replica()
    const failed = await terminal(handler, (await call(handler, 'sample_in_task')).taskId)
    expect(failed.status).toBe('failed')
    expect(failed.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { sampling: {} } },
    })
  })

  it('working → input_required → working → completed, with tasks/update answering part of it first', async () => {
    const handler = await replica()
    const { taskId } = await call(handler, 'two_questions')
    const asked = await parked(handler, taskId)
    expect(Object.keys(asked.inputRequests).sort()).toEqual(['a', 'b'])
    expect(asked.inputRequests.a).toMatchObject({
      method: 'elicitation/create',
      params: { message: 'First?' },
    })
    expect(asked).not.toHaveProperty('requestState')

    const ack = await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: {
        a: { action: 'accept', content: { answer: 'one' } },
        unknown: { any: 'value' },
      },
    })
    expect(ack).toEqual({ resultType: 'complete', _meta: expect.any(Object) })
    // Applied before the ack: the answered key is gone at once, the other still outstanding.
    const partial = await getTask(handler, taskId)
    expect(partial.status).toBe('input_required')
    expect(Object.keys(partial.inputRequests)).toEqual(['b'])

    await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: { b: { action: 'accept', content: { answer: 'two' } } },
    })
    const done = await terminal(handler, taskId)
    expect(done).toMatchObject({
      status: 'completed',
      result: { content: [{ text: 'a=one b=two' }] },
    })
  })

  it('ignores keys that are not outstanding: unknown, already answered, or sent to a working task', async () => {
    const store = await openStore()
    const handler = await replica({}, store)
    const { taskId } = await call(handler, 'two_questions')
    await parked(handler, taskId)
    const before = await store.getTask(taskId)
    await rpc(handler, 'tasks/update', { taskId, inputResponses: { nope: { action: 'accept' } } })
    expect((await store.getTask(taskId))?.version).toBe(before?.version)

    await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: { a: { action: 'accept', content: { answer: 'x' } } },
    })
    const afterA = await store.getTask(taskId)
    await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: { a: { action: 'accept', content: { answer: 'y' } } },
    })
    expect((await store.getTask(taskId))?.version).toBe(afterA?.version)

    await rpc(handler, 'tasks/update', { taskId, inputResponses: { b: { action: 'decline' } } })
    const done = await terminal(handler, taskId)
    expect(done.result.content[0].text).toBe('a=x b=decline')
    await rpc(handler, 'tasks/update', { taskId, inputResponses: { b: { action: 'accept' } } })
    expect(await getTask(handler, taskId)).toMatchObject({
      status: 'completed',
      result: done.result,
    })
  })

  it('asks again under a new key when an answer is invalid, never reusing one it delivered', async () => {
    const handler = await replica()
    const { taskId } = await call(handler, 'number')
    expect(Object.keys((await parked(handler, taskId)).inputRequests)).toEqual(['n'])
    await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: { n: { action: 'accept', content: { n: 'seven' } } },
    })
    const again = await waitFor(
      handler,
      taskId,
      (t) => t.status === 'input_required' && !t.inputRequests.n,
      'the question asked again'
    )
    expect(Object.keys(again.inputRequests)).toEqual(['n#2'])
    await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: { 'n#2': { action: 'accept', content: { n: 7 } } },
    })
    expect((await terminal(handler, taskId)).result.content[0].text).toBe('n=7')
  })

  it('fails with -32603 once invalid answers have grown its journal past the cap, instead of asking without end', async () => {
    const handler = await replica({ maxJournalChars: 400 })
    const { taskId } = await call(handler, 'number')
    let asked = await parked(handler, taskId)
    let rounds = 0
    while (asked.status === 'input_required') {
      expect(++rounds, 'rounds before the cap').toBeLessThan(40)
      const [key] = Object.keys(asked.inputRequests)
      await rpc(handler, 'tasks/update', {
        taskId,
        inputResponses: { [key as string]: { action: 'accept', content: { n: 'seven' } } },
      })
      asked = await waitFor(
        handler,
        taskId,
        (t) =>
          t.status === 'failed' ||
          (t.status === 'input_required' && !t.inputRequests[key as string]),
        `round ${rounds} settled`
      )
    }
    expect(rounds).toBeGreaterThan(1)
    expect(asked).toMatchObject({
      status: 'failed',
      error: { code: -32603, message: expect.stringMatching(/more input than the server allows/) },
    })
    expect(asked).not.toHaveProperty('result')
  })

  it('resolves the multi round-trip rounds of the request before creating the task, and replays them in it', async () => {
    const handler = await replica()
    const first = await call(handler, 'ask_then_task')
    expect(first).toMatchObject({
      resultType: 'input_required',
      inputRequests: { who: { method: 'elicitation/create' } },
    })
    expect(first).not.toHaveProperty('taskId')
    expect(app.starts.get('ask_then_task')).toBeUndefined()
    const created = await rpc(handler, 'tools/call', {
      name: 'ask_then_task',
      arguments: {},
      inputResponses: { who: { action: 'accept', content: { answer: 'Ada' } } },
      requestState: first.requestState,
    })
    expect(created).toMatchObject({ resultType: 'task', status: 'working' })
    for (const key of ['requestState', 'inputRequests']) expect(created).not.toHaveProperty(key)
    expect((await terminal(handler, created.taskId)).result.content[0].text).toBe('hello Ada')
  })

  it('working → cancelled: the running handler’s signal aborts', async () => {
    const handler = await replica()
    const { taskId } = await call(handler, 'work', { gate: 'never' })
    await waitFor(handler, taskId, (t) => t.statusMessage === 'waiting at never', 'the run')
    expect(await rpc(handler, 'tasks/cancel', { taskId })).toEqual({
      resultType: 'complete',
      _meta: expect.any(Object),
    })
    const done = await terminal(handler, taskId)
    expect(done).toMatchObject({ status: 'cancelled' })
    for (const key of ['result', 'error']) expect(done).not.toHaveProperty(key)
    expect(app.aborted.has('never')).toBe(true)
  })

  it('input_required → cancelled at once, and a later update or cancel changes nothing', async () => {
    const store = await openStore()
    const handler = await replica({}, store)
    const { taskId } = await call(handler, 'two_questions')
    await parked(handler, taskId)
    await rpc(handler, 'tasks/cancel', { taskId })
    const cancelled = await getTask(handler, taskId)
    expect(cancelled).toMatchObject({ status: 'cancelled' })
    expect(cancelled).not.toHaveProperty('inputRequests')
    const version = (await store.getTask(taskId))?.version
    await rpc(handler, 'tasks/update', {
      taskId,
      inputResponses: { a: { action: 'accept', content: { answer: 'x' } } },
    })
    await rpc(handler, 'tasks/cancel', { taskId })
    expect((await store.getTask(taskId))?.version).toBe(version)
  })

  it('settles a task cancelled between its lease and its start without running the handler', async () => {
    const store = await openStore()
    const runner = soloTaskRunner({ server, deps: app, store, logger })
    const now = Date.now()
    const record = await storeTask(
      store,
      newTask('local', now, {
        id: 'cancelled-before-start-0123456789ab',
        tool: 'work',
        args: JSON.stringify({ a: { gate: 'unopened' }, p: 'local', c: TASKS }),
        expiresAt: now + 60_000,
        journal: JSON.stringify({ r: {}, i: {} }),
        leaseOwner: 'solo',
        leaseExpiresAt: now + 10_000,
      })
    )
    runner.launch(record)
    runner.cancel(record.id)
    const done = await waitForTask(
      async () => ({ ...(await store.getTask(record.id)) }),
      isTerminal,
      'the end'
    )
    expect(done.status).toBe('cancelled')
    expect(app.starts.get('work')).toBeUndefined()
  })
})

describe('tasks across replicas', () => {
  it('answers tasks/get, tasks/update and tasks/cancel on any replica, and resumes on the one that got the last answer', async () => {
    const a = await replica({ replicaId: 'replica-a', takeoverIntervalMs: 0 })
    const bStore = await openStore()
    const b = await replica({ replicaId: 'replica-b', takeoverIntervalMs: 0 }, bStore)
    const { taskId } = await call(a, 'two_questions', { gate: 'resumed' })
    await parked(b, taskId)
    await rpc(b, 'tasks/update', {
      taskId,
      inputResponses: { a: { action: 'accept', content: { answer: '1' } } },
    })
    expect(Object.keys((await getTask(a, taskId)).inputRequests)).toEqual(['b'])
    await rpc(b, 'tasks/update', {
      taskId,
      inputResponses: { b: { action: 'accept', content: { answer: '2' } } },
    })
    expect(await bStore.getTask(taskId)).toMatchObject({
      status: 'working',
      leaseOwner: expect.stringMatching(/^replica-b-/),
    })
    app.gates.open('resumed')
    expect((await terminal(a, taskId)).result.content[0].text).toBe('a=1 b=2')
  })

  it('cancels a task running on another replica: its runner sees the flag at its next write', async () => {
    const a = await replica({ replicaId: 'runs', leaseMs: 300, takeoverIntervalMs: 0 })
    const b = await replica({ replicaId: 'cancels', takeoverIntervalMs: 0 })
    const { taskId } = await call(a, 'work', { gate: 'far' })
    await waitFor(b, taskId, (t) => t.statusMessage === 'waiting at far', 'the run')
    await rpc(b, 'tasks/cancel', { taskId })
    expect(await terminal(b, taskId)).toMatchObject({ status: 'cancelled' })
    expect(app.aborted.has('far')).toBe(true)
  })

  it('takes over the task of a stalled replica and replays its ctx.once step instead of running it again', async () => {
    const store = await openStore()
    // Replica A's clock is a minute behind: every lease it takes has already run out for B.
    const a = await replica({
      replicaId: 'stalled',
      now: () => Date.now() - 60_000,
      takeoverIntervalMs: 0,
    })
    const { taskId } = await call(a, 'effect_once', { gate: 'after-effect' })
    await waitForTask(
      async () => ({ ...(await store.getTask(taskId)) }),
      (t) => t.journal?.includes('effect'),
      'the checkpoint'
    )
    expect(app.effects).toBe(1)

    const b = await replica({ replicaId: 'healthy', takeoverIntervalMs: 10 })
    await waitForTask(
      async () => ({ ...(await store.getTask(taskId)) }),
      (t) => String(t.leaseOwner).startsWith('healthy-'),
      'the takeover'
    )
    await waitForTask(
      async () => ({ n: app.starts.get('effect_once') }),
      (t) => t.n === 2,
      'the second run'
    )
    app.gates.open('after-effect')
    const done = await terminal(b, taskId)
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: 'effect 1' }] } })
    expect(app.effects).toBe(1)
    expect(await getTask(a, taskId)).toMatchObject({ status: 'completed', result: done.result })
  })

  it('releases the leases of its runs on shutdown, so another replica finishes them at once', async () => {
    const store = await openStore()
    const shutdown = new AbortController()
    const a = createMcpHandler({
      server,
      deps: app,
      sealer,
      logger,
      shutdown: shutdown.signal,
      tasks: {
        store,
        replicaId: 'leaving',
        takeoverIntervalMs: 0,
        onStopped: (promise) => {
          stopped = promise
        },
      },
    })
    let stopped: Promise<void> | undefined
    const { taskId } = await call(a, 'work', { gate: 'handover' })
    await waitFor(a, taskId, (t) => t.statusMessage === 'waiting at handover', 'the run')
    shutdown.abort()
    expect(stopped).toBeInstanceOf(Promise)
    await stopped
    // Settled only once the release is written: the store may close now.
    const released = await store.getTask(taskId)
    expect(released).toMatchObject({ status: 'working' })
    expect(released?.leaseOwner).toBeUndefined()
    expect(app.aborted.has('handover')).toBe(true)

    app.gates.open('handover')
    const b = await replica({ replicaId: 'staying', takeoverIntervalMs: 10 })
    expect(await terminal(b, taskId)).toMatchObject({
      status: 'completed',
      result: { content: [{ text: 'passed handover' }] },
    })
  })
})

describe('a replica whose shutdown began', () => {
  it('leases no task to itself: one created through it is left for another replica to run, while its own run goes on', async () => {
    const store = await openStore()
    const draining = new AbortController()
    const shutdown = new AbortController()
    shutdowns.push(shutdown)
    const a = createMcpHandler({
      server,
      deps: app,
      sealer,
      logger,
      draining: draining.signal,
      shutdown: shutdown.signal,
      tasks: { store, replicaId: 'draining', takeoverIntervalMs: 0 },
    })
    const running = await call(a, 'work', { gate: 'before-drain' })
    await waitFor(
      a,
      running.taskId,
      (t) => t.statusMessage === 'waiting at before-drain',
      'the run'
    )

    draining.abort()
    const created = await call(a, 'work', { gate: 'during-drain' })
    expect(await store.getTask(created.taskId)).toMatchObject({ status: 'working' })
    expect((await store.getTask(created.taskId))?.leaseOwner).toBeUndefined()
    const b = await replica({ replicaId: 'ready', takeoverIntervalMs: 10 })
    await waitForTask(
      async () => ({ ...(await store.getTask(created.taskId)) }),
      (t) => String(t.leaseOwner).startsWith('ready-'),
      'the other replica to take it'
    )
    app.gates.open('during-drain')
    expect(await terminal(b, created.taskId)).toMatchObject({ status: 'completed' })
    app.gates.open('before-drain')
    expect(await terminal(a, running.taskId)).toMatchObject({
      status: 'completed',
      result: { content: [{ text: 'passed before-drain' }] },
    })
  })
})

describe('what a principal can make the store keep', () => {
  /** A replica on the test's file whose clock the test moves (runs themselves take real time). */
  async function clocked(tasks: Partial<TaskOptions>) {
    const clock = { now: Date.now() }
    const store = await openStore()
    const handler = await replica({ ...tasks, now: () => clock.now }, store)
    return { clock, store, handler }
  }

  it('refuses a task past the cap on live tasks with -32602, storing and running nothing; an ended task holds its place until its outcome expires', async () => {
    const { clock, store, handler } = await clocked({
      maxLiveTasksPerPrincipal: 2,
      resultTtlMs: 60_000,
    })
    const first = await call(handler, 'work', { gate: 'cap-1' })
    const second = await call(handler, 'work', { gate: 'cap-2' })
    for (const [task, gate] of [
      [first, 'cap-1'],
      [second, 'cap-2'],
    ] as const)
      await waitFor(handler, task.taskId, (t) => t.statusMessage === `waiting at ${gate}`, gate)

    const refusal = async () => {
      const error = await expectError(
        await callMcp(handler, 'tools/call', {
          params: { name: 'work', arguments: { gate: 'cap-3' } },
          capabilities: TASKS_AND_FORMS,
        }),
        { status: 200, code: -32602, id: 1 }
      )
      expect(error.message).toBe(
        'Too many tasks: you hold 2 live tasks (running, waiting for input, or ended and kept), ' +
          'and at most 2 are allowed across all your clients. Wait for running tasks to end, ' +
          'cancel those you no longer need (tasks/cancel), or let the outcomes of ended tasks ' +
          'expire (each is kept 1 minute after its task ends), then call again.'
      )
      expect(error.data).toStrictEqual({ cap: 'tasks', scope: 'principal', limit: 2, held: 2 })
    }
    await refusal()
    expect(await store.countLiveTasks('local', clock.now)).toBe(2)
    expect(app.starts.get('work')).toBe(2)

    // Ended, each keeps its place while its outcome is kept.
    app.gates.open('cap-1')
    await rpc(handler, 'tasks/cancel', { taskId: second.taskId })
    for (const task of [first, second]) await terminal(handler, task.taskId)
    await refusal()
    clock.now += 60_000
    const third = await call(handler, 'work', { gate: 'cap-3' })
    expect(third).toMatchObject({ resultType: 'task', status: 'working' })
    app.gates.open('cap-3')
    await terminal(handler, third.taskId)
    expect(app.starts.get('work')).toBe(3)
  })

  it('counts a principal’s tasks under every client it calls through, and no other principal’s', async () => {
    const { handler } = await clocked({ maxLiveTasksPerPrincipal: 1 })
    const as = (principal: string, client?: string) => ({ principal, client })
    await call(handler, 'work', { gate: 'clients' }, as('alice', 'client-one'))
    for (const caller of [as('alice', 'client-two'), as('alice')]) {
      const refused = await callMcp(handler, 'tools/call', {
        params: { name: 'work', arguments: { gate: 'clients' } },
        capabilities: TASKS_AND_FORMS,
        ...caller,
      })
      const error = await expectError(refused, { status: 200, code: -32602, id: 1 })
      expect(error.data).toStrictEqual({ cap: 'tasks', scope: 'principal', limit: 1, held: 1 })
    }
    const bobs = await call(handler, 'work', { gate: 'clients' }, as('bob', 'client-two'))
    expect(bobs).toMatchObject({ resultType: 'task' })
    app.gates.open('clients')
  })

  it('keeps an ended task resultTtlMs after its end, never past its ttlMs, ttlMs shrinking to match', async () => {
    const { clock, store, handler } = await clocked({ ttlMs: 3_600_000, resultTtlMs: 60_000 })
    const created = clock.now
    const completed = await call(handler, 'work', { gate: 'kept' })
    const failed = await call(handler, 'protocol_error')
    const asked = await call(handler, 'number')
    await terminal(handler, failed.taskId)
    await parked(handler, asked.taskId)
    clock.now += 5_000
    app.gates.open('kept')
    await rpc(handler, 'tasks/cancel', { taskId: asked.taskId })
    const ended = [
      await terminal(handler, completed.taskId),
      await getTask(handler, asked.taskId),
      await getTask(handler, failed.taskId),
    ]
    expect(ended.map((task) => [task.status, task.ttlMs])).toEqual([
      ['completed', 65_000],
      ['cancelled', 65_000],
      ['failed', 60_000],
    ])
    clock.now = created + 60_000
    await expectError(
      await callMcp(handler, 'tasks/get', {
        params: { taskId: failed.taskId },
        capabilities: TASKS,
      }),
      { status: 200, code: -32602, id: 1 }
    )
    expect(await store.countLiveTasks('local', clock.now)).toBe(2)
    clock.now = created + 65_000
    expect(await store.countLiveTasks('local', clock.now)).toBe(0)
    expect(await store.purgeExpired(clock.now, 100)).toBeGreaterThanOrEqual(3)
    for (const task of [completed, failed, asked])
      expect(await store.getTask(task.taskId)).toBeUndefined()

    // A task whose ttlMs ends sooner than the retention keeps its ttlMs.
    const { handler: short } = await clocked({ ttlMs: 30_000, resultTtlMs: 60_000 })
    const quick = await call(short, 'tool_error')
    expect((await terminal(short, quick.taskId)).ttlMs).toBe(30_000)
  })

  it('refuses tasks/update answers that would make the task hold more than maxJournalChars, storing nothing', async () => {
    const { store, handler } = await clocked({ maxJournalChars: 2_000 })
    const { taskId } = await call(handler, 'two_questions')
    const asked = await parked(handler, taskId)
    const before = await store.getTask(taskId)
    const long = { action: 'accept', content: { answer: 'x'.repeat(2_000) } }
    const error = await expectError(
      await callMcp(handler, 'tasks/update', {
        params: { taskId, inputResponses: { a: long } },
        capabilities: TASKS_AND_FORMS,
      }),
      { status: 200, code: -32602, id: 1 }
    )
    expect(error.message).toMatch(/more than 2000 characters of answers; nothing was stored/)
    expect(await store.getTask(taskId)).toStrictEqual(before)
    expect(await getTask(handler, taskId)).toMatchObject({ inputRequests: asked.inputRequests })

    const short = (answer: string) => ({ action: 'accept', content: { answer } })
    await rpc(handler, 'tasks/update', { taskId, inputResponses: { a: short('1'), b: short('2') } })
    expect((await terminal(handler, taskId)).result.content[0].text).toBe('a=1 b=2')
  })

  it('validates maxLiveTasksPerPrincipal and resultTtlMs at construction, naming the option', async () => {
    for (const [tasks, message] of [
      [
        { maxLiveTasksPerPrincipal: 0 },
        'maxLiveTasksPerPrincipal must be a whole number from 1 to 100000, got 0',
      ],
      [
        { maxLiveTasksPerPrincipal: 1.5 },
        'maxLiveTasksPerPrincipal must be a whole number from 1 to 100000, got 1.5',
      ],
      [{ resultTtlMs: 0 }, 'resultTtlMs must be a whole number from 1 to 604800000, got 0'],
      [
        { resultTtlMs: 8 * 86_400_000 },
        'resultTtlMs must be a whole number from 1 to 604800000, got 691200000',
      ],
    ] as const) {
      const built = replica(tasks)
      await expect(built, JSON.stringify(tasks)).rejects.toBeInstanceOf(RangeError)
      await expect(built, JSON.stringify(tasks)).rejects.toThrow(message)
    }
  })
})

describe('task records', () => {
  it('issues every input key once over a task’s lifetime', () => {
    const issued: Record<string, string> = {}
    const ask = { method: 'roots/list' as const, params: {} }
    expect(Object.keys(issueKeys({ a: ask, b: ask }, issued))).toEqual(['a', 'b'])
    expect(Object.keys(issueKeys({ a: ask }, issued))).toEqual(['a#2'])
    expect(Object.keys(issueKeys({ 'a#3': ask }, issued))).toEqual(['a#3'])
    expect(Object.keys(issueKeys({ a: ask }, issued))).toEqual(['a#4'])
    expect(issued).toEqual({ a: 'a', b: 'b', 'a#2': 'a', 'a#3': 'a#3', 'a#4': 'a' })
  })
})
