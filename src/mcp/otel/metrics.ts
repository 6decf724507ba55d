/**
 * @module mcp/otel/metrics
 * The instruments of the engine's metrics (`Instruments`: the conventions' operation duration, and
 * open streams, rounds per completed flow, refused states by reason, task status changes), each
 * defined once in one table (kind, name, unit, description, a histogram's buckets) and created on a
 * meter (a no-op one when metrics are off), and the open-stream count (`countOpenStream`): a
 * held-open response's body counted in `open_streams` until it ends. Generic: each instrument counts
 * something the engine does for any server. What each observation records into them is
 * `request-observation.ts`' and `store-spans.ts`'.
 */
import type { Attributes, Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api'
import type { StreamKind } from '../stream-limits.ts'
import {
  ATTR,
  DURATION_BUCKETS,
  KNOWN_VERSIONS,
  OPERATION_DURATION,
  ROUND_BUCKETS,
  type OwnNames,
} from './conventions.ts'

/** What each instrument is: its kind, its name in the conventions, its unit and description. */
const definitions = (names: OwnNames) =>
  ({
    duration: {
      kind: 'histogram',
      name: OPERATION_DURATION,
      unit: 's',
      description:
        'MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.',
      buckets: DURATION_BUCKETS,
    },
    openStreams: {
      kind: 'upDownCounter',
      name: names.openStreams,
      unit: '{stream}',
      description: 'Listen and 2025-era GET streams this replica holds open.',
    },
    rounds: {
      kind: 'histogram',
      name: names.flowRounds,
      unit: '{round}',
      description: 'Rounds (requests) a multi round-trip flow took, counted when it completes.',
      buckets: ROUND_BUCKETS,
    },
    rejections: {
      kind: 'counter',
      name: names.stateRejections,
      unit: '{rejection}',
      description: 'requestState tokens refused, by the reason only the server log otherwise sees.',
    },
    taskStatus: {
      kind: 'counter',
      name: names.taskStatusChanges,
      unit: '{change}',
      description: 'Task records written into a status by this replica (working when created).',
    },
  }) satisfies Record<string, InstrumentDefinition>

interface InstrumentDefinition {
  kind: keyof InstrumentKinds
  name: string
  unit: string
  description: string
  /** A histogram's explicit bucket boundaries. */
  buckets?: number[]
}

/** The instrument each kind creates. */
interface InstrumentKinds {
  histogram: Histogram
  counter: Counter
  upDownCounter: UpDownCounter
}

/** The instruments every observation records into. */
export type Instruments = {
  readonly [Name in keyof Definitions]: InstrumentKinds[Definitions[Name]['kind']]
}
type Definitions = ReturnType<typeof definitions>

export function createInstruments(meter: Meter, names: OwnNames): Instruments {
  const create = ({ kind, name, unit, description, buckets }: InstrumentDefinition) => {
    if (kind === 'counter') return meter.createCounter(name, { unit, description })
    if (kind === 'upDownCounter') return meter.createUpDownCounter(name, { unit, description })
    const advice = buckets && { explicitBucketBoundaries: buckets }
    return meter.createHistogram(name, { unit, description, ...(advice && { advice }) })
  }
  return Object.fromEntries(
    Object.entries(definitions(names)).map(([key, definition]) => [key, create(definition)])
  ) as Instruments
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
  kindAttribute: string,
  kind: StreamKind,
  protocolVersion: string,
  response: Response
): Response {
  const source = response.body
  if (!source) return response
  const attributes: Attributes = { [kindAttribute]: kind }
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
