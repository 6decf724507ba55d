/**
 * @module telemetry/env
 * The standard OpenTelemetry environment variables → `TelemetryConfig`, for both runtimes (Node's
 * `process.env`, a Worker's string bindings), called by `config.ts` so that a bad value stops the
 * server like any other configuration error, naming the variable. Telemetry is on as soon as any
 * `OTEL_*` variable is set (and `OTEL_SDK_DISABLED` is not `true`); with none set this answers
 * `undefined` and nothing of OpenTelemetry is ever loaded. Free of OpenTelemetry imports on purpose:
 * it runs at every start.
 *
 * Read, as the OpenTelemetry specification defines them:
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (base URL, `/v1/traces` and `/v1/metrics` appended),
 *   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `_METRICS_ENDPOINT` (used as they are); default
 *   `http://localhost:4318`;
 * - `OTEL_EXPORTER_OTLP_PROTOCOL` and the per-signal `_TRACES_PROTOCOL` / `_METRICS_PROTOCOL`:
 *   `http/protobuf` (the default) or `http/json` (`grpc` is not served: refused);
 * - `OTEL_EXPORTER_OTLP_HEADERS` (and per signal), `OTEL_EXPORTER_OTLP_TIMEOUT` (and per signal,
 *   ms, default 10000), `OTEL_EXPORTER_OTLP_COMPRESSION` (and per signal, `gzip` or `none`);
 * - `OTEL_SERVICE_NAME` (default `notes-mcp`), `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`,
 *   percent-encoded values);
 * - `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio`, `parentbased_always_on` — the
 *   default —, `parentbased_always_off`, `parentbased_traceidratio`) and `OTEL_TRACES_SAMPLER_ARG`
 *   (the ratio, 0..1, default 1);
 * - `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`: `otlp` (default) or `none`;
 * - `OTEL_BSP_SCHEDULE_DELAY` (ms, default 5000), `OTEL_BSP_EXPORT_TIMEOUT` (ms, default 30000),
 *   `OTEL_BSP_MAX_QUEUE_SIZE` (default 2048), `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (default 512, at most
 *   the queue size): the span batch;
 * - `OTEL_METRIC_EXPORT_INTERVAL` (ms, default 60000), `OTEL_METRIC_EXPORT_TIMEOUT` (ms, default
 *   30000), `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE` (`cumulative`, `delta`, `lowmemory`).
 * Prometheus is not an `OTEL_METRICS_EXPORTER` here: its text is served on `METRICS_PORT`.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json'

/** Where and how one signal is exported over OTLP/HTTP. */
export interface OtlpTarget {
  /** The full URL of the signal (`…/v1/traces`, `…/v1/metrics`). */
  url: string
  protocol: OtlpProtocol
  headers: Record<string, string>
  timeoutMs: number
  compression: 'gzip' | 'none'
}

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio'

export type Temporality = 'cumulative' | 'delta' | 'lowmemory'

/** The batch span processor's settings (`OTEL_BSP_*`). */
export interface SpanBatch {
  delayMs: number
  exportTimeoutMs: number
  maxQueueSize: number
  maxExportBatchSize: number
}

export interface TelemetryConfig {
  serviceName: string
  /** `OTEL_RESOURCE_ATTRIBUTES`, without `service.name` (that is `serviceName`). */
  resourceAttributes: Record<string, string>
  sampler: { name: SamplerName; ratio: number }
  /** Absent with `OTEL_TRACES_EXPORTER=none`. */
  traces?: OtlpTarget & { batch: SpanBatch }
  /** Absent with `OTEL_METRICS_EXPORTER=none`. */
  metrics?: OtlpTarget & { intervalMs: number; exportTimeoutMs: number; temporality: Temporality }
}

/** A bad `OTEL_*` value; `config.ts` reports it as a configuration error. */
export class TelemetryEnvError extends Error {
  override name = 'TelemetryEnvError'
}

