/**
 * The engine package (`src/mcp`, issue 34) as npm users get it, from the tarball
 * `npm run pack:engine` makes: publint (strict) and attw (profile `esm-only`: the package is ESM
 * only, so CommonJS `require` and `node10` resolution are out of scope) find nothing; installed
 * alone into an empty folder it brings only its declared dependencies and runs no install script;
 * each entry imports with plain `node` (no type stripping), an entry whose optional peer is absent
 * failing only by naming that peer, and every entry importing once the optional peers are there,
 * its declarations type-checking (strict, not skipped) for a consumer with the web lib and no
 * `@types/node`.
 * The committed API report (`src/mcp/api-report/`) must be what the sources produce.
 */
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readCommittedReports, renderApiReports } from '../../scripts/api-report.ts'
import { REPO_ROOT, readEngineManifest } from '../../scripts/support/engine-build.ts'
import { installEngine, installedVersion, type EngineInstall } from '../support/engine-package.ts'

const run = promisify(execFile)
const PACK_AND_INSTALL_MS = 300_000

interface Manifest {
  name: string
  exports: Record<string, unknown>
  scripts?: unknown
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}

function readManifest(dir: string): Manifest {
  return JSON.parse(
    readFileSync(join(dir, 'node_modules/stateless-mcp/package.json'), 'utf8')
  ) as Manifest
}

function optionalPeers(manifest: Manifest): string[] {
  return Object.keys(manifest.peerDependencies ?? {}).filter(
    (peer) => manifest.peerDependenciesMeta?.[peer]?.optional === true
  )
}

/** The import specifiers of the package's code entries (`stateless-mcp`, `stateless-mcp/hono`, …). */
function entrySpecifiers(manifest: Manifest): string[] {
  return Object.keys(manifest.exports)
    .filter((subpath) => subpath !== './package.json')
    .map((subpath) => (subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`))
}

/** Imports `specifier` from `dir` with plain node; the error text when it fails. */
async function importFailure(dir: string, specifier: string): Promise<string | undefined> {
  try {
    await run(
      process.execPath,
      [
        '--no-experimental-strip-types',
        '--input-type=module',
        '-e',
        'await import(process.argv[1])',
        specifier,
      ],
      { cwd: dir, encoding: 'utf8' }
    )
    return undefined
  } catch (error) {
    return (error as { stderr?: string }).stderr ?? String(error)
  }
}

/** Runs a checker's CLI from this repository's node_modules on the tarball. */
async function check(
  bin: string,
  args: readonly string[]
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [join(REPO_ROOT, 'node_modules/.bin', bin), ...args],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      }
    )
    return { code: 0, output: `${stdout}${stderr}` }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` }
  }
}

