/**
 * @module telemetry/otel
 * The engine's telemetry (`observer.ts`) on OpenTelemetry, for both runtimes: one SERVER span per
 * MCP request or notification and the `mcp.server.operation.duration` histogram, named and
 * attributed as the semantic conventions for MCP say (`conventions.ts`), child spans for the steps
 * the engine reports (sealing and opening `requestState`) and for store calls (`instrumentStore`),
 * and the operators' metrics: open streams, rounds per completed flow, refused states by reason,
 * task status changes. `startTelemetry` assembles the providers from a runtime's exporters and
 * readers (`node.ts`, `worker.ts` choose them); nothing here touches the global OpenTelemetry API
 * state, so several instances (tests) never interfere.
 *
 * Trace context: the parent is the W3C context (`traceparent`, `tracestate`, `baggage`) a client put
 * in `params._meta` (the conventions' and SEP-414's place), else the one in the HTTP headers; when
 * both are present and differ, the header's becomes a link. Spans started while a request runs nest
 * under it through `SpanScope` (AsyncLocalStorage where the runtime has it; without, store calls
 * get no span, the steps the engine reports still do).
 *
 * Never recorded: arguments, results, note contents, tokens, session ids as sent (the session's
 * random id is), `requestState`, task ids, the principal. Names that clients choose are bounded:
 * a tool or prompt name only when the server has it, a method outside the known ones as `_OTHER`,
 * a protocol version only when supported, a resource URI (spans only) up to 2048 characters, a
 * request id up to 256, a status description cut at 256.
 */
import {
  ROOT_CONTEXT,
  createNoopMeter,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Link,
  type Meter,
  type MeterProvider as ApiMeterProvider,
  type Span,
  type TextMapGetter,
  type Tracer,
  type UpDownCounter,
} from '@opentelemetry/api'
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
import { ErrorCode } from '../mcp/errors.ts'
import { META_PROTOCOL_VERSION, METHODS, SUPPORTED_PROTOCOL_VERSIONS } from '../mcp/protocol.ts'
import {
  LEGACY_METHODS,
  LEGACY_NOTIFICATIONS,
  LEGACY_PROTOCOL_VERSIONS,
} from '../mcp/legacy/protocol.ts'
import { isObject, type JsonObject } from '../mcp/wire.ts'
import {
  ATTR,
  DURATION_BUCKETS,
  GEN_AI_EXECUTE_TOOL,
  METRIC,
  OTHER_METHOD,
  ROUND_BUCKETS,
  TOOL_ERROR,
  isServerFailure,
} from './conventions.ts'
import { DEFAULT_SERVICE_NAME, type SpanBatch, type TelemetryConfig } from './env.ts'
import type {
  AppTelemetry,
  ObservedServer,
  RequestObservation,
  ServerTelemetry,
  StreamKind,
} from '../mcp/observer.ts'

const INSTRUMENTATION = 'notes-mcp'
const MAX_URI_CHARS = 2048
/** Longest request id recorded (ids are the client's: a longer one is left out). */
const MAX_ID_CHARS = 256
/** Longest status description (a JSON-RPC message may quote what the client sent). */
const MAX_MESSAGE_CHARS = 256

/** Method names recorded as they are; anything else is `_OTHER`. */
const KNOWN_METHODS: ReadonlySet<string> = new Set<string>([
  ...Object.values(METHODS),
  ...Object.values(LEGACY_METHODS),
  ...Object.values(LEGACY_NOTIFICATIONS),
  'notifications/progress',
  'notifications/roots/list_changed',
])
const KNOWN_VERSIONS: ReadonlySet<string> = new Set([
  ...SUPPORTED_PROTOCOL_VERSIONS,
  ...LEGACY_PROTOCOL_VERSIONS,
])
/** Methods whose `params.uri` is the conventions' `mcp.resource.uri`. */
const URI_METHODS: ReadonlySet<string> = new Set([
  METHODS.resourcesRead,
  LEGACY_METHODS.subscribe,
  LEGACY_METHODS.unsubscribe,
])

/** Where the span of the running request is kept across awaits. */
export interface SpanScope {
  current(): Context | undefined
  run<T>(context: Context, run: () => T): T
}

/** The part of AsyncLocalStorage a scope needs (Node's, or a Worker runtime's). */
export interface ContextStorage {
  getStore(): Context | undefined
  run<T>(store: Context, run: () => T): T
}

/** A scope over AsyncLocalStorage, or none (store calls then get no span). */
export function spanScope(storage: ContextStorage | undefined): SpanScope {
  if (!storage) return { current: () => undefined, run: (_context, run) => run() }
  return { current: () => storage.getStore(), run: (context, run) => storage.run(context, run) }
}

