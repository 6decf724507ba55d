/**
 * @module node/telemetry
 * Telemetry of the Node entry, loaded (dynamic import) only when an `OTEL_*` variable or
 * METRICS_PORT is set: spans through the official OTLP/HTTP exporter (`http/protobuf` or
 * `http/json`, batched), metrics through the official OTLP metric exporter on a periodic reader
 * (`OTEL_METRIC_EXPORT_INTERVAL`), and, with METRICS_PORT, the Prometheus text exposition served by a
 * server of its own on HOST:METRICS_PORT at `/metrics` (GET or HEAD; any other path 404, any other
 * method 405) — never on the MCP port. Store calls nest under their request through Node's
 * AsyncLocalStorage (the engine's default, `stateless-mcp/otel`). Node-only: the Worker has
 * `workers/telemetry.ts`.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { AggregationTemporalityPreference } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPMetricExporter as ProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import type { OTLPExporterNodeConfigBase } from '@opentelemetry/otlp-exporter-base/node-http'
import { PeriodicExportingMetricReader, type MetricReader } from '@opentelemetry/sdk-metrics'
import type { OtlpTarget, Temporality, TelemetryConfig } from '../telemetry/env.ts'
import { startTelemetry, type Telemetry } from '../telemetry/otel.ts'

export interface NodeTelemetryOptions {
  /** `config.telemetry`: the OTLP side; absent with METRICS_PORT alone (Prometheus only). */
  config: TelemetryConfig | undefined
  replicaId: string | undefined
  /** `db.system.name` of the store in use. */
  database: 'sqlite' | 'postgresql'
  /** Serve `/metrics` on this port (0: the kernel chooses) of `host`. */
  metricsPort?: number
  host: string
}

export interface NodeTelemetry extends Telemetry {
  /** Where `/metrics` is served, with METRICS_PORT. */
  metricsUrl?: string
}

const TEMPORALITY: Record<Temporality, AggregationTemporalityPreference> = {
  cumulative: AggregationTemporalityPreference.CUMULATIVE,
  delta: AggregationTemporalityPreference.DELTA,
  lowmemory: AggregationTemporalityPreference.LOWMEMORY,
}

function exporterOptions(target: OtlpTarget): OTLPExporterNodeConfigBase {
  return {
    url: target.url,
    headers: target.headers,
    timeoutMillis: target.timeoutMs,
    compression: target.compression as OTLPExporterNodeConfigBase['compression'],
  }
}

/** The `/metrics` server: the Prometheus text of `prometheus`, and nothing else. */
async function serveMetrics(
  prometheus: PrometheusExporter,
  host: string,
  port: number
): Promise<{ server: Server; url: string }> {
  const server = createServer(function metricsRequest(request, response) {
    const path = (request.url ?? '').split('?')[0]
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found: see /metrics\n')
      return
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end()
      return
    }
    prometheus.getMetricsRequestHandler(request, response)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ host, port }, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return { server, url: `http://${shown}:${address.port}/metrics` }
}

export async function startNodeTelemetry(options: NodeTelemetryOptions): Promise<NodeTelemetry> {
  const { config } = options
  const readers: MetricReader[] = []
  if (config?.metrics) {
    const metrics = config.metrics
    const exporterConfig = {
      ...exporterOptions(metrics),
      temporalityPreference: TEMPORALITY[metrics.temporality],
    }
    readers.push(
      new PeriodicExportingMetricReader({
        exporter:
          metrics.protocol === 'http/json'
            ? new JsonMetricExporter(exporterConfig)
            : new ProtobufMetricExporter(exporterConfig),
        exportIntervalMillis: metrics.intervalMs,
        exportTimeoutMillis: Math.min(metrics.exportTimeoutMs, metrics.intervalMs),
      })
    )
  }
  let prometheus: PrometheusExporter | undefined
  if (options.metricsPort !== undefined) {
    prometheus = new PrometheusExporter({ preventServerStart: true })
    readers.push(prometheus)
  }
  const traces = config?.traces
  const running = startTelemetry({
    config,
    replicaId: options.replicaId,
    database: options.database,
    spanExporter:
      traces &&
      (traces.protocol === 'http/json'
        ? new JsonTraceExporter(exporterOptions(traces))
        : new ProtobufTraceExporter(exporterOptions(traces))),
    metricReaders: readers,
  })
  if (!prometheus || options.metricsPort === undefined) return running
  let served: { server: Server; url: string }
  try {
    served = await serveMetrics(prometheus, options.host, options.metricsPort)
  } catch (error) {
    await running.shutdown()
    throw error
  }
  return {
    ...running,
    metricsUrl: served.url,
    shutdown: async () => {
      const closed = new Promise<void>((resolve) => served.server.close(() => resolve()))
      served.server.closeAllConnections()
      await closed
      await running.shutdown()
    },
  }
}
