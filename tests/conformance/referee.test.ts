/**
 * Runs the official conformance referee (`npm run conformance`, requirement set 2026-07-28) against
 * the fixture and pins every scored scenario plus the three not-scored ones this project passes.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'

const SCORED = [
  'server-stateless',
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'tools-call-with-progress',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'sep-2164-resource-not-found',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
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
const NOT_SCORED_BUT_PASSING = [
  'json-schema-2020-12',
  'http-header-validation',
  'http-custom-header-server-validation',
]

const root = join(import.meta.dirname, '../..')
let exitCode: number | null = null
const summary = new Map<string, { ok: boolean; line: string }>()

beforeAll(() => {
  const run = spawnSync(
    process.execPath,
    [join(root, 'scripts/conformance.ts'), '--out', 'conformance-results/node'],
    {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
    }
  )
  exitCode = run.status
  for (const line of run.stdout.split('\n')) {
    const match = /^([✓✗]) ([a-z0-9-]+): \d+ passed, \d+ failed/.exec(line.trim())
    if (match) summary.set(match[2] as string, { ok: match[1] === '✓', line: line.trim() })
  }
}, 150_000)

describe('official conformance referee, requirement set 2026-07-28, on Node', () => {
  it('exits 0: no scored scenario fails', () => {
    expect(exitCode).toBe(0)
  })

  it.each(SCORED)('passes the scored scenario %s', (scenario) => {
    expect(
      summary.get(scenario)?.ok,
      summary.get(scenario)?.line ?? `${scenario} did not run`
    ).toBe(true)
  })

  it.each(NOT_SCORED_BUT_PASSING)('passes the not-scored scenario %s', (scenario) => {
    expect(
      summary.get(scenario)?.ok,
      summary.get(scenario)?.line ?? `${scenario} did not run`
    ).toBe(true)
  })
})
