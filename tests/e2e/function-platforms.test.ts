/**
 * The notes server on the function platforms, on a scratch PostgreSQL database: AWS Lambda's
 * Node.js runtime as `lambda-local` runs it behind a local function URL (`npm run start:lambda`,
 * `scripts/lambda-url.ts`), and Netlify's, its function built as Netlify builds it and invoked the
 * same way (`npm run start:netlify`, `scripts/netlify-build.ts`); the real clients' interactive
 * flows and their streams' opening are `runtime-replicas.test.ts`'s. On each:
 * - no tasks: the extension is not advertised, `export_notes` says it needs it, `import_notes` runs
 *   within its call;
 * - the refusals of a misconfigured function (no DATABASE_URL or STATE_KEYS, telemetry export, no
 *   auth under a public name): 500 without detail, the reason in the log.
 * On Lambda alone: the one-file bundle `npm run build:lambda` writes serves too, and through
 * `bufferedHandler` (API Gateway HTTP APIs) the 2026 interactive flow works (its rounds are plain
 * requests), a 2025 host connects (its GET answered 405) and calls what needs no question, a 2025
 * call that would ask ends with a tool error saying why, and what needs a held-open response is
 * refused with the JSON-RPC error and status named.
 */
import { execFile } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createScratchDatabase, type ScratchDatabase } from '../../scripts/support/postgres.ts'
import { McpClient } from '../../src/client/index.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { deleteWithOfficialClient } from '../support/client-deletes.ts'
import { connectLegacyHost, resultText } from '../support/legacy-host.ts'
import { mcpInit, toolResultText } from '../support/mcp-request.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import {
  startServer,
  tempDataDir,
  type Runtime,
  type ServerProcess,
} from '../support/server-process.ts'
import { within } from '../support/within.ts'

const run = promisify(execFile)
const root = join(import.meta.dirname, '../..')

const MISCONFIGURED = 'Internal error: the server is misconfigured; the reason is in its log.'

const serverUrl = await testDatabaseUrl()

/**
 * Resolves once `server` has printed `text`: its log and its answer travel apart (a pipe and a
 * socket), so the answer may come first. Bounded by {@link within}.
 */
async function printed(server: ServerProcess, text: string): Promise<void> {
  const stop = new AbortController()
  const seen = (async () => {
    while (!server.output().includes(text) && !stop.signal.aborted) await delay(10)
  })()
  try {
    await within(seen, `the log line "${text}"`)
  } finally {
    stop.abort()
  }
}

/** A POST of `method` as the test support spells it, without the Host the helpers set. */
async function post(url: string, method: string, params: Record<string, unknown> = {}) {
  const init = mcpInit(method, { id: 7, params })
  const headers = new Headers(init.headers)
  headers.delete('host')
  headers.delete('content-length')
  return fetch(url, { ...init, headers })
}

/** `GET /mcp` under `host` (fetch cannot set Host): its status and body. */
function getUnderHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { headers: { host, accept: 'text/event-stream' } },
      (response) => {
        let body = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (body += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
      }
    )
    request.on('error', reject)
    request.end()
  })
}

/** A function platform as its tests name it, and as its refusals do. */
const PLATFORMS = [
  { runtime: 'lambda', title: 'AWS Lambda', replicaRuntime: 'Lambda' },
  { runtime: 'netlify', title: 'Netlify', replicaRuntime: 'Netlify' },
] as const satisfies ReadonlyArray<{ runtime: Runtime; title: string; replicaRuntime: string }>

/** Notes servers of one scratch database and key ring on `runtime`, stopped after the file. */
function deployment(runtime: Runtime) {
  let database: ScratchDatabase | undefined
  let env: Record<string, string> = {}
  const started: ServerProcess[] = []

  beforeAll(async () => {
    database = await createScratchDatabase(serverUrl!)
    env = {
      DATABASE_URL: database.url,
      STATE_KEYS: formatKeyRing([generateKey()]),
      DATA_DIR: await tempDataDir(),
    }
  })

  afterAll(async () => {
    await Promise.all(started.map((server) => server.stop()))
    await database?.drop()
  })

  return async (extra: Record<string, string> = {}): Promise<ServerProcess> => {
    const server = await startServer('notes', { ...env, ...extra }, runtime)
    started.push(server)
    return server
  }
}

