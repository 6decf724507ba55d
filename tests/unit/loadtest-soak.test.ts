/**
 * The load test's soak (`--soak MINUTES`): its command line (`scripts/loadtest/options.ts`), the
 * pacing of its users (`scripts/loadtest/pacing.ts`), a sampled replica's answer over IPC
 * (`scripts/support/replica-sampling.ts`), and its judgement (`scripts/loadtest/soak.ts`) on
 * synthetic samples: a steady leak fails a long soak by its slope per hour and a short one by its
 * growth over the window, flat noise passes both, a jump during the warm-up is left out, and a
 * replica that missed samples or has too few fails. The verdict is the run's (`report.ts`), and the
 * table prints it (`report-table.ts`) with where each replica's memory is. The replicas run with
 * `npm start`'s Node flags (`processes.ts`), so a soak measures the process that is deployed.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Metrics } from '../../scripts/loadtest/metrics.ts'
import { parseOptions, SOAK_DEFAULT_RATE, UsageError } from '../../scripts/loadtest/options.ts'
import {
  Pacer,
  pacersFor,
  taskPacersFor,
  TASK_FLOW_INTERVAL_MS,
} from '../../scripts/loadtest/pacing.ts'
import { SERVER_NODE_FLAGS } from '../../scripts/loadtest/processes.ts'
import { formatTable } from '../../scripts/loadtest/report-table.ts'
import { buildSummary } from '../../scripts/loadtest/report.ts'
import {
  HOURLY_BOUNDS,
  judgeSoak,
  leastSquaresSlope,
  MIB,
  sampleIntervalMs,
  warmupS,
  WINDOW_BOUNDS,
  type ReplicaSeries,
  type SoakPoint,
  type SoakReport,
} from '../../scripts/loadtest/soak.ts'
import { answerSamples, type SampleReply } from '../../scripts/support/replica-sampling.ts'

/** Deterministic noise in [-1, 1) (a linear congruential sequence), so no run differs. */
function noise(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return (state / 2 ** 31) * 2 - 1
  }
}

interface Shape {
  /** Per second of the run, added to a flat base. */
  rssPerS?: number
  heapPerS?: number
  handlesPerS?: number
  /** Added to every metric of the samples before this second (a warm-up filling caches). */
  warmupJumpUntilS?: number
  /** Noise amplitude: MiB for memory, counts for handles and descriptors. */
  noise?: number
}

/** A replica's samples every `intervalS` over `durationS`, shaped by `shape`. */
function series(id: string, durationS: number, intervalS: number, shape: Shape): ReplicaSeries {
  const jitter = noise(id.charCodeAt(1))
  const amplitude = shape.noise ?? 0
  const points: SoakPoint[] = []
  for (let atS = 0; atS <= durationS; atS += intervalS) {
    const early = shape.warmupJumpUntilS !== undefined && atS < shape.warmupJumpUntilS
    const base = early ? -1 : 0
    const rss = (120 + base * 40 + (shape.rssPerS ?? 0) * atS + amplitude * jitter()) * MIB
    const heapUsed = (24 + base * 10 + (shape.heapPerS ?? 0) * atS + amplitude * jitter()) * MIB
    points.push({
      atS,
      rss,
      heapUsed,
      heapTotal: heapUsed + 16 * MIB,
      external: 4 * MIB,
      arrayBuffers: 1 * MIB,
      youngGeneration: 16 * MIB,
      anonymous: rss - 56 * MIB,
      handles: Math.round(40 + base * 20 + (shape.handlesPerS ?? 0) * atS + amplitude * jitter()),
      fds: Math.round(45 + base * 20 + amplitude * jitter()),
    })
  }
  return { id, points, failedSamples: 0, resourcesAtEnd: { TCPSocketWrap: 12 } }
}

function judge(durationS: number, shapes: Shape[]) {
  const intervalMs = sampleIntervalMs(durationS)
  return judgeSoak({
    durationS,
    rate: 20,
    intervalMs,
    series: shapes.map((shape, n) => series(`r${n + 1}`, durationS, intervalMs / 1000, shape)),
  })
}

/** The summary of a soak of `durationS` with one completed flow, nothing lost, judged `soak`. */
function soakSummary(durationS: number, soak: SoakReport) {
  return buildSummary({
    options: parseOptions(['--soak', String(durationS / 60)]),
    store: 'sqlite',
    metrics: new Metrics(),
    ledger: [
      {
        era: 'modern',
        kind: 'create_delete',
        user: 1,
        seq: 1,
        tag: 'u1-f1',
        notes: [],
        completed: true,
        failedCleanly: false,
      },
    ],
    verification: {
      storedNotes: 0,
      eras: {
        modern: {
          expected: { present: 0, absent: 0, unsettled: 0 },
          lost: 0,
          notDeleted: 0,
          duplicated: 0,
          halfDone: 0,
        },
        '2025': {
          expected: { present: 0, absent: 0, unsettled: 0 },
          lost: 0,
          notDeleted: 0,
          duplicated: 0,
          halfDone: 0,
        },
      },
      unattributed: 0,
      problems: [],
    },
    elapsedS: durationS,
    fault: null,
    soak,
  })
}

