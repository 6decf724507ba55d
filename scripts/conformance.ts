/**
 * @module scripts/conformance
 * `npm run conformance`: runs the official referee (`@modelcontextprotocol/conformance`, pinned in
 * package.json) against the conformance fixture, once per requirement set: `2026-07-28` (stateless,
 * per-request `_meta`) and `2025-11-25` (the 2025-era leg: `initialize`, sessions, server→client
 * requests), one after the other against the same server. Starts the fixture on 127.0.0.1 (a free
 * port) unless `--url URL` names a server that is already running, prints each leg's summary, and
 * exits non-zero on any scored failure of any leg. Results go to `DIR/<requirement set>/`.
 *
 * Usage: node scripts/conformance.ts [--url http://127.0.0.1:PORT/mcp] [--out DIR]
 *                                    [--requirements 2026-07-28|2025-11-25]  (default: both)
 */
import { spawn } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { freePort } from './support/local-resources.ts'

const REQUIREMENT_SETS = ['2026-07-28', '2025-11-25'] as const
const root = join(import.meta.dirname, '..')
const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string', default: 'conformance-results' },
    requirements: { type: 'string' },
  },
})
const legs = values.requirements === undefined ? REQUIREMENT_SETS : [values.requirements]
for (const leg of legs) {
  if (!(REQUIREMENT_SETS as readonly string[]).includes(leg)) {
    console.error(`Unknown requirement set ${leg}; use one of ${REQUIREMENT_SETS.join(', ')}.`)
    process.exit(2)
  }
}

async function waitUntilServing(url: string, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) })
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  throw new Error(`The server at ${url} did not answer in time.`)
}

let url = values.url
let fixture: ReturnType<typeof spawn> | undefined
if (!url) {
  const port = await freePort()
  url = `http://127.0.0.1:${port}/mcp`
  fixture = spawn(process.execPath, [join(root, 'tests/conformance/fixture-server.ts')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
}

/** Runs one leg of the referee; resolves to its exit code. */
async function runLeg(serverUrl: string, requirements: string): Promise<number> {
  const out = resolve(root, values.out, requirements)
  await rm(out, { recursive: true, force: true })
  console.log(`\n=== conformance, requirement set ${requirements} ===`)
  const args = ['server', '--url', serverUrl, '--requirements', requirements, '-o', out]
  const referee = spawn(join(root, 'node_modules/.bin/conformance'), args, { stdio: 'inherit' })
  return new Promise<number>((resolve) => referee.on('close', (status) => resolve(status ?? 1)))
}

let code = 0
try {
  await waitUntilServing(url, Date.now() + 30_000)
  for (const leg of legs) {
    if ((await runLeg(url, leg)) !== 0) code = 1
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error))
  code = 1
} finally {
  fixture?.kill('SIGTERM')
}
process.exit(code)