const propagator = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
})

const metaGetter: TextMapGetter<JsonObject> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key]
    return typeof value === 'string' ? value : undefined
  },
}

const headerGetter: TextMapGetter<Headers> = {
  keys: (carrier) => [...carrier.keys()],
  get: (carrier, key) => carrier.get(key) ?? undefined,
}

function remoteSpanContext(context: Context) {
  const spanContext = trace.getSpanContext(context)
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext : undefined
}

/** The parent of a request's span and the link to the HTTP context, as the module header says. */
function parentOf(
  params: JsonObject | undefined,
  headers: Headers
): { parent: Context; links?: Link[] } {
  const fromHeaders = propagator.extract(ROOT_CONTEXT, headers, headerGetter)
  const meta = params && isObject(params._meta) ? params._meta : undefined
  const fromMeta = meta ? propagator.extract(ROOT_CONTEXT, meta, metaGetter) : undefined
  const metaSpan = fromMeta && remoteSpanContext(fromMeta)
  if (!metaSpan) return { parent: fromHeaders }
  const headerSpan = remoteSpanContext(fromHeaders)
  if (!headerSpan || headerSpan.spanId === metaSpan.spanId) return { parent: fromMeta }
  return { parent: fromMeta, links: [{ context: headerSpan }] }
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error
}

/** The instruments every observation records into. */
interface Instruments {
  duration: Histogram
  openStreams: UpDownCounter
  rounds: Histogram
  rejections: Counter
  taskStatus: Counter
}

function createInstruments(meter: Meter): Instruments {
  return {
    duration: meter.createHistogram(METRIC.operationDuration, {
      unit: 's',
      description:
        'MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    openStreams: meter.createUpDownCounter(METRIC.openStreams, {
      unit: '{stream}',
      description: 'Listen and 2025-era GET streams this replica holds open.',
    }),
    rounds: meter.createHistogram(METRIC.flowRounds, {
      unit: '{round}',
      description: 'Rounds (requests) a multi round-trip flow took, counted when it completes.',
      advice: { explicitBucketBoundaries: ROUND_BUCKETS },
    }),
    rejections: meter.createCounter(METRIC.stateRejections, {
      unit: '{rejection}',
      description: 'requestState tokens refused, by the reason only the server log otherwise sees.',
    }),
    taskStatus: meter.createCounter(METRIC.taskStatusChanges, {
      unit: '{change}',
      description: 'Task records written into a status by this replica (working when created).',
    }),
  }
}

class Observation implements RequestObservation {
  readonly #tracer: Tracer | undefined
  readonly #instruments: Instruments
  readonly #started = performance.now()
  readonly #method: string
  readonly #tool: string | undefined
  readonly #prompt: string | undefined
  #protocolVersion: string | undefined
  readonly #modern: boolean
  #span: Span | undefined
  #context: Context | undefined
  #scope: SpanScope
  #round = 1
  #ended = false