describe.skipIf(!serverUrl).each(PLATFORMS)(
  'the notes server on $title (PostgreSQL)',
  ({ runtime, title, replicaRuntime }) => {
    const start = deployment(runtime)
    let server: ServerProcess

    beforeAll(async () => {
      server = await start({ REPLICA_ID: runtime })
    }, 60_000)

    it('serves no tasks: the extension is not advertised, export_notes asks for it, import_notes runs in its call', async () => {
      const discovered = await post(server.url, 'server/discover')
      const discovery = (await discovered.json()) as { result: Record<string, unknown> }
      expect(JSON.stringify(discovery.result)).not.toContain('io.modelcontextprotocol/tasks')

      const client = new McpClient({ url: server.url })
      const exported = await client
        .callTool('export_notes', {})
        .then(toolResultText, (error: Error) => error.message)
      expect(exported).toContain('io.modelcontextprotocol/tasks')

      const imported = await client.callTool('import_notes', {
        markdown: `# Imported on ${title}\n\nOne.\n\n# Also imported on ${title}\n\nTwo.\n`,
      })
      expect(imported.isError).toBeFalsy()
      const found = await client.callTool('search_notes', { query: 'imported' })
      expect(toolResultText(found)).toContain(`Imported on ${title}`)
      expect(toolResultText(found)).toContain(`Also imported on ${title}`)
    })

    it.for([
      ['DATABASE_URL', '', `On ${title}, set DATABASE_URL`],
      ['STATE_KEYS', '', `On ${title}, set STATE_KEYS`],
      ['PUBLIC_URL', '', `On ${title}, set PUBLIC_URL`],
      ['PUBLIC_URL', 'not a url', 'PUBLIC_URL: Invalid URL'],
    ] as const)(
      'answers 500 with %s set to "%s", naming it only in the log',
      async ([name, value, logged]) => {
        const misconfigured = await start({ [name]: value })
        const answer = await post(misconfigured.url, 'server/discover')
        expect(answer.status).toBe(500)
        expect(await answer.json()).toMatchObject({
          error: { code: -32603, message: MISCONFIGURED },
        })
        await printed(misconfigured, logged)
      }
    )

    it('refuses telemetry export, which would run after the response', async () => {
      const exporting = await start({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9/' })
      const answer = await post(exporting.url, 'server/discover')
      expect(answer.status).toBe(500)
      await printed(
        exporting,
        `telemetry export runs on Node only (npm start), not on ${replicaRuntime}`
      )
    })

    it('refuses to serve without auth under a public name unless ALLOW_UNAUTHENTICATED=1', async () => {
      const exposed = await start({ PUBLIC_URL: 'https://notes.example' })
      const refused = await getUnderHost(exposed.url, 'notes.example')
      expect(refused.status).toBe(500)
      expect(JSON.parse(refused.body)).toMatchObject({ error: { message: MISCONFIGURED } })
      await printed(exposed, 'Refusing to serve HOST=notes.example without authentication')

      const allowed = await start({
        PUBLIC_URL: 'https://notes.example',
        ALLOW_UNAUTHENTICATED: '1',
      })
      // Past the check: the engine's own answer to a GET without a session.
      expect((await getUnderHost(allowed.url, 'notes.example')).status).toBe(405)
    })
  }
)

describe.skipIf(!serverUrl)('Lambda alone: its bundle and its buffered handler', () => {
  const start = deployment('lambda')
  let buffered: ServerProcess

  beforeAll(async () => {
    buffered = await start({ REPLICA_ID: 'lambda-buffered', LAMBDA_HANDLER: 'bufferedHandler' })
  }, 60_000)

  it('serves from the one-file bundle npm run build:lambda writes, as a deployment uploads it', async () => {
    await run('npm', ['run', 'build:lambda'], { cwd: root })
    const bundled = await start({
      REPLICA_ID: 'lambda-bundle',
      LAMBDA_MODULE: join(root, 'dist/lambda.mjs'),
    })
    expect(bundled.output()).toContain('dist/lambda.mjs listening')
    expect((await deleteWithOfficialClient(bundled.url)).text).toContain('Deleted')
  })

  it("refuses a body over the platform's 6 MB payload bound with 413 before the function runs", async () => {
    const answer = await fetch(buffered.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(6 * 1024 * 1024 + 1),
    })
    expect(answer.status).toBe(413)
    expect(await answer.json()).toEqual({ message: 'Request Entity Too Large' })
  })

  it('lets the official 2026 client delete a note once the person confirms (buffered)', async () => {
    expect((await deleteWithOfficialClient(buffered.url)).text).toContain('Deleted')
  })

  it('connects the v1 SDK client with its defaults (its GET answered 405) and serves its calls (buffered)', async () => {
    const host = await connectLegacyHost(buffered.url)
    try {
      const created = await host.callTool('create_note', { title: 'Buffered 2025 note' })
      expect(created.isError).toBeFalsy()
      const found = await host.callTool('search_notes', { query: 'Buffered' })
      expect(resultText(found)).toContain('Buffered 2025 note')
    } finally {
      await host.close()
    }
  })

  it('ends a 2025 call that would ask the person with a tool error saying why, asking nothing and keeping the note (buffered)', async () => {
    const host = await connectLegacyHost(buffered.url, { elicitation: {} })
    try {
      const created = await host.callTool('create_note', { title: 'Kept on Lambda' })
      const id = (created.structuredContent as { note: { id: string } }).note.id
      const deleted = await host.callTool('delete_note', { id })
      expect(deleted.isError).toBe(true)
      expect(resultText(deleted)).toContain('RESPONSE_STREAM')
      expect(host.asked).toEqual([])
      const kept = await host.callTool('get_note', { id })
      expect(kept.isError).toBeFalsy()
    } finally {
      await host.close()
    }
  })

  it('refuses subscriptions/listen with -32601 (404) and the 2025 GET stream with 405 (buffered)', async () => {
    const listen = await post(buffered.url, 'subscriptions/listen', {
      notifications: { resourcesListChanged: true },
    })
    expect(listen.status).toBe(404)
    expect(await listen.json()).toMatchObject({
      id: 7,
      error: { code: -32601, message: expect.stringContaining('RESPONSE_STREAM') },
    })
    const get = await fetch(buffered.url, { headers: { accept: 'text/event-stream' } })
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST, DELETE')
    expect(await get.json()).toMatchObject({ error: { code: -32600 } })
  })
})
