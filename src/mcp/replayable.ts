/**
 * @module mcp/replayable
 * Replayable execution: one round of a suspendable method (`tools/call`, `resources/read`,
 * `prompts/get`) in either era. `runReplayable` is the one place that knows the order: open the
 * sealed state → run the handler → gate capabilities → seal the merged journal (or, for a tool that
 * started its task, create it through `env.tasks`). The sealed journal carries the round that sealed
 * it (`r`), so the round of every request of a flow is known; with telemetry on, `runReplayable`
 * tells the request's observation that round, a refused state's reason, and runs opening and sealing
 * as its steps. A flow whose rounds all run in this process (a 2025-era call: `env.heldState`)
 * holds its state there between rounds instead (`StateSealer.hold`): nothing sealed, nothing opened.
 * What a state is bound to is `bindingFor`'s.
 */
import { ReplayHandlerContext, type TaskAvailability } from './context.ts'
import type { ToolContext } from './definitions.ts'
import { callerBinding, type DispatchEnv, type DispatchResult } from './dispatch-env.ts'
import type { McpRequest } from './envelope.ts'
import { ErrorCode, InvalidRequestStateError, McpError } from './errors.ts'
import { Replay, isSuspension, type Journal } from './replay.ts'
import { StateTooLargeError, type StateBinding } from './sealed-state.ts'
import type { CallToolResult, InputRequiredResult, JsonObject } from './wire.ts'

/** What a sealed state is bound to: the caller (and its client), the method, the target and the arguments. */
export function bindingFor<Deps>(
  env: DispatchEnv<Deps>,
  request: McpRequest,
  target: string,
  args: unknown
): StateBinding {
  return {
    principal: callerBinding(env.principal, env.client),
    method: request.method,
    target,
    args,
  }
}

/** The names of the child spans around opening and sealing `requestState`. */
const OPEN_STATE_SPAN = 'open requestState'
const SEAL_STATE_SPAN = 'seal requestState'

/** A journal as sealed: the replay's entries and the round that sealed it. */
interface RoundJournal extends Journal {
  r: number
}

/** The round that sealed an opened journal (1 for states sealed before rounds were counted). */
function sealedRound(journal: unknown): number {
  const round = (journal as Partial<RoundJournal> | undefined)?.r
  return typeof round === 'number' && Number.isSafeInteger(round) && round > 0 ? round : 1
}

interface ReplayableParams {
  inputResponses?: Record<string, unknown> | null
  requestState?: unknown
}

/**
 * Runs a suspendable handler for one round: opens the sealed state (any failure → the frozen -32602,
 * before the handler runs), re-runs the handler with the journal and this round's answers, then either
 * returns its result, throws the -32021 of an ask the client cannot serve, seals the merged journal
 * into a new `requestState` (or holds it in `env.heldState`) and answers `input_required`, or, when
 * the handler started its task (and no ask is pending: rounds resolve first), creates the task with
 * that journal and answers it.
 */
export async function runReplayable<Deps>(
  request: McpRequest,
  env: DispatchEnv<Deps>,
  binding: StateBinding,
  params: ReplayableParams,
  run: (ctx: ToolContext<Deps>) => Promise<JsonObject | CallToolResult>,
  tasks?: TaskAvailability
): Promise<DispatchResult> {
  const { observation, heldState } = env
  let journal: Journal | undefined
  let nonce: string | undefined
  let round = 1
  const held = heldState?.state
  // A flow held in this process never opens a `requestState` (its shim sends none).
  if (held !== undefined || (!heldState && params.requestState !== undefined)) {
    try {
      const opened = held
        ? env.sealer.openHeld(held)
        : await (observation
            ? observation.step(OPEN_STATE_SPAN, () => env.sealer.open(params.requestState, binding))
            : env.sealer.open(params.requestState, binding))
      journal = opened.journal as Journal
      nonce = opened.nonce
      round = sealedRound(opened.journal) + 1
    } catch (error) {
      if (!(error instanceof InvalidRequestStateError)) throw error
      env.logger.warn('requestState rejected', {
        reason: error.reason,
        method: request.method,
        target: binding.target,
      })
      observation?.stateRejected(error.reason)
      throw new McpError(ErrorCode.InvalidParams, error.message)
    }
  }
  observation?.round(round)

  const replay = new Replay(journal, params.inputResponses, request.clientCapabilities)
  const ctx = new ReplayHandlerContext(env, replay, nonce, tasks)
  let result: JsonObject | CallToolResult | undefined
  try {
    result = await run(ctx)
  } catch (error) {
    if (!isSuspension(error)) {
      if (replay.missingCapability) throw replay.missingCapability
      throw error
    }
  }
  if (replay.missingCapability) throw replay.missingCapability
  const interactive = journal !== undefined || Object.keys(params.inputResponses ?? {}).length > 0
  if (!replay.suspended) {
    if (replay.taskStarted && env.tasks) return env.tasks.create(env, binding, replay.journal())
    if (!result)
      throw new McpError(
        ErrorCode.InternalError,
        'Internal error: the handler suspended without asking anything.'
      )
    return { result: result as JsonObject, interactive }
  }
  let token: string | undefined
  try {
    // The round travels with the journal (`r`), so the round that completes the flow knows its count.
    const sealed = replay.journal() as RoundJournal
    sealed.r = round
    if (heldState) heldState.state = env.sealer.hold(binding, sealed)
    else {
      token = (
        await (observation
          ? observation.step(SEAL_STATE_SPAN, () => env.sealer.seal(binding, sealed))
          : env.sealer.seal(binding, sealed))
      ).token
    }
  } catch (error) {
    if (!(error instanceof StateTooLargeError)) throw error
    env.logger.error('requestState too large', { method: request.method, target: binding.target })
    throw new McpError(
      ErrorCode.InternalError,
      'Internal error: this flow has gathered more state than the server allows; start it again with less input.'
    )
  }
  const inputRequired: InputRequiredResult = {
    resultType: 'input_required',
    inputRequests: replay.inputRequests(),
  }
  if (token !== undefined) inputRequired.requestState = token
  return { result: inputRequired as unknown as JsonObject, interactive: true }
}
