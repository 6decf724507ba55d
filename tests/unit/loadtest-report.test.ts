/**
 * The load test's pass rule for failed flows (`scripts/loadtest/report.ts`): a 2025 flow may fail
 * cleanly in the fault window only with a kind that means the killed replica never answered its
 * request (its `tools/call` POST before the first event, an answer POST); a stream that was not
 * resumed, a failure outside the fault window, or any clean failure of a modern flow fails the run.
 * Every failure is counted by kind, clean or not.
 */
import { describe, expect, it } from 'vitest'
import type { FlowRecord } from '../../scripts/loadtest/flows.ts'
import { FAULT_GRACE_MS, Metrics, type Era } from '../../scripts/loadtest/metrics.ts'
import { parseOptions } from '../../scripts/loadtest/options.ts'
import {
  databaseFault,
  databaseFaultPassed,
  type DatabaseReport,
} from '../../scripts/loadtest/faults/database.ts'
import type { AllowedFailures } from '../../scripts/loadtest/faults/fault.ts'
import { killFault } from '../../scripts/loadtest/faults/kill.ts'
import { rollingFault, type RollingReport } from '../../scripts/loadtest/faults/rolling.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { formatTable } from '../../scripts/loadtest/report-table.ts'
import { buildSummary, type FaultReport } from '../../scripts/loadtest/report.ts'
import { STORE_UNAVAILABLE_KIND } from '../../scripts/loadtest/routing.ts'
import type { EraVerification } from '../../scripts/loadtest/verify.ts'

const sound = (): EraVerification => ({
  expected: { present: 0, absent: 0, unsettled: 0 },
  lost: 0,
  notDeleted: 0,
  duplicated: 0,
  halfDone: 0,
})

function flow(era: Era, seq: number, completed: boolean): FlowRecord {
  return {
    era,
    kind: 'create_delete',
    user: 1,
    seq,
    tag: `u1-f${seq}`,
    notes: [],
    completed,
    failedCleanly: !completed,
  }
}

/**
 * The summary of a run with one user per era that ran `ledger`, counted by `count`, under a
 * fault (by default a kill, whose report is left out).
 */
function summarize(
  ledger: FlowRecord[],
  count: (metrics: Metrics) => void,
  fault: { report: FaultReport | null; allowed: AllowedFailures } = {
    report: null,
    allowed: killFault(0).allowed,
  }
) {
  const metrics = new Metrics()
  metrics.eras.modern.users = 1
  metrics.eras['2025'].users = 1
  count(metrics)
  return buildSummary({
    options: parseOptions(['--kill']),
    store: 'sqlite',
    metrics,
    ledger,
    verification: {
      storedNotes: 0,
      eras: { modern: sound(), '2025': sound() },
      unattributed: 0,
      problems: [],
    },
    elapsedS: 1,
    fault: fault.report,
    allowed: fault.allowed,
  })
}

/** A run with one completed flow per era, and one flow of `era` that failed cleanly with `kind`. */
function summaryWith(era: Era, kind: string, outsideFault = false) {
  return summarize(
    [flow('modern', 1, true), flow('2025', 1, true), flow(era, 2, false)],
    (metrics) => metrics.eras[era].cleanFailure(kind, outsideFault)
  )
}

