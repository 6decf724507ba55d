/**
 * What the notes app's telemetry records, request by request, through the real pieces: `createApp`
 * on node:sqlite with `startNodeTelemetry` (the official OTLP/HTTP exporters, http/json here) and a
 * loopback OTLP receiver. Pins the semantic conventions' rules the e2e flows do not reach: the
 * parent from the `traceparent` header without `_meta`, a link to it when `_meta` names another
 * parent, caller errors (-32602, -32601) in `rpc.response.status_code` only, failures (-32021,
 * `tool_error`) as `error.type` with an error status, names clients choose kept bounded (unknown
 * tools out of span names, unknown methods as `_OTHER`), refused states counted by reason, open
 * listen streams counted up and down, task status changes, the engine store's calls nested in their
 * request as the notes store's are, and store calls outside a request left without a span.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { parseConfig } from '../../src/config.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { parseTelemetryEnv } from '../../src/telemetry/env.ts'
import { startNodeTelemetry, type NodeTelemetry } from '../../src/node/telemetry.ts'
import { LEGACY_VERSION, initializeMessage, startSession } from '../support/legacy-request.ts'
import { postMcp, readMessages, requestApp } from '../support/mcp-request.ts'
import { sqliteStores, type TestStores } from '../support/sqlite-stores.ts'
import { newTask, storeTask } from '../support/store-contract.ts'
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../support/otlp-receiver.ts'

const HEADER_TRACE = '11111111111111111111111111111111'
const HEADER_SPAN = '2222222222222222'
const META_TRACE = '33333333333333333333333333333333'
const META_SPAN = '4444444444444444'

let receiver: OtlpReceiver
let telemetry: NodeTelemetry
let stores: TestStores
let app: ReturnType<typeof createApp>

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  const config = parseTelemetryEnv({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '10',
    // Metrics are exported when a test flushes them.
    OTEL_METRIC_EXPORT_INTERVAL: '3600000',
  })
  telemetry = await startNodeTelemetry({
    config,
    replicaId: 'unit',
    database: 'sqlite',
    host: '127.0.0.1',
  })
  stores = await sqliteStores()
  const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
  app = createApp(parseConfig({}), {
    store: stores.store,
    engineStore: stores.engineStore,
    sealer,
    bus: new InProcessEventBus(),
    telemetry: telemetry.telemetry,
  })
})

afterAll(async () => {
  await telemetry?.shutdown()
  await stores?.close()
  await receiver?.close()
})

/** The span of the request whose JSON-RPC id is `id`, once exported. */
async function spanOf(id: string): Promise<ReceivedSpan> {
  const find = () =>
    receiver.spans.find((span) => span.kind === 2 && span.attributes['jsonrpc.request.id'] === id)
  await receiver.waitFor(() => find() !== undefined)
  return find()!
}

/** The latest exported value of a metric's point with these attributes, after a flush. */
async function metricPoint(metric: string, attributes: Record<string, string>) {
  await telemetry.flush()
  return receiver.points.findLast(
    (point) =>
      point.metric === metric &&
      Object.entries(attributes).every(([key, value]) => point.attributes[key] === value)
  )
}

