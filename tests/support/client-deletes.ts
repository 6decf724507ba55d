/**
 * @module tests/support/client-deletes
 * The interactive flow every runtime's tests run with the real clients, each with its default
 * settings and a person who confirms: `create_note`, then `delete_note`, which asks first. With the
 * official `@modelcontextprotocol/client` pinned to 2026-07-28 (multi round-trip requests) and with
 * the v1 SDK client (a 2025 session, its GET stream, the question on the call's SSE stream).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { acceptingWith, connectLegacyHost, resultText } from './legacy-host.ts'

/** What the flow answered: the delete's text and the questions the person was asked. */
export interface DeleteOutcome {
  text: string
  asked: string[]
}

/** The flow with the official client pinned to 2026-07-28 against the server at `url`. */
export async function deleteWithOfficialClient(url: string): Promise<DeleteOutcome> {
  const asked: string[] = []
  const client = new Client(
    { name: 'e2e-official-client', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    }
  )
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.method)
    return { action: 'accept', content: { confirm: true } }
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  try {
    const created = await client.callTool({ name: 'create_note', arguments: { title: 'To go' } })
    const id = (created.structuredContent as { note: { id: string } }).note.id
    const deleted = await client.callTool({ name: 'delete_note', arguments: { id } })
    const content = deleted.content as Array<{ type: string; text?: string }>
    return { text: content.map((block) => block.text ?? '').join(''), asked }
  } finally {
    await client.close()
  }
}

/** The flow with the v1 SDK client (a 2025 session) against the server at `url`. */
export async function deleteWithV1Client(url: string): Promise<DeleteOutcome> {
  const host = await connectLegacyHost(url, { elicitation: {} })
  try {
    host.person.elicit = acceptingWith({ confirm: true })
    const created = await host.callTool('create_note', { title: 'A 2025 note to go' })
    const id = (created.structuredContent as { note: { id: string } }).note.id
    const deleted = await host.callTool('delete_note', { id })
    return { text: resultText(deleted), asked: host.asked.map((message) => message.method) }
  } finally {
    await host.close()
  }
}
