/**
 * The notes server on Node, Deno (`deno serve`, as `npm run start:deno` runs it), Bun
 * (`npm run start:bun`), Lambda (its streaming handler behind a local function URL,
 * `npm run start:lambda`) and Netlify (its function built as Netlify builds it,
 * `npm run start:netlify`) as replicas of one deployment: one key ring and one store, PostgreSQL (a
 * scratch database) or, without the function platforms, which need PostgreSQL, SQLite (one data
 * directory, its key file written by the first to start and read by the others). An interactive
 * flow sealed on one runtime finishes on another (each round's `X-Replica` says which answered), a
 * listen stream on one runtime hears a change made through another (PostgreSQL's LISTEN/NOTIFY bus
 * on each), a 2025 session opened on one runtime serves calls on the others, and the real clients
 * with their defaults (the official 2026 client, the v1 SDK client) finish an interactive delete on
 * each; where a runtime sends a response's head only with its first bytes, a quiet 2025 GET stream
 * opens with a comment. Without a PostgreSQL server its part is skipped, visibly (under CI it
 * fails).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient, type JsonRpcNotification } from '../../src/client/index.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { HEADER_PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { LEGACY_VERSION, openSessionAt } from '../support/legacy-request.ts'
import { toolResultText } from '../support/mcp-request.ts'
import { deleteWithOfficialClient, deleteWithV1Client } from '../support/client-deletes.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { within } from '../support/within.ts'
import {
  startPostgresReplicas,
  startServer,
  tempDataDir,
  type PostgresReplicas,
  type Runtime,
  type ServerProcess,
} from '../support/server-process.ts'

const RUNTIMES: readonly Runtime[] = ['node', 'deno', 'bun', 'lambda', 'netlify']
/** The runtimes that serve from one SQLite file: all but the function platforms. */
const SQLITE_RUNTIMES: readonly Runtime[] = ['node', 'deno', 'bun']

/** Every ordered pair of two of `runtimes`: where round 1 goes, and where round 2 does. */
function pairsOf(runtimes: readonly Runtime[]) {
  return runtimes.flatMap((first) =>
    runtimes.filter((second) => second !== first).map((second) => [first, second] as const)
  )
}
const PAIRS = pairsOf(RUNTIMES)
/**
 * The runtimes that send a streamed response's head only with its first bytes, where an event
 * stream opens with a comment (`src/http/event-stream-head.ts`).
 */
const HEAD_ONLY_WITH_BYTES: readonly Runtime[] = ['bun', 'lambda', 'netlify']

/** Replicas by runtime, their `REPLICA_ID` the runtime's name. */
type Replicas = Record<Runtime, ServerProcess>

async function createNote(replica: ServerProcess, title: string): Promise<string> {
  const result = await new McpClient({ url: replica.url }).callTool('create_note', { title })
  return (result.structuredContent as { note: { id: string } }).note.id
}

/** delete_note with round 1 on `first` and round 2 on `second`; answers who served each round. */
async function deleteAcross(replicas: Replicas, first: Runtime, second: Runtime) {
  const id = await createNote(replicas[first], `Sealed on ${first}, finished on ${second}`)
  const route = [replicas[first], replicas[second]]
  let next = 0
  const served: string[] = []
  const client = new McpClient({
    url: route[0]!.url,
    urls: () => route[Math.min(next++, 1)]!.url,
    handlers: { elicit: async () => ({ action: 'accept', content: { confirm: true } }) },
    onRound: (info) => served.push(info.headers.get('x-replica') ?? '?'),
  })
  const result = await client.callTool('delete_note', { id })
  const gone = await new McpClient({ url: replicas[first].url }).callTool('get_note', { id })
  return { text: toolResultText(result), served, goneIsError: gone.isError }
}

/** A 2025 session opened on `opener`, then `tools/call` of `search_notes` with it on `caller`. */
async function legacyCallAcross(opener: ServerProcess, caller: ServerProcess) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  }
  const session = await openSessionAt(opener.url)
  const called = await fetch(caller.url, {
    method: 'POST',
    headers: {
      ...headers,
      [HEADER_SESSION_ID]: session,
      [HEADER_PROTOCOL_VERSION]: LEGACY_VERSION,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'search_notes', arguments: { query: 'runtime' } },
    }),
  })
  return {
    status: called.status,
    text: await called.text(),
    replica: called.headers.get('x-replica'),
  }
}

const serverUrl = await testDatabaseUrl()

