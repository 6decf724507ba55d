/**
 * One multi round-trip flow, two replicas, one trace: two `npm start` processes (REPLICA_ID a and b)
 * share a key ring and a SQLite file and export to one loopback OTLP/HTTP receiver (protobuf), and
 * a client that keeps its trace context sends round 1 of `delete_note` to a and round 2 to b, each
 * round under a span of its own in the same trace (`params._meta.traceparent`). The receiver gets
 * both server spans in the client's trace, each the child of the client's span of its round and
 * named after the tool, from `service.instance.id` a and b; round 1's seal on a and round 2's open
 * and store delete on b as their children; replica b counts a completed two-round flow. A 2025-era
 * session's requests carry its random id, never the session token. No exported attribute, status
 * message or resource holds an argument, a note's content, a token or the requestState.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { LEGACY_VERSION, initializeMessage } from '../support/legacy-request.ts'
import { mcpInit, type JsonObject } from '../support/mcp-request.ts'
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../support/otlp-receiver.ts'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const ROUND_1_SPAN = 'b7ad6b7169203331'
const ROUND_2_SPAN = 'c8be7c827a314442'
const TITLE = 'replica-telemetry-secret-title'
const BODY = 'replica-telemetry-secret-body'

let receiver: OtlpReceiver
let replicas: Record<'a' | 'b', ServerProcess>
/** Everything a client sent or got that telemetry must never carry. */
const secrets: string[] = [TITLE, BODY]

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  const env = {
    DATA_DIR: await tempDataDir(),
    STATE_KEYS: formatKeyRing([generateKey()]),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_METRIC_EXPORT_INTERVAL: '200',
  }
  replicas = {
    a: await startServer('notes', { ...env, REPLICA_ID: 'a' }),
    b: await startServer('notes', { ...env, REPLICA_ID: 'b' }),
  }
}, 60_000)

afterAll(async () => {
  await Promise.all([replicas?.a.stop(), replicas?.b.stop()])
  await receiver?.close()
})

async function post(
  replica: 'a' | 'b',
  method: string,
  options: Parameters<typeof mcpInit>[1]
): Promise<{ response: Response; body: JsonObject }> {
  const response = await fetch(replicas[replica].url, mcpInit(method, options))
  const text = await response.text()
  expect(response.status, text).toBe(200)
  return { response, body: JSON.parse(text) }
}

function spansNamed(name: string, traceId = TRACE_ID): ReceivedSpan[] {
  return receiver.spans.filter((span) => span.name === name && span.traceId === traceId)
}

