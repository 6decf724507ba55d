/**
 * Bundle isolation of the Worker: builds it exactly as `wrangler deploy` would (`--dry-run`, offline)
 * and fails if the bundle pulls Node-only code — any `node:*` import, `node:sqlite`, the Node entry
 * (`src/node.ts`) and everything under `src/node/`, the Node-only adapters (`src/storage/sqlite.ts`,
 * `src/storage/postgres.ts` and everything under `src/storage/postgres/`, the engine's PostgreSQL
 * event bus `src/mcp/buses/postgres.ts`, its node:sqlite and PostgreSQL store entries with the
 * node:sqlite driver) or the Node-only packages
 * behind them. Reads esbuild's metafile (what went in) and the bundle text (what
 * came out), prints the bundle size, and proves the check bites on a deliberately leaky entry.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WRANGLER_ENV } from '../workers/wrangler-dev.ts'

const root = join(import.meta.dirname, '../..')
const work = mkdtempSync(join(tmpdir(), 'notes-worker-bundle-'))

/** Source folders none of whose files (today's or a future one) may reach the Worker. */
const NODE_ONLY_FOLDERS = ['src/node/', 'src/storage/postgres/']
/** Source files outside those folders that must never reach the Worker. */
const NODE_ONLY_FILES = [
  'src/node.ts',
  'src/storage/sqlite.ts',
  'src/storage/postgres.ts',
  'src/mcp/buses/postgres.ts',
  'src/mcp/sqlite.ts',
  'src/mcp/stores/sqlite/node-sqlite.ts',
  'src/mcp/postgres.ts',
]

/** Whether a bundle input (a path from the project root, as esbuild names it) is Node-only source. */
function isNodeOnlySource(input: string): boolean {
  return (
    NODE_ONLY_FILES.includes(input) || NODE_ONLY_FOLDERS.some((folder) => input.startsWith(folder))
  )
}
/** Packages only the Node entry and adapters use. */
const NODE_ONLY_PACKAGES = ['@hono/node-server', 'postgres']

interface Bundle {
  code: string
  inputs: string[]
  /** Imports esbuild left external (a Worker bundle should have none). */
  externals: string[]
  log: string
}

function build(name: string, args: string[]): Bundle {
  const outdir = join(work, name)
  const run = spawnSync(
    process.execPath,
    [
      join(root, 'node_modules/wrangler/bin/wrangler.js'),
      'deploy',
      '--dry-run',
      '--outdir',
      outdir,
      '--metafile',
      join(outdir, 'meta.json'),
      ...args,
    ],
    { cwd: root, encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...WRANGLER_ENV } }
  )
  const log = `${run.stdout}\n${run.stderr}`
  if (run.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${log}`)
  const meta = JSON.parse(readFileSync(join(outdir, 'meta.json'), 'utf8')) as {
    inputs: Record<string, unknown>
    outputs: Record<string, { imports: Array<{ path: string; external?: boolean }> }>
  }
  const output = Object.keys(meta.outputs).find((path) => path.endsWith('.js'))
  if (output === undefined) throw new Error(`no JavaScript output in the metafile:\n${log}`)
  return {
    code: readFileSync(join(root, output), 'utf8'),
    inputs: Object.keys(meta.inputs).map((path) => path.replaceAll('\\', '/')),
    externals: Object.values(meta.outputs).flatMap((output) =>
      output.imports.filter((entry) => entry.external !== false).map((entry) => entry.path)
    ),
    log,
  }
}

/** Every way a bundle can carry Node-only code; empty when it is clean. */
function violations(bundle: Bundle): string[] {
  const found: string[] = []
  for (const input of bundle.inputs) {
    if (isNodeOnlySource(input)) found.push(`input ${input}`)
  }
  for (const pkg of NODE_ONLY_PACKAGES) {
    if (bundle.inputs.some((input) => input.includes(`node_modules/${pkg}/`))) {
      found.push(`package ${pkg}`)
    }
  }
  for (const path of bundle.externals) found.push(`external import ${path}`)
  const nodeImports = bundle.code.match(
    /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)["']node:[\w/]+["']/g
  )
  for (const statement of new Set(nodeImports ?? [])) found.push(`code ${statement}`)
  if (bundle.code.includes('node:sqlite')) found.push('code mentions node:sqlite')
  if (/\bDatabaseSync\b/.test(bundle.code)) found.push('code of node:sqlite (DatabaseSync)')
  return found
}

let worker: Bundle

beforeAll(() => {
  worker = build('worker', [])
}, 150_000)

afterAll(() => {
  rmSync(work, { recursive: true, force: true })
})

describe('the Worker bundle', () => {
  it('names Node-only places that exist: each folder holds source, each file is there', () => {
    for (const folder of NODE_ONLY_FOLDERS) {
      expect(readdirSync(join(root, folder)).filter((name) => name.endsWith('.ts'))).not.toEqual([])
    }
    for (const file of NODE_ONLY_FILES) expect(existsSync(join(root, file))).toBe(true)
  })

  it('is built from src/worker.ts with the D1 adapter', () => {
    expect(worker.inputs).toContain('src/worker.ts')
    expect(worker.inputs).toContain('src/storage/d1.ts')
    expect(worker.inputs).toContain('src/app.ts')
  })

  it('contains no Node-only module, source file or package', () => {
    expect(violations(worker)).toEqual([])
  })

  it('reports its size', () => {
    const bytes = Buffer.byteLength(worker.code)
    const gzip = gzipSync(worker.code).byteLength
    const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`
    const sources = worker.inputs.filter((input) => !input.includes('node_modules/')).length
    console.log(
      `Worker bundle: ${kib(bytes)} (${kib(gzip)} gzip), ${worker.inputs.length} inputs of which ${sources} project files`
    )
    // Workers' limit is 3 MiB gzip on the Free plan (10 MiB paid); stay far below it.
    expect(gzip).toBeLessThan(1024 * 1024)
  })

  it('the check catches a leak: an entry that imports a Node-only adapter fails it', () => {
    const entry = join(work, 'leaky-worker.ts')
    writeFileSync(
      entry,
      [
        `import { SqliteNotesStore } from '${relative(work, join(root, 'src/storage/sqlite.ts')).replaceAll('\\', '/')}'`,
        'export default { fetch: () => new Response(String(SqliteNotesStore)) }',
        '',
      ].join('\n')
    )
    // nodejs_compat only so that the leaky bundle builds at all; the notes Worker needs no flag.
    const leaky = build('leaky', [
      entry,
      '--name',
      'leaky',
      '--compatibility-date',
      '2026-11-01',
      '--compatibility-flags',
      'nodejs_compat',
    ])
    expect(violations(leaky)).toEqual(
      expect.arrayContaining(['input src/storage/sqlite.ts', 'code mentions node:sqlite'])
    )
  })
})