export const DEFAULT_SERVICE_NAME = 'notes-mcp'
const DEFAULT_ENDPOINT = 'http://localhost:4318'
const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_EXPORT_INTERVAL_MS = 60_000
const DEFAULT_EXPORT_TIMEOUT_MS = 30_000
const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
]

type Env = Record<string, string | undefined>

function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

function fail(name: string, message: string): never {
  throw new TelemetryEnvError(`${name}: ${message}`)
}

/** The first of `names` that is set, with its name. */
function first(env: Env, names: readonly string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = read(env, name)
    if (value !== undefined) return { name, value }
  }
  return undefined
}

/** A positive integer (milliseconds or a count) from the first of `names` that is set. */
function positive(env: Env, names: readonly string[], fallback: number): number {
  const found = first(env, names)
  if (!found) return fallback
  const value = Number(found.value)
  if (!Number.isSafeInteger(value) || value < 1) fail(found.name, 'must be a positive integer')
  return value
}

/** `key=value,key=value` with percent-encoded parts (W3C Baggage octets), as the spec lists them. */
function keyValues(name: string, text: string): Record<string, string> {
  const record: Record<string, string> = {}
  for (const item of text.split(',')) {
    if (item.trim() === '') continue
    const at = item.indexOf('=')
    if (at < 1) fail(name, 'must be a comma-separated list of key=value')
    try {
      const key = decodeURIComponent(item.slice(0, at).trim())
      const value = decodeURIComponent(item.slice(at + 1).trim())
      if (key === '') fail(name, 'has an empty key')
      record[key] = value
    } catch (error) {
      if (error instanceof TelemetryEnvError) throw error
      fail(name, 'has a value that is not valid percent-encoding')
    }
  }
  return record
}

function exporters(env: Env, name: string): boolean {
  const value = read(env, name)
  if (value === undefined) return true
  const list = value.split(',').map((item) => item.trim())
  if (list.includes('none')) {
    if (list.length > 1) fail(name, '"none" cannot be combined with another exporter')
    return false
  }
  for (const item of list) {
    if (item !== 'otlp')
      fail(
        name,
        item === 'prometheus'
          ? 'prometheus is not an exporter here: set METRICS_PORT to serve /metrics'
          : `unsupported exporter ${JSON.stringify(item)}; use otlp or none`
      )
  }
  return true
}

function target(env: Env, signal: 'TRACES' | 'METRICS'): OtlpTarget {
  const path = signal === 'TRACES' ? 'v1/traces' : 'v1/metrics'
  const own = read(env, `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`)
  const base = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') ?? DEFAULT_ENDPOINT
  const url = own ?? `${base.replace(/\/+$/, '')}/${path}`
  const urlName = own ? `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT` : 'OTEL_EXPORTER_OTLP_ENDPOINT'
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    fail(urlName, 'must be an http:// or https:// URL')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    fail(urlName, 'must be an http:// or https:// URL')

  const protocol = first(env, [
    `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`,
    'OTEL_EXPORTER_OTLP_PROTOCOL',
  ])
  if (protocol && protocol.value !== 'http/protobuf' && protocol.value !== 'http/json') {
    fail(
      protocol.name,
      protocol.value === 'grpc'
        ? 'grpc is not supported; use http/protobuf or http/json'
        : 'must be http/protobuf or http/json'
    )
  }
  const compression = first(env, [
    `OTEL_EXPORTER_OTLP_${signal}_COMPRESSION`,
    'OTEL_EXPORTER_OTLP_COMPRESSION',
  ])
  if (compression && compression.value !== 'gzip' && compression.value !== 'none')
    fail(compression.name, 'must be gzip or none')
  const general = read(env, 'OTEL_EXPORTER_OTLP_HEADERS')
  const specific = read(env, `OTEL_EXPORTER_OTLP_${signal}_HEADERS`)
  return {
    url,
    protocol: (protocol?.value as OtlpProtocol | undefined) ?? 'http/protobuf',
    headers: {
      ...(general && keyValues('OTEL_EXPORTER_OTLP_HEADERS', general)),
      ...(specific && keyValues(`OTEL_EXPORTER_OTLP_${signal}_HEADERS`, specific)),
    },
    timeoutMs: positive(
      env,
      [`OTEL_EXPORTER_OTLP_${signal}_TIMEOUT`, 'OTEL_EXPORTER_OTLP_TIMEOUT'],
      DEFAULT_TIMEOUT_MS
    ),
    compression: (compression?.value as 'gzip' | 'none' | undefined) ?? 'none',
  }
}