describe('telemetry across two replicas', () => {
  it("puts both rounds of a delete_note flow, served by two replicas, in the client's trace", async () => {
    const created = await post('a', 'tools/call', {
      params: { name: 'create_note', arguments: { title: TITLE, body: BODY } },
    })
    const noteId = JSON.parse(created.body.result.content[0].text).note.id as string
    secrets.push(noteId)

    const capabilities = { elicitation: {} }
    const round1 = await post('a', 'tools/call', {
      params: { name: 'delete_note', arguments: { id: noteId } },
      capabilities,
      meta: { traceparent: `00-${TRACE_ID}-${ROUND_1_SPAN}-01` },
    })
    expect(round1.body.result.resultType).toBe('input_required')
    const requestState = round1.body.result.requestState as string
    secrets.push(requestState)
    const round2 = await post('b', 'tools/call', {
      params: {
        name: 'delete_note',
        arguments: { id: noteId },
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
        requestState,
      },
      capabilities,
      meta: { traceparent: `00-${TRACE_ID}-${ROUND_2_SPAN}-01` },
    })
    expect(round2.body.result.content[0].text).toContain('Deleted')

    await receiver.waitFor(
      () =>
        spansNamed('tools/call delete_note').length === 2 &&
        spansNamed('seal requestState').length === 1 &&
        spansNamed('open requestState').length === 1 &&
        spansNamed('store.delete').length === 1
    )
    const [first, second] = [ROUND_1_SPAN, ROUND_2_SPAN].map((parent) =>
      spansNamed('tools/call delete_note').find((span) => span.parentSpanId === parent)!
    )
    expect(first).toMatchObject({
      kind: 2,
      resource: { 'service.instance.id': 'a', 'service.name': 'notes-mcp' },
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'delete_note',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.protocol.version': '2026-07-28',
        'jsonrpc.request.id': '1',
        'notes_mcp.result_type': 'input_required',
      },
    })
    expect(second).toMatchObject({
      kind: 2,
      resource: { 'service.instance.id': 'b' },
      attributes: { 'notes_mcp.result_type': 'complete' },
    })
    expect(spansNamed('seal requestState')[0]).toMatchObject({
      parentSpanId: first!.spanId,
      resource: { 'service.instance.id': 'a' },
    })
    expect(spansNamed('open requestState')[0]).toMatchObject({
      parentSpanId: second!.spanId,
      resource: { 'service.instance.id': 'b' },
    })
    expect(spansNamed('store.delete')[0]).toMatchObject({
      parentSpanId: second!.spanId,
      kind: 3,
      attributes: { 'db.system.name': 'sqlite', 'db.operation.name': 'delete' },
    })
  })

  it('counts the completed two-round flow on the replica that completed it', async () => {
    await receiver.waitFor(() =>
      receiver.points.some(
        (point) =>
          point.metric === 'notes_mcp.server.flow.rounds' &&
          point.resource['service.instance.id'] === 'b' &&
          point.attributes['gen_ai.tool.name'] === 'delete_note'
      )
    )
    const rounds = receiver.points.findLast(
      (point) =>
        point.metric === 'notes_mcp.server.flow.rounds' &&
        point.resource['service.instance.id'] === 'b'
    )!
    expect(rounds).toMatchObject({ type: 'histogram', count: 1, sum: 2 })
    expect(
      receiver.points.some(
        (point) =>
          point.metric === 'notes_mcp.server.flow.rounds' &&
          point.resource['service.instance.id'] === 'a'
      )
    ).toBe(false)
  })

  it("records a 2025-era session's random id, never its token", async () => {
    const initialized = await post('a', 'initialize', {
      meta: null,
      headers: { 'mcp-protocol-version': undefined, 'mcp-method': undefined },
      params: initializeMessage().params,
    })
    const token = initialized.response.headers.get('mcp-session-id')!
    secrets.push(token)
    await post('b', 'tools/list', {
      id: 2,
      meta: null,
      headers: {
        'mcp-protocol-version': LEGACY_VERSION,
        'mcp-method': undefined,
        'mcp-session-id': token,
      },
    })
    await receiver.waitFor(() =>
      receiver.spans.some(
        (span) => span.name === 'tools/list' && span.attributes['mcp.session.id'] !== undefined
      )
    )
    const list = receiver.spans.find(
      (span) => span.name === 'tools/list' && span.attributes['mcp.session.id'] !== undefined
    )!
    const init = receiver.spans.find((span) => span.name === 'initialize')!
    expect(list.attributes).toMatchObject({
      'mcp.protocol.version': LEGACY_VERSION,
      'jsonrpc.request.id': '2',
    })
    expect(init.attributes['mcp.session.id']).toBe(list.attributes['mcp.session.id'])
    expect(list.attributes['mcp.session.id']).not.toBe(token)
  })

  it('never exports an argument, a note content, a token or the requestState', () => {
    expect(receiver.spans.length).toBeGreaterThan(0)
    expect(receiver.points.length).toBeGreaterThan(0)
    const exported = [
      ...receiver.spans.flatMap((span) => [
        span.name,
        span.status.message,
        ...Object.entries(span.attributes).flat(),
        ...Object.entries(span.resource).flat(),
      ]),
      ...receiver.points.flatMap((point) => [
        point.metric,
        ...Object.entries(point.attributes).flat(),
        ...Object.entries(point.resource).flat(),
      ]),
    ].map((value) => JSON.stringify(value))
    expect(secrets.length).toBe(5)
    for (const secret of secrets) {
      expect(exported.filter((value) => value.includes(secret))).toEqual([])
    }
  })
})