const THIRTY_MIN = 30 * 60
const CI_SOAK = 45

describe('the soak options', () => {
  it('--soak MINUTES is the run length, paced at the default rate, its request cap scaled', () => {
    const options = parseOptions(['--soak', '30'])
    expect(options).toMatchObject({ soakMinutes: 30, durationS: 1800, rate: SOAK_DEFAULT_RATE })
    // 10 requests per flow at 20 flows/s and 2/s for each of the 2 task users, over 30 minutes.
    expect(options.maxRequests).toBe(1800 * (20 * 10 + 2 * 2))
    expect(parseOptions(['--soak', '0.75', '--rate', '5'])).toMatchObject({
      durationS: 45,
      rate: 5,
      maxRequests: 200_000,
    })
  })

  it('leaves runs without --soak or --rate unpaced and unsampled', () => {
    expect(parseOptions([])).toMatchObject({ soakMinutes: undefined, rate: undefined })
    expect(parseOptions(['--rate', '12']).rate).toBe(12)
  })

  it.each([
    [['--soak', '0.4'], '--soak must be a number from 0.5 to 1440, got 0.4'],
    [['--soak', '1441'], '--soak must be a number from 0.5 to 1440, got 1441'],
    [['--soak', 'long'], '--soak must be a number from 0.5 to 1440, got long'],
    [['--rate', '0'], '--rate must be a number from 0.1 to 1000, got 0'],
    [['--soak', '5', '--duration', '60'], "--soak MINUTES is the run's length"],
    [['--soak', '5', '--kill'], '--soak and --fault kill cannot be combined'],
    [['--soak', '5', '--fault', 'rolling'], '--soak and --fault rolling cannot be combined'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseOptions(argv)).toThrow(UsageError)
    expect(() => parseOptions(argv)).toThrow(message)
  })
})

describe('the pacing of a steady load', () => {
  it('spreads the users over one interval and starts each one flow per interval', () => {
    const pacers = pacersFor(4, 8, 1000)
    // 4 users sharing 8 flows/s: each one every 500 ms, their first starts 125 ms apart.
    expect(pacers.map((pacer) => pacer.book(1000))).toEqual([1000, 1125, 1250, 1375])
    expect((pacers[0] as Pacer).book(1100)).toBe(1500)
    expect((pacers[0] as Pacer).book(1600)).toBe(2000)
  })

  it('never bursts to catch up after a flow longer than the interval', () => {
    const pacer = new Pacer(0, 500, 0)
    expect(pacer.book(0)).toBe(0)
    expect(pacer.book(2200)).toBe(2200)
    expect(pacer.book(2300)).toBe(2700)
  })

  it('paces task users to one flow each per task interval, spread over it', () => {
    const [first, second] = taskPacersFor(2, 0) as [Pacer, Pacer]
    expect([first.book(0), second.book(0)]).toEqual([0, TASK_FLOW_INTERVAL_MS / 2])
    expect(first.book(1)).toBe(TASK_FLOW_INTERVAL_MS)
  })
})

describe('a sampled replica', () => {
  it('collects garbage before it answers its memory and resources by kind', () => {
    const sent: SampleReply[] = []
    let listener: ((message: unknown) => void) | undefined
    let collections = 0
    answerSamples(
      {
        on: (_event, handler) => (listener = handler),
        send: (reply) => sent.push(reply),
      },
      () => collections++
    )
    listener?.({ type: 'hold-imports', after: 1 })
    listener?.({ type: 'sample', id: 7 })
    expect(collections).toBe(1)
    expect(sent).toHaveLength(1)
    const [reply] = sent as [SampleReply]
    expect(reply).toMatchObject({ type: 'sample', id: 7, collected: true })
    expect(reply.heapUsed).toBeGreaterThan(0)
    expect(reply.youngGeneration).toBeGreaterThan(0)
    expect(reply.youngGeneration).toBeLessThan(reply.heapTotal)
    expect(reply.arrayBuffers).toBeLessThanOrEqual(reply.external)
    const kinds = process.getActiveResourcesInfo()
    expect(Object.values(reply.resources).reduce((a, b) => a + b, 0)).toBe(kinds.length)
  })
})

