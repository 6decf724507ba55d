/**
 * @module scripts/bench/load
 * The load driver: autocannon, programmatic, in this process. A load is a cycle of steps each
 * connection sends in turn over one keep-alive socket (one step for plain requests; round 1 then
 * round 2 for an MRTR flow, the `requestState` of round 1 carried in autocannon's per-connection
 * context into the body of round 2). Every response goes through its step's check; the run counts
 * responses, verified ones, mismatches, socket errors and timeouts, and completed flows.
 *
 * Latency comes from autocannon's own per-request timer (the `response` event of each client), kept
 * here at microsecond resolution: autocannon's histogram rounds to whole milliseconds, which says
 * nothing about a sub-millisecond server. A run is bounded by its duration, by a request cap, and by
 * a watchdog that stops autocannon if it overruns.
 */
import autocannon from 'autocannon'
import { HEADER_SESSION_ID, type HttpRequest, type HttpResponse } from './wire.ts'

/** Per-connection scratch space that lives for one cycle of steps. */
export type FlowContext = Record<string, unknown>

export interface LoadStep {
  /** A fixed request, or one built from the context (return `undefined` to restart the cycle). */
  request: HttpRequest | ((context: FlowContext) => HttpRequest | undefined)
  /** Answers whether the response is right; may record what a later step needs in `context`. */
  check(response: HttpResponse, context: FlowContext): boolean
  /**
   * Whether a verified body may be reused as the expected body: identical bytes then pass without
   * parsing (anything else still gets the full check). Only for deterministic answers.
   */
  deterministic?: boolean
  /** A verified response of this step completes one flow. */
  completesFlow?: boolean
}

/** What every load driver is given: where, how many connections, for how long, at most how much. */
export interface DriveOptions {
  /** Origin of the server, e.g. `http://127.0.0.1:40000`. */
  origin: string
  connections: number
  durationSeconds: number
  maxRequests: number
}

export interface LoadOptions extends DriveOptions {
  steps: LoadStep[]
}

/** A load driver of its own (for exchanges autocannon cannot express), with the same result. */
export type Driver = (options: DriveOptions) => Promise<LoadResult>

export interface LoadResult {
  seconds: number
  responses: number
  verified: number
  mismatches: number
  errors: number
  timeouts: number
  flows: number
  latencyMs: { p50: number; p90: number; p99: number; mean: number; max: number }
  /** CPU the load generator used during the run, in cores (1 = one core busy all the time). */
  loadgenCores: number
  /** Status, content type and the start of the body of the first response that failed its check. */
  firstMismatch?: string
}

/** `value` rounded to `digits` decimals, for the report. */
export function round(value: number, digits: number): number {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}

/** Latency percentiles rounded to the µs. */
export function roundPercentiles(latency: LoadResult['latencyMs']): LoadResult['latencyMs'] {
  return {
    p50: round(latency.p50, 3),
    p90: round(latency.p90, 3),
    p99: round(latency.p99, 3),
    mean: round(latency.mean, 3),
    max: round(latency.max, 3),
  }
}

/** Microsecond-resolution latency histogram: exact below one second, a sorted tail above it. */
export class Latencies {
  readonly #counts = new Uint32Array(1_000_000)
  readonly #slow: number[] = []
  #total = 0
  #sum = 0
  #max = 0

  record(ms: number): void {
    const us = Math.round(ms * 1000)
    if (us < this.#counts.length) this.#counts[us]! += 1
    else this.#slow.push(us)
    this.#total += 1
    this.#sum += us
    if (us > this.#max) this.#max = us
  }

  summary(): LoadResult['latencyMs'] {
    const slow = this.#slow.sort((a, b) => a - b)
    const at = (fraction: number): number => {
      if (this.#total === 0) return 0
      const rank = Math.max(1, Math.ceil(fraction * this.#total))
      let seen = 0
      for (let us = 0; us < this.#counts.length; us++) {
        seen += this.#counts[us]!
        if (seen >= rank) return us / 1000
      }
      return (slow[rank - seen - 1] ?? this.#max) / 1000
    }
    return {
      p50: at(0.5),
      p90: at(0.9),
      p99: at(0.99),
      mean: this.#total === 0 ? 0 : this.#sum / this.#total / 1000,
      max: this.#max / 1000,
    }
  }
}

/** A response header by lower-case name, from autocannon's header object (any case). */
function header(headers: Record<string, unknown>, wanted: string): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === wanted) return String(value)
  }
  return undefined
}

const WATCHDOG_GRACE_MS = 30_000

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies = new Latencies()
  let responses = 0
  let verified = 0
  let mismatches = 0
  let flows = 0
  let firstMismatch: string | undefined
  const expected = new Map<number, { body: string; type: string }>()

  const requests = options.steps.map((step, index) => {
    const onResponse = (
      status: number,
      body: string,
      context: FlowContext,
      headers: Record<string, unknown>
    ) => {
      const type = header(headers, 'content-type')?.toLowerCase() ?? ''
      const known = expected.get(index)
      let ok = known !== undefined && status === 200 && body === known.body && type === known.type
      if (!ok) {
        const sessionId = header(headers, HEADER_SESSION_ID)
        ok = step.check(
          { status, contentType: type, body, ...(sessionId !== undefined && { sessionId }) },
          context
        )
        if (ok && step.deterministic && known === undefined) expected.set(index, { body, type })
      }
      if (ok) {
        verified += 1
        if (step.completesFlow) flows += 1
      } else {
        mismatches += 1
        firstMismatch ??= `HTTP ${status} ${type}: ${body.slice(0, 300)}`
      }
    }
    if (typeof step.request === 'function') {
      const build = step.request
      return {
        method: 'POST',
        setupRequest: (request: Record<string, unknown>, context: FlowContext) => {
          const built = build(context)
          return built && { ...request, ...built, headers: built.headers }
        },
        onResponse,
      }
    }
    return { ...step.request, onResponse }
  })
  if (typeof options.steps[0]?.request === 'function') {
    throw new TypeError('runLoad: the first step must be a fixed request')
  }

  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.origin,
        connections: options.connections,
        duration: options.durationSeconds,
        maxOverallRequests: options.maxRequests,
        pipelining: 1,
        timeout: 10,
        requests,
        setupClient: (client) => {
          client.on('response', (_status: number, _bytes: number, ms: number) => {
            responses += 1
            latencies.record(ms)
          })
        },
      },
      (error, finished) => {
        clearTimeout(watchdog)
        if (error) reject(error)
        else resolve(finished)
      }
    )
    const watchdog = setTimeout(
      () => instance.stop(),
      options.durationSeconds * 1000 + WATCHDOG_GRACE_MS
    )
  })
  const seconds = (performance.now() - started) / 1000
  const cpu = process.cpuUsage(cpuBefore)

  return {
    seconds,
    responses,
    verified,
    mismatches,
    errors: result.errors,
    timeouts: result.timeouts,
    flows,
    latencyMs: latencies.summary(),
    loadgenCores: (cpu.user + cpu.system) / 1e6 / seconds,
    ...(firstMismatch !== undefined && { firstMismatch }),
  }
}
