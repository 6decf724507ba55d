/**
 * @module tests/support/conformance
 * What the conformance tests share (tests/conformance/referee.test.ts on Node,
 * tests/e2e/worker-conformance.test.ts on workerd, tests/e2e/runtime-conformance.test.ts on the
 * other runtimes): the scenarios of each requirement set (2026-07-28 and 2025-11-25) this project
 * must pass (the tasks extension's too, on every runtime), a runner for the official referee
 * (`scripts/conformance.ts`, one leg per run) that parses its summary, the `describe` block that
 * pins the results, and both legs run and pinned against a server a test starts
 * (`describeBothLegs`). Where the server runs (the fixture started by the script, a Worker under
 * `wrangler dev`, the fixture on another runtime) is each test's own business.
 */
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

export type RequirementSet = '2026-07-28' | '2025-11-25'

/** Scored in both requirement sets, in this order: completion, listing tools, the content kinds. */
const COMPLETION_AND_TOOLS: readonly string[] = [
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
]

/** Scored in both requirement sets, in this order: the prompts, then DNS rebinding protection. */
const PROMPTS_AND_DNS_REBINDING: readonly string[] = [
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
]

/** The scored scenarios of requirement set 2026-07-28 (all 37), on every runtime. */
const SCORED_2026: readonly string[] = [
  'server-stateless',
  ...COMPLETION_AND_TOOLS,
  'tools-call-error',
  'tools-call-with-progress',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'sep-2164-resource-not-found',
  ...PROMPTS_AND_DNS_REBINDING,
  'caching',
  'input-required-result-basic-elicitation',
  'input-required-result-basic-sampling',
  'input-required-result-basic-list-roots',
  'input-required-result-request-state',
  'input-required-result-multiple-input-requests',
  'input-required-result-multi-round',
  'input-required-result-missing-input-response',
  'input-required-result-non-tool-request',
  'input-required-result-result-type',
  'input-required-result-unsupported-methods',
  'input-required-result-tampered-state',
  'input-required-result-capability-check',
  'input-required-result-ignore-extra-params',
  'input-required-result-validate-input',
]

/** The scored scenarios of requirement set 2025-11-25 (all 30). */
const SCORED_2025: readonly string[] = [
  'server-initialize',
  'logging-set-level',
  'ping',
  ...COMPLETION_AND_TOOLS,
  'tools-call-with-logging',
  'tools-call-error',
  'tools-call-with-progress',
  'tools-call-sampling',
  'tools-call-elicitation',
  'elicitation-sep1034-defaults',
  'server-sse-multiple-streams',
  'elicitation-sep1330-enums',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'resources-subscribe',
  'resources-unsubscribe',
  ...PROMPTS_AND_DNS_REBINDING,
]

export const SCORED_SCENARIOS: Readonly<Record<RequirementSet, readonly string[]>> = {
  '2026-07-28': SCORED_2026,
  '2025-11-25': SCORED_2025,
}

/** Not-scored scenarios this project passes too, pinned so they stay passing. */
const NOT_SCORED_BUT_PASSING: Readonly<Record<RequirementSet, readonly string[]>> = {
  '2026-07-28': [
    'json-schema-2020-12',
    'http-header-validation',
    'http-custom-header-server-validation',
  ],
  '2025-11-25': ['server-session-lifecycle', 'server-sse-polling'],
}

/**
 * Checks that must be SUCCESS, not merely not failing (the referee counts a WARNING as passed), by
 * scenario: a resumable POST stream opens with a priming event, lets go with an SSE `retry`, and
 * answers on the stream resumed with `Last-Event-ID`.
 */
const CHECKS_THAT_SUCCEED: Readonly<Record<RequirementSet, Readonly<Record<string, string[]>>>> = {
  '2026-07-28': {},
  '2025-11-25': {
    'server-sse-polling': [
      'server-sse-priming-event',
      'server-sse-retry-field',
      'server-sse-disconnect-resume',
    ],
    'server-sse-multiple-streams': ['server-accepts-multiple-post-streams'],
  },
}

/**
 * The tasks extension's scenarios (not scored, all ten passing), pinned on both runtimes: the Node
 * fixture runs its tasks in-process, the fixture Worker in their Durable Objects.
 */
const TASKS_SCENARIOS: readonly string[] = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
]

/** One scenario's line of the referee's summary. */
export interface ScenarioResult {
  ok: boolean
  line: string
}

export interface RefereeRun {
  /** The script's exit code (`null` when it was killed). */
  exitCode: number | null
  /** Where the results were written (absolute): `<requirement set>/server-<scenario>-<time>/`. */
  out: string
  stdout: string
  /** Scenario name → its summary line. */
  summary: Map<string, ScenarioResult>
}

const root = join(import.meta.dirname, '../..')

/** The scenario lines (`✓ name: N passed, M failed…` or `✗ …`) of the referee's summary. */
function parseRefereeSummary(stdout: string): Map<string, ScenarioResult> {
  const summary = new Map<string, ScenarioResult>()
  for (const line of stdout.split('\n')) {
    const match = /^([✓✗]) ([a-z0-9-]+): \d+ passed, \d+ failed/.exec(line.trim())
    if (match) summary.set(match[2] as string, { ok: match[1] === '✓', line: line.trim() })
  }
  return summary
}

