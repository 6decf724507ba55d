/**
 * @module scripts/dev-worker
 * `npm run dev:worker`: the notes Worker on workerd, locally, with zero configuration;
 * `npm run dev:fixture-worker` (`--fixture`): the conformance fixture Worker the same way
 * (`tests/workers/wrangler.fixture.toml`), to run the referee against it
 * (`npm run conformance -- --url http://127.0.0.1:8788/mcp`). It
 * 1. creates `.dev.vars` beside the Worker's wrangler configuration (git-ignored, mode 0600) with a
 *    fresh `STATE_KEYS` ring when there is none, so a first run needs no setup (copy
 *    `.dev.vars.example` to choose your own values);
 * 2. applies `migrations/` to the local D1 database (`wrangler d1 migrations apply DB --local`);
 * 3. runs `wrangler dev --local` on 127.0.0.1, port `PORT` (default 8788), with its local Durable
 *    Object event bus.
 * Wrangler's outbound traffic (metrics, update check, `Request.cf` lookup, error reports) is switched
 * off. Arguments after `--` go to `wrangler dev` (e.g. `npm run dev:worker -- --persist-to /tmp/x`).
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { formatKeyRing, generateKey } from '../src/mcp/key-ring.ts'
import { WRANGLER_CLI, WRANGLER_ENV } from './support/wrangler.ts'

const root = join(import.meta.dirname, '..')
const env = { ...process.env, ...WRANGLER_ENV }

const fixture = process.argv[2] === '--fixture'
const config = join(root, fixture ? 'tests/workers/wrangler.fixture.toml' : 'wrangler.toml')
const script = fixture ? 'dev:fixture-worker' : 'dev:worker'

const port = Number(process.env.PORT || 8788)
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT must be a port number, got ${process.env.PORT}`)
  process.exit(1)
}

const devVars = join(dirname(config), '.dev.vars')
if (!existsSync(devVars)) {
  await writeFile(
    devVars,
    [
      `# Local secrets for \`npm run ${script}\`, generated on first run (git-ignored).`,
      '# See .dev.vars.example; in production use `wrangler secret put STATE_KEYS`.',
      `STATE_KEYS=${formatKeyRing([generateKey()])}`,
      '',
    ].join('\n'),
    { mode: 0o600, flag: 'wx' }
  )
  console.log(`Created ${devVars} with a fresh STATE_KEYS ring for local development.`)
}

function run(args: string[]): Promise<number> {
  const child = spawn(process.execPath, [WRANGLER_CLI, ...args], {
    cwd: root,
    env,
    stdio: 'inherit',
  })
  const forward = (signal: NodeJS.Signals) => child.kill(signal)
  process.on('SIGINT', forward)
  process.on('SIGTERM', forward)
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      process.off('SIGINT', forward)
      process.off('SIGTERM', forward)
      resolve(code ?? (signal ? 128 : 1))
    })
  )
}

const passThrough = process.argv.slice(fixture ? 3 : 2)
const persist = passThrough.indexOf('--persist-to')
const persistArgs = persist >= 0 ? passThrough.slice(persist, persist + 2) : []

const configArgs = ['--config', config]
const migrated = await run([
  'd1',
  'migrations',
  'apply',
  'DB',
  '--local',
  ...configArgs,
  ...persistArgs,
])
if (migrated !== 0) process.exit(migrated)

process.exit(
  await run([
    'dev',
    ...configArgs,
    '--local',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    ...passThrough,
  ])
)
