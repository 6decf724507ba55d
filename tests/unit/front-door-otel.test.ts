/**
 * The front door's `telemetry` option with `otelTelemetry` of `stateless-mcp/otel`, recorded by the
 * OpenTelemetry SDK's own in-memory span and metric exporters: a `tools/call` is a SERVER span
 * named and attributed as the semantic conventions for MCP say, parented on the W3C trace context
 * the client put in `params._meta` (else the `traceparent` header; a malformed one is no parent),
 * the engine's own names under the default namespace, the engine store's calls as child spans, the
 * operation duration recorded, and a bad namespace refused at construction.
 */
import { SpanKind, type SpanContext } from '@opentelemetry/api'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import * as z from 'zod'
import { createMcpServer, generateStateKeys, text, tool, type McpLogger } from 'stateless-mcp'
import { otelTelemetry } from 'stateless-mcp/otel'
import { greet } from '../support/greet-tool.ts'
import { mcpInit, readMessages } from '../support/mcp-request.ts'

const TRACE = '0af7651916cd43dd8448eb211c80319c'
const SPAN = 'b7ad6b7169203331'
const HEADER_TRACE = '11111111111111111111111111111111'
const HEADER_SPAN = '2222222222222222'

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** A tool that may run as a task: the server then serves `tasks/get` from its engine store. */
const report = tool({
  name: 'report',
  description: 'Writes a report, as a task when the client can have one.',
  input: z.object({}),
  task: 'optional',
  async run(_args, ctx) {
    await ctx.startTask()
    return text('done')
  },
})

const spans = new InMemorySpanExporter()
const tracerProvider = new TracerProvider({
  spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
})
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const metricReader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  // Exported when a test flushes.
  exportIntervalMillis: 3_600_000,
})
const meterProvider = new MeterProvider({ readers: [metricReader] })
const quiet: McpLogger = { warn: () => {}, error: () => {} }
const server = createMcpServer(
  { info: { name: 'greeter', version: '1.0.0' }, tools: [greet, report] },
  {
    stateKeys: generateStateKeys(),
    logger: quiet,
    telemetry: otelTelemetry({
      tracer: tracerProvider.getTracer('front-door-test'),
      meter: meterProvider.getMeter('front-door-test'),
    }),
  }
)

beforeEach(() => spans.reset())

afterAll(async () => {
  await server.close()
  await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()])
})

/** Calls `greet` as a 2026-07-28 client, with `meta` and `headers` added; answers its result. */
async function callGreet(
  args: Record<string, unknown>,
  meta: Record<string, unknown> = {},
  headers: Record<string, string> = {}
) {
  const response = await server.fetch(
    new Request(
      'http://127.0.0.1/mcp',
      mcpInit('tools/call', {
        id: 'call-1',
        params: { name: 'greet', arguments: args },
        meta,
        headers,
        capabilities: { elicitation: {} },
      })
    )
  )
  expect(response.status).toBe(200)
  const [message] = await readMessages(response)
  return message?.result as Record<string, unknown>
}

/** The ended spans, once every one is exported. */
async function finished(): Promise<ReadableSpan[]> {
  await tracerProvider.forceFlush()
  return spans.getFinishedSpans()
}

async function serverSpan(): Promise<ReadableSpan> {
  const found = (await finished()).filter((span) => span.kind === SpanKind.SERVER)
  expect(found).toHaveLength(1)
  return found[0]!
}

function parentOf(span: ReadableSpan): Pick<SpanContext, 'traceId' | 'spanId'> | undefined {
  const parent = span.parentSpanContext
  return parent && { traceId: parent.traceId, spanId: parent.spanId }
}

