/**
 * @module scripts/loadtest/legacy-agent
 * The 2025-era user agent of the load test: the v1 SDK client (`@modelcontextprotocol/sdk` 1.32.2,
 * `Client` over `StreamableHTTPClientTransport`), the client most 2025 hosts are built on, unchanged.
 * Each user holds one session for the whole run: `initialize` (revision 2025-11-25), the session's
 * GET notification stream the SDK opens after `notifications/initialized`, then every flow's
 * `tools/call` as one POST whose SSE stream carries the server's `elicitation/create` requests; the
 * SDK answers each with a POST of its own, which may reach any replica; at the end the session is
 * ended with DELETE.
 *
 * Why the SDK rather than a purpose-built driver: it holds up under the load test's load (hundreds of
 * flows per second over a few hundred `Client` instances in one process), and a load test that proves
 * 2025 flows cross replicas is worth more with the client real hosts run. What it lacks is added
 * through its one documented seam, the transport's `fetch` option (`#fetch`), not by changing it:
 * - routing (`routing.ts`): in direct mode each request goes to a replica of the user's rotation, an
 *   answer to another replica than the one holding its flow's stream while one is up; in balanced
 *   mode to nginx, naming that replica in `X-Previous-Replica` with `avoid-previous`. A request
 *   refused at connect time (never received) goes on to the next replica, as nginx's
 *   `proxy_next_upstream error` does;
 * - observation: who served each request (`X-Replica`), 5xx, failed attempts, latencies (`round_N`:
 *   from the POST or answer that starts round N to the server's next question or the result) and
 *   whether each answer reached another replica than the stream's;
 * - failing fast: the SDK reports a broken response stream and an answer POST that failed only to
 *   `onerror`, and its request would then wait for its timeout. The hook reads a copy of the call's
 *   stream (`src/client/sse.ts`) and aborts the call when the stream breaks or ends without the
 *   call's response, or when an answer POST fails: a {@link CallError} with `transport: true` (the
 *   user sees an error; the SDK tells the server with `notifications/cancelled`).
 * The SDK's own request timeout stays as the backstop, and counts as an unclean failure.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { sseData } from '../../src/client/sse.ts'
import { isObject, type JsonObject } from '../../src/mcp/wire.ts'
import { CallError, WrongOutcome, questionOf } from './flows.ts'
import type { Agent, Answerer, CallLabel, ToolResult } from './flows.ts'
import { CALL_TIMEOUT_MS, claimRequest, Rotation } from './routing.ts'
import type { AgentSetup, Endpoint } from './routing.ts'

/** Bound on one POST or DELETE, its response stream included (GET streams end with the client). */
const REQUEST_TIMEOUT_MS = CALL_TIMEOUT_MS + 5_000
/** `initialize` attempts when the handshake's transport fails. */
const CONNECT_ATTEMPTS = 3
const CLIENT_INFO = { name: 'notes-loadtest-2025', version: '0.1.0' }

/** The interactive call in flight (a user runs one call at a time). */
interface CurrentCall {
  label: CallLabel
  answer: Answerer | undefined
  /** Aborts the SDK's request: set off by the fetch hook when the call's wire broke. */
  controller: AbortController
  /** The JSON-RPC id of the `tools/call`, once its POST went out. */
  id?: unknown
  /** The replica holding the call's response stream. */
  streamReplica?: string
  round: number
  roundStart: number
  /** Why the hook aborted the call, or what it saw fail. */
  failure?: CallError
  /** What the answerer threw: the flow's verdict, whatever the SDK made of it. */
  answerError?: unknown
  settled: boolean
}

function parseMessage(body: unknown): JsonObject | undefined {
  if (typeof body !== 'string') return undefined
  try {
    const message: unknown = JSON.parse(body)
    return isObject(message) ? message : undefined
  } catch {
    return undefined
  }
}

