/**
 * @module mcp/observer
 * The engine's side of telemetry: what `mcp/handler.ts`, the 2025-era face (`mcp/legacy/`) and
 * `mcp/replayable.ts` report, as interfaces only (no OpenTelemetry import, nothing at run time). An
 * engine built without telemetry holds `undefined` where these would be, and every hook is an
 * optional call on it: with telemetry off no request allocates anything for it. The implementation
 * on OpenTelemetry is `mcp/otel/` (the `stateless-mcp/otel` entry), loaded only where telemetry is
 * configured; another can implement these interfaces.
 *
 * What the engine reports is what only it knows: the message it read (method, id, target, the trace
 * context in `params._meta`), how the request ended (its result or JSON-RPC error), the 2025-era
 * session, the round of a multi round-trip flow, a refused `requestState` and its reason, the steps
 * worth a span (sealing and opening state), and the streams it holds open. Deciding names,
 * attributes, what is recorded and what never is (arguments, contents, tokens, `requestState`) is
 * the implementation's.
 */
import type { StreamKind } from './stream-limits.ts'

/**
 * The parts of a compiled server telemetry reads: the names of its own tools and prompts.
 *
 * @example
 * const known = (server: ObservedServer, tool: string) => server.tools.has(tool)
 */
export interface ObservedServer {
  readonly tools: ReadonlyMap<string, unknown>
  readonly prompts: ReadonlyMap<string, unknown>
}

/**
 * Telemetry as the runtime entry hands it to the app: bound to a server by each handler.
 *
 * @example
 * const quiet: McpTelemetry = {
 *   forServer: () => ({ request: () => undefined, stream: (_kind, _version, response) => response }),
 * }
 */
export interface McpTelemetry {
  forServer(server: ObservedServer): ServerTelemetry
}

/**
 * Telemetry as a composition root uses it: the engine's, plus spans around a store's calls (and the
 * status of the task records it writes), wrapped once around the store every part of the app shares.
 * `createMcpServer`'s `telemetry` option takes one; `otelTelemetry` of `stateless-mcp/otel` makes one.
 *
 * @example
 * import { otelTelemetry } from 'stateless-mcp/otel'
 *
 * const telemetry: AppTelemetry = otelTelemetry({ tracer: trace.getTracer('my-server') })
 * const server = createMcpServer(definition, { telemetry })
 */
export interface AppTelemetry extends McpTelemetry {
  instrumentStore<T extends object>(store: T): T
}

/**
 * Telemetry bound to one server: what its handler calls per message and per held-open stream.
 *
 * @example
 * const observation = telemetry.forServer(server).request(message, request.headers)
 * observation?.succeeded(result)
 */
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

/**
 * The observation of one request or notification, from its parsing to its answer.
 *
 * @example
 * const opened = await observation.step('open requestState', () => sealer.open(token))
 * observation.succeeded({ resultType: 'complete' })
 */
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
