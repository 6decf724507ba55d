/**
 * @module mcp/otel/spans
 * What every span of the engine's telemetry shares: where a request's span comes from (`parentOf`:
 * the trace context a client put in `params._meta`, the conventions' and SEP-414's place, else the
 * one in the HTTP headers; when both are present and differ, the header's becomes a link), read by
 * a propagator (`W3C_TRACE_CONTEXT` unless the server's owner gives one: `traceparent` and
 * `tracestate`, parsed here so that the entry needs `@opentelemetry/api` alone), where the running
 * request's span is kept across awaits (`SpanScope`: AsyncLocalStorage, the runtime's own where it
 * offers one without an import, `runtimeContextStorage`; without, store calls get no span, the
 * steps the engine reports still do), and how a failed child span is marked (`markFailed`). Generic:
 * none of it depends on what a server serves or where it runs.
 */
import {
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type TextMapPropagator,
} from '@opentelemetry/api'
import { isObject, type JsonObject } from '../wire.ts'
import { ATTR } from './conventions.ts'

/** Where the span of the running request is kept across awaits. */
export interface SpanScope {
  current(): Context | undefined
  run<T>(context: Context, run: () => T): T
}

/**
 * The part of `AsyncLocalStorage` the engine's telemetry needs to nest store calls under their
 * request: Node's, Deno's, Bun's, or a Worker's with Node compatibility on.
 *
 * @example
 * import { AsyncLocalStorage } from 'node:async_hooks'
 * import type { Context } from '@opentelemetry/api'
 * import { otelTelemetry } from 'stateless-mcp/otel'
 *
 * const telemetry = otelTelemetry({ tracer, contextStorage: new AsyncLocalStorage<Context>() })
 */
export interface ContextStorage {
  getStore(): Context | undefined
  run<T>(store: Context, run: () => T): T
}

/** The runtime's AsyncLocalStorage, where it offers one without an import (`getBuiltinModule`). */
export function runtimeContextStorage(): ContextStorage | undefined {
  const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } })
    .process
  const hooks = runtime?.getBuiltinModule?.('node:async_hooks') as
    { AsyncLocalStorage?: new () => ContextStorage } | undefined
  return hooks?.AsyncLocalStorage ? new hooks.AsyncLocalStorage() : undefined
}

/** A scope over AsyncLocalStorage, or none (store calls then get no span). */
export function spanScope(storage: ContextStorage | undefined): SpanScope {
  if (!storage) return { current: () => undefined, run: (_context, run) => run() }
  return { current: () => storage.getStore(), run: (context, run) => storage.run(context, run) }
}

/** What reads a trace context out of a carrier: any `TextMapPropagator` does. */
export type TraceContextReader = Pick<TextMapPropagator, 'extract'>

/** `version-traceid-parentid-flags`, lowercase hex; a later version may append `-…`. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/**
 * The W3C Trace Context (`traceparent`, `tracestate`) as the engine reads it by default: a malformed
 * or all-zero `traceparent`, version `ff`, or a version 00 one with anything after its flags is
 * none; a later version's extra fields are ignored, as the recommendation says.
 */
export const W3C_TRACE_CONTEXT: TraceContextReader = {
  extract<Carrier>(context: Context, carrier: Carrier, getter: TextMapGetter<Carrier>): Context {
    const header = getter.get(carrier, 'traceparent')
    const match = typeof header === 'string' ? TRACEPARENT.exec(header.trim()) : null
    if (!match) return context
    const [, version, traceId, spanId, flags, rest] = match as unknown as string[]
    if (version === 'ff' || (version === '00' && rest !== undefined)) return context
    const state = getter.get(carrier, 'tracestate')
    const spanContext = {
      traceId: traceId!,
      spanId: spanId!,
      traceFlags: Number.parseInt(flags!, 16),
      isRemote: true,
      traceState:
        state === undefined
          ? undefined
          : createTraceState(Array.isArray(state) ? state.join(',') : state),
    }
    return isSpanContextValid(spanContext) ? trace.setSpanContext(context, spanContext) : context
  },
}

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
  return spanContext && isSpanContextValid(spanContext) ? spanContext : undefined
}

/** The parent of a request's span and the link to the HTTP context, as the module header says. */
export function parentOf(
  propagator: TraceContextReader,
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

/** Marks a child span (a step, a store call) failed by `error`: its `error.type` and an error status. */
export function markFailed(span: Span, error: unknown): void {
  span.setAttribute(ATTR.errorType, error instanceof Error ? error.name : typeof error)
  span.setStatus({ code: SpanStatusCode.ERROR })
}
