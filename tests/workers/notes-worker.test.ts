/**
 * The notes server as deployed, inside workerd: every request goes through the real Worker entry
 * (`src/worker.ts`, its default export's `fetch`) with the bindings of the real `wrangler.toml` and a
 * local D1 database migrated from `migrations/`. Covers discovery, tools, a note resource, a complete
 * multi round-trip flow (delete_note with its confirmation form), a tampered requestState, SSE
 * progress, and links built from each request's own allowed origin when PUBLIC_URL is unset.
 */
import { exports } from 'cloudflare:workers'
import { describe, expect, it } from 'vitest'
import {
  MCP_URL,
  expectError,
  expectResult,
  mcpInit,
  readMessages,
} from '../support/mcp-request.ts'
import type { JsonObject, McpRequestOptions } from '../support/mcp-request.ts'

const FORM = { elicitation: { form: {} } }

function post(method: string, options: McpRequestOptions = {}): Promise<Response> {
  return exports.default.fetch(new Request(MCP_URL, mcpInit(method, options)))
}

async function call(name: string, args: JsonObject, options: McpRequestOptions = {}) {
  return expectResult(await post('tools/call', { ...options, params: { name, arguments: args } }))
}

async function createNote(title: string, body = '', tags: string[] = []) {
  const result = await call('create_note', { title, body, tags })
  expect(result.isError).toBeFalsy()
  return result.structuredContent.note as { id: string; title: string; version: number }
}

/** One tampered byte in the ciphertext of a compact JWE, keeping it canonical base64url. */
function tamper(token: string): string {
  const parts = token.split('.')
  const ciphertext = parts[3] as string
  const first = ciphertext[0] === 'A' ? 'B' : 'A'
  parts[3] = first + ciphertext.slice(1)
  return parts.join('.')
}

describe('the notes Worker inside workerd', () => {
  it('answers server/discover with its info and capabilities', async () => {
    const result = await expectResult(await post('server/discover'))
    expect(result.resultType).toBe('complete')
    expect(result._meta['io.modelcontextprotocol/serverInfo']).toEqual({
      name: 'notes-mcp',
      version: '0.1.0',
    })
    expect(result.capabilities).toMatchObject({ tools: {}, resources: {}, prompts: {} })
  })

  it('lists its tools', async () => {
    const result = await expectResult(await post('tools/list'))
    const names = (result.tools as Array<{ name: string }>).map((tool) => tool.name)
    expect(names).toEqual(
      expect.arrayContaining(['create_note', 'get_note', 'search_notes', 'delete_note'])
    )
  })

  it('creates a note in D1 and reads it back with get_note', async () => {
    const note = await createNote('Edge note', 'Written on **workerd**.', ['edge'])
    expect(note.id).toMatch(/^n_/)
    const read = await call('get_note', { id: note.id })
    expect(read.structuredContent.note).toMatchObject({ id: note.id, title: 'Edge note' })
  })

  it('reads a note as a note:// resource', async () => {
    const note = await createNote('Resource note', 'Body of the resource.')
    const uri = `note://${note.id}`
    const result = await expectResult(await post('resources/read', { params: { uri } }))
    expect(result.contents).toHaveLength(1)
    expect(result.contents[0]).toMatchObject({ uri })
    expect(result.contents[0].text).toContain('Resource note')
    expect(result.contents[0].text).toContain('Body of the resource.')
  })

  it('completes a delete_note flow: confirmation asked, then the note deleted exactly once', async () => {
    const note = await createNote('Doomed on the edge')
    const params = { name: 'delete_note', arguments: { id: note.id } }

    const first = await expectResult(
      await post('tools/call', { params, capabilities: FORM, id: 'r1' }),
      'r1'
    )
    expect(first.resultType).toBe('input_required')
    expect(first.inputRequests.confirm).toMatchObject({ method: 'elicitation/create' })
    expect(first.inputRequests.confirm.params.message).toContain('Doomed on the edge')
    expect(typeof first.requestState).toBe('string')

    const retry = {
      ...params,
      requestState: first.requestState,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    }
    const second = await expectResult(
      await post('tools/call', { params: retry, capabilities: FORM, id: 'r2' }),
      'r2'
    )
    expect(second.resultType).toBe('complete')
    expect(second.isError).toBeFalsy()
    expect(second.content[0].text).toBe('Deleted the note "Doomed on the edge".')

    const gone = await call('get_note', { id: note.id })
    expect(gone.isError).toBe(true)

    // The same final round again (a client retry): the delete does not happen twice.
    const replay = await expectResult(
      await post('tools/call', { params: retry, capabilities: FORM, id: 'r3' }),
      'r3'
    )
    expect(replay.isError).toBeFalsy()
    expect(replay.content[0].text).toBe('Deleted the note "Doomed on the edge".')
  })

  it('rejects a tampered requestState with the one frozen message, and keeps the note', async () => {
    const note = await createNote('Kept by the seal')
    const params = { name: 'delete_note', arguments: { id: note.id } }
    const first = await expectResult(await post('tools/call', { params, capabilities: FORM }))
    const response = await post('tools/call', {
      capabilities: FORM,
      id: 7,
      params: {
        ...params,
        requestState: tamper(first.requestState),
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      },
    })
    // A params error found after dispatch travels as HTTP 200 (the engine's one status table).
    const error = await expectError(response, { status: 200, code: -32602, id: 7 })
    expect(error.message).toBe('Invalid or expired requestState')
    const still = await call('get_note', { id: note.id })
    expect(still.structuredContent.note.title).toBe('Kept by the seal')
  })

  it('streams search progress as SSE before the result', async () => {
    await createNote('Streamed kiwi', 'kiwi')
    const response = await post('tools/call', {
      id: 'sse',
      params: { name: 'search_notes', arguments: { query: 'kiwi' } },
      meta: { progressToken: 'p1' },
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const messages = await readMessages(response)
    const progress = messages.filter((m) => m.method === 'notifications/progress')
    expect(progress.map((m) => m.params.progress)).toEqual([0, 1])
    expect(progress.every((m) => m.params.progressToken === 'p1')).toBe(true)
    const final = messages.at(-1) as JsonObject
    expect(final.id).toBe('sse')
    expect(final.result.structuredContent.notes.map((n: JsonObject) => n.title)).toContain(
      'Streamed kiwi'
    )
  })

  it('gives each request the links of its own allowed origin, whatever came before', async () => {
    const note = await createNote('Shared from two hosts')
    const approvalUrl = async (origin: string) => {
      const init = mcpInit('tools/call', {
        params: { name: 'share_note', arguments: { id: note.id } },
        capabilities: { elicitation: { url: {} } },
        headers: { host: new URL(origin).host },
      })
      const result = await expectResult(await exports.default.fetch(`${origin}/mcp`, init))
      expect(result.resultType).toBe('input_required')
      return new URL(result.inputRequests.approve.params.url as string)
    }
    for (const origin of [
      'http://localhost:8788',
      'http://127.0.0.1:8788',
      'http://localhost:8788',
      'http://127.0.0.1',
    ]) {
      const url = await approvalUrl(origin)
      expect(url.origin).toBe(origin)
      expect(url.pathname).toMatch(/^\/share\/[A-Za-z0-9_-]+$/)
    }
  })

  it('answers 403 to a Host outside ALLOWED_HOSTS', async () => {
    const init = mcpInit('tools/list', { headers: { host: 'evil.example' } })
    const response = await exports.default.fetch(new Request(MCP_URL, init))
    expect(response.status).toBe(403)
  })
})