describe('the engine package, installed alone', () => {
  let install: EngineInstall
  let manifest: Manifest

  beforeAll(async () => {
    install = await installEngine()
    manifest = readManifest(install.dir)
  }, PACK_AND_INSTALL_MS)
  afterAll(() => install?.remove())

  it('publint (strict) finds nothing', async () => {
    const { code, output } = await check('publint', [install.tarball, '--strict'])
    expect(code, output).toBe(0)
    expect(output).toContain('All good!')
  })

  it('attw (profile esm-only) finds nothing', async () => {
    const { code, output } = await check('attw', [
      install.tarball,
      '--profile',
      'esm-only',
      '--no-emoji',
      '--no-color',
    ])
    expect(code, output).toBe(0)
    expect(output).toContain('node16 (from ESM)')
  })

  it('keeps the entries of src/mcp/package.json, each compiled, and carries no scripts', () => {
    expect(Object.keys(manifest.exports)).toEqual(Object.keys(readEngineManifest().exports))
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      if (subpath === './package.json') continue
      expect(target, subpath).toEqual({
        types: expect.stringMatching(/^\.\/dist\/.+\.d\.ts$/) as unknown,
        default: expect.stringMatching(/^\.\/dist\/.+\.js$/) as unknown,
      })
    }
    expect(manifest.scripts).toBeUndefined()
  })

  it('brings only its declared dependencies and runs no install script', () => {
    const lock = JSON.parse(readFileSync(join(install.dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>
    }
    const installed = Object.keys(lock.packages)
      .filter((path) => path !== '')
      .map((path) => path.replace(/^.*node_modules\//, ''))
      .sort()
    const requiredPeers = Object.keys(manifest.peerDependencies ?? {}).filter(
      (peer) => !optionalPeers(manifest).includes(peer)
    )
    expect(installed).toEqual(
      [manifest.name, ...Object.keys(manifest.dependencies ?? {}), ...requiredPeers].sort()
    )
    expect(
      Object.entries(lock.packages).filter(([, entry]) => entry.hasInstallScript),
      'packages with an install script'
    ).toEqual([])
    // With --foreground-scripts npm echoes each lifecycle script it runs as "> name@version event".
    expect(install.log).not.toMatch(/^> \S+@\S+ (preinstall|install|postinstall|prepare)\b/m)
    // npm 11 also warns about any package whose install scripts no allowScripts entry covers.
    expect(install.log).not.toContain('install-scripts')
  })

  it('every entry imports with plain node, or fails only naming its absent optional peer', async () => {
    const absent = optionalPeers(manifest)
    for (const specifier of entrySpecifiers(manifest)) {
      const failure = await importFailure(install.dir, specifier)
      if (failure === undefined) continue
      const names = absent.filter(
        (peer) =>
          failure.includes(`Cannot find package '${peer}'`) || failure.includes(`install ${peer}`)
      )
      expect(
        names,
        `${specifier} failed without naming an absent optional peer:\n${failure}`
      ).not.toEqual([])
    }
  })
})

describe('the engine package with its optional peers', () => {
  let install: EngineInstall
  let manifest: Manifest

  beforeAll(async () => {
    const peers = optionalPeers(readEngineManifest())
    // This repository's versions of the peers, so npm's cache has them.
    install = await installEngine({
      packages: peers.map((peer) => `${peer}@${installedVersion(peer)}`),
    })
    manifest = readManifest(install.dir)
  }, PACK_AND_INSTALL_MS)
  afterAll(() => install?.remove())

  it('every entry imports with plain node', async () => {
    for (const specifier of entrySpecifiers(manifest)) {
      expect(await importFailure(install.dir, specifier), specifier).toBeUndefined()
    }
  })

  it(
    "every entry's declarations type-check for a consumer without @types/node (web lib only)",
    () => {
      const consumer = join(install.dir, 'consumer.ts')
      writeFileSync(
        consumer,
        entrySpecifiers(manifest)
          .map((specifier, index) => `export * as entry${index} from '${specifier}'\n`)
          .join('')
      )
      const program = ts.createProgram({
        rootNames: [consumer],
        options: {
          module: ts.ModuleKind.NodeNext,
          moduleResolution: ts.ModuleResolutionKind.NodeNext,
          target: ts.ScriptTarget.ES2024,
          lib: ['lib.es2024.d.ts', 'lib.dom.d.ts'],
          types: [],
          strict: true,
          noEmit: true,
        },
      })
      const packageDir = join(install.dir, 'node_modules', manifest.name)
      const errors = ts
        .getPreEmitDiagnostics(program)
        .filter(
          (diagnostic) =>
            !diagnostic.file ||
            diagnostic.file.fileName === consumer ||
            diagnostic.file.fileName.startsWith(packageDir)
        )
      const text = ts.formatDiagnostics(errors, {
        getCanonicalFileName: (name) => name,
        getCurrentDirectory: () => install.dir,
        getNewLine: () => '\n',
      })
      expect(text).toBe('')
    },
    PACK_AND_INSTALL_MS
  )
})

describe('the API report', () => {
  it(
    'is what the sources produce (else: run npm run api:report and review the diff)',
    () => {
      const committed = readCommittedReports()
      const current = renderApiReports()
      const outdated = 'is out of date: run npm run api:report and review the diff'
      expect([...committed.keys()].sort(), `The set of API reports ${outdated}`).toEqual(
        [...current.keys()].sort()
      )
      for (const [name, report] of current) {
        expect.soft(committed.get(name), `src/mcp/api-report/${name} ${outdated}`).toBe(report)
      }
    },
    PACK_AND_INSTALL_MS
  )
})
