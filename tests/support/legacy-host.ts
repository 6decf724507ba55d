/**
 * @module tests/support/legacy-host
 * A 2025-era MCP host for end-to-end tests: the v1 SDK client (`@modelcontextprotocol/sdk` 1.32.x)
 * on its Streamable HTTP transport with default settings, and the person and the model behind it.
 * The host answers the server's `elicitation/create` and `sampling/createMessage` requests through
 * {@link LegacyHost.person} (a test sets what the person answers next), and records every request
 * and notification the server sent it. Handlers are registered only for the capabilities declared,
 * as a real host does.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js'
import type { AlternatingProxy, ProxiedMessage, ProxyEntry } from './alternating-proxy.ts'
import { within } from './within.ts'

/** The person at the host (elicitation) and the host's model (sampling). */
export interface Person {
  elicit(params: ElicitRequest['params']): ElicitResult | Promise<ElicitResult>
  sample(params: CreateMessageRequest['params']): CreateMessageResult | Promise<CreateMessageResult>
}

/** A message the server sent to the host: a request it answered or a notification it heard. */
export interface HostMessage {
  method: string
  params: Record<string, unknown>
}

export interface LegacyHost {
  client: Client
  transport: StreamableHTTPClientTransport
  /** What the person answers next; a test sets it. An ask it has no answer for fails the call. */
  person: Partial<Person>
  /** The server→client requests the host received, in order. */
  asked: HostMessage[]
  /** The notifications the host heard, in order. */
  heard: HostMessage[]
  callTool(name: string, args?: Record<string, unknown>): Promise<CallToolResult>
  /** Resolves with the first notification of `method` matching `accept` (heard before or later). */
  hear(method: string, accept?: (params: Record<string, unknown>) => boolean): Promise<HostMessage>
  /** Ends the session (DELETE) and closes the client. */
  close(): Promise<void>
}

/** The person who was not expected to be asked anything. */
const NOBODY: Person = {
  elicit: (params) => {
    throw new Error(`unexpected elicitation: ${params.message}`)
  },
  sample: () => {
    throw new Error('unexpected sampling request')
  },
}

/** Connects a v1 SDK client (initialize, initialized, GET stream) declaring `capabilities`. */
export async function connectLegacyHost(
  url: string,
  capabilities: ClientCapabilities = {}
): Promise<LegacyHost> {
  const client = new Client({ name: 'e2e-legacy-host', version: '1.0.0' }, { capabilities })
  const transport = new StreamableHTTPClientTransport(new URL(url))
  const asked: HostMessage[] = []
  const heard: HostMessage[] = []
  const listeners = new Set<(message: HostMessage) => void>()
  const host: LegacyHost = {
    client,
    transport,
    person: {},
    asked,
    heard,
    async callTool(name, args = {}) {
      return (await client.callTool({ name, arguments: args })) as CallToolResult
    },
    hear(method, accept = () => true) {
      const matches = (message: HostMessage) => message.method === method && accept(message.params)
      const earlier = heard.find(matches)
      if (earlier) return Promise.resolve(earlier)
      return within(
        new Promise<HostMessage>((resolve) => {
          const listener = (message: HostMessage) => {
            if (!matches(message)) return
            listeners.delete(listener)
            resolve(message)
          }
          listeners.add(listener)
        }),
        method
      )
    },
    async close() {
      await transport.terminateSession()
      await client.close()
    },
  }

  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push({ method: request.method, params: request.params })
      return (host.person.elicit ?? NOBODY.elicit)(request.params)
    })
  }
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      asked.push({ method: request.method, params: request.params })
      return (host.person.sample ?? NOBODY.sample)(request.params)
    })
  }
  const record = (message: HostMessage) => {
    heard.push(message)
    for (const listener of [...listeners]) listener(message)
  }
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) =>
    record({ method: notification.method, params: notification.params })
  )
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) =>
    record({ method: notification.method, params: notification.params })
  )
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) =>
    record({ method: notification.method, params: notification.params })
  )
  await client.connect(transport)
  return host
}

/**
 * The hosts a test file opened: a test closes its own, and whatever a failed test left open is
 * closed after it (`closeAll` in `afterEach`).
 */
export class OpenHosts {
  readonly #open = new Set<LegacyHost>()

  async connect(url: string, capabilities?: ClientCapabilities): Promise<LegacyHost> {
    const host = await connectLegacyHost(url, capabilities)
    this.#open.add(host)
    return host
  }

