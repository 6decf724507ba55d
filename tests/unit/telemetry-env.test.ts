/**
 * Telemetry is configured by the standard OpenTelemetry variables only, as the specification reads
 * them (`telemetry/env.ts`, through `parseConfig`): on as soon as one `OTEL_*` is set and off
 * otherwise, signal URLs from the base endpoint or the per-signal ones, protocols, headers,
 * resource attributes, samplers, exporters and the span batch; a bad value stops the server with a
 * message naming the variable; METRICS_PORT is its own setting. The resource's
 * `service.instance.id` prefers what OTEL_RESOURCE_ATTRIBUTES says, then REPLICA_ID.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '../../src/config.ts'
import { parseTelemetryEnv, telemetryRequested } from '../../src/telemetry/env.ts'
import { telemetryResource } from '../../src/telemetry/otel.ts'

describe('telemetry configuration from the OTEL_* variables', () => {
  it('is off without any OTEL_* variable, and with OTEL_SDK_DISABLED=true', () => {
    expect(parseTelemetryEnv({ PORT: '8787', OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined()
    expect(parseConfig({}).telemetry).toBeUndefined()
    expect(
      telemetryRequested({
        OTEL_SDK_DISABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      })
    ).toBe(false)
  })

  it('appends the signal paths to OTEL_EXPORTER_OTLP_ENDPOINT, http/protobuf by default', () => {
    const config = parseTelemetryEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })!
    expect(config.traces).toMatchObject({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      timeoutMs: 10_000,
      compression: 'none',
      batch: {
        delayMs: 5000,
        exportTimeoutMs: 30_000,
        maxQueueSize: 2048,
        maxExportBatchSize: 512,
      },
    })
    expect(config.metrics).toMatchObject({
      url: 'http://collector:4318/v1/metrics',
      intervalMs: 60_000,
      temporality: 'cumulative',
    })
    expect(config.serviceName).toBe('notes-mcp')
    expect(config.sampler).toEqual({ name: 'parentbased_always_on', ratio: 1 })
  })

  it('uses per-signal endpoints and protocols as they are', () => {
    const config = parseTelemetryEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
    })!
    expect(config.traces).toMatchObject({
      url: 'https://traces.example/custom',
      protocol: 'http/json',
      compression: 'gzip',
    })
    expect(config.metrics).toMatchObject({
      url: 'http://collector:4318/v1/metrics',
      protocol: 'http/protobuf',
    })
  })

  it('exports to localhost:4318 when only another OTEL_* variable is set', () => {
    const config = parseTelemetryEnv({ OTEL_SERVICE_NAME: 'notes-eu' })!
    expect(config.serviceName).toBe('notes-eu')
    expect(config.traces?.url).toBe('http://localhost:4318/v1/traces')
  })

  it('reads percent-encoded headers, the per-signal ones over the general ones', () => {
    const config = parseTelemetryEnv({
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%20b,tenant=one',
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'tenant=two',
    })!
    expect(config.traces?.headers).toEqual({ 'api-key': 'a b', tenant: 'one' })
    expect(config.metrics?.headers).toEqual({ 'api-key': 'a b', tenant: 'two' })
  })

  it('takes service.name from OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES', () => {
    const attributes = 'service.name=from-attributes,deployment.environment.name=prod'
    expect(parseTelemetryEnv({ OTEL_RESOURCE_ATTRIBUTES: attributes })).toMatchObject({
      serviceName: 'from-attributes',
      resourceAttributes: { 'deployment.environment.name': 'prod' },
    })
    expect(
      parseTelemetryEnv({ OTEL_RESOURCE_ATTRIBUTES: attributes, OTEL_SERVICE_NAME: 'named' })
        ?.serviceName
    ).toBe('named')
  })

  it('reads the samplers of the specification and their ratio', () => {
    expect(
      parseTelemetryEnv({
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      })?.sampler
    ).toEqual({ name: 'parentbased_traceidratio', ratio: 0.25 })
    expect(parseTelemetryEnv({ OTEL_TRACES_SAMPLER: 'always_off' })?.sampler.name).toBe(
      'always_off'
    )
  })

  it('leaves a signal out with its exporter set to none', () => {
    const config = parseTelemetryEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_SERVICE_NAME: 'x' })!
    expect(config.traces).toBeUndefined()
    expect(config.metrics).toBeDefined()
    expect(parseTelemetryEnv({ OTEL_METRICS_EXPORTER: 'none' })?.metrics).toBeUndefined()
  })

  it.each([
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT/],
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER: must be one of/],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, /SAMPLER_ARG/],
    [{ OTEL_METRICS_EXPORTER: 'prometheus' }, /METRICS_PORT/],
    [{ OTEL_TRACES_EXPORTER: 'otlp,none' }, /OTEL_TRACES_EXPORTER/],
    [{ OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }, /OTEL_EXPORTER_OTLP_HEADERS/],
    [{ OTEL_METRIC_EXPORT_INTERVAL: '-5' }, /OTEL_METRIC_EXPORT_INTERVAL/],
    [{ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4096' }, /OTEL_BSP_MAX_EXPORT_BATCH_SIZE/],
    [{ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'sometimes' }, /TEMPORALITY/],
    [{ METRICS_PORT: '70000' }, /METRICS_PORT/],
  ])('refuses %o with a configuration error naming the variable', (env, message) => {
    expect(() => parseConfig(env)).toThrow(ConfigError)
    expect(() => parseConfig(env)).toThrow(message)
  })

  it('reads METRICS_PORT on its own, without turning OTLP export on', () => {
    const config = parseConfig({ METRICS_PORT: '9464' })
    expect(config.metricsPort).toBe(9464)
    expect(config.telemetry).toBeUndefined()
  })

  it('reads the temporality preference and the span batch', () => {
    const config = parseTelemetryEnv({
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'Delta',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
    })!
    expect(config.metrics?.temporality).toBe('delta')
    expect(config.traces?.batch).toMatchObject({
      delayMs: 100,
      maxQueueSize: 100,
      maxExportBatchSize: 10,
    })
  })
})

describe('the resource of every span and metric', () => {
  it('names the replica as service.instance.id unless OTEL_RESOURCE_ATTRIBUTES does', () => {
    const config = parseTelemetryEnv({ OTEL_SERVICE_NAME: 'notes' })
    expect(telemetryResource(config, 'replica-7').attributes).toMatchObject({
      'service.name': 'notes',
      'service.instance.id': 'replica-7',
    })
    const named = parseTelemetryEnv({ OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=pod-1' })
    expect(telemetryResource(named, 'replica-7').attributes['service.instance.id']).toBe('pod-1')
  })

  it('gives a process without REPLICA_ID a random instance id', () => {
    const first = telemetryResource(undefined, undefined).attributes['service.instance.id']
    const second = telemetryResource(undefined, undefined).attributes['service.instance.id']
    expect(first).toMatch(/^[0-9a-f-]{36}$/)
    expect(first).not.toBe(second)
  })
})
