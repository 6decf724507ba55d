/**
 * @module tests/support/otlp-receiver
 * A loopback OTLP/HTTP receiver for tests: it accepts what a real exporter POSTs to `/v1/traces` and
 * `/v1/metrics`, in either encoding of the OTLP specification — `application/x-protobuf` (decoded
 * here field by field from the opentelemetry-proto messages: a small wire-format reader, no
 * generated code) or `application/json` (OTLP/JSON: hex ids, camelCase fields) — gzip-compressed or
 * not, and keeps what it decoded in one simplified shape for both, so a test asserts spans and
 * metric points without caring how they travelled. Answers 200 with an empty export response in the
 * request's encoding. `waitFor` resolves when a predicate over what arrived holds (bounded by a
 * deadline that fails the test, never a timing assertion).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gunzipSync } from 'node:zlib'
import type { JsonObject } from './mcp-request.ts'

export type AttributeValue =
  string | number | boolean | AttributeValue[] | { [key: string]: AttributeValue }
export type Attributes = Record<string, AttributeValue>

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a root span. */
  parentSpanId: string
  name: string
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Attributes
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string }
  links: Array<{ traceId: string; spanId: string }>
  resource: Attributes
  scope: string
}

export interface ReceivedPoint {
  metric: string
  unit: string
  type: 'sum' | 'gauge' | 'histogram'
  attributes: Attributes
  /** Sums and gauges. */
  value?: number
  /** Histograms. */
  count?: number
  sum?: number
  resource: Attributes
}

export interface ReceivedExport {
  path: string
  contentType: string
  gzip: boolean
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string
  spans: ReceivedSpan[]
  points: ReceivedPoint[]
  exports: ReceivedExport[]
  /** Resolves once `ready()` holds for what arrived; rejects after `deadlineMs` (default 15 s). */
  waitFor(ready: () => boolean, deadlineMs?: number): Promise<void>
  close(): Promise<void>
}

// ---- protobuf wire format -------------------------------------------------------------------

type Field =
  { wire: 0; value: bigint } | { wire: 1 | 5; bytes: Uint8Array } | { wire: 2; bytes: Uint8Array }

/** The fields of one message by number, in order of appearance. */
function fields(bytes: Uint8Array): Map<number, Field[]> {
  const found = new Map<number, Field[]>()
  let at = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      const byte = bytes[at++]
      if (byte === undefined) throw new Error('truncated varint')
      result |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return result
      shift += 7n
    }
  }
  while (at < bytes.length) {
    const key = Number(varint())
    const number = key >>> 3
    const wire = key & 7
    let field: Field
    if (wire === 0) field = { wire, value: varint() }
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4
      field = { wire, bytes: bytes.subarray(at, at + size) }
      at += size
    } else if (wire === 2) {
      const length = Number(varint())
      field = { wire, bytes: bytes.subarray(at, at + length) }
      at += length
    } else throw new Error(`unsupported wire type ${wire}`)
    if (at > bytes.length) throw new Error('truncated field')
    const list = found.get(number) ?? []
    list.push(field)
    found.set(number, list)
  }
  return found
}

const text = new TextDecoder('utf-8', { fatal: true })

