/**
 * @module scripts/loadtest/routing
 * Where a virtual user's next HTTP request goes, for both eras' agents. In direct mode each user
 * keeps its own rotation over the replicas ({@link Rotation}): the next one in turn that is not the
 * replica to avoid (the previous round's, or the one holding a 2025 flow's stream, for its answers
 * and the GETs that resume it) and did not just fail, so later rounds, answers and resumed streams
 * always cross replicas, and a request whose replica died goes on to a live one when there is one. In balanced mode every request goes to nginx, naming the replica to
 * avoid in `X-Previous-Replica` when the balancer is `avoid-previous` (see `nginx-config.ts`).
 *
 * Also the run's request cap ({@link claimRequest}): every attempt of every agent counts; what an
 * agent is set up with ({@link AgentSetup}); the bound on one of its calls ({@link CALL_TIMEOUT_MS});
 * and what both agents recognise as a replica's clean refusal while the store cannot be reached
 * ({@link storeOutageAnswer}: HTTP 503, `Retry-After`, JSON-RPC `StoreUnavailable`), counted apart
 * from other 5xx, and the failure kind a call refused so ends with ({@link STORE_UNAVAILABLE_KIND}).
 */
import { ErrorCode } from '../../src/mcp/errors.ts'
import { WrongOutcome } from './flows.ts'
import type { CallMetrics, Metrics } from './metrics.ts'
import { PREVIOUS_REPLICA_HEADER } from './nginx-config.ts'

/** Bound on one tool call of either agent: every round, pause, answer and retry included. */
export const CALL_TIMEOUT_MS = 30_000
/** Direct mode: after a failed attempt, the user leaves that replica alone this long. */
const DOWN_MS = 1_000
/**
 * Requests per user the flows in flight may still send once the request cap stopped new flows (a
 * flow normally sends 2 to 9, a task flow about 10, some 20 more while a task changes hands);
 * beyond that the cap is hard and the call fails.
 */
const CAP_HEADROOM_PER_USER = 200

/** The clean failure of a call a replica refused because the store could not be reached. */
export const STORE_UNAVAILABLE_KIND = 'store_unavailable'

/** Whether a JSON-RPC error code is the store outage's (`StoreUnavailable`). */
export function isStoreUnavailableCode(code: unknown): boolean {
  return code === ErrorCode.StoreUnavailable
}

/**
 * Whether `response` is a replica's refusal because the store cannot be reached: HTTP 503 from a
 * replica (`X-Replica`) with `Retry-After` and the JSON-RPC error `StoreUnavailable`. Reads a copy
 * of the body, and only of such a 503.
 */
export async function storeOutageAnswer(response: Response): Promise<boolean> {
  const { status, headers } = response
  if (status !== 503 || !headers.has('retry-after') || !headers.has('x-replica')) return false
  try {
    const message = (await response.clone().json()) as { error?: { code?: unknown } }
    return isStoreUnavailableCode(message.error?.code)
  } catch {
    return false
  }
}

export interface Endpoint {
  id: string
  url: string
}

export interface RoutingSetup {
  /** The replicas, for direct mode. */
  replicas: Endpoint[]
  /** nginx, for balanced mode. */
  balancer?: { url: string; avoidPrevious: boolean }
  /** No flow starts once this many requests were sent; none is sent past it plus a headroom. */
  maxRequests: number
  /** How many users run (for the headroom of the request cap). */
  users: number
  metrics: Metrics
}

/** What an agent (`modern-agent.ts`, `legacy-agent.ts`) runs with. */
export interface AgentSetup extends RoutingSetup {
  /** The run's watchdog: aborts every call in flight. */
  signal: AbortSignal
  /** The counters of the agent's group of users (its era's, or the tasks scenario's). */
  era: CallMetrics
}

/** Counts one attempt, or throws once the hard cap is reached. */
export function claimRequest(setup: RoutingSetup): void {
  const { metrics, maxRequests, users } = setup
  if (metrics.requests >= maxRequests + users * CAP_HEADROOM_PER_USER) {
    throw new WrongOutcome('request_cap', `more than ${maxRequests} requests`)
  }
  metrics.requests += 1
}

/** One user's view of the replicas. */
export class Rotation {
  readonly #setup: RoutingSetup
  #cursor: number
  /** Direct mode: replicas (by URL) whose last attempt failed, until when to leave them alone. */
  readonly #down = new Map<string, number>()

  constructor(setup: RoutingSetup, start: number) {
    this.#setup = setup
    this.#cursor = start % setup.replicas.length
  }

  /** How many different places an attempt can go (nginx counts as one). */
  get width(): number {
    return this.#setup.balancer ? 1 : this.#setup.replicas.length
  }

  /**
   * The URL of the next attempt. Direct mode: the next replica in rotation that is not `avoid` and
   * did not just fail. When every other replica just failed: `avoid` itself if `fallBack` (an answer
   * may go to the replica holding its stream), else another one all the same (a modern round is
   * never sent to the replica that served the round before; the driver tries again later).
   */
  next(avoid?: string, fallBack = false): string {
    const { balancer, replicas } = this.#setup
    if (balancer) return balancer.url
    const now = performance.now()
    const rotation = replicas.map(
      (_, i) => replicas[(this.#cursor + i) % replicas.length] as Endpoint
    )
    const up = rotation.filter((replica) => (this.#down.get(replica.url) ?? 0) <= now)
    const others = rotation.filter((replica) => replica.id !== avoid)
    const chosen = (up.find((replica) => replica.id !== avoid) ??
      (fallBack ? up[0] : undefined) ??
      others[0] ??
      rotation[0]) as Endpoint
    this.#cursor = (replicas.indexOf(chosen) + 1) % replicas.length
    return chosen.url
  }

  /** The headers that steer nginx away from `avoid` (none in direct or plain round-robin mode). */
  headers(avoid?: string): Record<string, string> {
    return this.#setup.balancer?.avoidPrevious && avoid ? { [PREVIOUS_REPLICA_HEADER]: avoid } : {}
  }

  /**
   * Records how an attempt to `url` ended: `replica` is who answered (`X-Replica`); without one (no
   * response, or a gateway's), the attempt failed and direct mode leaves that replica alone a moment.
   * `storeOutage`: the answer was the store outage's refusal ({@link storeOutageAnswer}).
   */
  settled(url: string, status: number, replica: string | undefined, storeOutage = false): void {
    const { metrics } = this.#setup
    if (storeOutage) metrics.storeRefused(performance.now())
    else if (status >= 500) {
      if (replica) metrics.replica5xx += 1
      else metrics.gateway5xx += 1
    }
    if (!replica) {
      metrics.failedAttempts += 1
      this.#down.set(url, performance.now() + DOWN_MS)
      return
    }
    this.#down.delete(url)
    metrics.served(replica)
  }
}
