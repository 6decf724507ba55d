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
 * - resuming: every 2025 POST stream opens with a priming event and numbers its events, so when a
 *   call's stream breaks or ends without the response the SDK resumes it by itself with a GET and
 *   `Last-Event-ID` (its default `reconnectionOptions`: 1 s, then 1.5 s, 2 attempts). The hook knows
 *   the call's resume GET by that id (the SDK's `onresumptiontoken`), routes it like an answer, away
 *   from the replica that held the stream, and from then on takes the replica that answered it for
 *   the stream's;
 * - failing fast where the SDK cannot go on and its request would wait for its timeout: the
 *   `tools/call` POST got no answer at all (a gateway 5xx, a connection that failed, or a stream that
 *   ended or broke before its first event, so with no id to resume from): `call_post_unanswered`; an
 *   answer POST that got no answer (a gateway 5xx, a connection that failed; the SDK never sends it
 *   again): `answer_post_unanswered`; a resume the SDK gave up on (as many failed GETs as its
 *   attempts, or a resumed stream that has nothing to send): `stream_broken_unresumed`. Each aborts
 *   the call with a {@link CallError} with `transport: true` (the user sees an error; the SDK tells
 *   the server with `notifications/cancelled`). The first two mean the killed replica never answered
 *   the request ({@link UNANSWERED_KINDS}, what `report.ts` lets a 2025 flow fail with in the fault
 *   window); the last fails the run.
 * The SDK's own request timeout stays as the backstop, and counts as an unclean failure.
 *
 * The store outage (a database fault): a request of the call that a replica refused because the
 * store could not be reached (`storeOutageAnswer`: 503, `Retry-After`, -32030), or a call whose
 * stream carried the -32030 error, fails cleanly as {@link STORE_UNAVAILABLE_KIND}: the SDK reads no
 * `Retry-After` and re-sends nothing, so the user sees the error.
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
import {
  CALL_TIMEOUT_MS,
  claimRequest,
  isStoreUnavailableCode,
  Rotation,
  STORE_UNAVAILABLE_KIND,
  storeOutageAnswer,
} from './routing.ts'
import type { AgentSetup, Endpoint } from './routing.ts'

/** Bound on one POST or DELETE, its response stream included (GET streams end with the client). */
const REQUEST_TIMEOUT_MS = CALL_TIMEOUT_MS + 5_000
/** `initialize` attempts when the handshake's transport fails. */
const CONNECT_ATTEMPTS = 3
/** The GETs the SDK tries to resume one stream with before it gives up (its default `maxRetries`). */
const SDK_RESUME_ATTEMPTS = 2
const CLIENT_INFO = { name: 'notes-loadtest-2025', version: '0.1.0' }

/**
 * The clean failures that mean the killed replica never answered the request (module header): the
 * only ones a 2025 flow may end with, and only in the fault window.
 */
export const UNANSWERED_KINDS: readonly string[] = [
  'call_post_unanswered',
  'answer_post_unanswered',
]

/** The interactive call in flight (a user runs one call at a time). */
interface CurrentCall {
  label: CallLabel
  answer: Answerer | undefined
  /** Aborts the SDK's request: set off by the fetch hook when the call cannot go on. */
  controller: AbortController
  /** The replica holding the call's response stream (the one a resume GET reached, after one). */
  streamReplica?: string
  /** The id of the last event the SDK read on the call's streams: what it resumes from. */
  lastEventId?: string
  /** Resume GETs of the call that failed since the last one that opened a stream. */
  failedResumes: number
  /** Resume GETs of the call that opened a stream. */
  resumes: number
  round: number
  roundStart: number
  /** Why the hook aborted the call, or what it saw fail. */
  failure?: CallError
  /** What the answerer threw: the flow's verdict, whatever the SDK made of it. */
  answerError?: unknown
  settled: boolean
}

/** What a request the SDK sends is to the call in flight. */
type Role = 'call' | 'answer' | 'resume' | 'other'

const REQUEST_NAMES = { call: 'tools/call POST', answer: 'answer POST', resume: 'resume GET' }

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

/**
 * The SDK's errors as the flows see them (what the hook saw first wins, see `call`); a timeout says
 * where the call's stream was (`wire`).
 */
