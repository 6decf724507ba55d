/**
 * The drain on SIGTERM (`src/node/drain.ts`), on real notes server processes (`npm start`'s entry,
 * or the one whose store calls a test can hold: `held-import`, `scripts/support/import-hold.ts`):
 * - `/readyz` turns 503 at once while `/healthz` stays 200, and the replica keeps serving for
 *   SHUTDOWN_DELAY_SECONDS (a second SIGTERM then exits at once, with 1);
 * - a 2026 listen stream and a 2025 GET stream open at SIGTERM end gracefully (the listen result,
 *   the SSE `retry`), and the process exits 0: on Node, on Deno (`deno serve`) and on Bun;
 * - a 2025 call waiting for the person at SIGTERM is let go of (its lease released, its stream
 *   ended with `retry`) and finished by the other replica (one SQLite file, one key ring, behind
 *   the test proxy) that the host's resumed stream reaches;
 * - a round in flight at SIGTERM (a `tools/call` of `import_notes` held at its store call) finishes
 *   with its whole answer, carrying `Connection: close`; a new connection is refused once the
 *   listener closed, while a request on an idle keep-alive connection opened before is still served;
 * - a round held past SHUTDOWN_GRACE_SECONDS is cut, and the process still exits 0.
 * Every wait is for an event (a status flipping, a stream ending, a hold reached, an exit), polled
 * or awaited within a bound; nothing is timed. The idle connection's replica keeps idle connections
 * open {@link IDLE_KEPT_SECONDS} (KEEP_ALIVE_SECONDS), far beyond what the test takes between its
 * first answer and its second, so the connection never closes on the replica's clock under the test.
 */
import { once } from 'node:events'
import { Agent, request, type IncomingHttpHeaders } from 'node:http'
import net from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { HEADER_PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { startAlternatingProxy, type AlternatingProxy } from '../support/alternating-proxy.ts'
import {
  OpenHosts,
  createNote,
  noteExists,
  openQuestion,
  resultText,
} from '../support/legacy-host.ts'
import { LEGACY_VERSION, openSessionAt } from '../support/legacy-request.ts'
import { mcpInit, parseSse, readMessages, type JsonObject } from '../support/mcp-request.ts'
import {
  holdOf,
  startServer,
  tempDataDir,
  type Runtime,
  type ServerProcess,
} from '../support/server-process.ts'
import { Conditions, within } from '../support/within.ts'

/** How long the idle connection's replica keeps it open: no test waits it out. */
const IDLE_KEPT_SECONDS = '600'
/** A delay no test waits out: the test observes the replica inside it. */
const LONG_DELAY_SECONDS = '60'
/** Polls of a status until it flips, and the pause between two. */
const MAX_POLLS = 1_500
const POLL_PAUSE_MS = 10
/** A replica draining: streams let go, idle connections closed at Node's keep-alive timeout. */
const EXIT_MS = 30_000
/** A test that starts two replicas, a proxy and an SDK host, and drains one of them. */
const REPLICAS_TEST_MS = 90_000

const started: ServerProcess[] = []
const proxies: AlternatingProxy[] = []
const hosts = new OpenHosts()

afterEach(async () => {
  await hosts.closeAll()
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()))
  await Promise.all(started.splice(0).map((server) => server.stop()))
})

async function start(
  entry: 'notes' | 'held-import',
  env: Record<string, string> = {},
  runtime: Runtime = 'node'
): Promise<ServerProcess> {
  const server = await startServer(entry, { DATA_DIR: await tempDataDir(), ...env }, runtime)
  started.push(server)
  return server
}

const portOf = (server: ServerProcess) => Number(new URL(server.baseUrl).port)

/** Resolves with the exit code of `server`, once it exited, bounded. */
async function exitOf(server: ServerProcess): Promise<number | null> {
  const child = server.process
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
  const [code] = (await within(once(child, 'exit'), 'the server to exit', EXIT_MS)) as [number]
  return code
}

/** Polls `check` until it answers true, bounded in count. */
async function pollUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let poll = 0; poll < MAX_POLLS; poll++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, POLL_PAUSE_MS))
  }
  throw new Error(`${what} never happened in ${MAX_POLLS} polls`)
}

/** Whether a new connection to `port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
}

/**
 * One request on a keep-alive connection of its own (the client asks to keep it: a
 * `Connection: close` in the answer is the server's).
 */
function send(
  server: ServerProcess,
  path: string,
  init: { method?: string; headers?: HeadersInit; body?: string } = {}
): Promise<Answer> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  return new Promise<Answer>((resolve, reject) => {
    const outgoing = request(
      `${server.baseUrl}${path}`,
      {
        method: init.method ?? 'GET',
        agent,
        headers: Object.fromEntries(new Headers(init.headers)),
      },
      (incoming) => {
        let body = ''
        incoming.setEncoding('utf8')
        incoming.on('data', (chunk: string) => (body += chunk))
        incoming.on('end', () =>
          resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body })
        )
        incoming.on('error', reject)
      }
    )
    outgoing.on('error', reject)
    outgoing.end(init.body)
  }).finally(() => agent.destroy())
}

