/**
 * @module telemetry/spans
 * What every span of this server's telemetry shares: where a request's span comes from (`parentOf`:
 * the W3C context, `traceparent`, `tracestate` and `baggage`, a client put in `params._meta`, the
 * conventions' and SEP-414's place, else the one in the HTTP headers; when both are present and
 * differ, the header's becomes a link), where the running request's span is kept across awaits
 * (`SpanScope`: AsyncLocalStorage where the runtime has it; without, store calls get no span, the
 * steps the engine reports still do), and how a failed child span is marked (`markFailed`).
 */
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api'
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core'
import { isObject, type JsonObject } from '../mcp/wire.ts'
import { ATTR } from './conventions.ts'

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
export function parentOf(
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
