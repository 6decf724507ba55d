/**
 * @module scripts/loadtest/soak
 * The judgement of a soak (`npm run loadtest -- --soak MINUTES`): from the samples of every replica
 * (`soak-sampler.ts`: resident set, V8 heap used after a full collection, active handles and open
 * file descriptors), whether any of them grows, as the summary's `soak` section. Pure: samples in,
 * section out.
 *
 * Per replica, the samples of the warm-up (the first 20 % of the run, at most 2 minutes: caches,
 * compiled code, pools and connections filling) are left out; through the others a least-squares
 * line per metric gives its slope per hour and its growth over the judged window (slope × window,
 * steadier than last − first). How that is judged depends on the window:
 * - 10 minutes or more: the slope per hour against {@link HOURLY_BOUNDS}. The heap after a full
 *   collection is the measure of retained memory: a healthy replica's stays flat (−8 to −11 MiB/h
 *   over 30 minutes on this 2-core machine), a leak of a kilobyte per flow at the default rate is
 *   some 20 MiB/h on each replica. The resident set creeps on a flat heap (the allocator's and
 *   V8's own pages: +59 to +116 MiB/h in that run), so its bound only catches a gross native leak;
 * - shorter (CI's soak): an hourly figure extrapolated from seconds is noise, so the growth over the
 *   window is judged against {@link WINDOW_BOUNDS} instead. That still fails a gross leak (a socket or
 *   timer kept per flow, hundreds of kilobytes per second) but not a slow one: say so, and run long.
 * A replica also fails with too few judged samples or a sample it did not answer.
 *
 * Each replica's report also says where its memory is, sample by sample: the heap reserved and its
 * young generation, external memory and array buffers, and (from `/proc`) the anonymous memory
 * outside the heap and the mapped files; with the resident set's start, peak and end over the whole
 * run, what a container's memory limit must hold. A resident set that grows on a flat heap after GC
 * with the heap reserved is V8 keeping pages (its young generation grows under load up to
 * `--max-semi-space-size`); with the anonymous memory outside the heap, the allocator or a native
 * leak.
 */

export const MIB = 1024 * 1024
/** Judged by slope per hour from this judged window on. */
export const LONG_WINDOW_S = 10 * 60
const WARMUP_SHARE = 0.2
const WARMUP_MAX_S = 120
/** Judged samples a replica needs for any verdict. */
export const MIN_JUDGED_SAMPLES = 8
/** Between samples: 1/40 of the run, from 1 s to 10 s. */
const SAMPLES_PER_RUN = 40
const MIN_INTERVAL_MS = 1_000
const MAX_INTERVAL_MS = 10_000

/** What a soak samples of a replica, and the bound of each. */
export const SOAK_METRICS = ['rss', 'heap', 'handles', 'fds'] as const
export type SoakMetric = (typeof SOAK_METRICS)[number]
/** Memory in MiB, handles and descriptors in counts. */
export type Bounds = Record<SoakMetric, number>

/** Most a metric may grow per hour on a long soak. */
export const HOURLY_BOUNDS: Bounds = { rss: 256, heap: 16, handles: 60, fds: 60 }
/** Most a metric may grow over the judged window of a short soak. */
export const WINDOW_BOUNDS: Bounds = { rss: 64, heap: 8, handles: 40, fds: 40 }

/**
 * One sample, as the judgement and the breakdown need it: seconds since the users started, memory
 * in bytes (`scripts/support/replica-sampling.ts` says what each figure is).
 */
export interface SoakPoint {
  atS: number
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  youngGeneration: number
  /** `null` without `/proc`. */
  anonymous: number | null
  handles: number
  /** `null` without `/proc`. */
  fds: number | null
}

export interface ReplicaSeries {
  id: string
  points: SoakPoint[]
  /** Samples the replica did not answer (timed out, or it was gone). */
  failedSamples: number
  /** Its active resources by kind at the last sample. */
  resourcesAtEnd: Record<string, number>
}

export interface MetricTrend {
  first: number
  last: number
  slope_per_h: number
  /** Over the judged window, by the fitted line. */
  growth: number
  bound: number
  passed: boolean
}