/** A 2026-07-28 `tools/call` of `import_notes` creating one note, run synchronously (no tasks). */
function importOne(server: ServerProcess, title: string): Promise<Answer> {
  const init = mcpInit('tools/call', {
    id: 'import',
    params: { name: 'import_notes', arguments: { markdown: `# ${title}\n\nImported.\n` } },
  })
  return send(server, '/mcp', { method: 'POST', headers: init.headers, body: init.body as string })
}

/** The one JSON-RPC message of an answer (JSON or SSE). */
async function messageOf(answer: Answer): Promise<JsonObject> {
  const type = String(answer.headers['content-type'])
  const messages = await readMessages(
    new Response(answer.body, { headers: { 'content-type': type } })
  )
  expect(messages).toHaveLength(1)
  return messages[0]!
}

/** A `subscriptions/listen` stream, open (its status read). */
async function openListen(server: ServerProcess): Promise<Response> {
  const init = mcpInit('subscriptions/listen', {
    id: 'listen',
    params: { notifications: { resourcesListChanged: true } },
  })
  const headers = new Headers(init.headers)
  headers.delete('host')
  headers.delete('content-length')
  const response = await fetch(server.url, { ...init, headers })
  expect(response.status).toBe(200)
  return response
}

/** A 2025 session's GET stream, open (its status read). */
async function openLegacyGet(server: ServerProcess): Promise<Response> {
  const session = await openSessionAt(server.url)
  const response = await fetch(server.url, {
    headers: {
      accept: 'text/event-stream',
      [HEADER_SESSION_ID]: session,
      [HEADER_PROTOCOL_VERSION]: LEGACY_VERSION,
    },
  })
  expect(response.status).toBe(200)
  return response
}

/** An idle keep-alive connection to `server`: one request answered on it, the socket kept open. */
class IdleConnection {
  readonly socket: net.Socket
  #text = ''
  #closed = false
  readonly #changes = new Conditions()

