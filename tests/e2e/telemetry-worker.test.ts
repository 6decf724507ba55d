/**
 * Telemetry of the notes Worker inside workerd: the real Worker (`wrangler.toml`, `src/worker.ts`)
 * under `wrangler dev`, configured by `OTEL_*` bindings only, exports over `fetch` to a loopback
 * OTLP/HTTP receiver — spans as gzip-compressed protobuf, metrics as JSON (per-signal protocols), so
 * both encodings and the CompressionStream path of `telemetry/fetch-exporter.ts` run in the
 * runtime that ships. The server span continues the client's `_meta` trace context, the sealing of
 * an MRTR round is its child, the duration histogram arrives per tool, and nothing a client sent as
 * arguments appears in any exported attribute. Store calls nest under their request: workerd
 * provides AsyncLocalStorage at this compatibility date.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { mcpInit, type JsonObject } from '../support/mcp-request.ts'
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

const TRACE_ID = '5b8efff798038103d269b633813fc60c'
const CLIENT_SPAN = 'eee19b7ec3c1b174'
const TITLE = 'worker-telemetry-secret-title'
const BODY = 'worker-telemetry-secret-body'

let receiver: OtlpReceiver
let worker: WorkerProcess | undefined

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  worker = await startWorker({
    config: join(import.meta.dirname, '../../wrangler.toml'),
    vars: {
      STATE_KEYS: formatKeyRing([generateKey()]),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
      OTEL_METRIC_EXPORT_INTERVAL: '1',
      OTEL_SERVICE_NAME: 'notes-worker-under-test',
    },
  })
}, 180_000)

afterAll(async () => {
  await worker?.stop()
  await receiver?.close()
})

function mcpUrl(): string {
  if (!worker) throw new Error('the Worker did not start')
  return worker.url
}

async function call(name: string, args: Record<string, unknown>, meta = {}) {
  const response = await fetch(
    mcpUrl(),
    mcpInit('tools/call', {
      params: { name, arguments: args },
      meta,
      capabilities: { elicitation: {} },
    })
  )
  const text = await response.text()
  expect(response.status, text).toBe(200)
  return JSON.parse(text) as { result: JsonObject }
}

describe('telemetry of the Worker in workerd, exported over fetch', () => {
  it("exports the server span of a tools/call as gzip protobuf, parented on the client's _meta traceparent", async () => {
    await call(
      'create_note',
      { title: TITLE, body: BODY },
      { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` }
    )
    await receiver.waitFor(() =>
      receiver.spans.some((span) => span.name === 'tools/call create_note')
    )
    const span = receiver.spans.find((span) => span.name === 'tools/call create_note')!
    expect(span).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: CLIENT_SPAN,
      kind: 2,
      resource: { 'service.name': 'notes-worker-under-test' },
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'create_note',
        'mcp.protocol.version': '2026-07-28',
        'notes_mcp.result_type': 'complete',
      },
    })
    // workerd offers AsyncLocalStorage here (Node compatibility is on by the compatibility date):
    // store calls nest under the request.
    const store = receiver.spans.find(
      (candidate) => candidate.name === 'store.create' && candidate.traceId === TRACE_ID
    )
    expect(store).toMatchObject({
      parentSpanId: span.spanId,
      kind: 3,
      attributes: { 'db.system.name': 'cloudflare.d1', 'db.operation.name': 'create' },
    })
    const traces = receiver.exports.filter((entry) => entry.path === '/v1/traces')
    expect(traces.length).toBeGreaterThan(0)
    for (const entry of traces)
      expect(entry).toMatchObject({ contentType: 'application/x-protobuf', gzip: true })
  })

  it('exports the duration histogram as JSON, by method and tool', async () => {
    await call('list_tags', {})
    await receiver.waitFor(() =>
      receiver.points.some(
        (point) =>
          point.metric === 'mcp.server.operation.duration' &&
          point.attributes['gen_ai.tool.name'] === 'list_tags'
      )
    )
    const point = receiver.points.find(
      (point) =>
        point.metric === 'mcp.server.operation.duration' &&
        point.attributes['gen_ai.tool.name'] === 'list_tags'
    )!
    expect(point).toMatchObject({ type: 'histogram', unit: 's' })
    expect(point.count).toBeGreaterThanOrEqual(1)
    const metrics = receiver.exports.filter((entry) => entry.path === '/v1/metrics')
    expect(metrics.length).toBeGreaterThan(0)
    for (const entry of metrics)
      expect(entry).toMatchObject({ contentType: 'application/json', gzip: false })
  })

  it('exports the sealing of an input_required round as a child of its server span', async () => {
    const created = await call('create_note', { title: TITLE, body: BODY })
    const note = JSON.parse(created.result.content[0].text).note as { id: string }
    const round = await call('delete_note', { id: note.id })
    expect(round.result.resultType).toBe('input_required')
    await receiver.waitFor(
      () =>
        receiver.spans.some(
          (span) =>
            span.name === 'tools/call delete_note' &&
            span.attributes['notes_mcp.result_type'] === 'input_required'
        ) && receiver.spans.some((span) => span.name === 'seal requestState')
    )
    const server = receiver.spans.find((span) => span.name === 'tools/call delete_note')!
    const seal = receiver.spans.find((span) => span.name === 'seal requestState')!
    expect(seal).toMatchObject({ traceId: server.traceId, parentSpanId: server.spanId, kind: 1 })
  })

  it('never exports what the client sent as arguments', () => {
    expect(receiver.spans.length).toBeGreaterThan(0)
    expect(receiver.points.length).toBeGreaterThan(0)
    const exported = JSON.stringify([receiver.spans, receiver.points])
    expect(exported).not.toContain(TITLE)
    expect(exported).not.toContain(BODY)
  })
})