describe('the judgement of a soak', () => {
  it('fits a least-squares slope', () => {
    expect(leastSquaresSlope([0, 1, 2, 3], [1, 3, 5, 7])).toBe(2)
    expect(leastSquaresSlope([0, 1, 2, 3], [2, 0, 2, 0])).toBeCloseTo(-0.4)
    expect(leastSquaresSlope([5], [1])).toBe(0)
  })

  it('samples a 30-minute soak every 10 s and CI`s 45 s one often enough, leaving the warm-up out', () => {
    expect(sampleIntervalMs(THIRTY_MIN)).toBe(10_000)
    expect(sampleIntervalMs(CI_SOAK)).toBe(1_125)
    expect(sampleIntervalMs(10)).toBe(1_000)
    expect(warmupS(THIRTY_MIN)).toBe(120)
    expect(warmupS(CI_SOAK)).toBe(9)
  })

  it('passes flat noise on a long soak, judged by the slope per hour', () => {
    const report = judge(THIRTY_MIN, [{ noise: 3 }, { noise: 3 }, { noise: 3 }])
    expect(report.judged_by).toBe('slope_per_hour')
    expect(report.bounds).toEqual(HOURLY_BOUNDS)
    expect(report.replicas.map((replica) => replica.problems)).toEqual([[], [], []])
    expect(report.passed).toBe(true)
    const [first] = report.replicas
    expect(first?.samples).toBe(181)
    expect(first?.judged_samples).toBe(169)
    expect(Math.abs(first?.heap?.slope_per_h ?? Infinity)).toBeLessThan(HOURLY_BOUNDS.heap)
  })

  it('passes the resident set creeping on a flat heap, as a healthy replica does', () => {
    const report = judge(THIRTY_MIN, [{ noise: 3, rssPerS: 116 / 3600 }])
    expect(report.replicas[0]?.rss?.slope_per_h).toBeGreaterThan(100)
    expect(report.passed).toBe(true)
  })

  it('fails a steady heap leak on a long soak, on that replica only', () => {
    // 20 MiB per hour of heap retained after a collection, under noise.
    const report = judge(THIRTY_MIN, [{ noise: 3 }, { noise: 3, heapPerS: 20 / 3600 }])
    expect(report.passed).toBe(false)
    expect(report.replicas[0]?.passed).toBe(true)
    const leaking = report.replicas[1]
    expect(leaking?.passed).toBe(false)
    expect(leaking?.heap?.slope_per_h).toBeGreaterThan(HOURLY_BOUNDS.heap)
    expect(leaking?.heap?.slope_per_h).toBeLessThan(24)
    expect(leaking?.heap?.passed).toBe(false)
    expect(leaking?.rss?.passed).toBe(true)
    expect(leaking?.problems).toEqual([
      expect.stringMatching(/^heap after GC \(MiB\) grew \d+\.\d+\/h, bound 16$/),
    ])
  })

  it('fails a handle leak on a long soak', () => {
    const report = judge(THIRTY_MIN, [{ noise: 2, handlesPerS: 120 / 3600 }])
    expect(report.replicas[0]?.handles?.passed).toBe(false)
    expect(report.passed).toBe(false)
  })

  it('leaves a jump during the warm-up out', () => {
    const report = judge(THIRTY_MIN, [{ noise: 3, warmupJumpUntilS: 100 }])
    expect(report.passed).toBe(true)
    // Judged from the warm-up's end: the jump is not in the first judged value.
    expect(report.replicas[0]?.rss?.first).toBeGreaterThan(110)
    const short = judge(CI_SOAK, [{ noise: 1, warmupJumpUntilS: 8 }])
    expect(short.passed).toBe(true)
  })

  it('judges a short soak by its growth over the window: flat noise passes, a gross leak fails', () => {
    const flat = judge(CI_SOAK, [{ noise: 1 }, { noise: 1 }])
    expect(flat.judged_by).toBe('growth_over_window')
    expect(flat.bounds).toEqual(WINDOW_BOUNDS)
    expect(flat.note).toMatch(/catches gross leaks only/)
    expect(flat.passed).toBe(true)
    // Half a MiB per second retained: 18 MiB over the 36 s judged; and a socket kept per second.
    const leak = judge(CI_SOAK, [
      { noise: 1, heapPerS: 0.5 },
      { noise: 1, handlesPerS: 2 },
    ])
    expect(leak.replicas.map((replica) => replica.passed)).toEqual([false, false])
    expect(leak.replicas[0]?.heap?.growth).toBeCloseTo(18, 0)
    expect(leak.passed).toBe(false)
  })

  it('fails a replica that missed samples or has too few after the warm-up', () => {
    const missed = series('r1', THIRTY_MIN, 10, { noise: 1 })
    missed.failedSamples = 2
    const few = series('r2', THIRTY_MIN, 10, {})
    few.points = few.points.slice(0, 15)
    const report = judgeSoak({
      durationS: THIRTY_MIN,
      rate: 20,
      intervalMs: 10_000,
      series: [missed, few],
    })
    expect(report.replicas[0]?.problems).toEqual(['2 samples not answered'])
    expect(report.replicas[1]?.problems).toEqual(['3 samples after the warm-up, fewer than 8'])
    expect(report.replicas[1]?.heap).toBeNull()
    expect(report.passed).toBe(false)
  })

  it('judges memory and handles without descriptors where there is no /proc', () => {
    const noProc = series('r1', THIRTY_MIN, 10, { noise: 1 })
    noProc.points = noProc.points.map((point) => ({ ...point, fds: null }))
    const report = judgeSoak({
      durationS: THIRTY_MIN,
      rate: 20,
      intervalMs: 10_000,
      series: [noProc],
    })
    expect(report.replicas[0]?.fds).toBeNull()
    expect(report.passed).toBe(true)
  })

  it('makes the run fail when the soak fails, and prints every replica', () => {
    const summarize = (shapes: Shape[]) => soakSummary(THIRTY_MIN, judge(THIRTY_MIN, shapes))
    expect(summarize([{ noise: 1 }, { noise: 1 }]).passed).toBe(true)
    const leaking = summarize([{ noise: 1 }, { noise: 1, rssPerS: 300 / 3600 }])
    expect(leaking.passed).toBe(false)
    expect(leaking.soak?.passed).toBe(false)
    const table = formatTable(leaking)
    expect(table).toContain('soak: 30 min at 20 flows/s, a sample every 10 s')
    expect(table).toMatch(/\n {2}r1 +169\/181 .* yes\n/)
    expect(table).toMatch(/\n {2}r2 +169\/181 .*OVER.* NO\n/)
    expect(table).toMatch(/r2: resident set \(MiB\) grew \d+(\.\d+)?\/h, bound 256/)
    expect(table).toMatch(/FAILED$/)
  })
})