describe.skipIf(!serverUrl)(
  'Node, Deno, Bun and Lambda replicas on one PostgreSQL database',
  () => {
    let deployment: PostgresReplicas | undefined
    const replicas = {} as Replicas

    beforeAll(async () => {
      deployment = await startPostgresReplicas(serverUrl!, RUNTIMES, RUNTIMES)
      for (const [index, runtime] of RUNTIMES.entries())
        replicas[runtime] = deployment.servers[index]!
    }, 90_000)

    afterAll(() => deployment?.stop())

    it.for(PAIRS)('seals delete_note on %s and finishes it on %s', async ([first, second]) => {
      const { text, served, goneIsError } = await deleteAcross(replicas, first, second)
      expect(text).toContain('Deleted')
      expect(served).toEqual([first, second])
      expect(goneIsError).toBe(true)
    })

    it.for(PAIRS)(
      'delivers a change made on %s to a listen stream held on %s',
      async ([maker, listener]) => {
        const stop = new AbortController()
        const acknowledged = Promise.withResolvers<void>()
        const heard = Promise.withResolvers<JsonRpcNotification>()
        const listening = new McpClient({ url: replicas[listener].url }).listen(
          { resourcesListChanged: true },
          {
            signal: stop.signal,
            onNotification: (notification) => {
              if (notification.method === 'notifications/subscriptions/acknowledged')
                acknowledged.resolve()
              else heard.resolve(notification)
            },
          }
        )
        await acknowledged.promise
        await createNote(replicas[maker], `Made on ${maker}, heard on ${listener}`)
        // Never heard, the test fails at its timeout.
        expect((await heard.promise).method).toBe('notifications/resources/list_changed')
        stop.abort()
        await listening
      }
    )

    it.for(
      RUNTIMES.flatMap((runtime) => [
        [runtime, 'the official 2026 client', deleteWithOfficialClient] as const,
        [runtime, 'the v1 SDK client', deleteWithV1Client] as const,
      ])
    )(
      'on %s, lets %s with its defaults delete a note once the person confirms',
      async ([runtime, , flow]) => {
        const { text, asked } = await flow(replicas[runtime].url)
        expect(text).toContain('Deleted')
        expect(asked).toEqual(['elicitation/create'])
      }
    )

    it.for(HEAD_ONLY_WITH_BYTES)(
      "on %s, sends a quiet 2025 GET stream's head at once, the stream opening with a comment",
      async (runtime) => {
        const { url } = replicas[runtime]
        const session = await openSessionAt(url)
        const stop = new AbortController()
        const response = await within(
          fetch(url, {
            signal: stop.signal,
            headers: {
              accept: 'text/event-stream',
              [HEADER_SESSION_ID]: session,
              [HEADER_PROTOCOL_VERSION]: LEGACY_VERSION,
            },
          }),
          "the GET stream's head"
        )
        expect(response.status).toBe(200)
        const first = await within(
          response.body!.getReader().read(),
          "the GET stream's first bytes"
        )
        expect(new TextDecoder().decode(first.value)).toMatch(/^: /)
        stop.abort()
      }
    )

    it.for(PAIRS)('serves a 2025 session opened on %s on %s', async ([opener, caller]) => {
      const called = await legacyCallAcross(replicas[opener], replicas[caller])
      expect(called.status).toBe(200)
      expect(called.replica).toBe(caller)
      expect(called.text).toContain('"result"')
      expect(called.text).not.toContain('"isError":true')
    })
  }
)

describe('Node, Deno and Bun replicas on one SQLite file', () => {
  const replicas = {} as Replicas

  beforeAll(async () => {
    const dataDir = await tempDataDir()
    // One after the other: the first writes the key file (and the schema) that the others read.
    for (const runtime of SQLITE_RUNTIMES)
      replicas[runtime] = await startServer(
        'notes',
        { DATA_DIR: dataDir, REPLICA_ID: runtime },
        runtime
      )
  }, 90_000)

  afterAll(() => Promise.all(SQLITE_RUNTIMES.map((runtime) => replicas[runtime]?.stop())))

  it('generated one key ring, on the first runtime to start', () => {
    expect(replicas.node.output()).toContain('Generated a requestState key ring')
    expect(replicas.deno.output()).not.toContain('Generated')
    expect(replicas.bun.output()).not.toContain('Generated')
  })

  it.for(pairsOf(SQLITE_RUNTIMES))(
    'seals delete_note on %s and finishes it on %s',
    async ([first, second]) => {
      const { text, served, goneIsError } = await deleteAcross(replicas, first, second)
      expect(text).toContain('Deleted')
      expect(served).toEqual([first, second])
      expect(goneIsError).toBe(true)
    }
  )
})

describe('telemetry export off Node', () => {
  it.for(['deno', 'bun'] as const)(
    'refuses METRICS_PORT on %s at start, saying why, with exit code 1',
    async (runtime) => {
      const start = startServer(
        'notes',
        { DATA_DIR: await tempDataDir(), METRICS_PORT: '0' },
        runtime
      )
      await expect(start).rejects.toThrow(/exited with 1[\s\S]*telemetry export runs on Node only/)
    }
  )
})
