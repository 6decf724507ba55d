/**
 * @module scripts/bench/legacy-flow
 * The load driver of the 2025-era interactive flow, which autocannon cannot express: the answer to a
 * request goes out while that request's response is still streaming. Each virtual client (one per
 * connection) opens a session (`initialize`, `notifications/initialized`), then loops until the
 * window closes: it POSTs `tools/call confirm_echo` and reads the SSE stream of its response; when
 * the server's `elicitation/create` request arrives on it, it POSTs the confirmation as a JSON-RPC
 * response (expecting 202) on a second keep-alive socket, and reads on until the tool's result ends
 * the stream. A flow counts when the result is the echoed text. Across replicas, the answer goes to
 * another server than the one holding the call (`answerOrigin`).
 *
 * Counts per HTTP exchange (two per flow: the call, whose latency runs until its stream ends, and the
 * answer), like autocannon's: responses, verified, mismatches, socket errors and timeouts (a flow
 * not done within `FLOW_TIMEOUT_MS`). Bounded by the window, the request cap and per-flow timeouts;
 * loopback only.
 */
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Latencies, type DriveOptions, type LoadResult } from './load.ts'
import {
  confirmRequestId,
  isAccepted,
  isInitializeResult,
  isLegacyEchoMessage,
  legacyRequestsFor,
  takeSseFrames,
  LEGACY_PROTOCOL_VERSION,
  type LegacyVersion,
  type HttpRequest,
  type HttpResponse,
} from './wire.ts'

const FLOW_TIMEOUT_MS = 10_000

class FlowTimeout extends Error {
  override name = 'FlowTimeout'
}

/** Mismatch: an answer of the wrong shape (counted, the client goes on with a new flow). */
class Mismatch extends Error {
  override name = 'Mismatch'
}

interface Sent {
  status: number
  contentType: string
  response: IncomingMessage
}

function send(agent: Agent, origin: string, request: HttpRequest): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      new URL(request.path, origin),
      { method: request.method, headers: request.headers, agent },
      (response) =>
        resolve({
          status: response.statusCode ?? 0,
          contentType: String(response.headers['content-type'] ?? '').toLowerCase(),
          response,
        })
    )
    outgoing.setTimeout(FLOW_TIMEOUT_MS, () =>
      outgoing.destroy(new FlowTimeout('no answer in time'))
    )
    outgoing.once('error', reject)
    outgoing.end(request.body)
  })
}

/** The whole answer as text (for the short exchanges: initialize, notifications, answers). */
async function exchange(agent: Agent, origin: string, request: HttpRequest): Promise<HttpResponse> {
  const { status, contentType, response } = await send(agent, origin, request)
  let body = ''
  response.setEncoding('utf8')
  for await (const chunk of response) body += chunk
  const sessionId = response.headers['mcp-session-id']
  return {
    status,
    contentType,
    body,
    ...(typeof sessionId === 'string' && { sessionId }),
  }
}

/** Runs the flows as clients speaking `version` (the latest 2025 revision the server negotiates). */
/**
 * Drives the flow (module header) on `options.origin`; with `answerOrigin`, every answer is POSTed to
 * that server instead, while the call stays held by the first (a fleet: `bus-fanout.ts`).
 */
