/**
 * The load test's 2025 agent (`scripts/loadtest/legacy-agent.ts`, the v1 SDK client behind its fetch
 * hook) against a scripted server on loopback: a call whose stream breaks after its priming event is
 * resumed by the SDK (GET with `Last-Event-ID`) and finishes; a call fails fast, with the kind the
 * load test's pass rule reads, where the SDK cannot go on: its `tools/call` POST unanswered (a
 * gateway 502, a stream cut before its first event), its answer POST unanswered, a resume refused as
 * often as the SDK tries.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { CallError } from '../../scripts/loadtest/flows.ts'
import { LegacyAgent } from '../../scripts/loadtest/legacy-agent.ts'
import { Metrics } from '../../scripts/loadtest/metrics.ts'

/** What the scripted server does with a `tools/call`, and with a resume GET. */
type Script = 'resumable' | 'cut-before-event' | 'gateway-502' | 'unresumable' | 'answer-502'

const RESULT = { content: [{ type: 'text', text: 'done' }] }
const QUESTION = {
  message: 'Confirm?',
  requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } },
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => resolve(body))
    request.on('error', reject)
  })
}

function json(response: ServerResponse, status: number, body?: unknown, replica = true): void {
  response.writeHead(status, {
    'content-type': 'application/json',
    'mcp-session-id': 'session-1',
    ...(replica ? { 'x-replica': 'r1' } : {}),
  })
  response.end(body === undefined ? undefined : JSON.stringify(body))
}

/** An SSE response from replica r1, with a short `retry` so that the SDK resumes at once. */
function sse(response: ServerResponse, ...events: Array<[string, unknown]>): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'x-replica': 'r1' })
  response.write('retry: 1\n\n')
  for (const [id, message] of events) {
    response.write(`id: ${id}\ndata: ${message === '' ? '' : JSON.stringify(message)}\n\n`)
  }
}

/** Sends what was written, then drops the connection (what a SIGKILLed replica does to a stream). */
function cut(response: ServerResponse): void {
  response.socket?.end(() => response.socket?.destroy())
}

class ScriptedServer {
  readonly script: Script
  readonly resumes: string[] = []
  #server: Server | undefined
  #callId: unknown

  constructor(script: Script) {
    this.script = script
  }

  async start(): Promise<string> {
    this.#server = createServer((request, response) => void this.#serve(request, response))
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/mcp`
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections()
    await new Promise((resolve) => this.#server?.close(resolve))
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method === 'DELETE') return json(response, 200)
    if (request.method === 'GET') return this.#resume(request, response)
    const message = JSON.parse(await readBody(request)) as {
      id?: unknown
      method?: string
    }
    if (message.method === 'initialize') {
      return json(response, 200, {
        jsonrpc: '2.0',
        id: message.id,
        result: {
          protocolVersion: '2025-11-25',
          capabilities: { tools: {} },
          serverInfo: { name: 'scripted', version: '1.0.0' },
        },
      })
    }
    if (message.method === 'tools/call') return this.#call(message.id, response)
    if (message.method === undefined && this.script === 'answer-502') {
      return json(response, 502, undefined, false)
    }
    json(response, 202)
  }

  #call(id: unknown, response: ServerResponse): void {
    this.#callId = id
    switch (this.script) {
      case 'gateway-502':
        return json(response, 502, undefined, false)
      case 'cut-before-event':
        response.writeHead(200, { 'content-type': 'text/event-stream', 'x-replica': 'r1' })
        response.flushHeaders()
        return cut(response)
      case 'answer-502':
        return sse(
          response,
          ['p1.0', ''],
          ['p1.1', { jsonrpc: '2.0', id: 'q1', method: 'elicitation/create', params: QUESTION }]
        )
      default:
        sse(response, ['p1.0', ''])
        return cut(response)
    }
  }

  #resume(request: IncomingMessage, response: ServerResponse): void {
    const lastEventId = request.headers['last-event-id']
    if (typeof lastEventId !== 'string') {
      response.writeHead(405)
      return void response.end()
    }
    this.resumes.push(lastEventId)
    if (this.script === 'unresumable') return json(response, 400, { error: 'unknown stream' })
    sse(response, ['p1.1', { jsonrpc: '2.0', id: this.#callId, result: RESULT }])
    response.end()
  }
}

let server: ScriptedServer | undefined
let agent: LegacyAgent | undefined

afterEach(async () => {
  await agent?.close().catch(() => {})
  await server?.stop()
  agent = server = undefined
})

async function connect(script: Script): Promise<{ agent: LegacyAgent; metrics: Metrics }> {
  server = new ScriptedServer(script)
  const url = await server.start()
  const metrics = new Metrics()
  agent = new LegacyAgent(0, {
    replicas: [{ id: 'r1', url }],
    maxRequests: 1_000,
    users: 1,
    metrics,
    signal: new AbortController().signal,
    era: metrics.eras['2025'],
  })
  await agent.open()
  return { agent, metrics }
}

async function failureOf(call: Promise<unknown>): Promise<CallError> {
  const error: unknown = await call.then(
    () => undefined,
    (reason: unknown) => reason
  )
  expect(error).toBeInstanceOf(CallError)
  return error as CallError
}

describe('the load test 2025 agent', () => {
  it('lets the SDK resume a stream broken after its priming event, and the call finishes', async () => {
    const { agent, metrics } = await connect('resumable')
    const result = await agent.call('flow', 'delete_note', { id: 'n1' })
    expect(result).toEqual(RESULT)
    expect(server?.resumes).toEqual(['p1.0'])
    expect(metrics.eras['2025'].streamsResumed).toBe(1)
  })

  it('fails a call whose stream broke before its first event: call_post_unanswered', async () => {
    const { agent } = await connect('cut-before-event')
    const failure = await failureOf(agent.call('flow', 'delete_note', { id: 'n1' }))
    expect(failure.kind).toBe('call_post_unanswered')
    expect(failure.transport).toBe(true)
    expect(server?.resumes).toEqual([])
  })

  it('fails a call whose POST got a gateway 502: call_post_unanswered', async () => {
    const { agent } = await connect('gateway-502')
    const failure = await failureOf(agent.call('flow', 'delete_note', { id: 'n1' }))
    expect(failure.kind).toBe('call_post_unanswered')
    expect(failure.transport).toBe(true)
  })

  it('fails a call whose answer POST got a gateway 502: answer_post_unanswered', async () => {
    const { agent } = await connect('answer-502')
    const failure = await failureOf(
      agent.call('flow', 'delete_note', { id: 'n1' }, () => ({
        action: 'accept',
        content: { confirm: true },
      }))
    )
    expect(failure.kind).toBe('answer_post_unanswered')
    expect(failure.transport).toBe(true)
  })

  it('fails a call once the SDK gave up resuming its stream: stream_broken_unresumed', async () => {
    const { agent } = await connect('unresumable')
    const failure = await failureOf(agent.call('flow', 'delete_note', { id: 'n1' }))
    expect(failure.kind).toBe('stream_broken_unresumed')
    expect(failure.message).toMatch(/from p1\.0: the resume GET got HTTP 400: .*unknown stream/)
    expect(server?.resumes).toEqual(['p1.0', 'p1.0'])
  })
})
