/**
 * The load test's pass rule for failed flows (`scripts/loadtest/report.ts`): a 2025 flow may fail
 * cleanly in the fault window only with a kind that means the killed replica never answered its
 * request (its `tools/call` POST before the first event, an answer POST); a stream that was not
 * resumed, a failure outside the fault window, or any clean failure of a modern flow fails the run.
 * Every failure is counted by kind, clean or not.
 */
import { describe, expect, it } from 'vitest'
import type { FlowRecord } from '../../scripts/loadtest/flows.ts'
import { Metrics, type Era } from '../../scripts/loadtest/metrics.ts'
import { parseOptions } from '../../scripts/loadtest/options.ts'
import { formatTable } from '../../scripts/loadtest/report-table.ts'
import { buildSummary } from '../../scripts/loadtest/report.ts'
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

/** The summary of a run with one user per era that ran `ledger`, counted by `count`. */
function summarize(ledger: FlowRecord[], count: (metrics: Metrics) => void) {
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
    fault: null,
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
