/**
 * @module telemetry/fetch-exporter
 * OTLP/HTTP export over `fetch`, for the Workers runtime (the official exporters' transports are
 * Node's `http` or a browser's keep-alive `fetch`, neither of which fits workerd): a `SpanExporter`
 * and a `MetricReader` that serialise with OpenTelemetry's own OTLP serializers (`http/protobuf`
 * or `http/json`, as configured), POST to the signal's URL with the configured headers, timeout and
 * compression (gzip through `CompressionStream`), and report a non-2xx answer as a failed export.
 * A Worker has no background timers between requests, so nothing here schedules itself: the entry
 * flushes spans after each request and asks the reader for an export when one is due
 * (`exportIfDue`, every `OTEL_METRIC_EXPORT_INTERVAL`), both inside `ctx.waitUntil`. Web standards
 * only.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import {
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer'
import {
  AggregationTemporality,
  InstrumentType,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics'
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace'
import type { OtlpTarget, Temporality } from './env.ts'

/** An export the collector did not accept (status) or that did not reach it. */
export class OtlpExportError extends Error {
  override name = 'OtlpExportError'
}

/** What the serializers produce: bytes over a plain ArrayBuffer. */
type Bytes = Uint8Array<ArrayBuffer>

async function gzip(body: Bytes): Promise<Bytes> {
  const stream = new Blob([body]).stream().pipeThrough(new CompressionStream('gzip'))
  return new Uint8Array(await new Response(stream).arrayBuffer())
}

/** POSTs one serialised export request; resolves once the collector answered 2xx. */
export async function postOtlp(target: OtlpTarget, body: Bytes): Promise<void> {
  const headers: Record<string, string> = {
    ...target.headers,
    'content-type': target.protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
  }
  let payload = body
  if (target.compression === 'gzip') {
    payload = await gzip(body)
    headers['content-encoding'] = 'gzip'
  }
  const response = await fetch(target.url, {
    method: 'POST',
    headers,
    body: payload,
    signal: AbortSignal.timeout(target.timeoutMs),
  })
  // Read the body in every case so that the connection is released.
  await response.arrayBuffer()
  if (!response.ok) throw new OtlpExportError(`the collector answered HTTP ${response.status}`)
}

/** Exports every batch the span processor hands it with one POST; tracks them for `forceFlush`. */
export class FetchSpanExporter implements SpanExporter {
  readonly #target: OtlpTarget
  readonly #pending = new Set<Promise<void>>()

  constructor(target: OtlpTarget) {
    this.#target = target
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const serializer =
      this.#target.protocol === 'http/json' ? JsonTraceSerializer : ProtobufTraceSerializer
    const body = serializer.serializeRequest(spans)
    if (!body) {
      done({ code: ExportResultCode.FAILED, error: new OtlpExportError('unserialisable spans') })
      return
    }
    const sent = postOtlp(this.#target, body as Bytes).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: unknown) =>
        done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : undefined })
    )
    this.#pending.add(sent)
    void sent.finally(() => this.#pending.delete(sent))
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.#pending)
  }

  shutdown(): Promise<void> {
    return this.forceFlush()
  }
}

/** The temporality each instrument is exported with, per OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE. */
function temporalityOf(
  preference: Temporality,
  instrument: InstrumentType
): AggregationTemporality {
  const { CUMULATIVE, DELTA } = AggregationTemporality
  switch (instrument) {
    case InstrumentType.COUNTER:
    case InstrumentType.HISTOGRAM:
      return preference === 'cumulative' ? CUMULATIVE : DELTA
    case InstrumentType.OBSERVABLE_COUNTER:
      return preference === 'delta' ? DELTA : CUMULATIVE
    default:
      return CUMULATIVE
  }
}

/** Collects and exports when asked (`exportIfDue`, `forceFlush`), never on a timer of its own. */
export class FetchMetricReader extends MetricReader {
  readonly #target: OtlpTarget
  readonly #intervalMs: number
  #lastExport: number
  #exporting: Promise<void> | undefined

  constructor(
    target: OtlpTarget & { intervalMs: number; temporality: Temporality },
    now: number = Date.now()
  ) {
    super({
      aggregationTemporalitySelector: (instrument) => temporalityOf(target.temporality, instrument),
    })
    this.#target = target
    this.#intervalMs = target.intervalMs
    this.#lastExport = now
  }

  /** Exports when the interval since the last export has passed; the export already running, if any. */
  exportIfDue(now: number = Date.now()): Promise<void> {
    if (this.#exporting) return this.#exporting
    if (now - this.#lastExport < this.#intervalMs) return Promise.resolve()
    return this.#export(now)
  }

  #export(now: number): Promise<void> {
    this.#lastExport = now
    const run = (async () => {
      const { resourceMetrics } = await this.collect()
      await this.#send(resourceMetrics)
    })()
    this.#exporting = run.finally(() => {
      this.#exporting = undefined
    })
    return this.#exporting
  }

  async #send(metrics: ResourceMetrics): Promise<void> {
    if (metrics.scopeMetrics.every((scope) => scope.metrics.length === 0)) return
    const serializer =
      this.#target.protocol === 'http/json' ? JsonMetricsSerializer : ProtobufMetricsSerializer
    const body = serializer.serializeRequest(metrics)
    if (!body) throw new OtlpExportError('unserialisable metrics')
    await postOtlp(this.#target, body as Bytes)
  }

  protected override async onForceFlush(): Promise<void> {
    await this.#exporting
    await this.#export(Date.now())
  }

  protected override async onShutdown(): Promise<void> {
    await this.onForceFlush()
  }
}