export interface ReplicaSoak {
  id: string
  samples: number
  judged_samples: number
  failed_samples: number
  /** MiB. */
  rss: MetricTrend | null
  /** MiB, after a full collection. */
  heap: MetricTrend | null
  handles: MetricTrend | null
  /** `null` without `/proc` (or too few samples). */
  fds: MetricTrend | null
  resources_at_end: Record<string, number>
  /** MiB over the whole run, warm-up included: what a container's memory limit must hold. */
  rss_mib: { start: number; peak: number; end: number } | null
  problems: string[]
  passed: boolean
  /** Every sample, warm-up included, memory in MiB: to judge again and to see where memory went. */
  points: ReportedPoint[]
}

/**
 * One sample in the report, MiB: `native` is the anonymous memory outside the V8 heap (the
 * allocator's arenas, which hold `external`, and thread stacks), `file` the resident mapped files
 * (the binary, shared libraries); both `null` without `/proc`.
 */
export interface ReportedPoint {
  s: number
  rss: number
  heap_used: number
  heap_total: number
  external: number
  array_buffers: number
  /** V8's young generation, part of `heap_total`. */
  young: number
  native: number | null
  file: number | null
  handles: number
  fds: number | null
}

export interface SoakReport {
  minutes: number
  /** Target flows per second of the era users (`--rate`). */
  rate_flows_per_s: number
  sample_interval_s: number
  warmup_s: number
  judged_window_s: number
  /** `slope_per_hour`: a long soak; `growth_over_window`: a short one (see the module header). */
  judged_by: 'slope_per_hour' | 'growth_over_window'
  bounds: Bounds
  /** Units and how the heap was measured, for a reader of the JSON. */
  note: string
  replicas: ReplicaSoak[]
  passed: boolean
}

export interface SoakInput {
  durationS: number
  rate: number
  intervalMs: number
  series: ReplicaSeries[]
}

/** How often a soak of `durationS` samples every replica. */
export function sampleIntervalMs(durationS: number): number {
  const even = (durationS * 1000) / SAMPLES_PER_RUN
  return Math.round(Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, even)))
}

/** The warm-up of a run of `durationS`, left out of the judgement. */
export function warmupS(durationS: number): number {
  return Math.min(durationS * WARMUP_SHARE, WARMUP_MAX_S)
}

/** Least-squares slope of `ys` over `xs` (units of y per unit of x); 0 for fewer than 2 points. */
export function leastSquaresSlope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length
  if (n < 2) return 0
  const meanX = xs.reduce((a, b) => a + b, 0) / n
  const meanY = ys.reduce((a, b) => a + b, 0) / n
  let covariance = 0
  let variance = 0
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] as number) - meanX
    covariance += dx * ((ys[i] as number) - meanY)
    variance += dx * dx
  }
  return variance === 0 ? 0 : covariance / variance
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits

function trend(
  atS: readonly number[],
  values: readonly number[],
  windowS: number,
  bound: number,
  longSoak: boolean
): MetricTrend {
  const slopePerS = leastSquaresSlope(atS, values)
  const slopePerH = slopePerS * 3600
  const growth = slopePerS * windowS
  return {
    first: round(values[0] as number),
    last: round(values[values.length - 1] as number),
    slope_per_h: round(slopePerH),
    growth: round(growth),
    bound,
    passed: (longSoak ? slopePerH : growth) <= bound,
  }
}

const METRIC_VALUE: Record<SoakMetric, (point: SoakPoint) => number | null> = {
  rss: (point) => point.rss / MIB,
  heap: (point) => point.heapUsed / MIB,
  handles: (point) => point.handles,
  fds: (point) => point.fds,
}

const METRIC_LABEL: Record<SoakMetric, string> = {
  rss: 'resident set (MiB)',
  heap: 'heap after GC (MiB)',
  handles: 'active handles',
  fds: 'open file descriptors',
}