function messages(map: Map<number, Field[]>, number: number): Uint8Array[] {
  return (map.get(number) ?? []).flatMap((field) => (field.wire === 2 ? [field.bytes] : []))
}
function message(map: Map<number, Field[]>, number: number): Uint8Array | undefined {
  return messages(map, number)[0]
}
function string(map: Map<number, Field[]>, number: number): string {
  const bytes = message(map, number)
  return bytes ? text.decode(bytes) : ''
}
function hex(map: Map<number, Field[]>, number: number): string {
  return Buffer.from(message(map, number) ?? new Uint8Array()).toString('hex')
}
function varintOf(map: Map<number, Field[]>, number: number): number {
  const field = map.get(number)?.[0]
  return field?.wire === 0 ? Number(BigInt.asIntN(64, field.value)) : 0
}
function fixed64(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
function double(map: Map<number, Field[]>, number: number): number | undefined {
  const field = map.get(number)?.[0]
  return field?.wire === 1 ? fixed64(field.bytes).getFloat64(0, true) : undefined
}
function unsigned64(map: Map<number, Field[]>, number: number): number | undefined {
  const field = map.get(number)?.[0]
  return field?.wire === 1 ? Number(fixed64(field.bytes).getBigUint64(0, true)) : undefined
}

function protoAnyValue(bytes: Uint8Array): AttributeValue {
  const map = fields(bytes)
  if (map.has(1)) return string(map, 1)
  if (map.has(2)) return varintOf(map, 2) !== 0
  if (map.has(3)) return varintOf(map, 3)
  if (map.has(4)) return double(map, 4) ?? 0
  if (map.has(5)) return messages(fields(message(map, 5)!), 1).map(protoAnyValue)
  if (map.has(6)) return protoAttributes(messages(fields(message(map, 6)!), 1))
  if (map.has(7)) return Buffer.from(message(map, 7)!).toString('base64')
  return ''
}

function protoAttributes(list: Uint8Array[]): Attributes {
  const attributes: Attributes = {}
  for (const entry of list) {
    const map = fields(entry)
    const value = message(map, 2)
    attributes[string(map, 1)] = value ? protoAnyValue(value) : ''
  }
  return attributes
}

function protoResource(map: Map<number, Field[]>): Attributes {
  const resource = message(map, 1)
  return resource ? protoAttributes(messages(fields(resource), 1)) : {}
}

function protoSpans(body: Uint8Array): ReceivedSpan[] {
  return messages(fields(body), 1).flatMap((resourceSpans) => {
    const rs = fields(resourceSpans)
    const resource = protoResource(rs)
    return messages(rs, 2).flatMap((scopeSpans) => {
      const ss = fields(scopeSpans)
      const scopeBytes = message(ss, 1)
      const scope = scopeBytes ? string(fields(scopeBytes), 1) : ''
      return messages(ss, 2).map((spanBytes) => {
        const span = fields(spanBytes)
        const status = message(span, 15)
        const statusMap = status ? fields(status) : new Map<number, Field[]>()
        return {
          traceId: hex(span, 1),
          spanId: hex(span, 2),
          parentSpanId: hex(span, 4),
          name: string(span, 5),
          kind: varintOf(span, 6),
          attributes: protoAttributes(messages(span, 9)),
          status: { code: varintOf(statusMap, 3), message: string(statusMap, 2) },
          links: messages(span, 13).map((link) => {
            const map = fields(link)
            return { traceId: hex(map, 1), spanId: hex(map, 2) }
          }),
          resource,
          scope,
        }
      })
    })
  })
}

function protoPoints(body: Uint8Array): ReceivedPoint[] {
  return messages(fields(body), 1).flatMap((resourceMetrics) => {
    const rm = fields(resourceMetrics)
    const resource = protoResource(rm)
    return messages(rm, 2).flatMap((scopeMetrics) =>
      messages(fields(scopeMetrics), 2).flatMap((metricBytes): ReceivedPoint[] => {
        const metric = fields(metricBytes)
        const base = { metric: string(metric, 1), unit: string(metric, 3), resource }
        const numbers = (data: Uint8Array, type: 'sum' | 'gauge') =>
          messages(fields(data), 1).map((point) => {
            const map = fields(point)
            const sfixed = map.get(6)?.[0]
            const value =
              double(map, 4) ??
              (sfixed?.wire === 1 ? Number(fixed64(sfixed.bytes).getBigInt64(0, true)) : 0)
            return { ...base, type, attributes: protoAttributes(messages(map, 7)), value }
          })
        const sum = message(metric, 7)
        if (sum) return numbers(sum, 'sum')
        const gauge = message(metric, 5)
        if (gauge) return numbers(gauge, 'gauge')
        const histogram = message(metric, 9)
        if (!histogram) return []
        return messages(fields(histogram), 1).map((point) => {
          const map = fields(point)
          return {
            ...base,
            type: 'histogram' as const,
            attributes: protoAttributes(messages(map, 9)),
            count: unsigned64(map, 4) ?? 0,
            sum: double(map, 5) ?? 0,
          }
        })
      })
    )
  })
}

// ---- OTLP/JSON --------------------------------------------------------------------------------

type Json = JsonObject

function jsonAnyValue(value: Json): AttributeValue {
  if ('stringValue' in value) return value.stringValue
  if ('boolValue' in value) return value.boolValue
  if ('intValue' in value) return Number(value.intValue)
  if ('doubleValue' in value) return Number(value.doubleValue)
  if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(jsonAnyValue)
  if ('kvlistValue' in value) return jsonAttributes(value.kvlistValue.values)
  if ('bytesValue' in value) return value.bytesValue
  return ''
}

function jsonAttributes(list: Json[] | undefined): Attributes {
  const attributes: Attributes = {}
  for (const entry of list ?? [])
    attributes[entry.key] = entry.value ? jsonAnyValue(entry.value) : ''
  return attributes
}

function jsonSpans(body: Json): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: Json) => {
    const resource = jsonAttributes(rs.resource?.attributes)
    return (rs.scopeSpans ?? []).flatMap((ss: Json) =>
      (ss.spans ?? []).map((span: Json) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        attributes: jsonAttributes(span.attributes),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        links: (span.links ?? []).map((link: Json) => ({
          traceId: link.traceId,
          spanId: link.spanId,
        })),
        resource,
        scope: ss.scope?.name ?? '',
      }))
    )
  })
}