describe('server spans follow the MCP semantic conventions', () => {
  it('continues the traceparent header when params._meta carries none', async () => {
    await postMcp(app, 'tools/list', {
      id: 'header-only',
      headers: { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` },
    })
    const span = await spanOf('header-only')
    expect(span).toMatchObject({
      name: 'tools/list',
      traceId: HEADER_TRACE,
      parentSpanId: HEADER_SPAN,
      links: [],
      resource: { 'service.instance.id': 'unit' },
    })
  })

  it("parents on params._meta and links the header's context when both are present", async () => {
    await postMcp(app, 'tools/list', {
      id: 'both',
      meta: { traceparent: `00-${META_TRACE}-${META_SPAN}-01`, tracestate: 'vendor=x' },
      headers: { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` },
    })
    const span = await spanOf('both')
    expect(span).toMatchObject({
      traceId: META_TRACE,
      parentSpanId: META_SPAN,
      links: [{ traceId: HEADER_TRACE, spanId: HEADER_SPAN }],
    })
  })

  it('records an unknown tool (-32602) as a caller error: status code only, no error.type, no name', async () => {
    await postMcp(app, 'tools/call', {
      id: 'unknown-tool',
      params: { name: 'no_such_tool', arguments: {} },
    })
    const span = await spanOf('unknown-tool')
    expect(span.name).toBe('tools/call')
    expect(span.attributes['rpc.response.status_code']).toBe('-32602')
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(span.attributes).not.toHaveProperty('gen_ai.tool.name')
    expect(span.status.code).toBe(0)
  })

  it('records a missing client capability (-32021) as a failure with the JSON-RPC message', async () => {
    const created = await postMcp(app, 'tools/call', {
      id: 'create',
      params: { name: 'create_note', arguments: { title: 'To delete', body: 'Text.' } },
    })
    const [answer] = await readMessages(created)
    const noteId = JSON.parse(answer!.result.content[0].text).note.id as string
    await postMcp(app, 'tools/call', {
      id: 'no-capability',
      params: { name: 'delete_note', arguments: { id: noteId } },
    })
    const span = await spanOf('no-capability')
    expect(span).toMatchObject({
      name: 'tools/call delete_note',
      attributes: { 'rpc.response.status_code': '-32021', 'error.type': '-32021' },
      status: { code: 2 },
    })
    expect(span.status.message).toMatch(/elicitation/)
  })

  it('records a tool result with isError as error.type tool_error, without its text', async () => {
    await postMcp(app, 'tools/call', {
      id: 'tool-error',
      params: { name: 'get_note', arguments: { id: 'n_doesnotexist0000' } },
    })
    const span = await spanOf('tool-error')
    expect(span).toMatchObject({
      name: 'tools/call get_note',
      attributes: { 'error.type': 'tool_error', 'notes_mcp.result_type': 'complete' },
      status: { code: 2, message: '' },
    })
    expect(span.attributes).not.toHaveProperty('rpc.response.status_code')
  })

  it('names a method outside the known ones _OTHER', async () => {
    const response = await postMcp(app, 'vendor/unknown', { id: 'other' })
    expect(response.status).toBe(404)
    const span = await spanOf('other')
    expect(span).toMatchObject({
      name: '_OTHER',
      attributes: { 'mcp.method.name': '_OTHER', 'rpc.response.status_code': '-32601' },
      status: { code: 0 },
    })
  })

  it('leaves out a request id longer than 256 characters', async () => {
    const trace = '55555555555555555555555555555555'
    await postMcp(app, 'tools/list', {
      id: 'x'.repeat(300),
      headers: { traceparent: `00-${trace}-${HEADER_SPAN}-01` },
    })
    await receiver.waitFor(() => receiver.spans.some((span) => span.traceId === trace))
    const span = receiver.spans.find((span) => span.traceId === trace)!
    expect(span.attributes).not.toHaveProperty('jsonrpc.request.id')
  })

  it('puts the duration of every request in the conventions histogram, by method, target and outcome', async () => {
    const point = await metricPoint('mcp.server.operation.duration', {
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'delete_note',
      'error.type': '-32021',
    })
    expect(point).toMatchObject({ type: 'histogram', unit: 's', count: 1 })
    expect(point!.attributes).not.toHaveProperty('jsonrpc.request.id')
  })
})