  private constructor(socket: net.Socket) {
    this.socket = socket
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      this.#text += chunk
      this.#changes.changed()
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      this.#closed = true
      this.#changes.changed()
    })
  }

  static async open(server: ServerProcess): Promise<IdleConnection> {
    const socket = net.connect(portOf(server), '127.0.0.1')
    await within(once(socket, 'connect'), 'the connection')
    const connection = new IdleConnection(socket)
    const first = await connection.get('/healthz')
    expect(first).toMatch(/^HTTP\/1\.1 200 /)
    expect(first.toLowerCase()).toContain('connection: keep-alive')
    return connection
  }

  /** Sends a GET on the connection; resolves with the answer's text once its body is in. */
  async get(path: string): Promise<string> {
    const from = this.#text.length
    this.socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`)
    await this.#changes.until(
      () => /\r\n\r\n\{[^}]*\}$/.test(this.#text.slice(from)),
      `the answer to ${path}`
    )
    return this.#text.slice(from)
  }

  /** Resolves once the server closed the connection. */
  whenClosed(): Promise<void> {
    return this.#changes.until(() => this.#closed, 'the server to close the connection')
  }
}

describe('the drain on SIGTERM', () => {
  it('answers /readyz 503 and keeps serving for SHUTDOWN_DELAY_SECONDS, /healthz staying 200; a second SIGTERM exits at once with 1', async () => {
    const server = await start('notes', { SHUTDOWN_DELAY_SECONDS: LONG_DELAY_SECONDS })
    const ready = await send(server, '/readyz')
    expect(ready).toMatchObject({ status: 200, body: '{"status":"ready"}' })
    expect(ready.headers.connection).toBe('keep-alive')

    server.process.kill('SIGTERM')
    let draining: Answer | undefined
    await pollUntil(async () => {
      draining = await send(server, '/readyz')
      return draining.status === 503
    }, '/readyz turning 503')
    expect(draining).toMatchObject({ body: '{"status":"draining"}' })
    expect(draining!.headers['retry-after']).toBe('5')
    expect(draining!.headers.connection).toBe('close')
    expect(await send(server, '/healthz')).toMatchObject({ status: 200, body: '{"status":"ok"}' })
    // Still serving: a new connection is accepted and a round runs to its answer.
    const round = await importOne(server, 'Imported while draining')
    expect(round.status).toBe(200)
    expect(round.headers.connection).toBe('close')
    expect((await messageOf(round)).result.structuredContent).toMatchObject({ created: 1 })
    expect(server.output()).toContain('notes-mcp draining on SIGTERM')

    server.process.kill('SIGTERM')
    expect(await exitOf(server)).toBe(1)
    expect(server.output()).toContain('SIGTERM during the drain: exiting at once')
  })

  it.for(['node', 'deno', 'bun'] as const)(
    'ends a 2026 listen stream and a 2025 GET stream open at SIGTERM gracefully, then exits 0 (on %s)',
    async (runtime) => {
      const server = await start('notes', {}, runtime)
      const listen = await openListen(server)
      const get = await openLegacyGet(server)

      server.process.kill('SIGTERM')
      const [listened, got] = await within(
        Promise.all([listen.text(), get.text()]),
        'both streams to end'
      )
      expect(parseSse(listened).at(-1)).toMatchObject({
        id: 'listen',
        result: { resultType: 'complete' },
      })
      expect(got).toMatch(/(^|\n\n)retry: 1000\n\n$/)
      expect(await exitOf(server)).toBe(0)
      expect(server.output()).toContain('notes-mcp drained: every request finished')
    }
  )

  it(
    'lets go of a 2025 call waiting for the person at SIGTERM, and the replica the host resumes on finishes it',
    async () => {
      const env = { DATA_DIR: await tempDataDir(), STATE_KEYS: formatKeyRing([generateKey()]) }
      const holder = await start('notes', { ...env, REPLICA_ID: 'drain-a' })
      const survivor = await start('notes', { ...env, REPLICA_ID: 'drain-b' })
      const proxy = await startAlternatingProxy([holder.baseUrl, survivor.baseUrl])
      proxies.push(proxy)
      const host = await hosts.connectBehind(proxy, { elicitation: {} })
      const id = await createNote(host, 'Deleted across a drain')
      const question = openQuestion()
      host.person = { elicit: question.elicit }
      const since = proxy.log.length
      proxy.route(() => 0)
      const called = host.callTool('delete_note', { id })
      await within(question.asked, 'the confirmation form')
      const call = proxy.log.find(
        (entry) => entry.seq >= since && entry.message?.kind === 'request'
      )
      expect(call).toMatchObject({ replica: 'drain-a', message: { method: 'tools/call' } })

      // The balancer takes the draining replica out; it lets go of the call and exits 0.
      proxy.route(() => 1)
      holder.process.kill('SIGTERM')
      expect(await exitOf(holder)).toBe(0)
      await proxy.waitFor((entry) => entry.seq === call!.seq && entry.ended, 'the call to end')
      expect(call!.responses).toEqual([])
      question.decide({ action: 'accept', content: { confirm: true } })

      const result = await within(called, 'the result of the call')
      expect(resultText(result)).toContain('Deleted the note "Deleted across a drain"')
      expect(host.asked.map(({ method }) => method)).toEqual(['elicitation/create'])
      const resumed = proxy.log.find(
        (entry) =>
          entry.seq > call!.seq &&
          entry.httpMethod === 'GET' &&
          entry.lastEventId !== undefined &&
          entry.responses.length > 0
      )
      expect(resumed).toMatchObject({ replica: 'drain-b', status: 200 })
      expect(await noteExists(host, id)).toBe(false)
    },
    REPLICAS_TEST_MS
  )

  it('finishes a round in flight at SIGTERM with its whole answer, refuses new connections, serves a request on an idle keep-alive connection, then exits 0', async () => {
    const server = await start('held-import', { KEEP_ALIVE_SECONDS: IDLE_KEPT_SECONDS })
    const idle = await IdleConnection.open(server)
    const hold = holdOf(server)
    await hold.arm(0)
    const round = importOne(server, 'Imported across SIGTERM')
    await within(hold.held(), 'the import to reach the hold')

    server.process.kill('SIGTERM')
    await pollUntil(() => refused(portOf(server)), 'a new connection being refused')
    const late = await idle.get('/readyz')
    expect(late).toMatch(/^HTTP\/1\.1 503 /)
    expect(late.toLowerCase()).toContain('connection: close')
    await idle.whenClosed()

    hold.release()
    const answer = await within(round, 'the round to answer')
    expect(answer.status).toBe(200)
    expect(answer.headers.connection).toBe('close')
    expect((await messageOf(answer)).result.structuredContent).toMatchObject({
      outcome: 'imported',
      total: 1,
      created: 1,
    })
    expect(await exitOf(server)).toBe(0)
    expect(server.output()).toContain('notes-mcp drained: every request finished')
  })

  it('cuts a round held past SHUTDOWN_GRACE_SECONDS and still exits 0', async () => {
    const server = await start('held-import', { SHUTDOWN_GRACE_SECONDS: '1' })
    const hold = holdOf(server)
    await hold.arm(0)
    const round = importOne(server, 'Never imported').then(
      () => 'answered',
      () => 'cut'
    )
    await within(hold.held(), 'the import to reach the hold')

    server.process.kill('SIGTERM')
    expect(await within(round, 'the round to end')).toBe('cut')
    expect(await exitOf(server)).toBe(0)
    expect(server.output()).toContain(
      'notes-mcp drained: 1 request(s) still open after 1 s were cut'
    )
  })
})
