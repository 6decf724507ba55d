/**
 * @module scripts/loadtest/modern-agent
 * The 2026-07-28 user agent of the load test: the project's client driver (`src/client/`), stateless,
 * every round of an interactive call a new POST that any replica may serve. Where each attempt goes
 * is `routing.ts`'s business (the replica that served the call's previous round is avoided); who
 * served it is read from `X-Replica` in the driver's `onRound`, which also feeds the round latencies,
 * the cross-replica share and the re-sent rounds.
 *
 * Retries: rounds of interactive calls and searches are re-sent by the driver after a transport
 * failure (`transportRetries`): the first rounds only read, and the final rounds' side effects are
 * keyed by the sealed state's single-use nonce, so a re-sent final round acts once. `create_note`
 * goes through a second client that never re-sends (see `flows.ts`).
 */
import {
  McpClient,
  McpClientError,
  McpDriverError,
  type ElicitRequestParams,
  type ElicitResult,
  type RoundInfo,
} from '../../src/client/index.ts'
import type { JsonObject } from '../../src/mcp/wire.ts'
import {
  CallError,
  WrongOutcome,
  questionOf,
  type Agent,
  type Answerer,
  type CallLabel,
  type ToolResult,
} from './flows.ts'
import type { LatencyLabel } from './metrics.ts'
import {
  CALL_TIMEOUT_MS,
  claimRequest,
  Rotation,
  type AgentSetup,
  type Endpoint,
} from './routing.ts'

/**
 * Re-sends of one round after transport failures. With the driver's backoff (50 ms doubling to
 * 250 ms) that is about 4.6 s, longer than a killed replica stays away (direct mode with two replicas
 * waits for the one that did not serve the previous round).
 */
const TRANSPORT_RETRIES = 20

/** The driver's errors as the flows see them (a watchdog abort stays what it is). */
function callError(error: unknown): unknown {
  if (error instanceof McpDriverError) {
    return new CallError(`driver_${error.reason}`, error.message, error.reason === 'transport')
  }
  if (error instanceof McpClientError) {
    return new CallError(`rpc_${error.code}_http_${error.httpStatus}`, error.message, false)
  }
  return error
}

export class ModernAgent implements Agent {
  readonly #setup: AgentSetup
  readonly #rotation: Rotation
  /** Interactive calls and searches: rounds are re-sent after transport failures. */
  readonly #retrying: McpClient
  /** `create_note`: never re-sent by the driver. */
  readonly #once: McpClient
  /** The replica that served the current call's previous round. */
  #previous: string | undefined
  #label: CallLabel = 'flow'
  /** Replica of each round of the current call (index 0 is round 1). */
  #served: string[] = []
  #attemptStart = 0
  #attemptUrl = ''
  #answer: Answerer | undefined
  /** What the current call's answerer threw: the flow's verdict, whatever the driver made of it. */
  #answerError: unknown

  constructor(index: number, setup: AgentSetup) {
    this.#setup = setup
    this.#rotation = new Rotation(setup, index)
    const common = {
      url: setup.balancer?.url ?? (setup.replicas[0] as Endpoint).url,
      urls: () => this.#endpoint(),
      headers: () => this.#rotation.headers(this.#previous),
      onRound: (info: RoundInfo) => this.#onRound(info),
      timeoutMs: CALL_TIMEOUT_MS,
      clientInfo: { name: 'notes-loadtest', version: '0.1.0' },
    }
    this.#retrying = new McpClient({
      ...common,
      transportRetries: TRANSPORT_RETRIES,
      handlers: { elicit: async (params) => this.#elicit(params) },
    })
    this.#once = new McpClient(common)
  }

  async call(
    label: CallLabel,
    name: string,
    args: JsonObject,
    answer?: Answerer
  ): Promise<ToolResult> {
    this.#label = label
    this.#previous = undefined
    this.#served = []
    this.#answer = answer
    this.#answerError = undefined
    const client = label === 'create_note' ? this.#once : this.#retrying
    try {
      return await client.callTool(name, args, { signal: this.#setup.signal })
    } catch (error) {
      throw this.#answerError ?? callError(error)
    } finally {
      this.#answer = undefined
      if (label === 'flow') this.#countCrossings()
    }
  }

  #countCrossings(): void {
    for (let round = 1; round < this.#served.length; round++) {
      const before = this.#served[round - 1]
      const now = this.#served[round]
      if (before !== undefined && now !== undefined) this.#setup.era.laterRound(before !== now)
    }
  }

  #endpoint(): string {
    claimRequest(this.#setup)
    this.#attemptStart = performance.now()
    return (this.#attemptUrl = this.#rotation.next(this.#previous))
  }

  #onRound(info: RoundInfo): void {
    const now = performance.now()
    const { metrics, era } = this.#setup
    const replica = info.headers.get('x-replica') ?? undefined
    if (info.attempt === 2) metrics.retried(info.round, now)
    this.#rotation.settled(this.#attemptUrl, info.status, replica)
    if (!replica) return
    this.#served[info.round - 1] = replica
    this.#previous = replica
    const label: LatencyLabel = this.#label === 'flow' ? `round_${info.round}` : this.#label
    era.latency(label, now - this.#attemptStart)
  }

  #elicit(params: ElicitRequestParams): ElicitResult {
    try {
      if (!this.#answer) throw new WrongOutcome('unexpected_question', params.message)
      return this.#answer(questionOf(params))
    } catch (error) {
      this.#answerError ??= error
      throw error
    }
  }
}
