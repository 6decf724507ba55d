/**
 * @module telemetry/metrics
 * The instruments of this server's metrics (`Instruments`: the conventions' operation duration, and
 * open streams, rounds per completed flow, refused states by reason, task status changes), created
 * on a meter (a no-op one when metrics are off), and the open-stream count (`countOpenStream`): a
 * held-open response's body counted in `open_streams` until it ends. What each observation records
 * into them is `request-observation.ts`' and `store-spans.ts`'.
 */
import type { Attributes, Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api'
import type { StreamKind } from '../mcp/observer.ts'
import { ATTR, DURATION_BUCKETS, KNOWN_VERSIONS, METRIC, ROUND_BUCKETS } from './conventions.ts'

/** The instruments every observation records into. */
export interface Instruments {
  duration: Histogram
  openStreams: UpDownCounter
  rounds: Histogram
  rejections: Counter
  taskStatus: Counter
}

export function createInstruments(meter: Meter): Instruments {
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

/**
 * `response` with its body counted in `openStreams` until it ends. The count wraps the body
 * transparently, as the stream's own bounds need (`mcp/event-stream.ts`): it holds no chunk of its
 * own (high-water mark 0: it reads one only when the runtime asks), so the stream's queue still
 * tells what the client has not taken, and an error of the stream reaches the runtime at once, even
 * while the runtime waits for the client to read (it then resets the connection).
 */
export function countOpenStream(
  openStreams: UpDownCounter,
  kind: StreamKind,
  protocolVersion: string,
  response: Response
): Response {
  const source = response.body
  if (!source) return response
  const attributes: Attributes = { [ATTR.streamKind]: kind }
  if (KNOWN_VERSIONS.has(protocolVersion)) attributes[ATTR.mcpProtocolVersion] = protocolVersion
  openStreams.add(1, attributes)
  let open = true
  const close = () => {
    if (!open) return
    open = false
    openStreams.add(-1, attributes)
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
