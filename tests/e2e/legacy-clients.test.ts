/**
 * 2025-era hosts with their default settings against the real notes server (`npm start`'s entry,
 * SQLite in a fresh data directory): the v1 SDK client 1.32.2 through every notes tool, resource,
 * prompt and completion, progress and log messages, every interactive flow (form and url
 * elicitation, sampling, the three-round bulk delete) and its cancellation, its session across a server
 * restart and after DELETE, and its GET stream; the official client 2.4.0 in its default (initialize)
 * mode; and the MCP Inspector 2.12 CLI. A recording pass-through proxy shows the HTTP exchanges
 * where a test must wait for one (the GET stream opening, a cancelled call's stream ending).
 */
import { Client as V2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { ClientCapabilities, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { CSRF_COOKIE, CSRF_FIELD } from '../../routes/share.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import {
  OpenHosts,
  acceptingWith,
  createNote,
  modelReplying,
  noteExists,
  resultText,
  cancelWhileAsked,
  type LegacyHost,
} from '../support/legacy-host.ts'
import { startAlternatingProxy, type AlternatingProxy } from '../support/alternating-proxy.ts'
import { within } from '../support/within.ts'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'

const run = promisify(execFile)

const NOTES_TOOLS = [
  'create_note',
  'get_note',
  'update_note',
  'search_notes',
  'list_tags',
  'delete_note',
  'delete_notes_by_tag',
  'create_note_from_template',
  'summarize_notes',
  'share_note',
]

const FORMS = { elicitation: {} }

let server: ServerProcess
/** The environment every start of the server gets: one data directory and one key ring. */
let env: Record<string, string>
const hosts = new OpenHosts()

/** A recording pass-through in front of the server, for tests that must see the HTTP exchanges. */
let recorder: AlternatingProxy

function connect(capabilities: ClientCapabilities = {}, url = server.url) {
  return hosts.connect(url, capabilities)
}

const close = (host: LegacyHost) => hosts.close(host)

/** How many notes carry `tag`, as `list_tags` counts them. */
async function tagCount(host: LegacyHost, tag: string): Promise<number> {
  const { tags } = (await host.callTool('list_tags')).structuredContent as {
    tags: Array<{ tag: string; count: number }>
  }
  return tags.find((entry) => entry.tag === tag)?.count ?? 0
}

/** A JSON-RPC POST with the raw session header, as no SDK client would send after DELETE. */
function rawPost(sessionId: string, body: unknown): Promise<Response> {
  return fetch(server.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
    },
    body: JSON.stringify(body),
  })
}

/** The person in a browser: opens the approval page, then sends its form with `decision`. */
async function decideOnSharePage(pageUrl: string, decision: 'approve' | 'refuse'): Promise<void> {
  const page = await fetch(pageUrl)
  const html = await page.text()
  expect(page.status).toBe(200)
  const cookie = page.headers
    .getSetCookie()
    .map((header) => header.split(';')[0] as string)
    .find((pair) => pair.startsWith(`${CSRF_COOKIE}-`))
  const token = new RegExp(`name="${CSRF_FIELD}" value="([^"]+)"`).exec(html)?.[1]
  expect(cookie).toBeDefined()
  expect(token).toBeDefined()
  const decided = await fetch(pageUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: cookie as string,
      origin: new URL(pageUrl).origin,
      'sec-fetch-site': 'same-origin',
    },
    body: new URLSearchParams({ [CSRF_FIELD]: token as string, decision }).toString(),
  })
  expect(decided.status).toBe(200)
  expect(await decided.text()).toContain(decision === 'approve' ? 'Approved' : 'Refused')
}

beforeAll(async () => {
  env = { DATA_DIR: await tempDataDir(), STATE_KEYS: formatKeyRing([generateKey()]) }
  server = await startServer('notes', env)
  recorder = await startAlternatingProxy([server.baseUrl])
})

afterEach(() => hosts.closeAll())

afterAll(async () => {
  await recorder?.close()
  await server?.stop()
})