export async function runLegacyFlows(
  options: DriveOptions,
  version: LegacyVersion = LEGACY_PROTOCOL_VERSION,
  answerOrigin: string = options.origin
): Promise<LoadResult> {
  const legacyRequests = legacyRequestsFor(version)
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections * 2 })
  const latencies = new Latencies()
  /** What the flows counted, as the result reports it. */
  const counts = { responses: 0, verified: 0, mismatches: 0, errors: 0, timeouts: 0, flows: 0 }
  let firstMismatch: string | undefined
  const record = (ok: boolean, started: number, what: string) => {
    counts.responses += 1
    latencies.record(performance.now() - started)
    if (ok) counts.verified += 1
    else {
      counts.mismatches += 1
      firstMismatch ??= what
    }
  }
  const fail = (error: unknown) => {
    if (error instanceof FlowTimeout) counts.timeouts += 1
    else if (error instanceof Mismatch) {
      counts.mismatches += 1
      firstMismatch ??= error.message
    } else counts.errors += 1
  }

  let deadline = 0
  const more = () => performance.now() < deadline && counts.responses < options.maxRequests

  /** One flow on an open session: the call's stream, the answer, the result. */
  async function flow(session: string | undefined, id: number): Promise<void> {
    const callStarted = performance.now()
    const { status, contentType, response } = await send(
      agent,
      options.origin,
      legacyRequests.confirm(session, id)
    )
    if (status !== 200 || !contentType.startsWith('text/event-stream')) {
      response.resume()
      throw new Mismatch(`the call answered HTTP ${status} ${contentType}`)
    }
    response.setEncoding('utf8')
    let buffered = ''
    let answered = false
    let done = false
    // Read the stream to its end (the server ends it after the result): leaving the loop early
    // would destroy the socket, and every flow would then pay for a new connection.
    for await (const chunk of response) {
      if (done) continue
      const { messages, rest } = takeSseFrames(buffered + chunk)
      buffered = rest
      if (messages === undefined) throw new Mismatch('the stream carried a frame that is not JSON')
      for (const message of messages) {
        const requestId = confirmRequestId(message)
        if (requestId !== undefined && !answered) {
          answered = true
          const answerStarted = performance.now()
          const reply = await exchange(
            agent,
            answerOrigin,
            legacyRequests.confirmAnswer(session, requestId)
          )
          record(
            isAccepted(reply),
            answerStarted,
            `answer: HTTP ${reply.status} ${reply.body.slice(0, 200)}`
          )
        } else if (isLegacyEchoMessage(message, id)) {
          record(answered, callStarted, 'a result without the confirmation asked first')
          if (answered) counts.flows += 1
          done = true
        }
      }
    }
    if (!done) throw new Mismatch('the stream ended without the result')
  }

  /** Opens one client's session; `null` when that failed (counted). */
  async function open(): Promise<{ session: string | undefined } | null> {
    try {
      const init = await exchange(agent, options.origin, legacyRequests.initialize())
      if (!isInitializeResult(init, version)) {
        throw new Mismatch(`initialize: HTTP ${init.status} ${init.body.slice(0, 200)}`)
      }
      const initialized = await exchange(
        agent,
        options.origin,
        legacyRequests.initialized(init.sessionId)
      )
      if (!isAccepted(initialized)) throw new Mismatch(`initialized: HTTP ${initialized.status}`)
      return { session: init.sessionId }
    } catch (error) {
      fail(error)
      return null
    }
  }

  async function client(session: string | undefined, index: number): Promise<void> {
    for (let id = index * 1_000_000 + 10; more(); id++) {
      try {
        await flow(session, id)
      } catch (error) {
        fail(error)
      }
    }
  }

  let cpu: NodeJS.CpuUsage
  let seconds: number
  try {
    // Sessions first, so the window holds flows only.
    const sessions = await Promise.all(Array.from({ length: options.connections }, open))
    const cpuBefore = process.cpuUsage()
    const started = performance.now()
    deadline = started + options.durationSeconds * 1000
    await Promise.all(
      sessions.flatMap((opened, index) => (opened ? [client(opened.session, index)] : []))
    )
    seconds = (performance.now() - started) / 1000
    cpu = process.cpuUsage(cpuBefore)
  } finally {
    agent.destroy()
  }
  return {
    seconds,
    ...counts,
    latencyMs: latencies.summary(),
    loadgenCores: (cpu.user + cpu.system) / 1e6 / seconds,
    ...(firstMismatch !== undefined && { firstMismatch }),
  }
}
