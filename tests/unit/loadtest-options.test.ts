/**
 * The load test's command line (`scripts/loadtest/options.ts`): which fault a run injects, and the
 * refusals of a fault that does not exist or two faults in one run.
 */
import { describe, expect, it } from 'vitest'
import { parseOptions, UsageError } from '../../scripts/loadtest/options.ts'

describe('the load test options: faults', () => {
  it('runs without a fault unless one is named', () => {
    expect(parseOptions([]).fault).toBeUndefined()
  })

  it.each([
    [['--kill'], 'kill'],
    [['--fault', 'kill'], 'kill'],
    [['--fault', 'kill', '--kill'], 'kill'],
    [['--fault', 'rolling'], 'rolling'],
    [['--fault', 'pg-restart'], 'pg-restart'],
    [['--fault', 'pg-kill', '--store', 'postgres'], 'pg-kill'],
  ])('%j injects %s', (argv, fault) => {
    expect(parseOptions(argv).fault).toBe(fault)
  })

  it('refuses a fault it does not know, naming the ones it does', () => {
    expect(() => parseOptions(['--fault', 'flood'])).toThrow(
      new UsageError('--fault must be one of kill, rolling, pg-restart, pg-kill, got flood')
    )
  })

  it('refuses two faults in one run', () => {
    expect(() => parseOptions(['--kill', '--fault', 'rolling'])).toThrow(
      /--kill and --fault rolling cannot be combined/
    )
  })
})

describe('the load test options: database faults', () => {
  it.each(['pg-restart', 'pg-kill'])(
    'refuses --fault %s on SQLite: it restarts PostgreSQL',
    (fault) => {
      expect(() => parseOptions(['--fault', fault, '--store', 'sqlite'])).toThrow(
        new UsageError(
          `--fault ${fault} restarts the PostgreSQL server: it needs --store postgres (the default), not --store sqlite`
        )
      )
    }
  )
})
