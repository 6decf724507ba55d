/**
 * The MCP Inspector 2.12 CLI (`--protocol-era modern`, which declares the tasks extension on every
 * request) against the real notes server (`npm start`'s entry, SQLite in a fresh data directory):
 * it runs `export_notes`, a task-only tool, as a task — the server answers `CreateTaskResult`, the
 * CLI polls `tasks/get` until the task completes and prints the bundle. The task record in the store,
 * and `tasks/get` answering the very result the CLI printed, show it ran as one.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JsonObject } from '../support/mcp-request.ts'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'
import { TASKS, rpcAt } from '../support/tasks.ts'

const run = promisify(execFile)
const inspector = join(import.meta.dirname, '../../node_modules/.bin/mcp-inspector')

let server: ServerProcess
let dataDir = ''
let home = ''

beforeAll(async () => {
  dataDir = await tempDataDir('notes-mcp-inspector-tasks-')
  home = await mkdtemp(join(tmpdir(), 'notes-inspector-home-'))
  server = await startServer('notes', { DATA_DIR: dataDir })
  let id = 0
  for (const [title, tags] of [
    ['Inspected one', ['inspector']],
    ['Inspected two', ['inspector']],
    ['Not exported', ['other']],
  ] as const)
    await rpcAt(
      server.url,
      'tools/call',
      { name: 'create_note', arguments: { title, body: `Body of ${title}.`, tags } },
      TASKS,
      ++id
    )
}, 60_000)

afterAll(async () => {
  await server?.stop()
  await rm(home, { recursive: true, force: true })
})

/** Runs the CLI against the server in the modern era and answers its JSON output. */
async function cli(...args: string[]): Promise<JsonObject> {
  const { stdout } = await run(
    process.execPath,
    [
      inspector,
      '--cli',
      '--protocol-era',
      'modern',
      '--server-url',
      server.url,
      '--format',
      'json',
      ...args,
    ],
    { env: { ...process.env, HOME: home }, timeout: 40_000 }
  )
  return JSON.parse(stdout) as JsonObject
}

describe('the MCP Inspector (2.12) CLI and tasks', () => {
  it('runs export_notes as a task and prints the bundle', async () => {
    const { result } = await cli(
      '--method',
      'tools/call',
      '--tool-name',
      'export_notes',
      '--tool-arg',
      'tag=inspector'
    )
    expect(result.isError).toBeFalsy()
    expect(result.content[0]).toEqual({
      type: 'text',
      text: 'Exported 2 notes tagged "inspector".',
    })
    const bundle = result.content[1].resource
    expect(bundle).toMatchObject({ uri: 'notes://export?tag=inspector', mimeType: 'text/markdown' })
    expect(bundle.text).toContain('# Inspected one')
    expect(bundle.text).toContain('# Inspected two')
    expect(bundle.text).not.toContain('Not exported')

    const db = new DatabaseSync(join(dataDir, 'notes.db'), { readOnly: true })
    const tasks = db.prepare("SELECT id, status FROM tasks WHERE tool = 'export_notes'").all()
    db.close()
    expect(tasks).toHaveLength(1)
    expect(tasks[0]).toMatchObject({ status: 'completed' })

    // What the CLI printed is the task's result, as tasks/get answers it.
    const task = await rpcAt(server.url, 'tasks/get', { taskId: String(tasks[0]!.id) }, TASKS, 100)
    expect(task).toMatchObject({ status: 'completed', result: { content: result.content } })
  })
})
