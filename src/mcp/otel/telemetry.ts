/**
 * @module mcp/otel/telemetry
 * The engine's observer port (`mcp/observer.ts`) on OpenTelemetry, assembled: `otelTelemetry` binds
 * it to a tracer and a meter the server's owner made (one `OtelRequestObservation` per MCP request or
 * notification, `request-observation.ts`; held-open streams counted, `metrics.ts`; the store
 * wrapper, `store-spans.ts`). Generic, so it is the engine's: it needs only `@opentelemetry/api`,
 * and touches none of its global state (the tracer, meter, propagator and context storage are
 * handed in), so several instances (tests, two servers in one process) never interfere. Making the
 * providers, exporters, sampler and resource is the runtime set-up's (an SDK), never this.
 *
 * Never recorded: arguments, results, resource contents, tokens, session ids as sent (the session's
 * random id is), `requestState`, task ids, the principal. Names that clients choose are bounded
 * (`request-observation.ts` says how).
 */
import {
  createNoopMeter,
  type Meter,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api'
import type {
  AppTelemetry,
  ObservedServer,
  RequestObservation,
  ServerTelemetry,
} from '../observer.ts'
import type { StreamKind } from '../stream-limits.ts'
import { isObject, type JsonObject } from '../wire.ts'
import { DEFAULT_NAMESPACE, ownNames } from './conventions.ts'
import { countOpenStream, createInstruments } from './metrics.ts'
import { OtelRequestObservation, type ObservationParts } from './request-observation.ts'
import {
  runtimeContextStorage,
  spanScope,
  W3C_TRACE_CONTEXT,
  type ContextStorage,
} from './spans.ts'
import { instrumentStore, type StoreTelemetry } from './store-spans.ts'

/**
 * What {@link otelTelemetry} records with. Everything is optional: with neither `tracer` nor
 * `meter` nothing is recorded.
 *
 * @example
 * const options: OtelTelemetryOptions = {
 *   tracer: tracerProvider.getTracer('my-server'),
 *   meter: meterProvider.getMeter('my-server'),
 *   namespace: 'my_server',
 *   database: 'postgresql',
 * }
 */
export interface OtelTelemetryOptions {
  /** Makes a SERVER span per request, child spans per sealing step and store call. Absent: no spans. */
  tracer?: Tracer
  /** Records `mcp.server.operation.duration` and the engine's own metrics. Absent: no metrics. */
  meter?: Meter
  /**
   * Reads the client's trace context from `params._meta` and the HTTP headers. Default: the W3C
   * Trace Context (`traceparent`, `tracestate`); pass a propagator for more (baggage, B3…), or
   * `propagation` of `@opentelemetry/api` for the globally registered one.
   */
  propagator?: Pick<TextMapPropagator, 'extract'>
  /**
   * Keeps the request's span across awaits, so store calls nest under it. Default: the runtime's
   * `AsyncLocalStorage` where it offers one without an import (Node, Deno, Bun, Workers with
   * Node compatibility); without, store calls get no span.
   */
  contextStorage?: ContextStorage
  /**
   * The namespace of the attributes and metrics the semantic conventions do not define
   * (`<namespace>.result_type`, `<namespace>.server.open_streams`, …). Default `stateless_mcp`.
   */
  namespace?: string
  /** `db.system.name` of store spans (`sqlite`, `postgresql`, …). Absent: not recorded. */
  database?: string
}

/** The engine's telemetry on one tracer and meter (see the module header). */
class OtelTelemetry implements AppTelemetry {
  readonly #parts: ObservationParts
  readonly #store: StoreTelemetry

  constructor(options: OtelTelemetryOptions) {
    const names = ownNames(options.namespace ?? DEFAULT_NAMESPACE)
    const scope = spanScope(options.contextStorage ?? runtimeContextStorage())
    const instruments = createInstruments(options.meter ?? createNoopMeter(), names)
    this.#parts = {
      tracer: options.tracer,
      instruments,
      scope,
      propagator: options.propagator ?? W3C_TRACE_CONTEXT,
      names,
    }
    this.#store = {
      tracer: options.tracer,
      scope,
      database: options.database,
      taskStatus: instruments.taskStatus,
      names,
    }
  }

  forServer(server: ObservedServer): ServerTelemetry {
    const parts = this.#parts
    return {
      request(message: unknown, headers: Headers): RequestObservation | undefined {
        if (!isObject(message) || typeof message.method !== 'string') return undefined
        return new OtelRequestObservation(
          parts,
          server,
          message as JsonObject & { method: string },
          headers
        )
      },
      stream(kind: StreamKind, protocolVersion: string, response: Response): Response {
        const { instruments, names } = parts
        return countOpenStream(
          instruments.openStreams,
          names.streamKind,
          kind,
          protocolVersion,
          response
        )
      },
    }
  }

  instrumentStore<T extends object>(store: T): T {
    return instrumentStore(store, this.#store)
  }
}

/**
 * The engine's telemetry on OpenTelemetry: a SERVER span per MCP request (named and attributed as
 * the semantic conventions for MCP say, parented on the client's trace context from `params._meta`
 * or the `traceparent` header), child spans for sealing steps and store calls, and the conventions'
 * `mcp.server.operation.duration` with the engine's own metrics. Give it to `createMcpServer`'s
 * `telemetry` option. Needs `@opentelemetry/api` (an optional peer of this package); the SDK that
 * makes the tracer and meter and exports what they record is yours to choose. Throws a `TypeError`
 * when `namespace` is not lowercase dot-separated words.
 *
 * @example
 * import { trace, metrics } from '@opentelemetry/api'
 * import { createMcpServer } from 'stateless-mcp'
 * import { otelTelemetry } from 'stateless-mcp/otel'
 *
 * const server = createMcpServer(definition, {
 *   telemetry: otelTelemetry({
 *     tracer: trace.getTracer('my-server'),
 *     meter: metrics.getMeter('my-server'),
 *   }),
 * })
 */
export function otelTelemetry(options: OtelTelemetryOptions = {}): AppTelemetry {
  return new OtelTelemetry(options)
}