describe('the load test report: which failed flows a run may have', () => {
  it.each(['call_post_unanswered', 'answer_post_unanswered'])(
    'a 2025 flow failed with %s in the fault window passes, counted by kind',
    (kind) => {
      const summary = summaryWith('2025', kind)
      expect(summary.eras['2025'].failed_by_kind).toEqual({ [kind]: 1 })
      expect(summary.eras['2025'].passed).toBe(true)
      expect(summary.passed).toBe(true)
      expect(formatTable(summary)).toContain(`2025: failed by kind: ${kind} 1 (allowed: `)
    }
  )

  it('a 2025 stream the SDK did not resume fails the run', () => {
    const summary = summaryWith('2025', 'stream_broken_unresumed')
    expect(summary.eras['2025'].failed_by_kind).toEqual({ stream_broken_unresumed: 1 })
    expect(summary.eras['2025'].passed).toBe(false)
    expect(summary.passed).toBe(false)
  })

  it('an unanswered request outside the fault window fails the run', () => {
    const summary = summaryWith('2025', 'answer_post_unanswered', true)
    expect(summary.eras['2025'].failed_cleanly_outside_fault).toBe(1)
    expect(summary.passed).toBe(false)
  })

  it('a modern flow may not fail at all', () => {
    const summary = summaryWith('modern', 'call_post_unanswered')
    expect(summary.eras.modern.allowed_failure_kinds).toEqual([])
    expect(summary.eras.modern.passed).toBe(false)
    expect(summary.passed).toBe(false)
  })

  it('errors and clean failures are counted together by kind', () => {
    const summary = summarize(
      [flow('modern', 1, true), flow('2025', 1, false), flow('2025', 2, false)],
      (metrics) => {
        metrics.eras['2025'].error('timeout')
        metrics.eras['2025'].cleanFailure('call_post_unanswered', false)
      }
    )
    expect(summary.eras['2025'].failed_by_kind).toEqual({ call_post_unanswered: 1, timeout: 1 })
    expect(summary.passed).toBe(false)
  })
})

/** A rolling fault's report: two deploys of one replica, the second ending as `last` says. */
function rollingReport(last: { exit_code: number | null; forced: boolean }): RollingReport {
  const restart = {
    replica: 'r1',
    sigterm_at_s: 1,
    exit_code: 0,
    exit_signal: null,
    forced: false,
    drain_ms: 900,
    back_at_s: 2,
  }
  const clean = last.exit_code === 0 && !last.forced
  return {
    kind: 'rolling',
    restarts: [
      { ...restart, deploy: 'add' },
      { ...restart, ...last, deploy: 'promote' },
    ],
    key_rotation: { kid: 'k2', added_at_s: 2, promoted_at_s: 4 },
    clean_exits: clean,
    passed: clean,
  }
}

describe('the load test report under a rolling deploy', () => {
  const rolling = rollingFault(formatKeyRing([generateKey()]))
  const completed = [flow('modern', 1, true), flow('2025', 1, true)]

  it('passes when every flow completed and every replica exited 0 by itself', () => {
    const report = rollingReport({ exit_code: 0, forced: false })
    const summary = summarize(completed, () => {}, { report, allowed: rolling.allowed })
    expect(summary.passed).toBe(true)
    const table = formatTable(summary)
    expect(table).toContain('2 graceful restarts; key k2 added by 2 s, promoted by 4 s')
    expect(table).toMatch(/promote\s+r1\s+1 s\s+0\s+900 ms\s+2 s/)
  })

  it.each(['call_post_unanswered', 'answer_post_unanswered'])(
    'a 2025 flow that failed cleanly with %s fails the run: a graceful restart is no excuse',
    (kind) => {
      const report = rollingReport({ exit_code: 0, forced: false })
      const summary = summarize(
        [...completed, flow('2025', 2, false)],
        (metrics) => metrics.eras['2025'].cleanFailure(kind, false),
        { report, allowed: rolling.allowed }
      )
      expect(summary.eras['2025'].allowed_failure_kinds).toEqual([])
      expect(summary.passed).toBe(false)
    }
  )

  it.each([
    ['was SIGKILLed at its bound', { exit_code: null, forced: true }],
    ['exited with 1', { exit_code: 1, forced: false }],
  ])('fails the run when a replica %s', (_, last) => {
    const report = rollingReport(last)
    const summary = summarize(completed, () => {}, { report, allowed: rolling.allowed })
    expect(summary.eras.modern.passed && summary.eras['2025'].passed).toBe(true)
    expect(summary.passed).toBe(false)
    expect(formatTable(summary)).toContain('(FAILED)')
  })
})

