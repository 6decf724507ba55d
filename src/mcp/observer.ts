/**
 * @module mcp/observer
 * The engine's side of telemetry: what `mcp/handler.ts`, the 2025-era face (`mcp/legacy/`) and
 * `mcp/replayable.ts` report, as interfaces only (no OpenTelemetry import, nothing at run time). An
 * engine built without telemetry holds `undefined` where these would be, and every hook is an
 * optional call on it: with telemetry off no request allocates anything for it. The implementation
 * is `telemetry/otel.ts`, loaded by the runtime entries only when telemetry is configured.
 *
 * What the engine reports is what only it knows: the message it read (method, id, target, the trace
 * context in `params._meta`), how the request ended (its result or JSON-RPC error), the 2025-era
 * session, the round of a multi round-trip flow, a refused `requestState` and its reason, the steps
 * worth a span (sealing and opening state), and the streams it holds open. Deciding names,
 * attributes, what is recorded and what never is (arguments, contents, tokens, `requestState`) is
 * the implementation's.
 */

/** The parts of a compiled server telemetry reads: the names of its own tools and prompts. */
export interface ObservedServer {
  readonly tools: ReadonlyMap<string, unknown>
  readonly prompts: ReadonlyMap<string, unknown>
}

/** Telemetry as the runtime entry hands it to the app: bound to a server by each handler. */
export interface McpTelemetry {
  forServer(server: ObservedServer): ServerTelemetry
}

/**
 * Telemetry as a composition root uses it: the engine's, plus spans around a store's calls (and the
 * status of the task records it writes), wrapped once around the store every part of the app shares.
 */
export interface AppTelemetry extends McpTelemetry {
  instrumentStore<T extends object>(store: T): T
}

/** A held-open stream: `subscriptions/listen` (2026-07-28) or a 2025-era session's GET stream. */
export type StreamKind = 'listen' | 'get'

export interface ServerTelemetry {
  /**
   * Starts observing one JSON-RPC message as parsed from a POST body: its server span (continuing
   * the trace context of `params._meta`, else of the `traceparent` header) and its duration.
   * `undefined` for anything that is not a request or a notification (a posted response, garbage).
   */
  request(message: unknown, headers: Headers): RequestObservation | undefined
  /** Counts `response`'s stream as open until its body ends or is cancelled; answers what to send. */
  stream(kind: StreamKind, protocolVersion: string, response: Response): Response
}

export interface RequestObservation {
  /** Runs `run` with this request's span current, so that spans started inside (store calls) nest. */
  run<T>(run: () => T): T
  /** A child span of this request, named `name`, around `step` (sealing or opening a state). */
  step<T>(name: string, step: () => Promise<T>): Promise<T>
  /** The 2025-era session the message belongs to (its random id) and the revision it negotiated. */
  session(id: string, protocolVersion: string): void
  /** This request is round `round` (1 for the first) of a multi round-trip flow. */
  round(round: number): void
  /** The `requestState` was refused; `reason` is the sealer's `OpenFailureReason`. */
  stateRejected(reason: string): void
  /**
   * The request ended with `result` as the handler produced it (before stamping), or without a result
   * that says more (a notification's 202, a cached list, an opened stream).
   */
  succeeded(result?: Record<string, unknown>): void
  /** The request ended with a JSON-RPC error: an `McpError`, or anything with a numeric `code`. */
  failed(error: unknown): void
}