function jsonPoints(body: Json): ReceivedPoint[] {
  return (body.resourceMetrics ?? []).flatMap((rm: Json) => {
    const resource = jsonAttributes(rm.resource?.attributes)
    return (rm.scopeMetrics ?? []).flatMap((sm: Json) =>
      (sm.metrics ?? []).flatMap((metric: Json) => {
        const base = { metric: metric.name, unit: metric.unit ?? '', resource }
        const numbers = (data: Json, type: 'sum' | 'gauge') =>
          (data.dataPoints ?? []).map((point: Json) => ({
            ...base,
            type,
            attributes: jsonAttributes(point.attributes),
            value: Number(point.asDouble ?? point.asInt ?? 0),
          }))
        if (metric.sum) return numbers(metric.sum, 'sum')
        if (metric.gauge) return numbers(metric.gauge, 'gauge')
        if (!metric.histogram) return []
        return (metric.histogram.dataPoints ?? []).map((point: Json) => ({
          ...base,
          type: 'histogram' as const,
          attributes: jsonAttributes(point.attributes),
          count: Number(point.count ?? 0),
          sum: Number(point.sum ?? 0),
        }))
      })
    )
  })
}

// ---- the server -------------------------------------------------------------------------------

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const points: ReceivedPoint[] = []
  const exports: ReceivedExport[] = []
  const waiters = new Set<() => void>()

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const path = request.url ?? ''
      const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim()
      const gzip = request.headers['content-encoding'] === 'gzip'
      try {
        if (request.method !== 'POST' || (path !== '/v1/traces' && path !== '/v1/metrics')) {
          response.writeHead(404).end()
          return
        }
        const raw = Buffer.concat(chunks)
        const body = new Uint8Array(gzip ? gunzipSync(raw) : raw)
        const protobuf = contentType === 'application/x-protobuf'
        if (!protobuf && contentType !== 'application/json') {
          response.writeHead(415).end()
          return
        }
        exports.push({ path, contentType, gzip })
        if (path === '/v1/traces') {
          spans.push(...(protobuf ? protoSpans(body) : jsonSpans(JSON.parse(text.decode(body)))))
        } else {
          points.push(...(protobuf ? protoPoints(body) : jsonPoints(JSON.parse(text.decode(body)))))
        }
        response.writeHead(200, { 'content-type': contentType }).end(protobuf ? '' : '{}')
        for (const wake of waiters) wake()
      } catch (error) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end(String(error))
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    points,
    exports,
    waitFor(ready, deadlineMs = 15_000) {
      if (ready()) return Promise.resolve()
      return new Promise<void>((resolve, reject) => {
        const wake = () => {
          if (!ready()) return
          clearTimeout(timer)
          waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(() => {
          waiters.delete(wake)
          reject(
            new Error(
              `the OTLP receiver did not get what the test waits for; it got ${spans.length} spans (${spans.map((s) => s.name).join(', ')}) and ${points.length} metric points`
            )
          )
        }, deadlineMs)
        waiters.add(wake)
      })
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
