/**
 * @module scripts/bench/listen-scale
 * The scale scenario's driver: many concurrent `subscriptions/listen` streams on one server process,
 * each on a connection of its own, and how long a change takes to reach all of them. It opens the
 * streams (in batches, each acknowledged before the next batch), lets the server settle and reads its
 * resident memory, then makes `changes` changes one after another (`tools/call create_note`, which
 * makes the server publish `resources/list_changed` for the caller) and times, from the moment each
 * change request is sent, the arrival of its notification on every stream. Arrival times are read by
 * this process (the load generator, on its own core), so they include its own parsing of up to
 * `streams` events per change. A stream that has not heard a change within `DELIVERY_TIMEOUT_MS`
 * counts as a missed delivery.
 *
 * Loopback only; every socket is closed on the way out.
 */
import { Agent, request as httpRequest, type ClientRequest } from 'node:http'
import { Latencies } from './load.ts'
import {
  isCreated,
  isListChanged,
  isListenAck,
  requests,
  takeSseFrames,
  type HttpRequest,
} from './wire.ts'

const BATCH = 100
const OPEN_TIMEOUT_MS = 30_000
const DELIVERY_TIMEOUT_MS = 10_000
const SETTLE_MS = 1_000
const PAUSE_BETWEEN_CHANGES_MS = 50

export interface ScaleOptions {
  origin: string
  streams: number
  changes: number
  /** Resident memory of the server process, in bytes (read after the streams are open). */
  rss: () => number | undefined
  /** Called once the streams are open and settled, right before the first change. */
  onChangesStart?: () => void
}

export interface ScaleResult {
  streams: number
  /** Streams acknowledged by the server (all of them, or the run failed). */
  opened: number
  openSeconds: number
  rssBeforeBytes: number | undefined
  rssWithStreamsBytes: number | undefined
  changes: number
  /** Notifications received within the timeout, over all changes and streams. */
  deliveries: number
  missed: number
  /** From sending a change to its notification on one stream (every stream, every change). */
  deliveryMs: { p50: number; p90: number; p99: number; mean: number; max: number }
  /** From sending a change to its notification on the last stream (one sample per change). */
  allDeliveredMs: { p50: number; p90: number; p99: number; mean: number; max: number }
  changeSeconds: number
  /** Summed over the changes: from sending each change until its last stream heard it (or the timeout). */
  fanOutSeconds: number
  errors: number
  firstError?: string
}

interface Stream {
  request: ClientRequest
  /** Resolves on the acknowledgment; rejects when the stream fails first. */
  acknowledged: Promise<void>
  /** Called with each `list_changed` arrival time. */
  onChange?: (at: number) => void
}

function openStream(
  agent: Agent,
  origin: string,
  message: HttpRequest,
  onError: (error: Error) => void
): Stream {
  let acknowledge!: () => void
  let refuse!: (error: Error) => void
  const acknowledged = new Promise<void>((resolve, reject) => {
    acknowledge = resolve
    refuse = reject
  })
  const stream: Stream = {
    acknowledged,
    request: httpRequest(
      new URL(message.path, origin),
      { method: message.method, headers: message.headers, agent },
      (response) => {
        const type = String(response.headers['content-type'] ?? '')
        if (response.statusCode !== 200 || !type.startsWith('text/event-stream')) {
          refuse(new Error(`listen answered HTTP ${response.statusCode} ${type}`))
          response.resume()
          return
        }
        response.setEncoding('utf8')
        let buffered = ''
        response.on('data', (chunk: string) => {
          const at = performance.now()
          const { messages, rest } = takeSseFrames(buffered + chunk)
          buffered = rest
          for (const item of messages ?? []) {
            if (isListenAck(item)) acknowledge()
            else if (isListChanged(item)) stream.onChange?.(at)
          }
        })
        response.on('error', onError)
      }
    ),
  }
  stream.request.once('error', (error) => {
    refuse(error)
    onError(error)
  })
  stream.request.end(message.body)
  return stream
}

async function post(
  origin: string,
  message: HttpRequest
): Promise<{ status: number; body: string; contentType: string }> {
  const response = await fetch(new URL(message.path, origin), {
    method: message.method,
    headers: message.headers,
    body: message.body,
    signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
  })
  return {
    status: response.status,
    contentType: (response.headers.get('content-type') ?? '').toLowerCase(),
    body: await response.text(),
  }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

export async function runListenScale(options: ScaleOptions): Promise<ScaleResult> {
  const agent = new Agent({ keepAlive: false, maxSockets: options.streams + 16 })
  const streams: Stream[] = []
  let errors = 0
  let firstError: string | undefined
  let closing = false
  const onError = (error: Error) => {
    if (closing) return
    errors += 1
    firstError ??= error.message
  }
  const deliveries = new Latencies()
  const allDelivered = new Latencies()
  let delivered = 0
  let missed = 0
  let fanOutMs = 0
  try {
    const rssBeforeBytes = options.rss()
    const openStarted = performance.now()
    for (let first = 0; first < options.streams; first += BATCH) {
      const batch: Stream[] = []
      for (let i = first; i < Math.min(first + BATCH, options.streams); i++) {
        batch.push(openStream(agent, options.origin, requests.listen(1000 + i), onError))
      }
      streams.push(...batch)
      await within(
        Promise.all(batch.map((stream) => stream.acknowledged)),
        OPEN_TIMEOUT_MS,
        'opening the streams'
      )
    }
    const openSeconds = (performance.now() - openStarted) / 1000
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
    const rssWithStreamsBytes = options.rss()
    options.onChangesStart?.()

    const changesStarted = performance.now()
    for (let change = 0; change < options.changes; change++) {
      const arrivals: number[] = []
      let resolveAll!: () => void
      const all = new Promise<void>((resolve) => (resolveAll = resolve))
      const sent = performance.now()
      for (const stream of streams) {
        stream.onChange = (at) => {
          stream.onChange = undefined
          arrivals.push(at - sent)
          if (arrivals.length === streams.length) resolveAll()
        }
      }
      const created = await post(options.origin, requests.createNote(10 + change))
      if (!isCreated(created, 10 + change)) {
        onError(
          new Error(`create_note answered HTTP ${created.status}: ${created.body.slice(0, 200)}`)
        )
      }
      await within(all, DELIVERY_TIMEOUT_MS, 'delivering a change').catch(() => undefined)
      fanOutMs += performance.now() - sent
      for (const stream of streams) stream.onChange = undefined
      for (const ms of arrivals) deliveries.record(ms)
      delivered += arrivals.length
      missed += streams.length - arrivals.length
      if (arrivals.length === streams.length) allDelivered.record(Math.max(...arrivals))
      await new Promise((resolve) => setTimeout(resolve, PAUSE_BETWEEN_CHANGES_MS))
    }
    return {
      streams: options.streams,
      opened: streams.length,
      openSeconds,
      rssBeforeBytes,
      rssWithStreamsBytes,
      changes: options.changes,
      deliveries: delivered,
      missed,
      deliveryMs: deliveries.summary(),
      allDeliveredMs: allDelivered.summary(),
      changeSeconds: (performance.now() - changesStarted) / 1000,
      fanOutSeconds: fanOutMs / 1000,
      errors,
      ...(firstError !== undefined && { firstError }),
    }
  } finally {
    closing = true
    for (const stream of streams) stream.request.destroy()
    agent.destroy()
  }
}
