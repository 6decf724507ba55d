/**
 * @module scripts/support/engine-build
 * The engine package (`src/mcp`, published as its package.json's `name`) as npm users get it:
 * which TypeScript entries its `exports` map names ({@link readEngineEntries}), their compilation to
 * JavaScript and declarations with `src/mcp/tsconfig.build.json` ({@link compileEngine}: the modules
 * those entries reach, nothing else) and the publishable folder ({@link stageEnginePackage}: the
 * compiled `dist/`, the README and a package.json whose `exports` point at `dist/`, with no scripts).
 * `npm run pack:engine` (scripts/pack-engine.ts) and the API report (scripts/api-report.ts) build
 * through here; packing and checking the tarball are theirs and the tests'.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import ts from 'typescript'

/** The repository's root. */
export const REPO_ROOT = resolve(import.meta.dirname, '../..')
/** The engine package's sources: package.json, README.md and the modules. */
export const ENGINE_DIR = join(REPO_ROOT, 'src/mcp')
/** Compiler settings of the package build. */
export const ENGINE_TSCONFIG = join(ENGINE_DIR, 'tsconfig.build.json')
/** Where the compiled modules go inside the published package. */
const COMPILED_FOLDER = 'dist'

/**
 * Fields of the engine's package.json that its published package.json keeps as they are: these
 * before `exports` and `files`, {@link KEPT_REQUIREMENTS} after them.
 */
const KEPT_IDENTITY = ['name', 'version', 'description', 'license', 'type', 'sideEffects'] as const
const KEPT_REQUIREMENTS = [
  'engines',
  'dependencies',
  'peerDependencies',
  'peerDependenciesMeta',
] as const

/** The engine's package.json, as far as the build reads it. */
export interface EngineManifest {
  name: string
  version: string
  exports: Record<string, unknown>
  [field: string]: unknown
}

/** One subpath of the `exports` map whose target is a TypeScript module of the engine. */
export interface EngineEntry {
  /** The subpath key, e.g. `.` or `./sqlite`. */
  subpath: string
  /** Its module, relative to the engine folder without `./`, e.g. `index.ts`. */
  module: string
}

/** The entries and the plain files (such as `./package.json`) of the `exports` map. */
export interface EngineExports {
  entries: EngineEntry[]
  /** Subpaths exported as they are (not TypeScript), e.g. `./package.json`. */
  files: Record<string, string>
}

export function readEngineManifest(): EngineManifest {
  const manifest = JSON.parse(
    readFileSync(join(ENGINE_DIR, 'package.json'), 'utf8')
  ) as EngineManifest
  if (typeof manifest.exports !== 'object' || manifest.exports === null) {
    throw new Error('src/mcp/package.json: `exports` must be a map of subpaths')
  }
  return manifest
}

/**
 * The module one `exports` target names: a path, or a conditions object whose paths all name one
 * TypeScript module (e.g. `{ "source": "./x.ts", "default": "./x.ts" }`).
 */
function exportTarget(subpath: string, target: unknown): string {
  if (typeof target === 'string') return target
  const paths =
    typeof target === 'object' && target !== null
      ? new Set(Object.values(target).filter((path) => typeof path === 'string'))
      : new Set()
  const [only] = paths
  if (paths.size !== 1 || typeof only !== 'string' || !only.endsWith('.ts')) {
    throw new Error(
      `src/mcp/package.json exports["${subpath}"]: expected "./module.ts" (or conditions naming one .ts module), got ${JSON.stringify(target)}`
    )
  }
  return only
}

/** The `exports` map split into TypeScript entries and plain files; patterns are refused. */
export function readEngineEntries(manifest: EngineManifest = readEngineManifest()): EngineExports {
  const entries: EngineEntry[] = []
  const files: Record<string, string> = {}
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (subpath.includes('*')) {
      throw new Error(
        `src/mcp/package.json exports["${subpath}"]: subpath patterns are not supported; name each entry`
      )
    }
    const path = exportTarget(subpath, target)
    if (!path.startsWith('./')) {
      throw new Error(`src/mcp/package.json exports["${subpath}"]: "${path}" must start with ./`)
    }
    if (path.endsWith('.ts')) entries.push({ subpath, module: path.slice(2) })
    else files[subpath] = path
  }
  if (entries.length === 0)
    throw new Error('src/mcp/package.json: `exports` names no TypeScript entry')
  return { entries, files }
}

/** A compiled entry's JavaScript and declaration paths in the published package (`./dist/x.js`). */
export function compiledPaths(entry: EngineEntry): { types: string; default: string } {
  const base = `./${COMPILED_FOLDER}/${entry.module.slice(0, -'.ts'.length)}`
  return { types: `${base}.d.ts`, default: `${base}.js` }
}

/**
 * Compiles the modules the entries reach into `outDir` (JavaScript and `.d.ts`, relative imports
 * rewritten to `.js`; only the `.d.ts` with `declarationsOnly`). Throws with every diagnostic when
 * the sources do not compile.
 */
export function compileEngine(
  entries: readonly EngineEntry[],
  outDir: string,
  { declarationsOnly = false } = {}
): void {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    ENGINE_TSCONFIG,
    { outDir, emitDeclarationOnly: declarationsOnly },
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => failWith([diagnostic]) }
  )
  if (!parsed) throw new Error(`${ENGINE_TSCONFIG}: not readable`)
  if (parsed.errors.length > 0) failWith(parsed.errors)
  const program = ts.createProgram({
    rootNames: entries.map((entry) => join(ENGINE_DIR, entry.module)),
    options: parsed.options,
  })
  const emitted = program.emit()
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics]
  if (diagnostics.length > 0 || emitted.emitSkipped) failWith(diagnostics)
}

function failWith(diagnostics: readonly ts.Diagnostic[]): never {
  const text = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => REPO_ROOT,
    getNewLine: () => '\n',
  })
  throw new Error(`The engine package does not compile:\n${text}`)
}

/** The published package.json: the kept fields, `exports` pointing at `dist/`, `files`; no scripts. */
export function publishedManifest(
  manifest: EngineManifest,
  { entries, files }: EngineExports
): Record<string, unknown> {
  const kept = (fields: readonly string[]) =>
    Object.fromEntries(
      fields
        .filter((field) => manifest[field] !== undefined)
        .map((field) => [field, manifest[field]])
    )
  const exports = Object.fromEntries(
    Object.keys(manifest.exports).map((subpath) => {
      const entry = entries.find((candidate) => candidate.subpath === subpath)
      return [subpath, entry ? compiledPaths(entry) : files[subpath]]
    })
  )
  return { ...kept(KEPT_IDENTITY), exports, files: [COMPILED_FOLDER], ...kept(KEPT_REQUIREMENTS) }
}

/**
 * Builds the publishable package into `stageDir` (emptied first, so no module of an earlier build
 * lingers): `dist/`, package.json and, when the engine has one, README.md. Returns the manifest.
 */
export function stageEnginePackage(stageDir: string): Record<string, unknown> {
  const manifest = readEngineManifest()
  const exported = readEngineEntries(manifest)
  rmSync(stageDir, { recursive: true, force: true })
  mkdirSync(stageDir, { recursive: true })
  compileEngine(exported.entries, join(stageDir, COMPILED_FOLDER))
  const published = publishedManifest(manifest, exported)
  writeFileSync(join(stageDir, 'package.json'), `${JSON.stringify(published, null, 2)}\n`)
  const readme = join(ENGINE_DIR, 'README.md')
  if (existsSync(readme)) copyFileSync(readme, join(stageDir, 'README.md'))
  return published
}