function isResponse(message: JsonObject | undefined): boolean {
  return (
    message !== undefined && !('method' in message) && ('result' in message || 'error' in message)
  )
}

/** The connection was refused: the request never reached a replica. */
function refused(error: unknown): boolean {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined
  return cause?.code === 'ECONNREFUSED'
}

/** The SDK's errors as the flows see them (what the hook saw first wins, see `call`). */
function callError(error: unknown): unknown {
  if (error instanceof StreamableHTTPError) {
    return new CallError(`http_${error.code ?? 'unknown'}`, error.message, false)
  }
  if (error instanceof McpError) {
    return new CallError(
      error.code === -32001 ? 'timeout' : `rpc_${error.code}`,
      error.message,
      false
    )
  }
  if (error instanceof TypeError) return new CallError('connection_failed', error.message, true)
  return error
}

export class LegacyAgent implements Agent {
  readonly #setup: AgentSetup
  readonly #rotation: Rotation
  #client: Client | undefined
  #transport: StreamableHTTPClientTransport | undefined
  #current: CurrentCall | undefined

  constructor(index: number, setup: AgentSetup) {
    this.#setup = setup
    this.#rotation = new Rotation(setup, index)
  }

  /** `initialize` and `notifications/initialized`; a failed handshake is tried again, a few times. */
  async open(): Promise<void> {
    const url = this.#setup.balancer?.url ?? (this.#setup.replicas[0] as Endpoint).url
    for (let attempt = 1; ; attempt++) {
      const client = new Client(CLIENT_INFO, { capabilities: { elicitation: { form: {} } } })
      client.setRequestHandler(ElicitRequestSchema, async (request) => this.#elicit(request.params))
      const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: this.#fetch })
      const started = performance.now()
      try {
        await client.connect(transport, { timeout: CALL_TIMEOUT_MS, signal: this.#setup.signal })
        this.#setup.era.latency('initialize', performance.now() - started)
        this.#client = client
        this.#transport = transport
        return
      } catch (error) {
        await client.close().catch(() => {})
        const failure = callError(error)
        if (!(failure instanceof CallError && failure.transport) || attempt >= CONNECT_ATTEMPTS) {
          throw failure
        }
      }
    }
  }

  /** Ends the session (DELETE) and closes the client, its GET stream included. */
  async close(): Promise<void> {
    const client = this.#client
    this.#client = undefined
    try {
      if (!this.#setup.signal.aborted) await this.#transport?.terminateSession()
    } finally {
      await client?.close()
    }
  }

  async call(
    label: CallLabel,
    name: string,
    args: JsonObject,
    answer?: Answerer
  ): Promise<ToolResult> {
    const client = this.#client
    if (!client) throw new CallError('not_connected', 'the session is not open', false)
    const call: CurrentCall = {
      label,
      answer,
      controller: new AbortController(),
      round: 1,
      roundStart: performance.now(),
      settled: false,
    }
    this.#current = call
    const started = performance.now()
    try {
      const result = await client.callTool({ name, arguments: args }, undefined, {
        signal: AbortSignal.any([call.controller.signal, this.#setup.signal]),
        timeout: CALL_TIMEOUT_MS,
      })
      const now = performance.now()
      if (label === 'flow') this.#setup.era.latency(`round_${call.round}`, now - call.roundStart)
      else this.#setup.era.latency(label, now - started)
      return result as ToolResult
    } catch (error) {
      if (this.#setup.signal.aborted) throw this.#setup.signal.reason
      throw call.answerError ?? call.failure ?? callError(error)
    } finally {
      call.settled = true
      this.#current = undefined
    }
  }

  #elicit(params: { message: string; requestedSchema?: unknown }): {
    action: 'accept' | 'decline' | 'cancel'
    content?: Record<string, string | number | boolean | string[]>
  } {
    const call = this.#current
    try {
      if (!call?.answer) throw new WrongOutcome('unexpected_question', params.message)
      this.#setup.era.latency(`round_${call.round}`, performance.now() - call.roundStart)
      return call.answer(questionOf(params))
    } catch (error) {
      if (call) call.answerError ??= error
      throw error
    }
  }

  /** Aborts `call` (if still in flight) with what broke its wire. */
  #break(call: CurrentCall, failure: CallError): void {
    if (call.settled || call !== this.#current) return
    call.failure ??= failure
    call.controller.abort(failure)
  }

  /** Every request the SDK sends: see the module header. */
  readonly #fetch = async (_input: string | URL | Request, init: RequestInit = {}) => {
    const { era } = this.#setup
    const message = parseMessage(init.body)
    const call = this.#current
    const isCall = call !== undefined && message?.method === 'tools/call'
    const isAnswer = call !== undefined && isResponse(message)
    if (isCall) call.id = message?.id
    if (isAnswer) {
      call.round += 1
      call.roundStart = performance.now()
    }
    const avoid = isAnswer ? call.streamReplica : undefined
    const signal =
      (init.method ?? 'GET') === 'GET' || !init.signal
        ? init.signal
        : AbortSignal.any([init.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)])
    const started = performance.now()
    let response: Response
    let url: string
    for (let attempt = 1; ; attempt++) {
      claimRequest(this.#setup)
      url = this.#rotation.next(avoid, true)
      const headers = new Headers(init.headers)
      for (const [name, value] of Object.entries(this.#rotation.headers(avoid))) {
        headers.set(name, value)
      }
      try {
        response = await fetch(url, { ...init, headers, signal })
      } catch (error) {
        if (init.signal?.aborted) throw error
        this.#rotation.settled(url, 0, undefined)
        if (refused(error) && attempt < this.#rotation.width) continue
        const failure = new CallError(
          isAnswer ? 'answer_undelivered' : 'connection_failed',
          error instanceof Error ? error.message : String(error),
          true
        )
        if (isAnswer) this.#break(call, failure)
        else if (isCall) call.failure ??= failure
        throw error
      }
      break
    }
    const replica = response.headers.get('x-replica') ?? undefined
    this.#rotation.settled(url, response.status, replica)
    if (isAnswer) {
      era.latency('answer_post', performance.now() - started)
      if (replica && call.streamReplica) era.laterRound(replica !== call.streamReplica)
      if (!response.ok) {
        this.#break(
          call,
          new CallError(
            replica ? `answer_http_${response.status}` : `answer_gateway_${response.status}`,
            `the answer POST got HTTP ${response.status}`,
            !replica
          )
        )
      }
      return response
    }
    if (!isCall) return response
    if (!response.ok) {
      // The SDK throws for it; the flow learns whether it came from the gateway or a replica.
      call.failure ??= new CallError(
        replica ? `http_${response.status}` : `gateway_${response.status}`,
        `the tools/call POST got HTTP ${response.status}`,
        !replica
      )
      return response
    }
    call.streamReplica = replica
    if (!response.body || !response.headers.get('content-type')?.includes('text/event-stream')) {
      return response
    }
    const [watched, passed] = response.body.tee()
    void this.#watch(watched, call)
    return new Response(passed, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    })
  }

  /** Reads the copy of a call's stream; a stream that breaks or ends without the response breaks it. */
  async #watch(body: ReadableStream<Uint8Array>, call: CurrentCall): Promise<void> {
    let answered = false
    try {
      for await (const data of sseData(body, this.#setup.signal)) {
        const message = parseMessage(data)
        if (message && isResponse(message) && message.id === call.id) answered = true
      }
      if (!answered) {
        this.#break(call, new CallError('stream_ended', 'the stream ended without a result', true))
      }
    } catch (error) {
      if (!answered) {
        const reason = error instanceof Error ? error.message : String(error)
        this.#break(call, new CallError('stream_broken', reason, true))
      }
    }
  }
}
