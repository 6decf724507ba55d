/**
 * @module workers/telemetry
 * Telemetry of the Workers entry, loaded (dynamic import) only when an `OTEL_*` binding is set:
 * spans and metrics over `fetch` (`fetch-exporter.ts`), since a Worker has neither Node's `http` nor
 * timers that outlive a request. After each request the entry hands `afterRequest()` to
 * `ctx.waitUntil`: it exports the spans that ended, and the metrics when
 * `OTEL_METRIC_EXPORT_INTERVAL` has passed since this isolate last exported them. Each isolate is
 * its own `service.instance.id` unless REPLICA_ID names one (then every isolate shares it: leave it
 * unset on Workers, or prefer delta temporality). Store calls nest under their request when the
 * runtime provides AsyncLocalStorage (`process.getBuiltinModule`, where Node compatibility is on:
 * the engine's default, `stateless-mcp/otel`); without it they get no span, the request and its
 * sealing steps still do. Web standards only.
 */
import { consoleLogger, describeError } from 'stateless-mcp/compose'
import type { TelemetryConfig } from '../telemetry/env.ts'
import { FetchMetricReader, FetchSpanExporter } from '../telemetry/fetch-exporter.ts'
import { startTelemetry, type Telemetry } from '../telemetry/otel.ts'

export interface WorkerTelemetry extends Telemetry {
  /** What to `waitUntil` after a request: its spans, and the metrics when an export is due. */
  afterRequest(): Promise<void>
}

export function startWorkerTelemetry(
  config: TelemetryConfig,
  replicaId: string | undefined
): WorkerTelemetry {
  const reader = config.metrics && new FetchMetricReader(config.metrics)
  const running = startTelemetry({
    config,
    replicaId,
    database: 'cloudflare.d1',
    spanExporter: config.traces && new FetchSpanExporter(config.traces),
    metricReaders: reader ? [reader] : [],
  })
  return {
    ...running,
    // Never rejects: a failed export (the collector down or refusing) is one warning, not an
    // uncaught error of the request's waitUntil.
    afterRequest: async () => {
      try {
        await Promise.all([running.flushSpans(), reader?.exportIfDue()])
      } catch (error) {
        consoleLogger.warn('telemetry export failed', { reason: describeError(error) })
      }
    },
  }
}
