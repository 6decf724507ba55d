/**
 * A PostgreSQL outage, for real: one notes server process on a private PostgreSQL server
 * (`scripts/support/private-postgres.ts`, never the shared one) that the test stops cleanly and, in
 * the second case, SIGKILLs (crash recovery on the next start). While it is down, a 2026 `tools/call`
 * and a 2025 request in a session are refused with HTTP 503, `Retry-After` and -32030, and what they
 * tried to write is not there once it is back; a round's single-use mark and its effect go together
 * (the final round of `delete_note` refused during the outage, then retried, deletes once). Once it
 * is back the same process serves again, no restart, and a `subscriptions/listen` stream opened
 * before the outage gets a list-changed hint when the event bus hears again, then hears a change made
 * after it. A 2025 call waiting for the person's answer lives through an outage: the answer POSTed
 * meanwhile is refused (503), and the same answer POSTed once it is back ends the call. A task
 * running through the outage (an `import_notes` held mid-way, `scripts/support/import-hold.ts`)
 * whose lease renewals and writes failed is taken over once it is back and imports every note once,
 * not stuck, not failed. Waits are
 * bounded only by the test timeout, never asserted. Skipped, visibly, without the
 * PostgreSQL server binaries; under `CI=true` their absence fails the file.
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  privatePostgresAvailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../scripts/support/private-postgres.ts'
import { McpClient, type JsonRpcNotification } from '../../src/client/index.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { serviceTestsRun } from '../support/ci.ts'
import { expectResult, mcpInit, type JsonObject } from '../support/mcp-request.ts'
import { SseReader } from '../support/legacy-request.ts'
import { holdOf, startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'
import { TASKS_AND_FORMS, isTerminal, rpcAt, waitForTask } from '../support/tasks.ts'

const binariesFound = serviceTestsRun(
  'PostgreSQL outage tests',
  privatePostgresAvailable(),
  'no PostgreSQL server binaries (initdb, postgres) are installed'
)

const REFUSAL = {
  code: -32030,
  message: 'Service unavailable: the database cannot be reached; retry in a few seconds.',
}

let database: PrivatePostgres | undefined
let server: ServerProcess | undefined

beforeAll(async () => {
  if (!binariesFound) return
  database = await startPrivatePostgres()
  // The notes server, its imports holdable mid-way (`scripts/support/import-hold.ts`).
  server = await startServer('held-import', {
    DATABASE_URL: database.url,
    DATA_DIR: await tempDataDir(),
    STATE_KEYS: formatKeyRing([generateKey()]),
  })
}, 120_000)

afterAll(async () => {
  await server?.stop()
  await database?.dispose()
})

/** One short connection to the private database: the first column of the first row of `query`. */
async function scalar(query: string, parameters: string[] = []): Promise<unknown> {
  const sql = postgres(database!.url, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    const [row] = await sql.unsafe(query, parameters)
    return row && Object.values(row)[0]
  } finally {
    await sql.end({ timeout: 1 })
  }
}

async function notesTitled(title: string): Promise<number> {
  return Number(await scalar('SELECT count(*) FROM notes WHERE title = $1', [title]))
}

async function spentKeys(): Promise<number> {
  return Number(await scalar('SELECT count(*) FROM used_keys'))
}

/** A 2026-07-28 request sent over HTTP as a client sends it (form elicitation declared). */
function request2026(
  method: string,
  params: JsonObject,
  capabilities: object = { elicitation: { form: {} } }
): Promise<Response> {
  const init = mcpInit(method, { id: 7, params, capabilities })
  // fetch writes these itself.
  const headers = new Headers(init.headers)
  headers.delete('host')
  headers.delete('content-length')
  return fetch(server!.url, { ...init, headers })
}

/** A 2026-07-28 `tools/call` of `name`. */
function call2026(name: string, params: JsonObject): Promise<Response> {
  return request2026('tools/call', { name, ...params })
}