function judgeReplica(
  series: ReplicaSeries,
  fromS: number,
  windowS: number,
  bounds: Bounds,
  longSoak: boolean
): ReplicaSoak {
  const judged = series.points.filter((point) => point.atS >= fromS)
  const problems: string[] = []
  if (series.failedSamples > 0) problems.push(`${series.failedSamples} samples not answered`)
  const enough = judged.length >= MIN_JUDGED_SAMPLES
  if (!enough) {
    problems.push(`${judged.length} samples after the warm-up, fewer than ${MIN_JUDGED_SAMPLES}`)
  }
  const trends = Object.fromEntries(
    SOAK_METRICS.map((metric) => {
      const values = judged.map(METRIC_VALUE[metric])
      if (!enough || values.some((value) => value === null)) return [metric, null]
      const atS = judged.map((point) => point.atS)
      const result = trend(atS, values as number[], windowS, bounds[metric], longSoak)
      if (!result.passed) {
        const figure = longSoak ? `${result.slope_per_h}/h` : `${result.growth} over the window`
        problems.push(`${METRIC_LABEL[metric]} grew ${figure}, bound ${bounds[metric]}`)
      }
      return [metric, result]
    })
  ) as Record<SoakMetric, MetricTrend | null>
  const memoryJudged = trends.rss !== null && trends.heap !== null && trends.handles !== null
  return {
    id: series.id,
    samples: series.points.length,
    judged_samples: judged.length,
    failed_samples: series.failedSamples,
    ...trends,
    resources_at_end: series.resourcesAtEnd,
    rss_mib: residentRange(series.points),
    problems,
    passed: memoryJudged && problems.length === 0,
    points: series.points.map(reportedPoint),
  }
}

function residentRange(points: readonly SoakPoint[]): ReplicaSoak['rss_mib'] {
  if (points.length === 0) return null
  const rss = points.map((point) => point.rss / MIB)
  return {
    start: round(rss[0] as number),
    peak: round(Math.max(...rss)),
    end: round(rss[rss.length - 1] as number),
  }
}

function reportedPoint(point: SoakPoint): ReportedPoint {
  const mib = (bytes: number) => round(bytes / MIB)
  const { anonymous } = point
  return {
    s: round(point.atS, 1),
    rss: mib(point.rss),
    heap_used: mib(point.heapUsed),
    heap_total: mib(point.heapTotal),
    external: mib(point.external),
    array_buffers: mib(point.arrayBuffers),
    young: mib(point.youngGeneration),
    native: anonymous === null ? null : mib(anonymous - point.heapTotal),
    file: anonymous === null ? null : mib(point.rss - anonymous),
    handles: point.handles,
    fds: point.fds,
  }
}

/** The `soak` section of the summary: every replica judged, and the run's verdict. */
export function judgeSoak(input: SoakInput): SoakReport {
  const warmup = warmupS(input.durationS)
  const windowS = Math.max(0, input.durationS - warmup)
  const longSoak = windowS >= LONG_WINDOW_S
  const bounds = longSoak ? HOURLY_BOUNDS : WINDOW_BOUNDS
  const replicas = input.series.map((series) =>
    judgeReplica(series, warmup, windowS, bounds, longSoak)
  )
  return {
    minutes: round(input.durationS / 60),
    rate_flows_per_s: input.rate,
    sample_interval_s: round(input.intervalMs / 1000),
    warmup_s: round(warmup),
    judged_window_s: round(windowS),
    judged_by: longSoak ? 'slope_per_hour' : 'growth_over_window',
    bounds,
    note:
      'memory in MiB (RSS from /proc/<pid>/status VmRSS, heap used after a full gc with ' +
      '--expose-gc), handles = process.getActiveResourcesInfo(), fds = /proc/<pid>/fd; ' +
      (longSoak
        ? 'judged by the least-squares slope per hour after the warm-up'
        : `a window under ${LONG_WINDOW_S / 60} min: judged by the fitted growth over it, ` +
          'which catches gross leaks only (run --soak 30 for the hourly bounds)'),
    replicas,
    passed: replicas.length > 0 && replicas.every((replica) => replica.passed),
  }
}
