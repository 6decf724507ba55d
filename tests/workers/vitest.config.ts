/**
 * The workerd test project (`npm run test:workers`, and part of `npm test`): every `*.test.ts` under
 * tests/workers runs inside workerd through @cloudflare/vitest-plugin, against the real Worker entry
 * (`src/worker.ts`) and the real `wrangler.toml` (D1 binding `DB`, the `EVENT_BUS` Durable Object,
 * vars). Migrations are read here, in Node, and applied to each test file's local D1 by `setup.ts`.
 * STATE_KEYS is a fresh ring per run.
 *
 * Beside the Worker under test (which runs in the tests' own isolate) run three more Workers, each in
 * an isolate of its own, built exactly as `wrangler deploy` bundles them: `notes-replica` (the notes
 * Worker again, on the same D1 database and the same `EVENT_BUS` and `TASK_RUNNER` namespaces,
 * reached as `env.NOTES_REPLICA`), and `fixture-a` / `fixture-b` (the conformance fixture Worker,
 * on that D1 database too and the `EVENT_BUS` and `TASK_RUNNER` namespaces `fixture-a` defines,
 * reached as `env.FIXTURE_A` / `FIXTURE_B`, without the store checks of waiting 2025 flows). They let
 * a test send one request to one isolate and the next to another.
 */
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import { readCompatibilityDate, WRANGLER_CLI, WRANGLER_ENV } from './wrangler-dev.ts'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

/** The runner's name (the Worker under test): `vitest-plugin-runner-` and the project's name. */
const RUNNER = 'vitest-plugin-runner-workerd'
/** wrangler.toml's: the auxiliary Workers run on the date of the Worker under test. */
const COMPATIBILITY_DATE = readCompatibilityDate()
/** The `database_id` of `DB` in wrangler.toml: the replica opens the same local database. */
const NOTES_DB = '00000000-0000-0000-0000-000000000000'
const STATE_KEYS = `ktest:${randomBytes(32).toString('base64url')}`
/** No store checks: a 2025 answer between the fixture isolates can only arrive by the bus. */
const ANSWER_POLL_MS = 'Infinity'

/** Bundles a Worker as `wrangler deploy` would (`--dry-run`); answers the path of its module. */
function bundle(config: string, module: string): string {
  const outdir = mkdtempSync(join(tmpdir(), 'notes-workerd-bundle-'))
  const run = spawnSync(
    process.execPath,
    [WRANGLER_CLI, 'deploy', '--dry-run', '--config', here(config), '--outdir', outdir],
    { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...WRANGLER_ENV } }
  )
  if (run.status !== 0) throw new Error(`bundling ${config} failed:\n${run.stdout}\n${run.stderr}`)
  return join(outdir, module)
}

/** The auxiliary Workers. */
function buildAuxiliaryWorkers() {
  const notes = bundle('../../wrangler.toml', 'worker.js')
  const fixture = bundle('wrangler.fixture.toml', 'fixture-worker.js')
  /** An object class the fixture Worker defines itself, or binds from the Worker `owner`. */
  const objects = (owner: string | undefined) => {
    const where = owner === undefined ? { useSQLite: true as const } : { scriptName: owner }
    return {
      EVENT_BUS: { className: 'EventBusObject', ...where },
      TASK_RUNNER: { className: 'TaskRunnerObject', ...where },
    }
  }
  const fixtureWorker = (name: string, owner: string | undefined) => ({
    name,
    modules: true,
    modulesRoot: dirname(fixture),
    scriptPath: fixture,
    compatibilityDate: COMPATIBILITY_DATE,
    d1Databases: { DB: NOTES_DB },
    durableObjects: objects(owner),
    bindings: { STATE_KEYS, ANSWER_POLL_MS },
  })
  return [
    {
      name: 'notes-replica',
      modules: true,
      modulesRoot: dirname(notes),
      scriptPath: notes,
      compatibilityDate: COMPATIBILITY_DATE,
      d1Databases: { DB: NOTES_DB },
      durableObjects: objects(RUNNER),
      bindings: { STATE_KEYS, ALLOWED_HOSTS: '127.0.0.1,localhost' },
    },
    fixtureWorker('fixture-a', undefined),
    fixtureWorker('fixture-b', 'fixture-a'),
  ]
}

let replicas: ReturnType<typeof buildAuxiliaryWorkers> | undefined

export default defineConfig({
  // Vite's cache beside the root project's, not in a node_modules/ under tests/workers.
  cacheDir: here('../../node_modules/.vite/workerd'),
  plugins: [
    cloudflareTest(async () => ({
      main: here('../../src/worker.ts'),
      wrangler: { configPath: here('../../wrangler.toml') },
      miniflare: {
        bindings: {
          STATE_KEYS,
          TEST_MIGRATIONS: await readD1Migrations(here('../../migrations')),
          // Not the default, so that tests/workers/tasks.test.ts sees the task objects take it.
          TASK_RESULT_TTL_SECONDS: '300',
        },
        serviceBindings: {
          NOTES_REPLICA: 'notes-replica',
          FIXTURE_A: 'fixture-a',
          FIXTURE_B: 'fixture-b',
        },
        // Built once per run, however often the plugin asks for its options.
        workers: (replicas ??= buildAuxiliaryWorkers()),
      },
    })),
  ],
  test: {
    name: 'workerd',
    root: here('.'),
    include: ['**/*.test.ts'],
    setupFiles: [here('setup.ts')],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
