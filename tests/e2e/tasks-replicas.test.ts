/**
 * Tasks survive the replica that runs them: two notes server processes (`npm start`) share one key
 * ring and one SQLite file. A task created on one replica is polled, answered and cancelled through
 * the other; and a replica SIGKILLed while it runs an `import_notes` task of 2,000 notes leaves the
 * task to the other replica, which takes its lease over once it runs out and finishes it: exactly
 * 2,000 notes, none twice. The killed replica is the notes server with an import hold
 * (`held-import`, see `scripts/support/import-hold.ts`): its import writes one batch and then waits
 * at the hold, so the kill lands mid-import whatever the machine's speed. Driven over HTTP as a
 * client does (`tasks/get` polling).
 */
import { DatabaseSync } from 'node:sqlite'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import type { JsonObject } from '../support/mcp-request.ts'
import { holdOf, startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'
import { TASKS, TASKS_AND_FORMS, isTerminal, rpcAt, waitForTask } from '../support/tasks.ts'
import { within } from '../support/within.ts'

/** Notes the import creates. */
const IMPORTED = 2_000
/** The import's store calls let through before the hold: its first batch (100 notes). */
const CALLS_BEFORE_HOLD = 1
/** Longest a takeover may take: the dead replica's lease (10 s) plus a sweep or two, with room. */
const TAKEOVER_MS = 60_000

let dataDir = ''
let a: ServerProcess
let b: ServerProcess
let ids = 0

beforeAll(async () => {
  dataDir = await tempDataDir('notes-mcp-task-replicas-')
  const env = { DATA_DIR: dataDir, STATE_KEYS: formatKeyRing([generateKey()]) }
  a = await startServer('held-import', { ...env, REPLICA_ID: 'task-a' })
  b = await startServer('notes', { ...env, REPLICA_ID: 'task-b' })
}, 60_000)

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
})

/** One request to one replica; answers its result (asserting success). */
function rpc(
  replica: ServerProcess,
  method: string,
  params: JsonObject,
  capabilities: object = TASKS_AND_FORMS
): Promise<JsonObject> {
  return rpcAt(replica.url, method, params, capabilities, ++ids)
}

const call = (replica: ServerProcess, name: string, args: JsonObject) =>
  rpc(replica, 'tools/call', { name, arguments: args })
const getTask = (replica: ServerProcess, taskId: string) =>
  rpc(replica, 'tasks/get', { taskId }, TASKS)

describe('tasks on two replicas sharing one SQLite file', () => {
  it('polls a task created on one replica through the other', async () => {
    await call(b, 'create_note', { title: 'Exported across', body: 'body', tags: ['replicas'] })
    const created = await call(a, 'export_notes', { tag: 'replicas' })
    expect(created.resultType).toBe('task')
    // Durable before the answer: the other replica reads it at once.
    expect((await getTask(b, created.taskId)).taskId).toBe(created.taskId)
    const done = await waitForTask(() => getTask(b, created.taskId), isTerminal, 'the export')
    expect(done.status).toBe('completed')
    expect(done.result.content[1].resource.text).toContain('# Exported across')
  })

  it('parks a task on one replica, answers it on the other, and cancels one there too', async () => {
    await call(a, 'create_note', { title: 'Conflict across', body: 'old' })
    const markdown = '# Conflict across\n\nnew body\n'
    const first = await call(a, 'import_notes', { markdown })
    const asked = await waitForTask(
      () => getTask(b, first.taskId),
      (task) => task.status === 'input_required',
      'the conflict question'
    )
    const [key] = Object.keys(asked.inputRequests)
    await rpc(b, 'tasks/update', {
      taskId: first.taskId,
      inputResponses: { [key!]: { action: 'accept', content: { resolution: 'overwrite' } } },
    })
    const done = await waitForTask(() => getTask(a, first.taskId), isTerminal, 'the import')
    expect(done.result.structuredContent).toMatchObject({ overwritten: 1 })

    const second = await call(b, 'import_notes', { markdown })
    await waitForTask(
      () => getTask(a, second.taskId),
      (task) => task.status === 'input_required',
      'the second question'
    )
    await rpc(a, 'tasks/cancel', { taskId: second.taskId })
    expect(await getTask(b, second.taskId)).toMatchObject({ status: 'cancelled' })
  })

  it(
    `finishes an import of ${IMPORTED} notes on the other replica after the one running it is SIGKILLed`,
    async () => {
      const markdown = Array.from(
        { length: IMPORTED },
        (_, i) => `# Kill ${i + 1}\n\nNote ${i + 1} of the killed import.\n`
      ).join('\n')
      // Replica A runs the import: it writes its first batch, then waits at the hold, where it is
      // SIGKILLed. What the store holds then is what the takeover starts from.
      const hold = holdOf(a)
      await hold.arm(CALLS_BEFORE_HOLD)
      const created = await call(a, 'import_notes', { markdown })
      expect(created.resultType).toBe('task')
      const { created: beforeKill } = await within(hold.held(), 'the import to reach the hold')
      const exited = new Promise((resolve) => a.process.once('exit', resolve))
      a.process.kill('SIGKILL')
      await exited
      const db = new DatabaseSync(join(dataDir, 'notes.db'), { readOnly: true })
      const atKill = {
        n: Number(db.prepare("SELECT count(*) AS n FROM notes WHERE title LIKE 'Kill %'").get()!.n),
        status: String(
          db.prepare('SELECT status FROM tasks WHERE id = ?').get(created.taskId)!.status
        ),
      }
      db.close()
      expect(atKill).toEqual({ n: beforeKill, status: 'working' })
      expect(beforeKill).toBeGreaterThan(0)
      expect(beforeKill).toBeLessThan(IMPORTED)

      const done = await waitForTask(() => getTask(b, created.taskId), isTerminal, 'the takeover', {
        ms: TAKEOVER_MS,
        everyMs: 200,
      })
      expect(done).toMatchObject({
        status: 'completed',
        result: { structuredContent: { outcome: 'imported', total: IMPORTED, created: IMPORTED } },
      })
      const check = new DatabaseSync(join(dataDir, 'notes.db'), { readOnly: true })
      const counts = check
        .prepare(
          "SELECT count(*) AS n, count(DISTINCT title) AS titles FROM notes WHERE title LIKE 'Kill %'"
        )
        .get()!
      check.close()
      expect({ n: Number(counts.n), titles: Number(counts.titles) }).toEqual({
        n: IMPORTED,
        titles: IMPORTED,
      })
    },
    TAKEOVER_MS + 30_000
  )
})
