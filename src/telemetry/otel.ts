/**
 * @module telemetry/otel
 * The notes app's telemetry providers, for both runtimes: `startTelemetry` builds the OpenTelemetry
 * SDK's tracer and meter providers from a runtime's exporters and readers (`node/telemetry.ts`,
 * `workers/telemetry.ts` choose them) with the resource and sampler the `OTEL_*` configuration
 * names, and binds the engine's observer to them (`otelTelemetry` of `stateless-mcp/otel`, which
 * owns what is recorded: spans, metrics, the store wrapper) with the app's own names (`notes_mcp.`
 * attributes and metrics, the `notes-mcp` instrumentation scope) and the W3C trace context and
 * baggage as the propagator. App-specific, so not the engine's: the SDK, its exporters, the
 * environment's configuration and the service's resource. Nothing here touches the global
 * OpenTelemetry API state, so several instances (tests) never interfere.
 */
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core'
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
import type { AppTelemetry } from 'stateless-mcp'
import { otelTelemetry } from 'stateless-mcp/otel'
import { DEFAULT_SERVICE_NAME, type SpanBatch, type TelemetryConfig } from './env.ts'

/** The instrumentation scope of the app's spans and metrics. */
const INSTRUMENTATION = 'notes-mcp'
/** The namespace of the engine's own attribute and metric names, as the app's operators know them. */
const NAMESPACE = 'notes_mcp'
const SERVICE_NAME = 'service.name'
const SERVICE_INSTANCE_ID = 'service.instance.id'

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
    [SERVICE_NAME]: config?.serviceName ?? DEFAULT_SERVICE_NAME,
    [SERVICE_INSTANCE_ID]: attributes[SERVICE_INSTANCE_ID] ?? replicaId ?? crypto.randomUUID(),
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
  /** `db.system.name` of the store's spans: `sqlite`, `postgresql`, … */
  database: string
  /** The span exporter of `config.traces`; absent: no traces. */
  spanExporter?: SpanExporter
  /** Metric readers (OTLP, Prometheus); none: no metrics. */
  metricReaders: MetricReader[]
}

/** A running telemetry: the engine's side, and the lifecycle of its providers. */
export interface Telemetry {
  readonly telemetry: AppTelemetry
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
  const telemetry = otelTelemetry({
    tracer: tracerProvider?.getTracer(INSTRUMENTATION),
    meter: meterProvider?.getMeter(INSTRUMENTATION),
    propagator: new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    }),
    namespace: NAMESPACE,
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