function batch(env: Env): SpanBatch {
  const maxQueueSize = positive(env, ['OTEL_BSP_MAX_QUEUE_SIZE'], 2048)
  const maxExportBatchSize = positive(env, ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE'], 512)
  if (maxExportBatchSize > maxQueueSize)
    fail('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'must not exceed OTEL_BSP_MAX_QUEUE_SIZE')
  return {
    delayMs: positive(env, ['OTEL_BSP_SCHEDULE_DELAY'], 5000),
    exportTimeoutMs: positive(env, ['OTEL_BSP_EXPORT_TIMEOUT'], 30_000),
    maxQueueSize,
    maxExportBatchSize,
  }
}

function sampler(env: Env): TelemetryConfig['sampler'] {
  const name = (read(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on') as SamplerName
  if (!SAMPLERS.includes(name)) fail('OTEL_TRACES_SAMPLER', `must be one of ${SAMPLERS.join(', ')}`)
  const arg = read(env, 'OTEL_TRACES_SAMPLER_ARG')
  if (arg === undefined || !name.endsWith('traceidratio')) return { name, ratio: 1 }
  const ratio = Number(arg)
  if (!(ratio >= 0 && ratio <= 1)) fail('OTEL_TRACES_SAMPLER_ARG', 'must be a ratio from 0 to 1')
  return { name, ratio }
}

/** Whether any `OTEL_*` variable is set: telemetry is wanted unless `OTEL_SDK_DISABLED=true`. */
export function telemetryRequested(env: Env): boolean {
  if (read(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return false
  return Object.keys(env).some((name) => name.startsWith('OTEL_') && read(env, name) !== undefined)
}

/** The telemetry configuration, or `undefined` when no `OTEL_*` variable asks for it. */
export function parseTelemetryEnv(env: Env): TelemetryConfig | undefined {
  if (!telemetryRequested(env)) return undefined
  const attributes = read(env, 'OTEL_RESOURCE_ATTRIBUTES')
  const { 'service.name': namedInAttributes, ...resourceAttributes } = attributes
    ? keyValues('OTEL_RESOURCE_ATTRIBUTES', attributes)
    : {}
  const config: TelemetryConfig = {
    serviceName: read(env, 'OTEL_SERVICE_NAME') ?? namedInAttributes ?? DEFAULT_SERVICE_NAME,
    resourceAttributes,
    sampler: sampler(env),
  }
  if (exporters(env, 'OTEL_TRACES_EXPORTER'))
    config.traces = { ...target(env, 'TRACES'), batch: batch(env) }
  if (exporters(env, 'OTEL_METRICS_EXPORTER')) {
    const preference = read(env, 'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE')
    const temporality = (preference?.toLowerCase() ?? 'cumulative') as Temporality
    if (!['cumulative', 'delta', 'lowmemory'].includes(temporality))
      fail(
        'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE',
        'must be cumulative, delta or lowmemory'
      )
    config.metrics = {
      ...target(env, 'METRICS'),
      intervalMs: positive(env, ['OTEL_METRIC_EXPORT_INTERVAL'], DEFAULT_EXPORT_INTERVAL_MS),
      exportTimeoutMs: positive(env, ['OTEL_METRIC_EXPORT_TIMEOUT'], DEFAULT_EXPORT_TIMEOUT_MS),
      temporality,
    }
  }
  return config
}