describe('the v1 SDK client (1.32.2) with default settings', () => {
  it('connects with initialize, gets a visible-ASCII session id and lists every notes tool', async () => {
    const host = await connect()
    expect(host.transport.sessionId).toMatch(/^[\x21-\x7e]+$/)
    expect(host.transport.protocolVersion).toBe('2025-11-25')
    expect(host.client.getServerVersion()?.name).toBeTruthy()
    const names = (await host.client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(NOTES_TOOLS))
    await close(host)
  })

  it('creates, reads, searches and tags notes, reads note:// and gets review_note with completion', async () => {
    const host = await connect()
    const id = await createNote(host, 'Quarterly planning v1', ['planning-v1'])

    const got = await host.callTool('get_note', { id })
    expect((got.structuredContent as { note: { title: string } }).note.title).toBe(
      'Quarterly planning v1'
    )
    const search = await host.callTool('search_notes', { query: 'quarterly' })
    const hits = (search.structuredContent as { notes: Array<{ id: string }> }).notes
    expect(hits.map((hit) => hit.id)).toContain(id)
    expect(await tagCount(host, 'planning-v1')).toBe(1)

    const read = await host.client.readResource({ uri: `note://${id}` })
    expect(read.contents[0]?.uri).toBe(`note://${id}`)
    expect(JSON.stringify(read.contents)).toContain('Quarterly planning v1')

    const prompt = await host.client.getPrompt({ name: 'review_note', arguments: { id } })
    const embedded = prompt.messages.find((message) => message.content.type === 'resource')
    expect(embedded?.content).toMatchObject({ resource: { uri: `note://${id}` } })

    const completion = await host.client.complete({
      ref: { type: 'ref/prompt', name: 'review_note' },
      argument: { name: 'id', value: id.slice(0, 4) },
    })
    expect(completion.completion.values).toContain(id)
    await close(host)
  })

  it('deletes a note only after the person accepts the confirmation form', async () => {
    const host = await connect(FORMS)
    const id = await createNote(host, 'Delete me v1')
    host.person = { elicit: acceptingWith({ confirm: true }) }
    const result = await host.callTool('delete_note', { id })
    expect(result.isError).toBeFalsy()
    expect(resultText(result)).toBe('Deleted the note "Delete me v1".')
    expect(host.asked).toHaveLength(1)
    expect(host.asked[0]).toMatchObject({
      method: 'elicitation/create',
      params: { message: 'Delete the note "Delete me v1"? This cannot be undone.' },
    })
    expect(await noteExists(host, id)).toBe(false)
    await close(host)
  })

  it('keeps the note when the person declines the confirmation form', async () => {
    const host = await connect(FORMS)
    const id = await createNote(host, 'Keep me v1')
    host.person = { elicit: () => ({ action: 'decline' }) }
    const result = await host.callTool('delete_note', { id })
    expect(resultText(result)).toBe('Kept the note.')
    expect(host.asked).toHaveLength(1)
    expect(await noteExists(host, id)).toBe(true)
    await close(host)
  })

  it('creates a note from a template with the form the person filled in', async () => {
    const host = await connect(FORMS)
    host.person = {
      elicit: acceptingWith({
        title: 'Standup v1',
        date: '2026-01-05',
        tags: ['team'],
        priority: 'high',
      }),
    }
    const result = await host.callTool('create_note_from_template', { template: 'meeting' })
    expect(result.isError).toBeFalsy()
    expect(host.asked).toHaveLength(1)
    const schema = host.asked[0]?.params.requestedSchema as { properties: Record<string, unknown> }
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['title', 'date', 'tags', 'priority'])
    )
    const note = (
      result.structuredContent as { note: { title: string; tags: string[]; body: string } }
    ).note
    expect(note.title).toBe('Standup v1')
    expect(note.tags).toEqual(expect.arrayContaining(['meeting', 'team']))
    expect(note.body).toContain('Date: 2026-01-05 · Priority: high')
    await close(host)
  })

  it("summarises notes with the host's model through sampling, and says so", async () => {
    const host = await connect({ sampling: {} })
    for (const title of ['Sampled alpha', 'Sampled beta'])
      await createNote(host, title, ['sampled-v1'])
    host.person = { sample: modelReplying('e2e-model-1', '- Alpha and beta are on track.') }
    const result = await host.callTool('summarize_notes', { tags: ['sampled-v1'] })
    expect(result.isError).toBeFalsy()
    expect(host.asked).toHaveLength(1)
    expect(host.asked[0]?.method).toBe('sampling/createMessage')
    expect(JSON.stringify(host.asked[0]?.params.messages)).toContain('Sampled alpha')
    expect(resultText(result)).toContain("Summary by the host's model (e2e-model-1) of 2 note(s):")
    expect(result.structuredContent).toMatchObject({
      method: 'sampling',
      model: 'e2e-model-1',
      summary: '- Alpha and beta are on track.',
    })
    await close(host)
  })

  it('deletes the notes the person picks by tag in three rounds: pick, confirm, done', async () => {
    const host = await connect(FORMS)
    const ids = [
      await createNote(host, 'Bulk one', ['bulk-v1']),
      await createNote(host, 'Bulk two', ['bulk-v1']),
      await createNote(host, 'Bulk three', ['bulk-v1']),
    ]
    const [first, second, third] = ids as [string, string, string]
    const answers: ElicitResult[] = [
      { action: 'accept', content: { notes: [first, third] } },
      { action: 'accept', content: { confirm: true } },
    ]
    host.person = { elicit: () => answers.shift() ?? { action: 'cancel' } }
    const result = await host.callTool('delete_notes_by_tag', { tag: 'bulk-v1' })
    expect(result.isError).toBeFalsy()
    expect(host.asked.map((ask) => ask.params.message)).toEqual([
      'Which of the 3 notes tagged "bulk-v1" should be deleted?',
      'Delete 2 notes of the 3 notes tagged "bulk-v1"? This cannot be undone.',
    ])
    const summary = result.structuredContent as {
      outcome: string
      deleted: Array<{ id: string }>
      kept: Array<{ id: string }>
    }
    expect(summary.outcome).toBe('deleted')
    expect(summary.deleted.map((note) => note.id).sort()).toEqual([first, third].sort())
    expect(summary.kept.map((note) => note.id)).toEqual([second])
    expect(await noteExists(host, first)).toBe(false)
    expect(await noteExists(host, second)).toBe(true)
    expect(await noteExists(host, third)).toBe(false)
    await close(host)
  })

  it('shares a note after the person approves on the page (url mode), then hears the elicitation complete', async () => {
    const host = await connect({ elicitation: { url: {} } })
    const id = await createNote(host, 'Shared v1')
    host.person = {
      elicit: async (params) => {
        expect(params.mode).toBe('url')
        await decideOnSharePage((params as { url: string }).url, 'approve')
        return { action: 'accept' }
      },
    }
    const result = await host.callTool('share_note', { id })
    expect(result.isError).toBeFalsy()
    expect(host.asked).toHaveLength(1)
    const ask = host.asked[0]?.params as { url: string; elicitationId: string }
    expect(ask.url).toMatch(new RegExp(`^${server.baseUrl}/share/`))
    expect(ask.elicitationId).toMatch(/^[\x21-\x7e]+$/)

    const link = /read-only at (\S+)/.exec(resultText(result))?.[1]
    expect(link).toMatch(new RegExp(`^${server.baseUrl}/shared/`))
    const shared = await fetch(link as string)
    expect(shared.status).toBe(200)
    expect(await shared.text()).toContain('Shared v1')

    const complete = await host.hear('notifications/elicitation/complete')
    expect(complete.params).toEqual({ elicitationId: ask.elicitationId })
    await close(host)
  })

  it('waits for a decision made on the page after the client accepted to open it: refused, nothing shared', async () => {
    const host = await connect({ elicitation: { url: {} } }, recorder.url)
    const id = await createNote(host, 'Refused later v1')
    host.person = { elicit: () => ({ action: 'accept' }) }
    const since = recorder.log.length
    const shared = host.callTool('share_note', { id })
    await recorder.waitFor(
      (entry) => entry.seq >= since && entry.message?.kind === 'response' && entry.ended,
      'the accept to reach the server'
    )
    await decideOnSharePage((host.asked[0]?.params as { url: string }).url, 'refuse')
    const result = await within(shared, 'share_note to finish')
    expect(resultText(result)).toBe(
      'Sharing "Refused later v1" was refused on the approval page; nothing was shared.'
    )
    const { elicitationId } = host.asked[0]?.params as { elicitationId: string }
    expect((await host.hear('notifications/elicitation/complete')).params).toEqual({
      elicitationId,
    })
    await close(host)
  })

  it('without elicitation or sampling, interactive tools answer a clear tool error and change nothing', async () => {
    const host = await connect()
    const id = await createNote(host, 'Not without a form v1', ['no-caps-v1'])
    const meetings = await tagCount(host, 'meeting')

    const deleted = await host.callTool('delete_note', { id })
    expect(deleted.isError).toBe(true)
    expect(resultText(deleted)).toMatch(/elicitation/i)
    expect(await noteExists(host, id)).toBe(true)

    const templated = await host.callTool('create_note_from_template', { template: 'meeting' })
    expect(templated.isError).toBe(true)
    expect(resultText(templated)).toMatch(/elicitation/i)
    expect(await tagCount(host, 'meeting')).toBe(meetings)

    const bulk = await host.callTool('delete_notes_by_tag', { tag: 'no-caps-v1' })
    expect(bulk.isError).toBe(true)
    expect(resultText(bulk)).toMatch(/elicitation/i)
    expect(await noteExists(host, id)).toBe(true)

    const shared = await host.callTool('share_note', { id })
    expect(shared.isError).toBe(true)
    expect(resultText(shared)).toContain('Nothing was shared.')

    // Sampling is optional for summarize_notes: it falls back to its own extract, and says so.
    const summary = await host.callTool('summarize_notes', { tags: ['no-caps-v1'] })
    expect(summary.isError).toBeFalsy()
    expect(summary.structuredContent).toMatchObject({ method: 'extractive' })
    expect(resultText(summary)).toContain('the client did not offer sampling')
    expect(host.asked).toEqual([])
    await close(host)
  })

  it('hears on its GET stream the updates of the notes it subscribed to, and only while subscribed', async () => {
    const writer = await connect()
    const first = await createNote(writer, 'Watched first v1')
    const second = await createNote(writer, 'Watched second v1')
    const since = recorder.log.length
    const watcher = await connect({}, recorder.url)
    await recorder.waitFor(
      (entry) => entry.seq >= since && entry.httpMethod === 'GET' && entry.status === 200,
      'the GET stream to open'
    )
    const update = (id: string, version: number) =>
      writer.callTool('update_note', {
        id,
        expectedVersion: version,
        body: `Version ${version + 1}.`,
      })
    const heardUris = () =>
      watcher.heard
        .filter((message) => message.method === 'notifications/resources/updated')
        .map((message) => message.params.uri)

    await watcher.client.subscribeResource({ uri: `note://${first}` })
    await update(second, 1)
    await update(first, 1)
    await watcher.hear('notifications/resources/updated', ({ uri }) => uri === `note://${first}`)

    await watcher.client.unsubscribeResource({ uri: `note://${first}` })
    await watcher.client.subscribeResource({ uri: `note://${second}` })
    await update(first, 2)
    await update(second, 2)
    await watcher.hear('notifications/resources/updated', ({ uri }) => uri === `note://${second}`)
    // Changes reach the stream in order, so what was not heard before the awaited update was never
    // sent: the updates of the notes not subscribed to at the time.
    expect(heardUris()).toEqual([`note://${first}`, `note://${second}`])
    await close(watcher)
    await close(writer)
  })

  it('ends a flow the client cancels while the person decides: a late accept deletes nothing', async () => {
    const host = await connect(FORMS, recorder.url)
    const id = await createNote(host, 'Cancelled v1')
    const { call, cancel, answer } = await cancelWhileAsked(
      host,
      recorder,
      'delete_note',
      { id },
      {
        action: 'accept',
        content: { confirm: true },
      }
    )
    expect(cancel.status).toBe(202)
    expect(call.carried).toContain((answer.message as { id: string }).id)
    expect(answer.status).toBe(202)
    expect(await noteExists(host, id)).toBe(true)
    await close(host)
  })

  it('sends progress and, after logging/setLevel, log messages on the call stream', async () => {
    const host = await connect()
    await createNote(host, 'Logged v1')
    await host.client.setLoggingLevel('debug')
    const progress: number[] = []
    const result = await host.client.callTool(
      { name: 'search_notes', arguments: { query: 'logged' } },
      undefined,
      { onprogress: (update) => progress.push(update.progress) }
    )
    expect(result.isError).toBeFalsy()
    expect(progress).toEqual([0, 1])
    const logs = host.heard.filter((message) => message.method === 'notifications/message')
    expect(logs.map((log) => log.params.level)).toEqual(['debug', 'info'])
    expect(logs.every((log) => log.params.logger === 'notes-db')).toBe(true)

    await host.client.setLoggingLevel('warning')
    await host.client.callTool({ name: 'search_notes', arguments: { query: 'logged' } })
    expect(host.heard.filter((message) => message.method === 'notifications/message')).toHaveLength(
      2
    )
    await close(host)
  })

  it('lists resources, resource templates and prompts', async () => {
    const host = await connect()
    const id = await createNote(host, 'Listed v1')
    const resources = (await host.client.listResources()).resources.map((resource) => resource.uri)
    expect(resources).toContain(`note://${id}`)
    const templates = (await host.client.listResourceTemplates()).resourceTemplates
    expect(templates.map((template) => template.uriTemplate)).toContain('note://{id}')
    const prompts = (await host.client.listPrompts()).prompts.map((prompt) => prompt.name)
    expect(prompts).toEqual(expect.arrayContaining(['review_note', 'weekly_digest']))
    await close(host)
  })

  it('keeps its session across a server restart with the same key ring and data directory', async () => {
    const host = await connect(FORMS)
    const id = await createNote(host, 'Survives restarts v1')
    const sessionId = host.transport.sessionId
    const port = new URL(server.url).port
    await server.stop()
    server = await startServer('notes', { ...env, PORT: port })

    expect(await noteExists(host, id)).toBe(true)
    host.person = { elicit: acceptingWith({ confirm: true }) }
    expect(resultText(await host.callTool('delete_note', { id }))).toBe(
      'Deleted the note "Survives restarts v1".'
    )
    expect(host.transport.sessionId).toBe(sessionId)
    await close(host)
  })

  it('ends its session with DELETE: afterwards the session id is refused with 404 -32001', async () => {
    const host = await connect()
    const sessionId = host.transport.sessionId as string
    expect((await rawPost(sessionId, { jsonrpc: '2.0', id: 1, method: 'ping' })).status).toBe(200)
    // A v1 host ends its session with terminateSession (the DELETE); close() alone sends nothing.
    await close(host)
    expect(host.transport.sessionId).toBeUndefined()

    const after = await rawPost(sessionId, { jsonrpc: '2.0', id: 2, method: 'tools/list' })
    expect(after.status).toBe(404)
    expect(await after.json()).toMatchObject({ jsonrpc: '2.0', id: 2, error: { code: -32001 } })
    const stream = await fetch(server.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId },
    })
    expect(stream.status).toBe(404)
    await stream.body?.cancel()
  })
})

