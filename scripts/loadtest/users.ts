/**
 * @module scripts/loadtest/users
 * The virtual users of a load-test run. A share of them (`legacyShare`, spread evenly over the user
 * numbers) are 2025-era users driving the v1 SDK client (`legacy-agent.ts`); the others are
 * 2026-07-28 users driving the project's client (`modern-agent.ts`). Each one loops, until the
 * deadline or the request cap, over its era's flows (`ERA_FLOWS`, written in `flows.ts`), one at a
 * time, and keeps a ledger record per flow for the store check (`verify.ts`). Besides them,
 * `taskUsers` users (numbered after the others) run the tasks scenario (`task-flow.ts`) on the
 * 2026-07-28 agent with the tasks extension declared, with a ledger of their own
 * (`task-verify.ts`). With a `rate` (`--rate`, every `--soak`), each user paces its starts
 * (`pacing.ts`): the era users share the rate, each task user starts one flow per 30 s.
 *
 * How a flow ends, for every user: completed; failed cleanly (the agent's wire broke — a
 * `CallError` with `transport` — so the user saw an error; the store check decides whether anything
 * was left half done, and `report.ts` whether such a failure was acceptable: only a 2025 request
 * the killed replica never answered, in the fault window, see `metrics.ts`'s `FAULT_GRACE_MS`; with a
 * database fault, a request refused for the store outage); or with an
 * error (anything else: a wrong answer, a protocol error, a timeout), which fails the run.
 */
import { setTimeout as delay } from 'node:timers/promises'
import { LegacyAgent } from './legacy-agent.ts'
import {
  CallError,
  FlowRunner,
  describeError,
  errorKind,
  type Agent,
  type FlowRecord,
} from './flows.ts'
import { ERA_FLOWS, type CallMetrics, type Era, type FlowCounts, type Metrics } from './metrics.ts'
import { ModernAgent } from './modern-agent.ts'
import { pacersFor, taskPacersFor, type Pacer } from './pacing.ts'
import type { AgentSetup, RoutingSetup } from './routing.ts'
import { newTaskFlow, TaskFlowRunner, type TaskFlowRecord } from './task-flow.ts'

export interface UserSetup extends RoutingSetup {
  runId: string
  /** `performance.now()` after which no flow starts (unless {@link UserSetup.busyWhile} holds). */
  deadline: number
  /** Past the deadline, flows still start while this answers true (a fault still in progress). */
  busyWhile?: () => boolean
  /** Share of the users that are 2025-era users (0 to 1). */
  legacyShare: number
  /** Users of the tasks scenario, besides `users`. */
  taskUsers: number
  /** Flows per second the era users pace themselves to, together; `undefined`: unpaced. */
  rate?: number
  /** The run's watchdog: aborts every call in flight. */
  signal: AbortSignal
  metrics: Metrics
  ledger: FlowRecord[]
  taskLedger: TaskFlowRecord[]
}

/** What every flow's ledger record says about how it ended. */
interface FlowEnd {
  completed: boolean
  failedCleanly: boolean
  error?: string
}

/** The era of user `index` (1-based): `floor(users × share)` of them are 2025-era, evenly spread. */
function eraOf(index: number, share: number): Era {
  return Math.floor(index * share) > Math.floor((index - 1) * share) ? '2025' : 'modern'
}

/** The eras that `users` users with a 2025 share of `share` speak. */
export function erasOf(users: number, share: number): Era[] {
  const legacy = Math.floor(users * share)
  return [
    ...(legacy < users ? (['modern'] as const) : []),
    ...(legacy > 0 ? (['2025'] as const) : []),
  ]
}

/**
 * Whether a user may start another flow: before the deadline (or while the fault is in progress)
 * and the request cap, not aborted.
 */
function mayStart({ deadline, busyWhile, maxRequests, metrics, signal }: UserSetup): boolean {
  const due = performance.now() < deadline || (busyWhile?.() ?? false)
  return due && metrics.requests < maxRequests && !signal.aborted
}

/**
 * {@link mayStart}, once the user's pacer (if any) lets its next flow start: a paced start that
 * would come after the deadline (the fault no longer in progress) is not waited for.
 */
async function nextFlowDue(setup: UserSetup, pacer: Pacer | undefined): Promise<boolean> {
  if (!mayStart(setup)) return false
  if (pacer === undefined) return true
  const now = performance.now()
  const at = pacer.book(now)
  if (at >= setup.deadline && !(setup.busyWhile?.() ?? false)) return false
  if (at > now) await delay(at - now, undefined, { signal: setup.signal }).catch(() => undefined)
  return mayStart(setup)
}

