/**
 * Tasks on Workers, inside workerd: the notes Worker under test (the tests' own isolate) and
 * `notes-replica`, the conformance fixture as `fixture-a` and `fixture-b`, all on one real local D1
 * database, with each task run by its real `TaskRunnerObject` Durable Object on its alarm (see
 * vitest.config.ts). A task is created through one isolate and polled, answered or cancelled
 * through another; no isolate runs a task after its response, so every run seen here is an
 * object's.
 *
 * Takeover: a replica of the notes app built in this isolate (the Node path: it leases the task to
 * itself and runs it in the background) whose database stops answering after its second batch of
 * notes, as a runner that died mid-import does: its lease lapses unrenewed. The task's object then
 * takes it over from its journal, woken by a client's poll or by its own alarm at the lease's end,
 * and the import ends with every note exactly once. Slices: a run whose slice ends (as an alarm's
 * does after its time) releases its lease, and the next run goes on from the journal. Also: the
 * object's cleanup, the wake of a parked task in a fresh life of its object, cancels while working
 * and while parked, and the cron backstop for a task whose hand-off was lost.
 */
import { abortAllDurableObjects, env, runInDurableObject } from 'cloudflare:test'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { parseConfig } from '../../src/config.ts'
import { consoleLogger } from '../../src/mcp/logger.ts'
import { importKeyRing, parseKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { TaskEngine } from '../../src/mcp/tasks/engine.ts'
import { DEFAULT_TASK_RESULT_TTL_MS } from '../../src/mcp/tasks/options.ts'
import { leaseHeld } from '../../src/mcp/tasks/record.ts'
import { createNotesServer } from '../../src/notes/server.ts'
import { D1EngineStore, type D1Like, type D1PreparedLike } from '../../src/mcp/d1.ts'
import { openD1Stores } from '../../src/storage/d1.ts'
import worker from '../../src/worker.ts'
import {
  DurableObjectEventBus,
  DurableObjectTaskScheduler,
  TASK_RUNNER_BINDING,
  type BusNamespace,
  type TaskRunnerNamespace,
} from 'stateless-mcp/workers'
import { taskObjectName } from '../../src/mcp/workers/task-scheduler.ts'
import { MCP_URL, expectResult, mcpInit, type JsonObject } from '../support/mcp-request.ts'
import { TASKS_AND_FORMS, isTerminal, unscheduledTask, waitForTask } from '../support/tasks.ts'
import { fixtureA, fixtureB, notesA, notesB, type Fetcher } from './isolates.ts'

const runners = env[TASK_RUNNER_BINDING] as TaskRunnerNamespace
/** The replica name in the leases of every task object. */
const OBJECT_RUNNER = /^task-object-/

/** The task records, read straight from the database every isolate shares. */
const records = new D1EngineStore({ db: env.DB })

beforeAll(() => records.migrate())

let nextId = 1

async function rpc(
  target: Fetcher,
  method: string,
  params: JsonObject,
  capabilities: object = TASKS_AND_FORMS
): Promise<JsonObject> {
  const id = nextId++
  return expectResult(
    await target.fetch(MCP_URL, mcpInit(method, { id, params, capabilities })),
    id
  )
}

function callTool(target: Fetcher, name: string, args: JsonObject, capabilities?: object) {
  return rpc(target, 'tools/call', { name, arguments: args }, capabilities)
}

/** A tool call answered with a task: its id. */
async function startTask(target: Fetcher, name: string, args: JsonObject) {
  const created = await callTool(target, name, args)
  expect(created.resultType).toBe('task')
  expect(created.status).toBe('working')
  return created.taskId as string
}

const getTask = (target: Fetcher, taskId: string) => rpc(target, 'tasks/get', { taskId })

/** The record as the store holds it (`{}` once it is gone). */
async function record(taskId: string): Promise<JsonObject> {
  return { ...(await records.getTask(taskId)) }
}

/** `count` notes titled `<prefix> 1`, `<prefix> 2`… as one markdown text. */
function markdownOf(prefix: string, count: number): string {
  return Array.from({ length: count }, (_, i) => `# ${prefix} ${i + 1}\n\nBody ${i + 1}.\n`).join(
    '\n'
  )
}

/** How many notes carry a title starting with `prefix`, and how many distinct such titles. */
async function notesTitled(prefix: string): Promise<{ notes: number; titles: number }> {
  const row = await env.DB.prepare(
    'SELECT count(*) AS notes, count(DISTINCT title) AS titles FROM notes WHERE title LIKE ?'
  )
    .bind(`${prefix} %`)
    .first<{ notes: number; titles: number }>()
  return { notes: row?.notes ?? 0, titles: row?.titles ?? 0 }
}

/** The stub of task `taskId`'s object. */
async function objectOf(taskId: string) {
  return runners.get(runners.idFromName(await taskObjectName(taskId)) as never)
}

/**
 * The D1 binding of a replica that dies mid-task: it passes every call through until its
 * `batches`-th batch write, then answers nothing more (every call pending) until `kill()`, after
 * which every call fails. Fault injection around the real database, not a stand-in for it.
 */
class DyingDatabase implements D1Like {
  readonly #db: D1Like
  #batchesLeft: number
  #dead = false
  readonly #statements = new WeakMap<D1PreparedLike, D1PreparedLike>()
  readonly #pending: Array<(error: Error) => void> = []
  #stalled!: () => void
  /** Resolves once the replica has stopped answering. */
  readonly stalled = new Promise<void>((resolve) => (this.#stalled = resolve))

  constructor(db: D1Like, batches: number) {
    this.#db = db
    this.#batchesLeft = batches
  }

  prepare(sql: string): D1PreparedLike {
    return this.#wrap(this.#db.prepare(sql))
  }

  batch<T = Record<string, unknown>>(
    statements: D1PreparedLike[]
  ): Promise<Array<{ results: T[] }>> {
    if (this.#batchesLeft-- <= 0) this.#stalled()
    return this.#call(() => this.#db.batch<T>(statements.map((s) => this.#statements.get(s) ?? s)))
  }

  /** The replica is gone for good: what it still waits for fails, and so does anything after. */
  kill(): void {
    this.#dead = true
    for (const fail of this.#pending.splice(0)) fail(new Error('the replica died'))
  }

  #wrap(statement: D1PreparedLike): D1PreparedLike {
    const wrapped: D1PreparedLike = {
      bind: (...values) => this.#wrap(statement.bind(...values)),
      first: () => this.#call(() => statement.first()),
      all: () => this.#call(() => statement.all()),
      run: () => this.#call(() => statement.run()),
    }
    this.#statements.set(wrapped, statement)
    return wrapped
  }

  #call<T>(send: () => Promise<T>): Promise<T> {
    if (this.#dead) return Promise.reject(new Error('the replica died'))
    if (this.#batchesLeft >= 0) return send()
    return new Promise<T>((_, reject) => this.#pending.push(reject))
  }
}

/** The D1 binding, telling `seen` the number of every batch write before it is sent. */
function onBatch(db: D1Like, seen: (n: number) => void): D1Like {
  let batches = 0
  return {
    prepare: (sql) => db.prepare(sql),
    batch: (statements) => {
      seen(++batches)
      return db.batch(statements)
    },
  }
}

const dying: DyingDatabase[] = []
afterEach(() => {
  for (const db of dying.splice(0)) db.kill()
})

/**
 * The notes app as a Node replica runs it, in this isolate, on a database that stops answering
 * after `batches` batch writes; its runs hold leases of `leaseMs`.
 */
async function dyingReplica(
  batches: number,
  leaseMs: number
): Promise<{ app: Fetcher; db: DyingDatabase }> {
  const db = new DyingDatabase(env.DB, batches)
  dying.push(db)
  const stores = openD1Stores(db)
  await stores.migrate()
  const config = parseConfig({ STATE_KEYS: env.STATE_KEYS })
  const sealer = StateSealer.create({
    keyRing: await importKeyRing(parseKeyRing(env.STATE_KEYS)),
    ttlSeconds: config.stateTtlSeconds,
  })
  const bus = new DurableObjectEventBus({ namespace: env.EVENT_BUS as BusNamespace })
  const app = createApp(config, {
    store: stores.notes,
    engineStore: stores.engine,
    sealer,
    bus,
    tasks: { replicaId: 'dying', leaseMs, takeoverIntervalMs: 0 },
  })
  return { app: { fetch: async (input, init) => app.request(input, init) }, db }
}

/** Starts an import of `count` notes on a replica that dies after 200 of them. */
async function importOnDyingReplica(prefix: string, count: number, leaseMs: number) {
  const { app, db } = await dyingReplica(2, leaseMs)
  const taskId = await startTask(app, 'import_notes', { markdown: markdownOf(prefix, count) })
  await db.stalled
  expect(await notesTitled(prefix)).toEqual({ notes: 200, titles: 200 })
  const stalled = await record(taskId)
  expect(stalled.status).toBe('working')
  expect(stalled.leaseOwner).toMatch(/^dying-/)
  return taskId
}

describe('tasks run by their Durable Object, after the response', () => {
  it('a task created through one isolate runs in its object and is polled to its end through another', async () => {
    const taskId = await startTask(fixtureA, 'slow_compute', { seconds: 1, label: 'elsewhere' })

    // No isolate runs a task after its response: only its object can have. (That the object holds
    // the lease while it runs is seen below, on a task that runs until it is cancelled; a 1 s run
    // may be over before any read of it.)
    const done = await waitForTask(() => getTask(fixtureB, taskId), isTerminal, 'the end')
    expect(done.status).toBe('completed')
    expect(done.result.content).toEqual([{ type: 'text', text: 'Computed "elsewhere" in 1 s.' }])
  })

  it('an import created through one isolate ends through its object with every note once', async () => {
    const taskId = await startTask(notesA, 'import_notes', {
      markdown: markdownOf('Handed over', 1_000),
    })

    const done = await waitForTask(() => getTask(notesB, taskId), isTerminal, 'the import')
    expect(done.status).toBe('completed')
    expect(done.result.structuredContent).toMatchObject({ outcome: 'imported', created: 1_000 })
    expect(await notesTitled('Handed over')).toEqual({ notes: 1_000, titles: 1_000 })
  })

  it('an object leaves no storage and no alarm behind once its task has ended', async () => {
    const taskId = await startTask(notesA, 'export_notes', {})
    const done = await waitForTask(() => getTask(notesB, taskId), isTerminal, 'the export')
    expect(done.status).toBe('completed')
    // Its object kept it the Worker's TASK_RESULT_TTL_SECONDS (not the default here) from its end.
    const resultTtlMs = Number(env.TASK_RESULT_TTL_SECONDS) * 1000
    expect(resultTtlMs).not.toBe(DEFAULT_TASK_RESULT_TTL_MS)
    expect(Date.parse(done.createdAt) + done.ttlMs).toBe(
      Date.parse(done.lastUpdatedAt) + resultTtlMs
    )

    const object = await objectOf(taskId)
    const left = () =>
      runInDurableObject(object, async (_, state) => ({
        task: await state.storage.get('task'),
        alarm: await state.storage.getAlarm(),
      }))
    expect(
      await waitForTask(
        left,
        ({ task, alarm }) => task === undefined && alarm === null,
        'the object to clean up'
      )
    ).toEqual({ task: undefined, alarm: null })
  })
})

describe('a run in slices', () => {
  it('an import whose slice ends mid-way releases its lease with what it did kept, and its object finishes it from the journal with every note once', async () => {
    const slice = new AbortController()
    // The slice ends as the third batch of notes is written.
    const stores = openD1Stores(onBatch(env.DB, (n) => n === 3 && slice.abort()))
    await stores.migrate()
    const bus = new DurableObjectEventBus({ namespace: env.EVENT_BUS as BusNamespace })
    const engine = new TaskEngine(
      {
        server: createNotesServer(),
        deps: { notes: stores.notes, bus, baseUrl: 'http://127.0.0.1', now: Date.now },
        logger: consoleLogger,
      },
      { store: stores.engine, replicaId: 'sliced', maxRunningTasks: 1, takeoverIntervalMs: 0 }
    )
    const taskId = await unscheduledTask(records, 'import_notes', {
      markdown: markdownOf('Sliced', 800),
    })

    const released = await engine.run(taskId, slice.signal)
    expect(released?.status).toBe('working')
    expect(released?.leaseOwner).toBeUndefined()
    expect(await notesTitled('Sliced')).toEqual({ notes: 300, titles: 300 })

    await new DurableObjectTaskScheduler({ namespace: runners }).schedule(taskId)

    const done = await waitForTask(() => record(taskId), isTerminal, 'the import')
    expect(done.status).toBe('completed')
    expect(await notesTitled('Sliced')).toEqual({ notes: 800, titles: 800 })
  })
})

describe('takeover of a task whose runner died', () => {
  it('a poll through another isolate, once the dead runner’s lease has lapsed, hands the import to its object, which finishes it with every note once', async () => {
    const taskId = await importOnDyingReplica('Polled back', 2_000, 1_000)

    const done = await waitForTask(() => getTask(notesB, taskId), isTerminal, 'the takeover')
    expect(done.status).toBe('completed')
    expect(done.result.structuredContent).toMatchObject({ outcome: 'imported', total: 2_000 })
    expect(await notesTitled('Polled back')).toEqual({ notes: 2_000, titles: 2_000 })
  })

  it('handed to its object while the dead runner’s lease still holds, the import is taken over by the object’s alarm at the lease’s end, with nobody polling', async () => {
    const taskId = await importOnDyingReplica('Alarmed back', 600, 3_000)
    expect(leaseHeld((await records.getTask(taskId))!, Date.now())).toBe(true)

    await new DurableObjectTaskScheduler({ namespace: runners }).schedule(taskId)

    const done = await waitForTask(() => record(taskId), isTerminal, 'the takeover')
    expect(done.status).toBe('completed')
    expect(done.leaseOwner).toBeUndefined()
    expect(await notesTitled('Alarmed back')).toEqual({ notes: 600, titles: 600 })
  })

  it('the cron trigger hands over a runnable task nobody handed over (its hand-off was lost)', async () => {
    const taskId = await unscheduledTask(records, 'export_notes', {})

    await worker.scheduled({ scheduledTime: Date.now() }, env)

    const done = await waitForTask(() => record(taskId), isTerminal, 'the export')
    expect(done.status).toBe('completed')
  })
})

describe('answers and cancels reach the object', () => {
  /** An import whose first note has the title of an existing one: it parks on the conflict. */
  async function parkedImport(prefix: string): Promise<string> {
    const existing = await callTool(notesA, 'create_note', {
      title: `${prefix} 1`,
      body: 'kept',
      tags: [],
    })
    expect(existing.isError).toBeFalsy()
    const taskId = await startTask(notesA, 'import_notes', { markdown: markdownOf(prefix, 3) })
    const parked = await waitForTask(
      () => getTask(notesB, taskId),
      (task) => task.status === 'input_required' || isTerminal(task),
      'the conflict question'
    )
    expect(Object.keys(parked.inputRequests)).toEqual(['conflicts-1'])
    return taskId
  }

  it('an answer through another isolate resumes a parked task in a fresh life of its object', async () => {
    const taskId = await parkedImport('Answered')
    await abortAllDurableObjects()

    await rpc(notesB, 'tasks/update', {
      taskId,
      inputResponses: { 'conflicts-1': { action: 'accept', content: { resolution: 'skip' } } },
    })

    const done = await waitForTask(() => getTask(notesA, taskId), isTerminal, 'the import')
    expect(done.status).toBe('completed')
    expect(done.result.structuredContent).toMatchObject({ created: 2, skipped: 1 })
    expect(await notesTitled('Answered')).toEqual({ notes: 3, titles: 3 })
  })

  it('a cancel through another isolate ends a parked task, and nothing is imported', async () => {
    const taskId = await parkedImport('Cancelled parked')

    await rpc(notesB, 'tasks/cancel', { taskId })

    const done = await waitForTask(() => getTask(notesA, taskId), isTerminal, 'the end')
    expect(done.status).toBe('cancelled')
    expect(await notesTitled('Cancelled parked')).toEqual({ notes: 1, titles: 1 })
  })

  it('a cancel through another isolate stops a task its object is running', async () => {
    const taskId = await startTask(fixtureA, 'slow_compute', { seconds: 60, label: 'stopped' })
    await waitForTask(
      () => record(taskId),
      (task) => OBJECT_RUNNER.test(task.leaseOwner ?? ''),
      'its object to run it'
    )

    await rpc(fixtureB, 'tasks/cancel', { taskId })

    const done = await waitForTask(() => getTask(fixtureA, taskId), isTerminal, 'the cancel')
    expect(done.status).toBe('cancelled')
  })
})
