/**
 * @module scripts/conformance
 * `npm run conformance`: runs the official referee (`@modelcontextprotocol/conformance`, pinned in
 * package.json) with `--requirements 2026-07-28` against the conformance fixture. Starts the fixture
 * on 127.0.0.1 (a free port) unless `--url URL` names a server that is already running, prints the
 * referee's summary, and exits non-zero on any scored failure.
 *
 * Usage: node scripts/conformance.ts [--url http://127.0.0.1:PORT/mcp] [--out DIR]
 */
import { spawn } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freePort } from './support/local-resources.ts'

const REQUIREMENTS = '2026-07-28'
const root = join(import.meta.dirname, '..')
const { values } = parseArgs({
  options: { url: { type: 'string' }, out: { type: 'string', default: 'conformance-results' } },
})

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

let code = 1
try {
  await waitUntilServing(url, Date.now() + 30_000)
  const out = join(root, values.out)
  await rm(out, { recursive: true, force: true })
  const args = ['server', '--url', url, '--requirements', REQUIREMENTS, '-o', out]
  const referee = spawn(join(root, 'node_modules/.bin/conformance'), args, { stdio: 'inherit' })
  code = await new Promise<number>((resolve) =>
    referee.on('close', (status) => resolve(status ?? 1))
  )
} finally {
  fixture?.kill('SIGTERM')
}
process.exit(code)