describe('the official client (2.4.0) with default options', () => {
  it('connects with initialize, lists tools, creates a note and deletes it after the person accepts', async () => {
    const client = new V2Client(
      { name: 'e2e-v2-default', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } }
    )
    const asked: string[] = []
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push((request.params as { message: string }).message)
      return { action: 'accept', content: { confirm: true } }
    })
    const transport = new StreamableHTTPClientTransport(new URL(server.url))
    await client.connect(transport)
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25')
      expect(transport.sessionId).toMatch(/^[\x21-\x7e]+$/)
      const names = (await client.listTools()).tools.map((tool) => tool.name)
      expect(names).toEqual(expect.arrayContaining(NOTES_TOOLS))

      const created = await client.callTool({
        name: 'create_note',
        arguments: { title: 'From the v2 client', body: 'Default options.' },
      })
      expect(created.isError).toBeFalsy()
      const id = (created.structuredContent as { note: { id: string } }).note.id

      const deleted = await client.callTool({ name: 'delete_note', arguments: { id } })
      const text = (deleted.content as Array<{ type: string; text?: string }>)[0]?.text
      expect(text).toBe('Deleted the note "From the v2 client".')
      expect(asked).toEqual(['Delete the note "From the v2 client"? This cannot be undone.'])
      const read = await client.callTool({ name: 'get_note', arguments: { id } })
      expect(read.isError).toBe(true)
      // Like the v1 client's, close() sends no DELETE: terminateSession ends the session.
      await transport.terminateSession()
      expect(transport.sessionId).toBeUndefined()
    } finally {
      await client.close()
    }
  })
})