/** A 2025-era session (with `capabilities`), initialized while the database is up. */
async function session2025(
  capabilities: JsonObject = {}
): Promise<(message: JsonObject) => Promise<Response>> {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  }
  const initialized = await fetch(server!.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities,
        clientInfo: { name: 'outage-test', version: '0' },
      },
    }),
  })
  expect(initialized.status).toBe(200)
  const sid = initialized.headers.get('mcp-session-id')!
  const post = (message: JsonObject) =>
    fetch(server!.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', ...message }),
    })
  expect((await post({ method: 'notifications/initialized' })).status).toBe(202)
  return post
}

/**
 * Sends until the answer is not the store's refusal, as a client following `Retry-After` does (the
 * replica's pool reconnects within a second of the database's return); bounded.
 */
async function served(send: () => Promise<Response>): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const response = await send()
    if (response.status !== 503 || attempt === 100) return response
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function expectRefused(response: Response, id: number | null): Promise<void> {
  expect(response.status).toBe(503)
  expect(response.headers.get('retry-after')).toBe('5')
  expect(await response.json()).toEqual({ jsonrpc: '2.0', id, error: REFUSAL })
}

/**
 * A listen stream asking for resource list changes; `acknowledged` settles once it is open, `next()`
 * on the next list-changed notification heard from now on.
 */
function openListenStream() {
  const stop = new AbortController()
  const acknowledged = Promise.withResolvers<void>()
  let waiting: Array<() => void> = []
  const ended = new McpClient({ url: server!.url }).listen(
    { resourcesListChanged: true },
    {
      signal: stop.signal,
      onNotification: (notification: JsonRpcNotification) => {
        if (notification.method === 'notifications/subscriptions/acknowledged')
          acknowledged.resolve()
        if (notification.method !== 'notifications/resources/list_changed') return
        for (const resolve of waiting) resolve()
        waiting = []
      },
    }
  )
  return {
    acknowledged: acknowledged.promise,
    next: () => new Promise<void>((resolve) => waiting.push(resolve)),
    close: async () => {
      stop.abort()
      await ended
    },
  }
}

/** How many times the server logged `message` so far. */
function logged(message: string): number {
  return server!.output().split(message).length - 1
}

