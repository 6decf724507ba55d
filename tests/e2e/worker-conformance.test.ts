/**
 * The official conformance referee (`scripts/conformance.ts --url`, requirement set 2026-07-28) against
 * the conformance fixture served by workerd through `wrangler dev` (local): every scored scenario must
 * pass on the Worker as it does on Node (tests/conformance/referee.test.ts), plus the three not-scored
 * ones the project passes. Results go to conformance-results/worker.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

/** The scored scenarios of requirement set 2026-07-28 (the same 37 as on Node). */
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
let worker: WorkerProcess
let exitCode: number | null = null
let stdout = ''
const summary = new Map<string, { ok: boolean; line: string }>()

beforeAll(async () => {
  worker = await startWorker({ vars: { STATE_KEYS: formatKeyRing([generateKey()]) } })
  // Asynchronous on purpose: wrangler dev logs every request to a pipe this process must keep reading.
  const referee = spawn(
    process.execPath,
    [
      join(root, 'scripts/conformance.ts'),
      '--url',
      worker.url,
      '--out',
      'conformance-results/worker',
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }
  )
  referee.stdout.on('data', (chunk) => (stdout += chunk))
  referee.stderr.on('data', () => {})
  const timer = setTimeout(() => referee.kill('SIGTERM'), 240_000)
  exitCode = await new Promise<number | null>((resolve) => referee.on('close', resolve))
  clearTimeout(timer)
  for (const line of stdout.split('\n')) {
    const match = /^([✓✗]) ([a-z0-9-]+): \d+ passed, \d+ failed/.exec(line.trim())
    if (match) summary.set(match[2] as string, { ok: match[1] === '✓', line: line.trim() })
  }
  const scoredPassing = SCORED.filter((scenario) => summary.get(scenario)?.ok).length
  console.log(`Conformance on workerd: ${scoredPassing}/${SCORED.length} scored scenarios pass`)
}, 300_000)

afterAll(async () => {
  await worker?.stop()
})

describe('official conformance referee, requirement set 2026-07-28, on workerd (wrangler dev)', () => {
  it('exits 0: no scored scenario fails', () => {
    expect(exitCode, stdout.slice(-4000)).toBe(0)
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
