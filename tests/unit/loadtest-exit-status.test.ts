/**
 * @module tests/unit/loadtest-exit-status
 * The load test's exit status is its verdict's (`scripts/loadtest/exit-status.ts`): a PASSED run
 * exits 0 whatever fails while it cleans up afterwards (a `--fault pg-restart` run once printed
 * PASSED and exited non-zero), a failed verdict or a run that failed before its verdict exits 1, and
 * the last line always says the same as the status.
 */
import { describe, expect, it } from 'vitest'
import { ExitDecision } from '../../scripts/loadtest/exit-status.ts'

function decision(): { decision: ExitDecision; warnings: string[] } {
  const warnings: string[] = []
  return { decision: new ExitDecision((line) => warnings.push(line)), warnings }
}

describe('ExitDecision', () => {
  it('exits 0 for a PASSED verdict and 1 for a FAILED one', () => {
    const passed = decision().decision
    passed.verdict(true)
    expect(passed.status()).toBe(0)
    expect(passed.finalLine()).toBe('load test PASSED (exit 0)')
    const failed = decision().decision
    failed.verdict(false)
    expect(failed.status()).toBe(1)
    expect(failed.finalLine()).toBe('load test FAILED (exit 1)')
  })

  it('keeps a PASSED verdict when cleaning up fails after it, and says so as a warning', () => {
    const { decision: run, warnings } = decision()
    run.verdict(true)
    run.failure('the run', new Error('ENOTEMPTY: directory not empty, rmdir'))
    run.failure('a promise rejected with no handler', new Error('write EPIPE'))
    expect(run.status()).toBe(0)
    expect(run.finalLine()).toBe('load test PASSED (exit 0)')
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/^after the verdict, the run \(the verdict stands\): .*ENOTEMPTY/)
  })

  it('fails a run that failed before its verdict, and says why the passed checks do not count', () => {
    const { decision: crashed, warnings } = decision()
    crashed.failure('the run', new Error('no PostgreSQL server answers'))
    expect(crashed.status()).toBe(1)
    expect(crashed.finalLine()).toBe('load test FAILED before its verdict (exit 1)')
    expect(warnings[0]).toMatch(/^load test failed: the run: .*no PostgreSQL server answers/)

    const stray = decision().decision
    stray.failure('a promise rejected with no handler', 'connection reset')
    stray.verdict(true)
    expect(stray.status()).toBe(1)
    expect(stray.finalLine()).toMatch(/^load test FAILED: it passed its checks, but .* \(exit 1\)$/)
  })

  it('keeps the first verdict', () => {
    const run = decision().decision
    run.verdict(false)
    run.verdict(true)
    expect(run.status()).toBe(1)
  })

  it('answers 2 for a usage error and 0 for --help', () => {
    const refused = decision().decision
    refused.usage(false)
    expect(refused.status()).toBe(2)
    const help = decision().decision
    help.usage(true)
    expect(help.status()).toBe(0)
  })
})
