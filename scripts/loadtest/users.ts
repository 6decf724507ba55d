/**
 * @module scripts/loadtest/users
 * The virtual users of a load-test run. A share of them (`legacyShare`, spread evenly over the user
 * numbers) are 2025-era users driving the v1 SDK client (`legacy-agent.ts`); the others are
 * 2026-07-28 users driving the project's client (`modern-agent.ts`). Each one loops, until the
 * deadline or the request cap, over its era's flows (`ERA_FLOWS`, written in `flows.ts`), one at a
 * time, and keeps a ledger record per flow for the store check (`verify.ts`).
 *
 * How a flow ends: completed; failed cleanly (the agent's wire broke — a `CallError` with
 * `transport` — so the user saw an error; the store check decides whether anything was left half
 * done, and `report.ts` whether such a failure was acceptable: only in the fault window, see
 * {@link FAULT_GRACE_MS}); or with an error (anything else: a wrong answer, a protocol error, a
 * timeout), which fails the run.
 */
import { LegacyAgent } from './legacy-agent.ts'
import {
  CallError,
  FlowRunner,
  describeError,
  errorKind,
  type Agent,
  type FlowRecord,
} from './flows.ts'
import { ERA_FLOWS, type Era, type Metrics } from './metrics.ts'
import { ModernAgent } from './modern-agent.ts'
import type { AgentSetup, RoutingSetup } from './routing.ts'

/**
 * A clean failure counts as caused by the fault when it happened between the SIGKILL and this long
 * after the restart (nginx leaves a failed replica alone for 1 s; streams break at the kill).
 */
const FAULT_GRACE_MS = 5_000

export interface UserSetup extends RoutingSetup {
  runId: string
  /** `performance.now()` after which no flow starts. */
  deadline: number
  /** Share of the users that are 2025-era users (0 to 1). */
  legacyShare: number
  /** The run's watchdog: aborts every call in flight. */
  signal: AbortSignal
  metrics: Metrics
  ledger: FlowRecord[]
}

/** The era of user `index` (1-based): `floor(users × share)` of them are 2025-era, evenly spread. */
function eraOf(index: number, share: number): Era {
  return Math.floor(index * share) > Math.floor((index - 1) * share) ? '2025' : 'modern'
}

class VirtualUser {
  readonly #index: number
  readonly #era: Era
  readonly #setup: UserSetup
  readonly #agent: Agent
  readonly #flows: FlowRunner

  constructor(index: number, setup: UserSetup) {
    this.#index = index
    this.#era = eraOf(index, setup.legacyShare)
    this.#setup = setup
    const agentSetup: AgentSetup = { ...setup, era: setup.metrics.eras[this.#era] }
    agentSetup.era.users += 1
    this.#agent =
      this.#era === '2025' ? new LegacyAgent(index, agentSetup) : new ModernAgent(index, agentSetup)
    this.#flows = new FlowRunner(this.#agent, setup.runId, agentSetup.era)
  }

  async run(): Promise<void> {
    const era = this.#setup.metrics.eras[this.#era]
    try {
      await this.#agent.open?.()
    } catch (error) {
      era.error(`connect_${errorKind(error)}`)
      return
    }
    try {
      await this.#loop()
    } finally {
      await this.#agent.close?.().catch((error: unknown) => {
        era.error(`session_end_${errorKind(error)}`)
      })
    }
  }

  async #loop(): Promise<void> {
    const { deadline, maxRequests, metrics, signal } = this.#setup
    const kinds = ERA_FLOWS[this.#era]
    // Bounded by time and by the request cap: every flow sends at least one request.
    for (let seq = 1; ; seq++) {
      if (performance.now() >= deadline || metrics.requests >= maxRequests || signal.aborted) return
      const kind = kinds[(this.#index + seq) % kinds.length] as FlowRecord['kind']
      await this.#flow({
        era: this.#era,
        kind,
        user: this.#index,
        seq,
        tag: `u${this.#index}-f${seq}`,
        notes: [],
        completed: false,
        failedCleanly: false,
      })
    }
  }

  async #flow(record: FlowRecord): Promise<void> {
    const { ledger, metrics, signal } = this.#setup
    const era = metrics.eras[this.#era]
    ledger.push(record)
    era.flows[record.kind].started += 1
    try {
      await this.#flows.run(record)
      record.completed = true
      era.flows[record.kind].completed += 1
    } catch (error) {
      record.error = describeError(error)
      if (signal.aborted) {
        era.error('aborted')
      } else if (error instanceof CallError && error.transport) {
        record.failedCleanly = true
        era.flows[record.kind].failedCleanly += 1
        era.cleanFailure(error.kind, !metrics.inFaultWindow(error.at, FAULT_GRACE_MS))
      } else {
        era.error(errorKind(error))
      }
    }
  }
}

/** Runs the virtual users to the end of the run. */
export async function runVirtualUsers(setup: UserSetup): Promise<void> {
  const users = Array.from({ length: setup.users }, (_, index) => new VirtualUser(index + 1, setup))
  await Promise.all(users.map((user) => user.run()))
}
