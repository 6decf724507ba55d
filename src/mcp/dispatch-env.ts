/**
 * @module mcp/dispatch-env
 * What a request is dispatched in and what it answers, shared by the method table (`dispatch.ts`,
 * which builds the env: `dispatchEnv`), tool calls (`tool-call.ts`), replayable execution
 * (`replayable.ts`) and the tasks extension (`tasks/engine.ts`, reached through the `TaskService`
 * port so that the methods need not know the engine): `DispatchEnv`, the caller, its request and
 * everything the handler lends it; `DispatchResult`, a result before the era stamps it; and
 * `callerBinding`, the one name of a caller that what is kept for it (sealed states, tasks, 2025
 * sessions) is bound to.
 */
import { canonicalJson } from './canonical-json.ts'
import type { ContextInput } from './context.ts'
import type { McpRequest } from './envelope.ts'
import type { McpLogger } from './logger.ts'
import type { RequestObservation } from './observer.ts'
import type { Journal } from './replay.ts'
import type { OpenedState, StateBinding, StateSealer } from './sealed-state.ts'
import type { CacheableResult, CompiledServer } from './server.ts'
import type { JsonObject } from './wire.ts'

export interface DispatchEnv<Deps> extends ContextInput<Deps> {
  /** The OAuth client the caller used, if known: sealed states are bound to it too. */
  client?: string
  server: CompiledServer<Deps>
  sealer: StateSealer
  logger: McpLogger
  /** The request's HTTP headers; absent for 2025-era requests, which carry no `Mcp-Param-*` headers. */
  headers?: Headers
  /** Serves the tasks extension (`tasks/*`, and `tools/call` of `task` tools); absent: no tasks. */
  tasks?: TaskService<Deps>
  /**
   * The caller's scopes as the HTTP layer reports them (`McpHttpInput`; absent without auth), for the
   * checks that only a record can decide: the scopes of a task's tool (`tasks/engine.ts`).
   */
  grantedScopes?: ReadonlySet<string>
  baseScopes?: readonly string[]
  /** This request's telemetry (`mcp/observer.ts`), when telemetry is on. */
  observation?: RequestObservation
  /**
   * Set when every round of this request's flow runs in this process (a 2025-era call: its shim,
   * `legacy/input-shim.ts`, asks the client and dispatches again itself): each round leaves its
   * state here (`StateSealer.hold`) for the next instead of sealing a `requestState`
   * (`replayable.ts`).
   */
  heldState?: { state?: OpenedState }
}

/** A result before stamping: the cache hint to attach, if the method's results are cacheable. */
export interface DispatchResult {
  result: JsonObject
  cache?: CacheableResult
  /** Set when the result came from a flow with asks (never cacheable). */
  interactive?: boolean
}

/** The tasks extension as the methods reach it; `tasks/engine.ts`'s `TaskEngine` serves it. */
export interface TaskService<Deps> {
  /**
   * Creates the task of a `tools/call` whose handler started it, with the journal of the request
   * phase, and answers `CreateTaskResult` once it is stored.
   */
  create(env: DispatchEnv<Deps>, binding: StateBinding, journal: Journal): Promise<DispatchResult>
  /** `tasks/get`, `tasks/update` and `tasks/cancel`. */
  serve(request: McpRequest, env: DispatchEnv<Deps>): Promise<DispatchResult>
}

/**
 * Who the caller is, for binding what is kept for it (sealed states, tasks): the principal, and the
 * OAuth client it came through, if known.
 */
export function callerBinding(principal: string, client: string | undefined): string {
  return client === undefined ? principal : canonicalJson([principal, client])
}
