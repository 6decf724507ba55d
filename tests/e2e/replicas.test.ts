/**
 * Replica-agnostic proof on Node: two notes server processes share one key ring and one SQLite file,
 * and every round of every interactive tool goes to the other process than the round before (checked
 * through the `X-Replica` header of each round). The share approval page is opened on the other
 * replica too. Driven by the project's client driver (`src/client/`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient, type InputHandlers, type RoundInfo } from '../../src/client/index.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import type { ClientCapabilities } from '../../src/mcp/wire.ts'
import { toolResultText } from '../support/mcp-request.ts'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'

let replicas: ServerProcess[] = []

beforeAll(async () => {
  const dataDir = await tempDataDir()
  const env = { DATA_DIR: dataDir, STATE_KEYS: formatKeyRing([generateKey()]) }
  replicas = [await startServer('notes', { ...env, REPLICA_ID: 'a' })]
  replicas.push(await startServer('notes', { ...env, REPLICA_ID: 'b' }))
})

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()))
})

/** A client whose every attempt goes to the other replica, recording who served each round. */
function alternatingClient(handlers: InputHandlers, capabilities?: ClientCapabilities) {
  let next = 0
  const served: string[] = []
  const client = new McpClient({
    url: replicas[0]!.url,
    urls: () => replicas[next++ % replicas.length]!.url,
    handlers,
    ...(capabilities ? { capabilities } : {}),
    onRound: (info: RoundInfo) => served.push(info.headers.get('x-replica') ?? '?'),
  })
  return { client, served }
}

function expectAlternating(served: string[], rounds: number) {
  expect(served).toHaveLength(rounds)
  for (let i = 1; i < served.length; i++) expect(served[i]).not.toBe(served[i - 1])
}

async function createNote(title: string, tags: string[] = []): Promise<string> {
  const client = new McpClient({ url: replicas[0]!.url })
  const result = await client.callTool('create_note', {
    title,
    body: `About ${title}. More text here.`,
    tags,
  })
  return (result.structuredContent as { note: { id: string } }).note.id
}

describe('two Node replicas sharing one key ring and one SQLite file', () => {
  it('serves delete_note with round 1 on one replica and round 2 on the other', async () => {
    const id = await createNote('Cross-replica delete')
    const { client, served } = alternatingClient({
      elicit: async () => ({ action: 'accept', content: { confirm: true } }),
    })
    const result = await client.callTool('delete_note', { id })
    expect(toolResultText(result)).toContain('Deleted')
    expectAlternating(served, 2)
    const check = new McpClient({ url: replicas[1]!.url })
    expect((await check.callTool('get_note', { id })).isError).toBe(true)
  })

  it('serves create_note_from_template across replicas', async () => {
    const { client, served } = alternatingClient({
      elicit: async () => ({
        action: 'accept',
        content: { title: 'Replicated standup', tags: ['team'] },
      }),
    })
    const result = await client.callTool('create_note_from_template', { template: 'meeting' })
    expect(result.isError).toBeFalsy()
    expectAlternating(served, 2)
    const search = await new McpClient({ url: replicas[1]!.url }).callTool('search_notes', {
      query: 'replicated standup',
    })
    expect(JSON.stringify(search)).toContain('Replicated standup')
  })

  it("serves summarize_notes with the host's model across replicas", async () => {
    await createNote('Summarize me', ['summary'])
    const { client, served } = alternatingClient({
      sample: async () => ({
        role: 'assistant',
        content: { type: 'text', text: 'A fine summary.' },
        model: 'test-model',
      }),
    })
    const result = await client.callTool('summarize_notes', { tags: ['summary'] })
    expect(toolResultText(result)).toContain('A fine summary.')
    expectAlternating(served, 2)
  })

  it('serves share_note across replicas, with the approval page opened on yet another replica', async () => {
    const id = await createNote('Share across replicas')
    const { client, served } = alternatingClient(
      {
        async elicit(params) {
          if (params.mode !== 'url') throw new Error('expected a url elicitation')
          // Open the page on the other replica than the one that minted the link, and approve there.
          const page = new URL(params.url as string)
          const other = new URL(
            replicas.find((replica) => !replica.url.startsWith(page.origin))!.baseUrl
          )
          page.host = other.host
          const get = await fetch(page)
          const cookie = get.headers.get('set-cookie')?.split(';')[0] ?? ''
          const token = /name="csrf" value="([^"]+)"/.exec(await get.text())?.[1] ?? ''
          const post = await fetch(page, {
            method: 'POST',
            headers: {
              cookie,
              'content-type': 'application/x-www-form-urlencoded',
              origin: page.origin,
            },
            body: new URLSearchParams({ csrf: token, decision: 'approve' }),
          })
          expect(post.status).toBe(200)
          return { action: 'accept' }
        },
      },
      { elicitation: { url: {} } }
    )
    const result = await client.callTool('share_note', { id })
    const link = /https?:\/\/\S+\/shared\/[A-Za-z0-9_-]+/.exec(toolResultText(result))?.[0]
    expect(link, toolResultText(result)).toBeDefined()
    expectAlternating(served, 2)
    const shared = await fetch(link!)
    expect(await shared.text()).toContain('Share across replicas')
  })
})