describe("where a replica's memory is", () => {
  it("reports the resident set's start, peak and end over the whole run, warm-up included", () => {
    const replica = series('r1', CI_SOAK, 1, { warmupJumpUntilS: 8 })
    // A peak in the middle of the run, above where it ends.
    const middle = replica.points[20] as SoakPoint
    replica.points[20] = { ...middle, rss: 300 * MIB }
    const report = judgeSoak({ durationS: CI_SOAK, rate: 20, intervalMs: 1000, series: [replica] })
    expect(report.replicas[0]?.rss_mib).toEqual({ start: 80, peak: 300, end: 120 })
  })

  it('breaks every sample down: heap reserved and young, external, native and file-backed', () => {
    const everySecond = series('r1', CI_SOAK, 1, {})
    const report = judgeSoak({
      durationS: CI_SOAK,
      rate: 20,
      intervalMs: 1000,
      series: [everySecond],
    })
    expect(report.replicas[0]?.points[10]).toEqual({
      s: 10,
      rss: 120,
      heap_used: 24,
      heap_total: 40,
      young: 16,
      external: 4,
      array_buffers: 1,
      // Anonymous 64 MiB, of which the heap reserves 40.
      native: 24,
      file: 56,
      handles: 40,
      fds: 45,
    })
    const noProc = series('r1', CI_SOAK, 1, {})
    noProc.points = noProc.points.map((point) => ({ ...point, anonymous: null }))
    const [point] = judgeSoak({ durationS: CI_SOAK, rate: 20, intervalMs: 1000, series: [noProc] })
      .replicas[0]!.points
    expect(point).toMatchObject({ native: null, file: null })
  })

  it("prints it per replica, from the warm-up's end to the last sample", () => {
    const soak = judgeSoak({
      durationS: CI_SOAK,
      rate: 20,
      intervalMs: 1000,
      series: [series('r1', CI_SOAK, 1, { rssPerS: 0.5 })],
    })
    const table = formatTable(soakSummary(CI_SOAK, soak))
    expect(table).toContain('RSS start / peak / end')
    // RSS growing half a MiB a second from 120; native (anonymous 64 MiB at 0 s less the heap's
    // 40) from the warm-up's end (9 s) to the last sample (45 s).
    expect(table).toMatch(
      /\n {2}r1 +120 \/ 142\.5 \/ 142\.5 +40→40 +16→16 +4→4 +1→1 +28\.5→46\.5 +56→56\n/
    )
  })
})

describe("the replicas' Node flags", () => {
  it('are those of npm start, so a soak measures the process that is deployed', () => {
    const manifest = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')
    ) as { scripts: Record<string, string> }
    expect(manifest.scripts.start).toBe(`node ${SERVER_NODE_FLAGS.join(' ')} src/node.ts`)
    expect(SERVER_NODE_FLAGS).toContain('--max-semi-space-size=16')
  })
})