/**
 * Runs one leg (`requirements`) of `scripts/conformance.ts` against `url` (without one, the script
 * starts the Node fixture itself), writing results under `out` (relative to the project root), and
 * kills it after `timeoutMs`. Asynchronous on purpose: a caller running `wrangler dev` must keep
 * reading its pipe while the referee runs.
 */
export async function runReferee(
  url: string | undefined,
  requirements: RequirementSet,
  out: string,
  timeoutMs: number
): Promise<RefereeRun> {
  const args = [join(root, 'scripts/conformance.ts'), ...(url === undefined ? [] : ['--url', url])]
  const referee = spawn(process.execPath, [...args, '--requirements', requirements, '--out', out], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  referee.stdout.setEncoding('utf8')
  referee.stdout.on('data', (chunk: string) => (stdout += chunk))
  referee.stderr.on('data', () => {})
  const timer = setTimeout(() => referee.kill('SIGTERM'), timeoutMs)
  const exitCode = await new Promise<number | null>((resolve) => referee.on('close', resolve))
  clearTimeout(timer)
  return { exitCode, out: join(root, out), stdout, summary: parseRefereeSummary(stdout) }
}

/** Both requirement sets, in the order a server is run through them. */
const REQUIREMENT_SETS: readonly RequirementSet[] = ['2026-07-28', '2025-11-25']

/**
 * Both legs against the server at `url`, one after the other, each leg's results under
 * `outOf(leg)`; logs each leg's scored passes (`Conformance <leg> on <where>: n/m scored pass`).
 */
async function runBothLegs(
  url: string,
  where: string,
  outOf: (requirements: RequirementSet) => string,
  timeoutMs: number
): Promise<Map<RequirementSet, RefereeRun>> {
  const runs = new Map<RequirementSet, RefereeRun>()
  for (const requirements of REQUIREMENT_SETS) {
    const run = await runReferee(url, requirements, outOf(requirements), timeoutMs)
    runs.set(requirements, run)
    const scored = SCORED_SCENARIOS[requirements]
    const passing = scored.filter((scenario) => run.summary.get(scenario)?.ok).length
    console.log(`Conformance ${requirements} on ${where}: ${passing}/${scored.length} scored pass`)
  }
  return runs
}

/** A server the referee runs against, and how to end it. */
export interface RefereeTarget {
  url: string
  stop(): Promise<void>
}

/**
 * The referee against the server `start` starts before the file's tests: both legs, one after the
 * other, each leg's results under `outOf(leg)`, each leg pinned by `describeRefereeRun`, titled
 * "… on `where`"; the server is stopped after them.
 */
export function describeBothLegs(
  where: string,
  start: () => Promise<RefereeTarget>,
  outOf: (requirements: RequirementSet) => string
): void {
  let target: RefereeTarget | undefined
  let runs = new Map<RequirementSet, RefereeRun>()

  beforeAll(async () => {
    target = await start()
    runs = await runBothLegs(target.url, where, outOf, 240_000)
  }, 540_000)

  afterAll(async () => {
    await target?.stop()
  })

  for (const requirements of REQUIREMENT_SETS) {
    describeRefereeRun(
      `official conformance referee, requirement set ${requirements}, on ${where}`,
      requirements,
      () => runs.get(requirements)
    )
  }
}

/** The status of each check of `scenario` in the results of `run` (its latest run). */
function scenarioChecks(
  run: RefereeRun | undefined,
  requirements: RequirementSet,
  scenario: string
): Map<string, string> {
  const statuses = new Map<string, string>()
  if (!run) return statuses
  const dir = join(run.out, requirements)
  const [latest] = readdirSync(dir)
    .filter((name) => name.startsWith(`server-${scenario}-`))
    .sort()
    .reverse()
  if (latest === undefined) return statuses
  const checks = JSON.parse(readFileSync(join(dir, latest, 'checks.json'), 'utf8')) as {
    id: string
    status: string
  }[]
  for (const { id, status } of checks) statuses.set(id, status)
  return statuses
}

/**
 * The tests that pin a referee run of one leg: it exits 0, and every scored and pinned not-scored
 * scenario passes. `run` is read when the tests run (the caller fills it in its `beforeAll`).
 */
export function describeRefereeRun(
  title: string,
  requirements: RequirementSet,
  run: () => RefereeRun | undefined
): void {
  describe(title, () => {
    const expectPassed = (scenario: string) => {
      const result = run()?.summary.get(scenario)
      expect(result?.ok, result?.line ?? `${scenario} did not run`).toBe(true)
    }

    it('exits 0: no scored scenario fails', () => {
      expect(run()?.exitCode, run()?.stdout.slice(-4000)).toBe(0)
    })

    it.each(SCORED_SCENARIOS[requirements])('passes the scored scenario %s', expectPassed)

    it.each(NOT_SCORED_BUT_PASSING[requirements])('passes the not-scored scenario %s', expectPassed)

    if (requirements === '2026-07-28') {
      it.each(TASKS_SCENARIOS)('passes the tasks-extension scenario %s', expectPassed)
    }

    const mustSucceed = Object.entries(CHECKS_THAT_SUCCEED[requirements])
    if (mustSucceed.length > 0) {
      it.each(mustSucceed)('runs every check of %s to SUCCESS: %j', (scenario, checks) => {
        const statuses = scenarioChecks(run(), requirements, scenario)
        for (const check of checks) expect(statuses.get(check), check).toBe('SUCCESS')
      })
    }
  })
}