describe('createMcpServer with otelTelemetry', () => {
  it('makes a tools/call a SERVER span with the MCP attributes, parented on _meta traceparent', async () => {
    const result = await callGreet(
      { name: 'Ada' },
      { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'vendor=x' }
    )
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, Ada' }])
    const span = await serverSpan()
    expect(span.name).toBe('tools/call greet')
    expect(span.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': '2026-07-28',
      'gen_ai.tool.name': 'greet',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': 'call-1',
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
      'stateless_mcp.result_type': 'complete',
    })
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(span.spanContext().traceId).toBe(TRACE)
    expect(parentOf(span)).toEqual({ traceId: TRACE, spanId: SPAN })
    expect(span.parentSpanContext?.isRemote).toBe(true)
    expect(span.spanContext().traceState?.get('vendor')).toBe('x')
    expect(span.links).toEqual([])
  })

  it('parents on the traceparent header when _meta has none, and links it when _meta differs', async () => {
    const header = { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` }
    await callGreet({ name: 'Ada' }, {}, header)
    expect(parentOf(await serverSpan())).toEqual({ traceId: HEADER_TRACE, spanId: HEADER_SPAN })

    spans.reset()
    await callGreet({ name: 'Ada' }, { traceparent: `00-${TRACE}-${SPAN}-01` }, header)
    const span = await serverSpan()
    expect(parentOf(span)).toEqual({ traceId: TRACE, spanId: SPAN })
    expect(span.links.map((link) => link.context.spanId)).toEqual([HEADER_SPAN])
  })

  it.each([
    ['uppercase hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['a short span id', `00-${TRACE}-${SPAN.slice(1)}-01`],
  ])('takes a traceparent with %s as no parent (a new trace)', async (_case, traceparent) => {
    await callGreet({ name: 'Ada' }, { traceparent })
    const span = await serverSpan()
    expect(span.parentSpanContext).toBeUndefined()
    expect(span.spanContext().traceId).not.toBe(TRACE)
  })

  it('reads a later version’s traceparent, ignoring the fields it adds', async () => {
    await callGreet({ name: 'Ada' }, { traceparent: `01-${TRACE}-${SPAN}-01-future` })
    expect(parentOf(await serverSpan())).toEqual({ traceId: TRACE, spanId: SPAN })
  })

  it('makes a round that asks the person input_required, with the sealing step as a child', async () => {
    const result = await callGreet({})
    expect(result.resultType).toBe('input_required')
    const ended = await finished()
    const span = ended.find((candidate) => candidate.kind === SpanKind.SERVER)!
    expect(span.attributes['stateless_mcp.result_type']).toBe('input_required')
    const children = ended.filter(
      (child) => child.parentSpanContext?.spanId === span.spanContext().spanId
    )
    expect(children.map((child) => [child.name, child.kind])).toEqual([
      ['seal requestState', SpanKind.INTERNAL],
    ])
  })

  it('makes the engine store’s calls child CLIENT spans of their request', async () => {
    const response = await server.fetch(
      new Request(
        'http://127.0.0.1/mcp',
        mcpInit('tasks/get', {
          id: 'get-1',
          params: { taskId: 'no-such-task' },
          meta: { traceparent: `00-${TRACE}-${SPAN}-01` },
          capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
        })
      )
    )
    const [message] = await readMessages(response)
    expect(message?.error).toBeDefined()
    const ended = await finished()
    const request = ended.find((span) => span.kind === SpanKind.SERVER)!
    expect(request.name).toBe('tasks/get')
    const storeCalls = ended.filter((span) => span.kind === SpanKind.CLIENT)
    expect(storeCalls.map((span) => [span.name, span.attributes])).toEqual([
      ['store.getTask', { 'db.operation.name': 'getTask' }],
    ])
    expect(parentOf(storeCalls[0]!)).toEqual({
      traceId: TRACE,
      spanId: request.spanContext().spanId,
    })
  })

  it('records mcp.server.operation.duration per method and tool', async () => {
    await callGreet({ name: 'Ada' })
    await metricReader.forceFlush()
    const points = metricExporter
      .getMetrics()
      .flatMap((resource) => resource.scopeMetrics)
      .flatMap((scope) => scope.metrics)
      .filter((metric) => metric.descriptor.name === 'mcp.server.operation.duration')
      .flatMap((metric) => metric.dataPoints.map((point) => point.attributes))
    expect(points).toContainEqual(
      expect.objectContaining({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'greet' })
    )
  })

  it('refuses a namespace that is not lowercase dot-separated words, naming the rule', () => {
    expect(() => otelTelemetry({ namespace: 'My-Server' })).toThrow(
      /namespace must be lowercase dot-separated words/
    )
  })
})
