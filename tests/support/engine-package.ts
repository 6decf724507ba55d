/**
 * @module tests/support/engine-package
 * The engine package as its users get it, for the tests: {@link packedEngine} runs
 * `scripts/pack-engine.ts` once per process and keeps the tarball under the system's temporary
 * folder, named by a hash of everything that goes into it (the engine's files, the build scripts,
 * the tsconfig they extend), so later processes reuse it until an input changes;
 * {@link installEngine} installs it, with the zod peer and any other packages a test names, into a
 * fresh scratch folder with plain `npm install` (from npm's cache when it can: `--prefer-offline`),
 * lifecycle scripts in the foreground so their output, if any, is in the log.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import { ENGINE_DIR, REPO_ROOT } from '../../scripts/support/engine-build.ts'

const run = promisify(execFile)

/** Files outside the engine folder that shape the package. */
const BUILD_INPUTS = ['scripts/pack-engine.ts', 'scripts/support/engine-build.ts', 'tsconfig.json']
/** Folders of the engine folder that do not go into the package. */
const NOT_PACKED = ['api-report/', 'node_modules/']
/** Where packed tarballs are kept between processes, one per inputs hash. */
const TARBALL_CACHE = join(tmpdir(), 'stateless-mcp-tarballs')

/** A hash of the package's inputs: their paths and contents. */
function inputsHash(): string {
  const engineFiles = readdirSync(ENGINE_DIR, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ENGINE_DIR, join(entry.parentPath, entry.name)))
    .filter((path) => !NOT_PACKED.some((folder) => path.startsWith(folder)))
    .map((path) => relative(REPO_ROOT, join(ENGINE_DIR, path)))
  const hash = createHash('sha256')
  for (const path of [...engineFiles, ...BUILD_INPUTS].sort()) {
    hash
      .update(`${path}\0`)
      .update(readFileSync(join(REPO_ROOT, path)))
      .update('\0')
  }
  return hash.digest('hex').slice(0, 16)
}

let packing: Promise<string> | undefined

/** The tarball of the engine's current sources (absolute path), packed at most once per process. */
export function packedEngine(): Promise<string> {
  packing ??= pack()
  return packing
}

async function pack(): Promise<string> {
  const cached = join(TARBALL_CACHE, `stateless-mcp-${inputsHash()}.tgz`)
  if (existsSync(cached)) return cached
  mkdirSync(TARBALL_CACHE, { recursive: true })
  const outDir = mkdtempSync(join(TARBALL_CACHE, 'pack-'))
  try {
    const { stdout } = await run(process.execPath, ['scripts/pack-engine.ts', '--out', outDir], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    const tarball = stdout.trim().split('\n').at(-1) ?? ''
    if (!existsSync(tarball)) throw new Error(`pack-engine printed no tarball path:\n${stdout}`)
    // Another process may have packed the same inputs meanwhile: the rename replaces it atomically.
    renameSync(tarball, cached)
    return cached
  } finally {
    rmSync(outDir, { recursive: true, force: true })
  }
}

/** A scratch folder with the engine installed. */
export interface EngineInstall {
  /** The scratch folder (its package.json is `type: module`). */
  dir: string
  tarball: string
  /** npm's output (with `--foreground-scripts`: any lifecycle script's own lines too). */
  log: string
  /** Deletes the scratch folder. */
  remove(): void
}

/** The version of a package this repository has installed (so npm's cache already holds it). */
export function installedVersion(name: string): string {
  const manifest = JSON.parse(
    readFileSync(join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')
  ) as {
    version: string
  }
  return manifest.version
}

/**
 * Installs the packed engine into a new scratch folder, with zod (the version this repository uses)
 * and `packages` (npm specs, e.g. `hono@4.13.19`).
 */
export async function installEngine({
  packages = [],
}: { packages?: readonly string[] } = {}): Promise<EngineInstall> {
  const tarball = await packedEngine()
  const dir = mkdtempSync(join(tmpdir(), 'stateless-mcp-install-'))
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'engine-scratch', private: true, type: 'module' }, null, 2)}\n`
  )
  const remove = () => rmSync(dir, { recursive: true, force: true })
  try {
    const { stdout, stderr } = await run(
      'npm',
      [
        'install',
        tarball,
        `zod@${installedVersion('zod')}`,
        ...packages,
        '--prefer-offline',
        '--foreground-scripts',
        '--no-audit',
        '--no-fund',
      ],
      { cwd: dir, encoding: 'utf8' }
    )
    return { dir, tarball, log: `${stdout}${stderr}`, remove }
  } catch (error) {
    remove()
    throw error
  }
}