  constructor(
    tracer: Tracer | undefined,
    instruments: Instruments,
    scope: SpanScope,
    server: ObservedServer,
    message: JsonObject & { method: string },
    headers: Headers
  ) {
    this.#tracer = tracer
    this.#instruments = instruments
    this.#scope = scope
    const method = message.method
    this.#method = KNOWN_METHODS.has(method) ? method : OTHER_METHOD
    const params = isObject(message.params) ? message.params : undefined
    const name = params?.name
    if (method === METHODS.toolsCall && typeof name === 'string' && server.tools.has(name))
      this.#tool = name
    const ref = params?.ref
    const promptName =
      method === METHODS.promptsGet
        ? name
        : isObject(ref) && ref.type === 'ref/prompt'
          ? ref.name
          : undefined
    if (typeof promptName === 'string' && server.prompts.has(promptName)) this.#prompt = promptName
    const claimed = isObject(params?._meta) ? params._meta[META_PROTOCOL_VERSION] : undefined
    this.#modern = typeof claimed === 'string'
    if (typeof claimed === 'string' && KNOWN_VERSIONS.has(claimed)) this.#protocolVersion = claimed
    if (!tracer) return

    const attributes: Attributes = this.#common()
    const id = message.id
    if ((typeof id === 'string' && id.length <= MAX_ID_CHARS) || typeof id === 'number')
      attributes[ATTR.jsonrpcRequestId] = String(id)
    const uri = params?.uri
    if (URI_METHODS.has(method) && typeof uri === 'string' && uri.length <= MAX_URI_CHARS)
      attributes[ATTR.mcpResourceUri] = uri
    const target = this.#tool ?? this.#prompt
    const { parent, links } = parentOf(params, headers)
    this.#span = tracer.startSpan(
      target === undefined ? this.#method : `${this.#method} ${target}`,
      { kind: SpanKind.SERVER, attributes, links },
      parent
    )
    this.#context = trace.setSpan(parent, this.#span)
  }

  /** What spans and the duration metric share. */
  #common(): Attributes {
    const attributes: Attributes = {
      [ATTR.mcpMethodName]: this.#method,
      [ATTR.networkTransport]: 'tcp',
      [ATTR.networkProtocolName]: 'http',
    }
    if (this.#protocolVersion) attributes[ATTR.mcpProtocolVersion] = this.#protocolVersion
    if (this.#tool) {
      attributes[ATTR.genAiToolName] = this.#tool
      attributes[ATTR.genAiOperationName] = GEN_AI_EXECUTE_TOOL
    }
    if (this.#prompt) attributes[ATTR.genAiPromptName] = this.#prompt
    return attributes
  }

  run<T>(run: () => T): T {
    return this.#context ? this.#scope.run(this.#context, run) : run()
  }

  async step<T>(name: string, step: () => Promise<T>): Promise<T> {
    if (!this.#tracer || !this.#context) return step()
    const span = this.#tracer.startSpan(name, { kind: SpanKind.INTERNAL }, this.#context)
    try {
      return await step()
    } catch (error) {
      span.setAttribute(ATTR.errorType, errorName(error))
      span.setStatus({ code: SpanStatusCode.ERROR })
      throw error
    } finally {
      span.end()
    }
  }

  session(id: string, protocolVersion: string): void {
    if (KNOWN_VERSIONS.has(protocolVersion)) {
      this.#protocolVersion = protocolVersion
      this.#span?.setAttribute(ATTR.mcpProtocolVersion, protocolVersion)
    }
    this.#span?.setAttribute(ATTR.mcpSessionId, id)
  }

  round(round: number): void {
    this.#round = round
  }

  stateRejected(reason: string): void {
    this.#span?.setAttribute(ATTR.requestStateRejection, reason)
    this.#instruments.rejections.add(1, {
      [ATTR.requestStateRejection]: reason,
      [ATTR.mcpMethodName]: this.#method,
    })
  }

  succeeded(result?: Record<string, unknown>): void {
    const resultType =
      typeof result?.resultType === 'string'
        ? result.resultType
        : this.#modern
          ? 'complete'
          : undefined
    const toolError = this.#method === METHODS.toolsCall && result?.isError === true
    this.#end(resultType, undefined, toolError ? TOOL_ERROR : undefined)
  }

  failed(error: unknown): void {
    const code =
      isObject(error) && typeof error.code === 'number' ? error.code : ErrorCode.InternalError
    const failure = isServerFailure(code)
    const message =
      failure && error instanceof Error ? error.message.slice(0, MAX_MESSAGE_CHARS) : undefined
    this.#end(undefined, code, failure ? String(code) : undefined, message)
  }

  #end(
    resultType: string | undefined,
    code: number | undefined,
    errorType: string | undefined,
    message?: string
  ): void {
    if (this.#ended) return
    this.#ended = true
    const seconds = (performance.now() - this.#started) / 1000
    const attributes = this.#common()
    if (resultType) attributes[ATTR.resultType] = resultType
    if (code !== undefined) attributes[ATTR.rpcResponseStatusCode] = String(code)
    if (errorType) attributes[ATTR.errorType] = errorType
    this.#instruments.duration.record(seconds, attributes)
    if (this.#round > 1 && code === undefined && resultType !== 'input_required') {
      const flow = this.#common()
      delete flow[ATTR.networkTransport]
      delete flow[ATTR.networkProtocolName]
      this.#instruments.rounds.record(this.#round, flow)
    }
    const span = this.#span
    if (!span) return
    if (resultType) span.setAttribute(ATTR.resultType, resultType)
    if (code !== undefined) span.setAttribute(ATTR.rpcResponseStatusCode, String(code))
    if (errorType) {
      span.setAttribute(ATTR.errorType, errorType)
      span.setStatus({ code: SpanStatusCode.ERROR, message })
    }
    span.end()
  }
}

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
  readonly #database: string

  constructor(options: OtelTelemetryOptions) {
    this.#tracer = options.tracerProvider?.getTracer(INSTRUMENTATION)
    this.#instruments = createInstruments(
      options.meterProvider?.getMeter(INSTRUMENTATION) ?? createNoopMeter()
    )
    this.#scope = options.scope
    this.#database = options.database
  }

  forServer(server: ObservedServer): ServerTelemetry {
    return new ObservedHandler(this, server)
  }

  observe(
    server: ObservedServer,
    message: JsonObject & { method: string },
    headers: Headers
  ): RequestObservation {
    return new Observation(this.#tracer, this.#instruments, this.#scope, server, message, headers)
  }

  /**
   * `response` with its body counted in `open_streams` until it ends. The count wraps the body
   * transparently, as the stream's own bounds need (`mcp/event-stream.ts`): it holds no chunk of
   * its own (high-water mark 0: it reads one only when the runtime asks), so the stream's queue
   * still tells what the client has not taken, and an error of the stream reaches the runtime at
   * once, even while the runtime waits for the client to read (it then resets the connection).
   */
  countStream(kind: StreamKind, protocolVersion: string, response: Response): Response {
    const source = response.body
    if (!source) return response
    const attributes: Attributes = { [ATTR.streamKind]: kind }
    if (KNOWN_VERSIONS.has(protocolVersion)) attributes[ATTR.mcpProtocolVersion] = protocolVersion
    const counter = this.#instruments.openStreams
    counter.add(1, attributes)
    let open = true
    const close = () => {
      if (!open) return
      open = false
      counter.add(-1, attributes)
    }
    const reader = source.getReader()
    const body = new ReadableStream<Uint8Array>(
      {
        start(controller) {
          reader.closed.catch((error: unknown) => {
            close()
            controller.error(error)
          })
        },
        async pull(controller) {
          try {
            const { done, value } = await reader.read()
            if (done) {
              close()
              controller.close()
            } else controller.enqueue(value)
          } catch (error) {
            close()
            controller.error(error)
          }
        },
        cancel(reason) {
          close()
          return reader.cancel(reason)
        },
      },
      { highWaterMark: 0 }
    )
    return new Response(body, { status: response.status, headers: response.headers })
  }

  /**
   * `store` with a CLIENT span around each call made while a request runs (none outside one: the
   * task takeover loop's polling stays out of traces), and the status of every task record written
   * counted. The store's own methods run on the store itself (private fields stay reachable).
   */
  instrumentStore<T extends object>(store: T): T {
    const wrapped = new Map<PropertyKey, unknown>()
    return new Proxy(store, {
      get: (target, key) => {
        const value: unknown = Reflect.get(target, key, target)
        if (typeof value !== 'function') return value
        let call = wrapped.get(key)
        if (call === undefined) {
          call = this.#storeCall(target, String(key), value as (...args: unknown[]) => unknown)
          wrapped.set(key, call)
        }
        return call
      },
    })
  }

  #storeCall(target: object, name: string, method: (...args: unknown[]) => unknown) {
    return (...args: unknown[]): unknown => {
      const parent = this.#tracer && this.#scope.current()
      const result = parent
        ? this.#storeSpan(parent, name, () => method.apply(target, args))
        : method.apply(target, args)
      if (name === 'createTask' || name === 'updateTask') this.#countTaskStatus(name, args, result)
      return result
    }
  }

  #storeSpan(parent: Context, name: string, call: () => unknown): unknown {
    const span = this.#tracer!.startSpan(
      `store.${name}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { [ATTR.dbSystemName]: this.#database, [ATTR.dbOperationName]: name },
      },
      parent
    )
    const fail = (error: unknown) => {
      span.setAttribute(ATTR.errorType, errorName(error))
      span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    }
    try {
      const result = this.#scope.run(trace.setSpan(parent, span), call)
      if (!(result instanceof Promise)) {
        span.end()
        return result
      }
      return result.then(
        (value: unknown) => {
          span.end()
          return value
        },
        (error: unknown) => {
          fail(error)
          throw error
        }
      )
    } catch (error) {
      fail(error)
      throw error
    }
  }

  /**
   * `createTask(task, maxLive)` enters `task.status`, `updateTask(id, version, patch)` enters
   * `patch.status`, each when it applied (a task over the cap, a missed compare-and-set: nothing).
   */
  #countTaskStatus(name: string, args: unknown[], result: unknown): void {
    const status =
      name === 'createTask'
        ? (args[0] as { status?: unknown })?.status
        : (args[2] as { status?: unknown })?.status
    if (typeof status !== 'string' || !(result instanceof Promise)) return
    result.then(
      (record: unknown) => {
        if (record) this.#instruments.taskStatus.add(1, { [ATTR.taskStatus]: status })
      },
      () => {}
    )
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