describe('the MCP Inspector (2.12) CLI with default options', () => {
  let home: string
  const inspector = join(import.meta.dirname, '../../node_modules/.bin/mcp-inspector')

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'notes-inspector-home-'))
  })

  afterAll(async () => {
    await rm(home, { recursive: true, force: true })
  })

  async function cli(...args: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await run(process.execPath, [inspector, '--cli', server.url, ...args], {
      env: { ...process.env, HOME: home },
      timeout: 25_000,
    })
    return JSON.parse(stdout) as Record<string, unknown>
  }

  it('lists the notes tools', async () => {
    const listed = (await cli('--method', 'tools/list')) as { tools: Array<{ name: string }> }
    expect(listed.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(NOTES_TOOLS))
  })

  it('creates a note with tools/call create_note, which any client then reads', async () => {
    const called = (await cli(
      '--method',
      'tools/call',
      '--tool-name',
      'create_note',
      '--tool-arg',
      'title=From the Inspector',
      '--tool-arg',
      'body=Written by the MCP Inspector CLI.'
    )) as { isError?: boolean; structuredContent: { note: { id: string } } }
    expect(called.isError).toBeFalsy()
    const host = await connect()
    const read = await host.callTool('get_note', { id: called.structuredContent.note.id })
    expect(read.structuredContent).toMatchObject({
      note: { title: 'From the Inspector', body: 'Written by the MCP Inspector CLI.' },
    })
    await close(host)
  })
})