/** A database fault's report: `refused` requests in the outage, and each replica's recovery. */
function databaseReport(refused: number, recovered: Array<number | null>): DatabaseReport {
  const recovery = recovered.map((ms, i) => ({ replica: `r${i + 1}`, recovered_ms: ms }))
  return {
    kind: 'pg-kill',
    down_at_s: 4,
    back_at_s: 10.5,
    outage_s: 6.5,
    refused,
    recovery,
    recovered_at_s: recovered.includes(null) ? null : 10.7,
    passed: databaseFaultPassed(refused, recovery),
  }
}

describe('the load test report under a database restart or kill', () => {
  const database = databaseFault('pg-kill')
  const completed = [flow('modern', 1, true), flow('2025', 1, true)]
  const fault = (report: DatabaseReport) => ({ report, allowed: database.allowed })

  it('passes when requests met the outage, were refused cleanly and every replica recovered', () => {
    const summary = summarize(completed, () => {}, fault(databaseReport(12, [60, 80])))
    expect(summary.passed).toBe(true)
    const table = formatTable(summary)
    expect(table).toContain(
      'PostgreSQL SIGKILLed at 4 s, back at 10.5 s (6.5 s down), 12 requests refused; replicas serving again by 10.7 s'
    )
    expect(table).toMatch(/r2\s+80 ms/)
  })

  it.each(['modern', '2025'] as const)(
    'a %s flow refused for the store outage in the fault window passes, counted by kind',
    (era) => {
      const summary = summarize(
        [...completed, flow(era, 2, false)],
        (metrics) => metrics.eras[era].cleanFailure(STORE_UNAVAILABLE_KIND, false),
        fault(databaseReport(3, [60]))
      )
      expect(summary.eras[era].failed_by_kind).toEqual({ [STORE_UNAVAILABLE_KIND]: 1 })
      expect(summary.passed).toBe(true)
    }
  )

  it('a flow refused for the store outage after the window and its grace fails the run', () => {
    const summary = summarize(
      [...completed, flow('modern', 2, false)],
      (metrics) => metrics.eras.modern.cleanFailure(STORE_UNAVAILABLE_KIND, true),
      fault(databaseReport(3, [60]))
    )
    expect(summary.eras.modern.failed_cleanly_outside_fault).toBe(1)
    expect(summary.passed).toBe(false)
  })

  it('another clean failure in the window fails the run: only the outage answer is allowed', () => {
    const summary = summarize(
      [...completed, flow('2025', 2, false)],
      (metrics) => metrics.eras['2025'].cleanFailure('call_post_unanswered', false),
      fault(databaseReport(3, [60]))
    )
    expect(summary.eras['2025'].allowed_failure_kinds).toEqual([STORE_UNAVAILABLE_KIND])
    expect(summary.passed).toBe(false)
  })

  it('an outage answer outside the fault window is a replica 5xx, which fails the run', () => {
    const summary = summarize(
      completed,
      (metrics) => {
        metrics.faultAt = 1_000
        metrics.restartedAt = 2_000
        metrics.storeRefused(1_500)
        metrics.storeRefused(2_000 + FAULT_GRACE_MS + 1)
        expect(metrics.storeRefusals).toBe(1)
      },
      fault(databaseReport(1, [60]))
    )
    expect(summary.http_5xx.replica).toBe(1)
    expect(summary.passed).toBe(false)
  })

  it.each([
    ['a replica did not serve the store again', 5, [60, null]],
    ['no request met the outage', 0, [60, 80]],
  ] as const)('fails the run when %s', (_, refused, recovered) => {
    const summary = summarize(completed, () => {}, fault(databaseReport(refused, [...recovered])))
    expect(summary.eras.modern.passed && summary.eras['2025'].passed).toBe(true)
    expect(summary.passed).toBe(false)
    expect(formatTable(summary)).toContain('(FAILED)')
  })
})