  /**
   * A host through `proxy`, once its GET stream is open there: that request never takes a turn of
   * the proxy's among the ones a test makes next.
   */
  async connectBehind(
    proxy: AlternatingProxy,
    capabilities?: ClientCapabilities
  ): Promise<LegacyHost> {
    const since = proxy.log.length
    const host = await this.connect(proxy.url, capabilities)
    await proxy.waitFor(
      (entry) => entry.seq >= since && entry.httpMethod === 'GET' && entry.status === 200,
      "the host's GET stream to open"
    )
    return host
  }

  async close(host: LegacyHost): Promise<void> {
    this.#open.delete(host)
    await host.close()
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.#open].map((host) => this.close(host).catch(() => {})))
  }
}

/** The person: accepts every form, answering `content`. */
export function acceptingWith(content: ElicitResult['content']): Person['elicit'] {
  return () => ({ action: 'accept', content })
}

/**
 * A question the person holds open until the test decides it: the seam for what a test does while
 * a form is open (cancel the call, kill the replica that asked).
 */
export interface OpenQuestion {
  /** The person's `elicit`: resolves `asked`, then waits for `decide`. */
  elicit: Person['elicit']
  /** Resolves with the question once the person has it. */
  asked: Promise<ElicitRequest['params']>
  /** What the person answers. */
  decide(answer: ElicitResult): void
}

export function openQuestion(): OpenQuestion {
  const asked = Promise.withResolvers<ElicitRequest['params']>()
  const decided = Promise.withResolvers<ElicitResult>()
  return {
    elicit: (params) => {
      asked.resolve(params)
      return decided.promise
    },
    asked: asked.promise,
    decide: decided.resolve,
  }
}

/** The host's model: answers every sampling request with `text`, as `model`. */
export function modelReplying(model: string, text: string): Person['sample'] {
  return () => ({ role: 'assistant', model, content: { type: 'text', text } })
}

/** Creates a note through `host` (`create_note`) and answers its id. */
export async function createNote(host: LegacyHost, title: string, tags: string[] = []) {
  const result = await host.callTool('create_note', { title, body: `Body of ${title}.`, tags })
  if (result.isError) throw new Error(`create_note failed: ${resultText(result)}`)
  return noteIdOf(result)
}

/** Whether `get_note` finds the note through `host`. */
export async function noteExists(host: LegacyHost, id: string): Promise<boolean> {
  return !(await host.callTool('get_note', { id })).isError
}

/** The proxy's entries of a call cancelled while its first question was open. */
export interface CancelledCall {
  /** The tools/call POST, whose stream carried the question. */
  call: ProxyEntry
  /** The `notifications/cancelled` POST. */
  cancel: ProxyEntry
  /** The answer the person gave after the server had ended the call. */
  answer: ProxyEntry
}

/**
 * Calls tool `name` through `proxy` and, while the person is deciding its first question, cancels
 * the call (the client sends `notifications/cancelled`). Once the server has ended the call's stream,
 * the person answers `late` all the same. Resolves with the proxy's entries of the three POSTs.
 */
export async function cancelWhileAsked(
  host: LegacyHost,
  proxy: AlternatingProxy,
  name: string,
  args: Record<string, unknown>,
  late: ElicitResult
): Promise<CancelledCall> {
  const question = openQuestion()
  host.person = { elicit: question.elicit }
  const since = proxy.log.length
  const is = (entry: ProxyEntry, kind: ProxiedMessage['kind'], method?: string) =>
    entry.seq >= since &&
    entry.message?.kind === kind &&
    (method === undefined || ('method' in entry.message && entry.message.method === method))

  const controller = new AbortController()
  const called = host.client.callTool({ name, arguments: args }, undefined, {
    signal: controller.signal,
  })
  await within(question.asked, `the first question of ${name}`)
  controller.abort()
  await called.then(
    () => Promise.reject(new Error(`${name} finished although it was cancelled`)),
    () => undefined
  )
  const call = await proxy.waitFor((entry) => is(entry, 'request', 'tools/call'), 'the call')
  const cancel = await proxy.waitFor(
    (entry) => is(entry, 'notification', 'notifications/cancelled') && entry.ended,
    'the cancellation'
  )
  await proxy.waitFor((entry) => entry === call && entry.ended, `the server to end ${name}`)
  question.decide(late)
  const answer = await proxy.waitFor(
    (entry) => is(entry, 'response') && entry.ended,
    'the late answer'
  )
  return { call, cancel, answer }
}

/** The text blocks of a tool result, one per line. */
export function resultText(result: CallToolResult): string {
  return result.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
}

/** The id of the note a `create_note` (or `create_note_from_template`) result describes. */
export function noteIdOf(result: CallToolResult): string {
  return (result.structuredContent as { note: { id: string } }).note.id
}