function callError(error: unknown, wire: string): unknown {
  if (error instanceof StreamableHTTPError) {
    return new CallError(`http_${error.code ?? 'unknown'}`, error.message, false)
  }
  if (error instanceof McpError && isStoreUnavailableCode(error.code)) {
    return new CallError(STORE_UNAVAILABLE_KIND, error.message, true)
  }
  if (error instanceof McpError) {
    return new CallError(
      error.code === -32001 ? 'timeout' : `rpc_${error.code}`,
      error.code === -32001 ? `${error.message} (${wire})` : error.message,
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
        const failure = callError(error, 'the handshake')
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
      failedResumes: 0,
      resumes: 0,
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
        onresumptiontoken: (eventId) => (call.lastEventId = eventId),
      })
      const now = performance.now()
      if (label === 'flow') this.#setup.era.latency(`round_${call.round}`, now - call.roundStart)
      else this.#setup.era.latency(label, now - started)
      return result as ToolResult
    } catch (error) {
      if (this.#setup.signal.aborted) throw this.#setup.signal.reason
      const wire =
        `stream on ${call.streamReplica ?? 'no replica'}, last event ` +
        `${call.lastEventId ?? 'none'}, resumed ${call.resumes} times`
      throw call.answerError ?? call.failure ?? callError(error, wire)
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

  /** Aborts `call` (if still in flight) with what keeps it from going on. */
  #break(call: CurrentCall, failure: CallError): void {
    if (call.settled || call !== this.#current) return
    call.failure ??= failure
    call.controller.abort(failure)
  }

  /** A resume GET of `call` failed: once the SDK has no attempt left, the call cannot go on. */
  #resumeFailed(call: CurrentCall, reason: string): void {
    call.failedResumes += 1
    if (call.failedResumes < SDK_RESUME_ATTEMPTS) return
    this.#break(
      call,
      new CallError(
        'stream_broken_unresumed',
        `the SDK gave up resuming the call's stream from ${call.lastEventId ?? 'no event'}: ${reason}`,
        true
      )
    )
  }

  /** Sends one request of the SDK's to a replica (module header: routing), away from `avoid`. */
  async #send(init: RequestInit, avoid: string | undefined): Promise<[Response, string]> {
    const signal =
      (init.method ?? 'GET') === 'GET' || !init.signal
        ? init.signal
        : AbortSignal.any([init.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)])
    for (let attempt = 1; ; attempt++) {
      claimRequest(this.#setup)
      const url = this.#rotation.next(avoid, true)
      const headers = new Headers(init.headers)
      for (const [name, value] of Object.entries(this.#rotation.headers(avoid))) {
        headers.set(name, value)
      }
      try {
        return [await fetch(url, { ...init, headers, signal }), url]
      } catch (error) {
        if (init.signal?.aborted) throw error
        this.#rotation.settled(url, 0, undefined)
        if (!refused(error) || attempt >= this.#rotation.width) throw error
      }
    }
  }

  /** Every request the SDK sends: see the module header. */
  readonly #fetch = async (_input: string | URL | Request, init: RequestInit = {}) => {
    const call = this.#current
    const role = call ? roleOf(call, init) : 'other'
    if (!call || role === 'other') return (await this.#send(init, undefined))[0]
    if (role === 'answer') {
      call.round += 1
      call.roundStart = performance.now()
    }
    const started = performance.now()
    let response: Response
    let url: string
    try {
      ;[response, url] = await this.#send(init, role === 'call' ? undefined : call.streamReplica)
    } catch (error) {
      if (!init.signal?.aborted) this.#unanswered(call, role, describe(error))
      throw error
    }
    const replica = response.headers.get('x-replica') ?? undefined
    const refusedForStore = await storeOutageAnswer(response)
    this.#rotation.settled(url, response.status, replica, refusedForStore)
    if (role === 'answer') {
      this.#setup.era.latency('answer_post', performance.now() - started)
      if (replica && call.streamReplica) this.#setup.era.laterRound(replica !== call.streamReplica)
    }
    if (!response.ok) {
      const what = `the ${REQUEST_NAMES[role]} got HTTP ${response.status}`
      if (!replica) this.#unanswered(call, role, what)
      else if (refusedForStore) {
        this.#break(call, new CallError(STORE_UNAVAILABLE_KIND, `${what}: the store outage`, true))
      } else {
        const said = await response
          .clone()
          .text()
          .catch(() => '')
        const told = `${what}: ${said.slice(0, 200)}`
        if (role === 'resume') this.#resumeFailed(call, told)
        else this.#break(call, new CallError(`${role}_http_${response.status}`, told, false))
      }
      return response
    }
    if (role === 'answer') return response
    const streaming = response.headers.get('content-type')?.includes('text/event-stream')
    if (role === 'resume') {
      if (!response.body || !streaming) {
        const what = `the resume GET got HTTP ${response.status} without a stream`
        this.#break(call, new CallError('stream_broken_unresumed', what, true))
        return response
      }
      call.failedResumes = 0
      call.resumes += 1
      this.#setup.era.resumed()
    }
    call.streamReplica = replica
    if (role === 'resume' || !response.body || !streaming) return response
    const [watched, passed] = response.body.tee()
    void this.#watch(watched, call)
    return new Response(passed, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    })
  }

  /** A request of `call` that got no replica's answer (a gateway 5xx, a failed connection). */
  #unanswered(call: CurrentCall, role: Exclude<Role, 'other'>, reason: string): void {
    if (role === 'resume') this.#resumeFailed(call, reason)
    else this.#break(call, new CallError(`${role}_post_unanswered`, reason, true))
  }

  /**
   * Reads the copy of a call's POST stream: one that ends or breaks before its first event leaves
   * the SDK no id to resume from. (Every event of a 2025 stream has an id, the priming event first;
   * after one, the SDK resumes by itself.)
   */
  async #watch(body: ReadableStream<Uint8Array>, call: CurrentCall): Promise<void> {
    let reason = 'the stream ended before its first event'
    try {
      for await (const _event of sseData(body, this.#setup.signal)) return
    } catch (error) {
      reason = `the stream broke before its first event: ${describe(error)}`
    }
    if (!this.#setup.signal.aborted) {
      this.#break(call, new CallError('call_post_unanswered', reason, true))
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** What `init` is to `call`: its POST, an answer to its question, the SDK resuming its stream. */
function roleOf(call: CurrentCall, init: RequestInit): Role {
  const message = parseMessage(init.body)
  if (message?.method === 'tools/call') return 'call'
  if (isResponse(message)) return 'answer'
  const resumesFrom = new Headers(init.headers).get('last-event-id')
  if ((init.method ?? 'GET') === 'GET' && resumesFrom !== null) {
    return resumesFrom === call.lastEventId ? 'resume' : 'other'
  }
  return 'other'
}