/** Runs one flow and records how it ended, in its record, `counts` and `group`. */
async function settle(
  setup: UserSetup,
  record: FlowEnd,
  counts: FlowCounts,
  group: CallMetrics,
  run: () => Promise<void>
): Promise<void> {
  counts.started += 1
  try {
    await run()
    record.completed = true
    counts.completed += 1
  } catch (error) {
    record.error = describeError(error)
    if (setup.signal.aborted) {
      group.error('aborted')
    } else if (error instanceof CallError && error.transport) {
      record.failedCleanly = true
      counts.failedCleanly += 1
      group.cleanFailure(error.kind, !setup.metrics.inFaultWindow(error.at))
    } else {
      group.error(errorKind(error))
    }
  }
}

/** What an agent of a user runs with: the request cap's headroom counts every user. */
function agentSetup(setup: UserSetup, group: CallMetrics): AgentSetup {
  return { ...setup, users: setup.users + setup.taskUsers, era: group }
}

class VirtualUser {
  readonly #index: number
  readonly #era: Era
  readonly #setup: UserSetup
  readonly #agent: Agent
  readonly #flows: FlowRunner
  readonly #pacer: Pacer | undefined

  constructor(index: number, setup: UserSetup, pacer?: Pacer) {
    this.#index = index
    this.#pacer = pacer
    this.#era = eraOf(index, setup.legacyShare)
    this.#setup = setup
    const era = setup.metrics.eras[this.#era]
    era.users += 1
    const forAgent = agentSetup(setup, era)
    this.#agent =
      this.#era === '2025' ? new LegacyAgent(index, forAgent) : new ModernAgent(index, forAgent)
    this.#flows = new FlowRunner(this.#agent, setup.runId, era)
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
      // Bounded by time and by the request cap: every flow sends at least one request.
      for (let seq = 1; await nextFlowDue(this.#setup, this.#pacer); seq++) {
        const kinds = ERA_FLOWS[this.#era]
        const record: FlowRecord = {
          era: this.#era,
          kind: kinds[(this.#index + seq) % kinds.length] as FlowRecord['kind'],
          user: this.#index,
          seq,
          tag: `u${this.#index}-f${seq}`,
          notes: [],
          completed: false,
          failedCleanly: false,
        }
        this.#setup.ledger.push(record)
        await settle(this.#setup, record, era.flows[record.kind], era, () =>
          this.#flows.run(record)
        )
      }
    } finally {
      await this.#agent.close?.().catch((error: unknown) => {
        era.error(`session_end_${errorKind(error)}`)
      })
    }
  }
}

class TaskUser {
  readonly #index: number
  readonly #setup: UserSetup
  readonly #flows: TaskFlowRunner
  readonly #pacer: Pacer | undefined

  constructor(index: number, setup: UserSetup, pacer?: Pacer) {
    this.#index = index
    this.#pacer = pacer
    this.#setup = setup
    const { tasks } = setup.metrics
    tasks.users += 1
    this.#flows = new TaskFlowRunner(new ModernAgent(index, agentSetup(setup, tasks), true))
  }

  async run(): Promise<void> {
    const { tasks } = this.#setup.metrics
    for (let seq = 1; await nextFlowDue(this.#setup, this.#pacer); seq++) {
      const record = newTaskFlow(this.#setup.runId, this.#index, seq)
      this.#setup.taskLedger.push(record)
      await settle(this.#setup, record, tasks.flows, tasks, () => this.#flows.run(record))
    }
  }
}

/** Runs the virtual users to the end of the run. */
export async function runVirtualUsers(setup: UserSetup): Promise<void> {
  const start = performance.now()
  const paced = setup.rate !== undefined
  const pacers = paced ? pacersFor(setup.users, setup.rate as number, start) : []
  const taskPacers = paced ? taskPacersFor(setup.taskUsers, start) : []
  const users: Array<VirtualUser | TaskUser> = []
  for (let index = 1; index <= setup.users; index++) {
    users.push(new VirtualUser(index, setup, pacers[index - 1]))
  }
  for (let n = 1; n <= setup.taskUsers; n++) {
    users.push(new TaskUser(setup.users + n, setup, taskPacers[n - 1]))
  }
  await Promise.all(users.map((user) => user.run()))
}
