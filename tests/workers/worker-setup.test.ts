/**
 * The Worker entry's once-per-isolate setup, inside workerd, driven through its default export with
 * hand-made environments: a deployment fault (missing secret, unmigrated D1, no event bus or task
 * runner binding) answers a JSON-RPC error without detail, is not cached, and the first request
 * after the fault is fixed gets the app. And its `scheduled` handler (the cron trigger): it purges
 * expired rows from D1 and keeps live ones (the hand-over of runnable tasks is tests/workers/tasks).
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { REPLAY_RETENTION_MS } from '../../src/notes/store.ts'
import { openD1Stores } from '../../src/storage/d1.ts'
import worker from '../../src/worker.ts'
import { MCP_URL, mcpInit } from '../support/mcp-request.ts'

const request = () => new Request(MCP_URL, mcpInit('tools/list'))
const vars = { ALLOWED_HOSTS: '127.0.0.1,localhost' }
type WorkerEnv = Parameters<typeof worker.fetch>[1]

describe('the Worker entry builds its app once per isolate, and only once it can', () => {
  /** With the vars and `bindings`, the entry answers 500 -32603 saying nothing that matches `detail`. */
  async function expectInternalErrorWithout(detail: RegExp, bindings: WorkerEnv) {
    const response = await worker.fetch(request(), { ...vars, ...bindings })
    expect(response.status).toBe(500)
    const body = (await response.json()) as { error: { code: number; message: string } }
    expect(body.error.code).toBe(-32603)
    expect(body.error.message).not.toMatch(detail)
  }

  it('answers 500 without detail while STATE_KEYS is missing', async () => {
    await expectInternalErrorWithout(/STATE_KEYS/, { DB: env.DB })
  })

  /** A D1 binding whose every query fails with `message`. */
  function failingDb(message: string) {
    const db = {
      prepare: () => ({
        bind: () => db.prepare(),
        all: async () => {
          throw new Error(message)
        },
      }),
      batch: async () => [],
    }
    return db as never
  }

  /** With every D1 query failing with `failure`, the entry answers 503: the message it gives. */
  async function unavailableMessage(failure: string): Promise<string> {
    const response = await worker.fetch(request(), {
      ...vars,
      STATE_KEYS: env.STATE_KEYS,
      DB: failingDb(failure),
    })
    expect(response.status).toBe(503)
    return ((await response.json()) as { error: { message: string } }).error.message
  }

  it('answers 503 while the D1 schema is not migrated', async () => {
    expect(
      await unavailableMessage('D1_ERROR: no such table: d1_migrations: SQLITE_ERROR')
    ).toMatch(/not migrated/)
  })

  it('answers 503 while D1 cannot be reached', async () => {
    expect(await unavailableMessage('D1_ERROR: Network connection lost.')).not.toMatch(
      /not migrated|Network/
    )
  })

  it('answers 500 without detail while the EVENT_BUS Durable Object binding is missing', async () => {
    await expectInternalErrorWithout(/EVENT_BUS|Durable/, {
      STATE_KEYS: env.STATE_KEYS,
      DB: env.DB,
    })
  })

  it('answers 500 without detail while the TASK_RUNNER Durable Object binding is missing', async () => {
    await expectInternalErrorWithout(/TASK_RUNNER|Durable/, {
      STATE_KEYS: env.STATE_KEYS,
      DB: env.DB,
      EVENT_BUS: env.EVENT_BUS,
    })
  })

  it('serves once the deployment is fixed, without a restart', async () => {
    const response = await worker.fetch(request(), {
      ...vars,
      STATE_KEYS: env.STATE_KEYS,
      DB: env.DB,
      EVENT_BUS: env.EVENT_BUS,
      TASK_RUNNER: env.TASK_RUNNER,
    })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { result: { tools: unknown[] } }
    expect(body.result.tools.length).toBeGreaterThan(0)
  })
})

describe('the scheduled handler purges expired rows', () => {
  it('removes expired share requests, once-keys and sessions from D1 and keeps live ones', async () => {
    const { notes: store, engine, ...stores } = openD1Stores(env.DB)
    await stores.migrate()
    const now = Date.now() + REPLAY_RETENTION_MS + 60_000
    const note = await store.create('p', { title: 't', body: '', tags: [] }, 0)
    const share = (id: string, expiresAt: number) =>
      store.createShareRequest({ id, principal: 'p', noteId: note.id, expiresAt })
    await share('expired', 1_000)
    const live = await share('live', now + 60_000)
    await store.delete('p', 'n_doesnotexist0000', 'spent-key')
    await engine.createSession('sid-over', 'p', now - 1, 0, 10)
    await engine.createSession('sid-live', 'p', now + 60_000, 0, 10)

    await worker.scheduled({ scheduledTime: now }, { DB: env.DB, TASK_RUNNER: env.TASK_RUNNER })

    expect(await store.getShareRequest('expired')).toBeUndefined()
    expect(await store.getShareRequest('live')).toEqual(live)
    expect(await engine.getSession('sid-over')).toBeUndefined()
    expect(await engine.getSession('sid-live')).toStrictEqual({ expiresAt: now + 60_000 })
    // The spent key is forgotten: it spends afresh.
    expect(await store.delete('p', note.id, 'spent-key')).toEqual({ kind: 'done', value: true })
  })

  it('fails the run, naming nothing secret, without a D1 binding', async () => {
    await expect(worker.scheduled({ scheduledTime: Date.now() }, {} as never)).rejects.toThrow(
      /D1 binding DB is missing/
    )
  })
})
