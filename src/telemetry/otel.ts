/**
 * @module telemetry/otel
 * The engine's telemetry (`mcp/observer.ts`) on OpenTelemetry, for both runtimes, assembled:
 * `OtelTelemetry` binds the observer port to a tracer and a meter (one `OtelRequestObservation` per
 * MCP request or notification, `request-observation.ts`; held-open streams counted, `metrics.ts`;
 * the store wrapper, `store-spans.ts`), and `startTelemetry` builds the providers from a runtime's
 * exporters and readers (`node/telemetry.ts`, `workers/telemetry.ts` choose them) with the resource
 * and sampler the configuration names. Nothing here touches the global OpenTelemetry API state, so
 * several instances (tests) never interfere.
 *
 * Never recorded: arguments, results, note contents, tokens, session ids as sent (the session's
 * random id is), `requestState`, task ids, the principal. Names that clients choose are bounded
 * (`request-observation.ts` says how).
 */
import {
  createNoopMeter,
  type MeterProvider as ApiMeterProvider,
  type Tracer,
} from '@opentelemetry/api'
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources'
import { MeterProvider, type MetricReader } from '@opentelemetry/sdk-metrics'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace'
import type {
  AppTelemetry,
  ObservedServer,
  RequestObservation,
  ServerTelemetry,
  StreamKind,
} from '../mcp/observer.ts'
import { isObject, type JsonObject } from '../mcp/wire.ts'
import { ATTR } from './conventions.ts'
import { DEFAULT_SERVICE_NAME, type SpanBatch, type TelemetryConfig } from './env.ts'
import { countOpenStream, createInstruments, type Instruments } from './metrics.ts'
import { OtelRequestObservation } from './request-observation.ts'
import type { SpanScope } from './spans.ts'
import { instrumentStore, type StoreTelemetry } from './store-spans.ts'

const INSTRUMENTATION = 'notes-mcp'

class ObservedHandler implements ServerTelemetry {
  readonly #telemetry: OtelTelemetry
  readonly #server: ObservedServer

  constructor(telemetry: OtelTelemetry, server: ObservedServer) {
    this.#telemetry = telemetry
    this.#server = server
  }

  request(message: unknown, headers: Headers): RequestObservation | undefined {
    if (!isObject(message) || typeof message.method !== 'string') return undefined
    return this.#telemetry.observe(
      this.#server,
      message as JsonObject & { method: string },
      headers
    )
  }

  stream(kind: StreamKind, protocolVersion: string, response: Response): Response {
    return this.#telemetry.countStream(kind, protocolVersion, response)
  }
}

export interface OtelTelemetryOptions {
  /** Absent: no traces (metrics only). */
  tracerProvider?: { getTracer(name: string): Tracer }
  /** Absent: no metrics (traces only). */
  meterProvider?: ApiMeterProvider
  scope: SpanScope
  /** `db.system.name` of the store's spans: `sqlite`, `postgresql`, … */
  database: string
}

/** `McpTelemetry` on OpenTelemetry, plus the store wrapper of the composition root. */
export class OtelTelemetry implements AppTelemetry {
  readonly #tracer: Tracer | undefined
  readonly #instruments: Instruments
  readonly #scope: SpanScope
  readonly #store: StoreTelemetry

  constructor(options: OtelTelemetryOptions) {
    this.#tracer = options.tracerProvider?.getTracer(INSTRUMENTATION)
    this.#instruments = createInstruments(
      options.meterProvider?.getMeter(INSTRUMENTATION) ?? createNoopMeter()
    )
    this.#scope = options.scope
    this.#store = {
      tracer: this.#tracer,
      scope: options.scope,
      database: options.database,
      taskStatus: this.#instruments.taskStatus,
    }
  }

  forServer(server: ObservedServer): ServerTelemetry {
    return new ObservedHandler(this, server)
  }

  observe(
    server: ObservedServer,
    message: JsonObject & { method: string },
    headers: Headers
  ): RequestObservation {
    return new OtelRequestObservation(
      this.#tracer,
      this.#instruments,
      this.#scope,
      server,
      message,
      headers
    )
  }

  /** `response` with its body counted in `open_streams` until it ends (`countOpenStream`). */
  countStream(kind: StreamKind, protocolVersion: string, response: Response): Response {
    return countOpenStream(this.#instruments.openStreams, kind, protocolVersion, response)
  }

  /** `store` with its calls observed (`store-spans.ts`). */
  instrumentStore<T extends object>(store: T): T {
    return instrumentStore(store, this.#store)
  }
}

function samplerFor({ name, ratio }: TelemetryConfig['sampler']): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio)
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) })
  }
}

/**
 * The resource of every span and metric: `OTEL_RESOURCE_ATTRIBUTES`, `service.name`
 * (`OTEL_SERVICE_NAME`, default notes-mcp) and `service.instance.id`: the attributes' own, else
 * REPLICA_ID, else a random UUID for this process or isolate.
 */
export function telemetryResource(
  config: TelemetryConfig | undefined,
  replicaId: string | undefined
): Resource {
  const attributes = config?.resourceAttributes ?? {}
  return resourceFromAttributes({
    ...attributes,
    [ATTR.serviceName]: config?.serviceName ?? DEFAULT_SERVICE_NAME,
    [ATTR.serviceInstanceId]:
      attributes[ATTR.serviceInstanceId] ?? replicaId ?? crypto.randomUUID(),
  })
}

function batchProcessor(exporter: SpanExporter, batch: SpanBatch | undefined): BatchSpanProcessor {
  return new BatchSpanProcessor({
    exporter,
    scheduledDelayMillis: batch?.delayMs,
    exportTimeoutMillis: batch?.exportTimeoutMs,
    maxQueueSize: batch?.maxQueueSize,
    maxExportBatchSize: batch?.maxExportBatchSize,
  })
}

export interface TelemetryParts {
  config: TelemetryConfig | undefined
  replicaId: string | undefined
  database: string
  scope: SpanScope
  /** The span exporter of `config.traces`; absent: no traces. */
  spanExporter?: SpanExporter
  /** Metric readers (OTLP, Prometheus); none: no metrics. */
  metricReaders: MetricReader[]
}

/** A running telemetry: the engine's side, and the lifecycle of its providers. */
export interface Telemetry {
  readonly telemetry: OtelTelemetry
  /** Exports the spans that ended and are still buffered. */
  flushSpans(): Promise<void>
  /** Exports what is buffered: spans, and metrics through their readers' flush. */
  flush(): Promise<void>
  /** Flushes, then stops every exporter and reader. */
  shutdown(): Promise<void>
}

export function startTelemetry(parts: TelemetryParts): Telemetry {
  const resource = telemetryResource(parts.config, parts.replicaId)
  const tracerProvider =
    parts.config && parts.spanExporter
      ? new TracerProvider({
          resource,
          sampler: samplerFor(parts.config.sampler),
          spanProcessors: [batchProcessor(parts.spanExporter, parts.config.traces?.batch)],
        })
      : undefined
  const meterProvider =
    parts.metricReaders.length > 0
      ? new MeterProvider({ resource, readers: parts.metricReaders })
      : undefined
  const telemetry = new OtelTelemetry({
    tracerProvider,
    meterProvider,
    scope: parts.scope,
    database: parts.database,
  })
  return {
    telemetry,
    flushSpans: async () => {
      await tracerProvider?.forceFlush()
    },
    flush: async () => {
      await Promise.all([tracerProvider?.forceFlush(), meterProvider?.forceFlush()])
    },
    shutdown: async () => {
      await Promise.all([tracerProvider?.shutdown(), meterProvider?.shutdown()])
    },
  }
}
