/**
 * An ended 2025 session ends what it holds on another replica (`legacy/session-end.ts`): two notes
 * servers on one PostgreSQL database and its LISTEN/NOTIFY bus, one key ring. A session opened on
 * replica A holds its GET stream and a `delete_note` call waiting for its confirmation on replica B;
 * DELETE on A ends both on B (the stream closes, the call answers -32001 saying the session ended;
 * that their slots are then free is `legacy-session-end.test.ts`'s). The wait is the streams' ends,
 * never a timer. Skipped, visibly, without a PostgreSQL server (fails under CI).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { LEGACY_VERSION, SseReader, initializeMessage } from '../support/legacy-request.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import { startPostgresReplicas, type PostgresReplicas } from '../support/server-process.ts'

const serverUrl = await testDatabaseUrl()
let deployment: PostgresReplicas | undefined

beforeAll(async () => {
  if (!serverUrl) return
  deployment = await startPostgresReplicas(serverUrl, ['session-end-a', 'session-end-b'])
})

afterAll(() => deployment?.stop())

/** The MCP endpoint of replica `index`. */
function replicaUrl(index: number): string {
  const server = deployment?.servers[index]
  if (!server) throw new Error('the replicas did not start')
  return server.url
}

/** One 2025 message or stream request of `session` to `url`. */
function send(url: string, session: string, init: { method: string; body?: unknown }) {
  return fetch(url, {
    method: init.method,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': LEGACY_VERSION,
      [HEADER_SESSION_ID]: session,
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
}

/** A session opened on `url` by a client that answers forms. */
async function openSession(url: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(initializeMessage({ capabilities: { elicitation: {} } })),
  })
  expect(response.status).toBe(200)
  await response.text()
  return response.headers.get(HEADER_SESSION_ID) as string
}

/** Calls `name` in `session` on `url`; answers the call's JSON-RPC response. */
async function callTool(url: string, session: string, name: string, args: object) {
  const response = await send(url, session, {
    method: 'POST',
    body: { jsonrpc: '2.0', id: name, method: 'tools/call', params: { name, arguments: args } },
  })
  expect(response.status).toBe(200)
  return (await response.json()) as { result: { structuredContent?: { note?: { id?: string } } } }
}

describe.skipIf(!serverUrl)('an ended 2025 session across two replicas', () => {
  it('DELETE on replica A ends the GET stream and the waiting call replica B holds', async () => {
    const [a, b] = [replicaUrl(0), replicaUrl(1)]
    const session = await openSession(a)
    const created = await callTool(b, session, 'create_note', { title: 'Ended elsewhere' })
    const noteId = created.result.structuredContent?.note?.id
    expect(noteId).toEqual(expect.any(String))

    const get = new SseReader(await send(b, session, { method: 'GET' }))
    const call = new SseReader(
      await send(b, session, {
        method: 'POST',
        body: {
          jsonrpc: '2.0',
          id: 'del',
          method: 'tools/call',
          params: { name: 'delete_note', arguments: { id: noteId } },
        },
      })
    )
    expect(await call.next()).toMatchObject({ method: 'elicitation/create' })

    expect((await send(a, session, { method: 'DELETE' })).status).toBe(204)
    expect(await get.rest()).toStrictEqual([])
    expect(await call.rest()).toStrictEqual([
      {
        jsonrpc: '2.0',
        id: 'del',
        error: { code: -32001, message: expect.stringMatching(/^Session ended: /) },
      },
    ])
    // Replica B serves the ended session nothing more.
    expect((await send(b, session, { method: 'GET' })).status).toBe(404)
  })
})
