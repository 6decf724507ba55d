/**
 * End to end with the official `@modelcontextprotocol/client` (2.4.0, pinned to 2026-07-28) against
 * the real notes server process: tools, resources, prompts, completions, a listen subscription, and
 * the interactive flows driven by the client's own elicitation handler (multi round-trip requests).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'

type ElicitParams = { message: string; requestedSchema: { properties: Record<string, unknown> } }

let server: ServerProcess
/** What the fake person answers next, by elicitation message; every question asked is recorded. */
let answer: (params: ElicitParams) => {
  action: 'accept' | 'decline' | 'cancel'
  content?: Record<string, unknown>
}
const asked: ElicitParams[] = []

async function connect(
  capabilities: Record<string, object> = { elicitation: { form: {} } }
): Promise<Client> {
  const client = new Client(
    { name: 'e2e-official-client', version: '1.0.0' },
    { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } }
  )
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', async (request) => {
      const params = request.params as unknown as ElicitParams
      asked.push(params)
      // The SDK types the answer per elicitation mode; the fake person answers forms only.
      return answer(params) as never
    })
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
  return client
}

function firstText(result: { content?: unknown }): string {
  const content = result.content as Array<{ type: string; text?: string }>
  return content.find((block) => block.type === 'text')?.text ?? ''
}

async function createNote(client: Client, title: string, tags: string[] = []): Promise<string> {
  const result = await client.callTool({
    name: 'create_note',
    arguments: { title, body: `Body of ${title}.`, tags },
  })
  expect(result.isError).toBeFalsy()
  return (result.structuredContent as { note: { id: string } }).note.id
}

beforeAll(async () => {
  server = await startServer('notes', { DATA_DIR: await tempDataDir() })
})

afterAll(async () => {
  await server?.stop()
})

describe('the official MCP client against the notes server', () => {
  it('lists the notes tools, including the interactive ones', async () => {
    const client = await connect()
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    for (const name of [
      'create_note',
      'update_note',
      'search_notes',
      'list_tags',
      'delete_note',
      'create_note_from_template',
      'summarize_notes',
      'share_note',
    ]) {
      expect(names).toContain(name)
    }
    await client.close()
  })

  it('creates a note, reads it as a resource, lists it and finds it by search', async () => {
    const client = await connect()
    const id = await createNote(client, 'Quarterly planning', ['planning'])
    const read = await client.readResource({ uri: `note://${id}` })
    expect(JSON.stringify(read.contents)).toContain('Quarterly planning')
    const listed = await client.listResources()
    expect(listed.resources.map((resource) => resource.uri)).toContain(`note://${id}`)
    const search = await client.callTool({
      name: 'search_notes',
      arguments: { query: 'quarterly' },
    })
    expect(JSON.stringify(search)).toContain(id)
    await client.close()
  })

  it('gets a prompt that embeds a note as a resource, and completes its id argument', async () => {
    const client = await connect()
    const id = await createNote(client, 'Prompted note')
    const prompt = await client.getPrompt({ name: 'review_note', arguments: { id } })
    expect(
      prompt.messages.some((message) => (message.content as { type: string }).type === 'resource')
    ).toBe(true)
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'review_note' },
      argument: { name: 'id', value: id.slice(0, 4) },
    })
    expect(completion.completion.values).toContain(id)
    await client.close()
  })

  it('hears a resource list change on a listen subscription when a note is created', async () => {
    const client = await connect()
    const heard = new Promise<void>((resolve) =>
      client.setNotificationHandler('notifications/resources/list_changed', () => resolve())
    )
    const subscription = await client.listen({ resourcesListChanged: true })
    expect(subscription.honoredFilter.resourcesListChanged).toBe(true)
    await createNote(client, 'Heard on the stream')
    // Never heard, the test fails at its timeout.
    await heard
    await subscription.close()
    await client.close()
  })

  it('deletes a note only after the person confirms in the form the server asked for', async () => {
    const client = await connect()
    const id = await createNote(client, 'Delete me')
    asked.length = 0
    answer = () => ({ action: 'accept', content: { confirm: true } })
    const result = await client.callTool({ name: 'delete_note', arguments: { id } })
    expect(firstText(result)).toContain('Deleted')
    expect(asked).toHaveLength(1)
    expect(asked[0]?.message).toContain('Delete me')
    await expect(client.readResource({ uri: `note://${id}` })).rejects.toThrow()
    await client.close()
  })

  it('keeps the note when the person declines', async () => {
    const client = await connect()
    const id = await createNote(client, 'Keep me')
    answer = () => ({ action: 'decline' })
    const result = await client.callTool({ name: 'delete_note', arguments: { id } })
    expect(firstText(result)).toBe('Kept the note.')
    const read = await client.readResource({ uri: `note://${id}` })
    expect(JSON.stringify(read.contents)).toContain('Keep me')
    await client.close()
  })

  it('creates a note from a template with several fields asked in one form', async () => {
    const client = await connect()
    asked.length = 0
    answer = () => ({ action: 'accept', content: { title: 'Standup 12', tags: ['team'] } })
    const result = await client.callTool({
      name: 'create_note_from_template',
      arguments: { template: 'meeting' },
    })
    expect(result.isError).toBeFalsy()
    expect(asked).toHaveLength(1)
    expect(Object.keys(asked[0]!.requestedSchema.properties).length).toBeGreaterThanOrEqual(3)
    const search = await client.callTool({ name: 'search_notes', arguments: { query: 'standup' } })
    expect(JSON.stringify(search)).toContain('Standup 12')
    await client.close()
  })

  it('answers a request that needs form elicitation with -32021 when the client did not declare it', async () => {
    const client = await connect({})
    const id = await createNote(client, 'Not without a form')
    await expect(client.callTool({ name: 'delete_note', arguments: { id } })).rejects.toMatchObject(
      { code: -32021 }
    )
    await client.close()
  })
})
