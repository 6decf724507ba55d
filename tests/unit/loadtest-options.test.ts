/**
 * The load test's command line (`scripts/loadtest/options.ts`): which fault a run injects, and the
 * refusals of a fault that does not exist or two faults in one run; `--min-flows` and the check it
 * runs on (`Metrics.completedAtLeast`, over the eras the users speak).
 */
import { describe, expect, it } from 'vitest'
import { ERA_FLOWS, Metrics, type Era } from '../../scripts/loadtest/metrics.ts'
import { parseOptions, UsageError } from '../../scripts/loadtest/options.ts'
import { erasOf } from '../../scripts/loadtest/users.ts'

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
      new UsageError(
        '--fault must be one of kill, rolling, pg-restart, pg-kill, redis-restart, got flood'
      )
    )
  })

  it("takes --bus store|redis (the store's by default), and --fault redis-restart only with --bus redis", () => {
    expect(parseOptions([]).bus).toBe('store')
    expect(parseOptions(['--bus', 'redis', '--fault', 'redis-restart'])).toMatchObject({
      bus: 'redis',
      fault: 'redis-restart',
    })
    expect(() => parseOptions(['--bus', 'kafka'])).toThrow(/--bus must be one of store, redis/)
    expect(() => parseOptions(['--fault', 'redis-restart'])).toThrow(/needs --bus redis/)
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

describe('the load test options: --min-flows', () => {
  it('is 0 unless given, and takes a whole number up to 1000', () => {
    expect(parseOptions([]).minFlows).toBe(0)
    expect(parseOptions(['--min-flows', '3']).minFlows).toBe(3)
    expect(() => parseOptions(['--min-flows', '1.5'])).toThrow(UsageError)
    expect(() => parseOptions(['--min-flows', '1001'])).toThrow(UsageError)
  })

  it('cannot extend a soak', () => {
    expect(() => parseOptions(['--soak', '1', '--min-flows', '1'])).toThrow(
      new UsageError('--soak runs at a steady rate for its length: --min-flows cannot extend it')
    )
  })
})

describe('the load test: when every kind of flow has completed often enough', () => {
  it('asks every kind of each era with users, and the task flow with task users', () => {
    const metrics = new Metrics()
    const complete = (era: Era, times: number) => {
      for (const kind of ERA_FLOWS[era]) metrics.eras[era].flows[kind].completed = times
    }
    expect(metrics.completedAtLeast(1, ['modern'], false)).toBe(false)
    complete('modern', 1)
    expect(metrics.completedAtLeast(1, ['modern'], false)).toBe(true)
    expect(metrics.completedAtLeast(2, ['modern'], false)).toBe(false)
    expect(metrics.completedAtLeast(1, ['modern', '2025'], false)).toBe(false)
    complete('2025', 1)
    metrics.eras['2025'].flows[ERA_FLOWS['2025'][0]!].completed = 0
    expect(metrics.completedAtLeast(1, ['modern', '2025'], false)).toBe(false)
    complete('2025', 1)
    expect(metrics.completedAtLeast(1, ['modern', '2025'], false)).toBe(true)
    expect(metrics.completedAtLeast(1, ['modern', '2025'], true)).toBe(false)
    metrics.tasks.flows.completed = 1
    expect(metrics.completedAtLeast(1, ['modern', '2025'], true)).toBe(true)
  })

  it('knows which eras the users speak', () => {
    expect(erasOf(4, 0.5)).toEqual(['modern', '2025'])
    expect(erasOf(4, 0)).toEqual(['modern'])
    expect(erasOf(4, 1)).toEqual(['2025'])
    expect(erasOf(1, 0.5)).toEqual(['modern'])
  })
})