describe("operators' metrics", () => {
  it('counts a refused requestState by the reason only the log saw', async () => {
    await postMcp(app, 'tools/call', {
      id: 'bad-state',
      params: { name: 'delete_note', arguments: { id: 'n_x' }, requestState: 'not-a-token' },
      capabilities: { elicitation: {} },
    })
    const span = await spanOf('bad-state')
    const reason = span.attributes['notes_mcp.request_state.reason']
    expect(typeof reason).toBe('string')
    expect(span.attributes['rpc.response.status_code']).toBe('-32602')
    const point = await metricPoint('notes_mcp.server.request_state.rejections', {
      'notes_mcp.request_state.reason': reason as string,
      'mcp.method.name': 'tools/call',
    })
    expect(point).toMatchObject({ type: 'sum', value: 1 })
  })

  it('counts a listen stream as open until the client closes it', async () => {
    const response = await postMcp(app, 'subscriptions/listen', {
      id: 'listen',
      params: { notifications: { resourcesListChanged: true } },
    })
    const reader = response.body!.getReader()
    await reader.read()
    const open = await metricPoint('notes_mcp.server.open_streams', {
      'notes_mcp.stream.kind': 'listen',
    })
    expect(open).toMatchObject({ type: 'sum', value: 1 })
    await reader.cancel()
    const closed = await metricPoint('notes_mcp.server.open_streams', {
      'notes_mcp.stream.kind': 'listen',
    })
    expect(closed).toMatchObject({ value: 0 })
  })

  it("counts a 2025-era session's GET stream as open until the client closes it", async () => {
    const initialized = await postMcp(app, 'initialize', {
      id: 'init',
      meta: null,
      headers: { 'mcp-protocol-version': undefined, 'mcp-method': undefined },
      params: initializeMessage().params,
    })
    const session = initialized.headers.get('mcp-session-id')!
    const stream = await requestApp(app, '/mcp', {
      method: 'GET',
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': session,
        'mcp-protocol-version': LEGACY_VERSION,
      },
    })
    expect(stream.headers.get('content-type')).toBe('text/event-stream')
    const attributes = { 'notes_mcp.stream.kind': 'get', 'mcp.protocol.version': LEGACY_VERSION }
    expect(await metricPoint('notes_mcp.server.open_streams', attributes)).toMatchObject({
      value: 1,
    })
    await stream.body!.cancel()
    expect(await metricPoint('notes_mcp.server.open_streams', attributes)).toMatchObject({
      value: 0,
    })
  })

  it('counts the status every task record is written into', async () => {
    const tasks = telemetry.telemetry.instrumentStore(stores.engineStore)
    const record = await storeTask(tasks, newTask('local', Date.now()))
    expect(await tasks.updateTask(record.id, record.version, { status: 'completed' })).toBeDefined()
    // A compare-and-set that misses writes nothing, so it counts nothing.
    expect(await tasks.updateTask(record.id, record.version, { status: 'failed' })).toBeUndefined()
    const working = await metricPoint('notes_mcp.server.task.status_changes', {
      'notes_mcp.task.status': 'working',
    })
    const completed = await metricPoint('notes_mcp.server.task.status_changes', {
      'notes_mcp.task.status': 'completed',
    })
    const failed = await metricPoint('notes_mcp.server.task.status_changes', {
      'notes_mcp.task.status': 'failed',
    })
    expect([working?.value, completed?.value, failed]).toEqual([1, 1, undefined])
  })

  it('gives store calls made outside any request no span', async () => {
    const outside = telemetry.telemetry.instrumentStore(stores.store)
    await outside.listTags('local')
    await telemetry.flushSpans()
    expect(receiver.spans.filter((span) => span.name === 'store.listTags')).toEqual([])
    // Inside a request the same call is a child span.
    await postMcp(app, 'tools/call', { id: 'tags', params: { name: 'list_tags', arguments: {} } })
    const server = await spanOf('tags')
    await receiver.waitFor(() => receiver.spans.some((span) => span.name === 'store.listTags'))
    expect(receiver.spans.find((span) => span.name === 'store.listTags')).toMatchObject({
      traceId: server.traceId,
      parentSpanId: server.spanId,
    })
  })

  it("makes the engine store's calls child spans of their request too (a 2025 call that asks keeps its stream)", async () => {
    const note = await stores.store.create('local', { title: 'Asked', body: '', tags: [] }, 1)
    const { session } = await startSession(app, { capabilities: { elicitation: {} } })
    const asking = await session.request(
      'tools/call',
      { name: 'delete_note', arguments: { id: note.id } },
      { id: 'engine-store-span' }
    )
    expect(asking.headers.get('content-type')).toBe('text/event-stream')
    await asking.body!.cancel()
    // The call's span ends with its flow; its children, the notes store's read of the note and the
    // engine store's record of the stream, are exported as they end, under one parent.
    const stream = () => receiver.spans.find((span) => span.name === 'store.createStream')
    await receiver.waitFor(() => stream() !== undefined)
    const { traceId, parentSpanId } = stream()!
    const read = receiver.spans.find(
      (span) => span.name === 'store.get' && span.traceId === traceId
    )
    expect(parentSpanId).toMatch(/^[0-9a-f]{16}$/)
    expect(read).toMatchObject({ parentSpanId })
  })

  it('reads a listen stream body only as the client does (the stream still answers)', async () => {
    const response = await postMcp(app, 'subscriptions/listen', {
      id: 'listen-2',
      params: { notifications: { resourcesListChanged: true } },
    })
    const reader = response.body!.getReader()
    const { value } = await reader.read()
    const [ack] = await readMessages(
      new Response(value, { headers: { 'content-type': 'text/event-stream' } })
    )
    expect(ack?.method).toBe('notifications/subscriptions/acknowledged')
    await reader.cancel()
  })
})