/** Waits until the server has logged `message` more than `times` times (bounded). */
async function untilLogged(message: string, times: number): Promise<void> {
  for (let waited = 0; logged(message) <= times; waited += 50) {
    if (waited > 60_000)
      throw new Error(`the server never logged "${message}":\n${server!.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A note made (and its id read) through the server, the database up. */
async function createNote(title: string): Promise<string> {
  const created = await new McpClient({ url: server!.url }).callTool('create_note', { title })
  return (created.structuredContent as { note: { id: string } }).note.id
}

describe.skipIf(!binariesFound)('a notes server whose PostgreSQL goes away', () => {
  it.each([
    ['stopped cleanly (fast shutdown)', () => database!.stop('fast')],
    ['killed (SIGKILL, crash recovery)', () => database!.kill()],
  ])(
    'when the database is %s: refuses with 503 -32030, half-writes nothing, serves again',
    async (_, takeDown) => {
      const doomed = `outage ${Math.random().toString(36).slice(2)}`
      const stream = openListenStream()
      await stream.acknowledged
      const post2025 = await session2025()
      // The first round of delete_note, answered before the outage: its final round comes after.
      const victim = await createNote(`${doomed} victim`)
      const first = await (await call2026('delete_note', { arguments: { id: victim } })).json()
      expect(first.result.resultType).toBe('input_required')
      const finalRound = {
        arguments: { id: victim },
        requestState: first.result.requestState,
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      }
      const keysBefore = await spentKeys()

      const lostBefore = logged('event bus lost its database connection')
      const backBefore = logged('event bus hears again')
      await takeDown()
      const hint = stream.next()
      try {
        await expectRefused(await call2026('create_note', { arguments: { title: doomed } }), 7)
        await expectRefused(await call2026('delete_note', finalRound), 7)
        await expectRefused(
          await post2025({
            id: 9,
            method: 'tools/call',
            params: { name: 'create_note', arguments: { title: doomed } },
          }),
          9
        )
      } finally {
        // Up again whatever failed, for the next case.
        await database!.start()
      }

      // The bus hears again (one line logged when lost, one when back), and the stream opened
      // before the outage is told to re-read: nothing could change meanwhile, so this is the hint.
      await hint
      expect(logged('event bus lost its database connection')).toBe(lostBefore + 1)
      expect(logged('event bus hears again')).toBe(backBefore + 1)
      expect(await notesTitled(doomed)).toBe(0)
      // The refused final round spent nothing and deleted nothing: the mark goes with its effect.
      expect(await spentKeys()).toBe(keysBefore)
      expect(await notesTitled(`${doomed} victim`)).toBe(1)
      const deleted = await (await served(() => call2026('delete_note', finalRound))).json()
      expect(JSON.stringify(deleted.result.content)).toContain('Deleted')
      expect(await spentKeys()).toBe(keysBefore + 1)
      expect(await notesTitled(`${doomed} victim`)).toBe(0)
      await call2026('delete_note', finalRound)
      expect(await spentKeys()).toBe(keysBefore + 1)

      // The same process serves both eras again, and the stream hears a change made now.
      const change = stream.next()
      await createNote(`${doomed} after`)
      await change
      const answered = await post2025({ id: 10, method: 'tools/list' })
      expect(answered.status).toBe(200)
      await stream.close()
    },
    120_000
  )

  it('keeps a 2025 call that waits for the person across the outage: the answer refused meanwhile is taken once it is back', async () => {
    const post2025 = await session2025({ elicitation: {} })
    const victim = await createNote('waits across the outage')
    const call = new SseReader(
      await post2025({
        id: 20,
        method: 'tools/call',
        params: { name: 'delete_note', arguments: { id: victim } },
      })
    )
    const ask = (await call.next())!
    expect(ask.method).toBe('elicitation/create')
    const answer = { id: ask.id, result: { action: 'accept', content: { confirm: true } } }

    await database!.stop('fast')
    try {
      await expectRefused(await post2025(answer), null)
    } finally {
      await database!.start()
    }
    expect((await served(() => post2025(answer))).status).toBe(202)
    const final = (await call.next())!
    expect(final).toMatchObject({ id: 20, result: { content: [{ type: 'text' }] } })
    expect(JSON.stringify(final.result.content)).toContain('Deleted')
    expect(await notesTitled('waits across the outage')).toBe(0)
  }, 120_000)

  it('resumes a task whose lease renewals and writes failed during the outage, once it is back: every note once', async () => {
    const total = 300
    const markdown = Array.from(
      { length: total },
      (_, i) => `# Outage import ${i + 1}\n\nNote ${i + 1}.\n`
    ).join('\n')
    // The import writes its first batch, then waits at the hold, its lease renewed meanwhile.
    const hold = holdOf(server!)
    await hold.arm(1)
    const created = await rpcAt(
      server!.url,
      'tools/call',
      { name: 'import_notes', arguments: { markdown } },
      TASKS_AND_FORMS,
      30
    )
    expect(created.resultType).toBe('task')
    await hold.held()
    const renewals = logged('task lease renewal failed')
    const writes = logged('task record write failed')
    await database!.stop('fast')
    try {
      // A renewal fails; then the import goes on, meets the outage, and the run ends without
      // ending the task (its hand-back cannot be written either: the lease runs out).
      await untilLogged('task lease renewal failed', renewals)
      hold.release()
      await untilLogged('task record write failed', writes)
    } finally {
      await database!.start()
    }
    const done = await waitForTask(
      async () =>
        expectResult(
          await served(() => request2026('tasks/get', { taskId: created.taskId }, TASKS_AND_FORMS)),
          7
        ),
      isTerminal,
      'the task to be taken over and finished',
      { ms: 60_000, everyMs: 200 }
    )
    expect(done).toMatchObject({
      status: 'completed',
      result: { structuredContent: { outcome: 'imported', total, created: total } },
    })
    expect(
      Number(
        await scalar("SELECT count(DISTINCT title) FROM notes WHERE title LIKE 'Outage import %'")
      )
    ).toBe(total)
    expect(
      Number(await scalar("SELECT count(*) FROM notes WHERE title LIKE 'Outage import %'"))
    ).toBe(total)
  }, 120_000)
})
