/**
 * @module scripts/pack-engine
 * `npm run -s pack:engine [-- --out <folder>]`: builds the engine package (scripts/support/engine-build.ts)
 * into `<folder>/package` and packs it with `npm pack` into `<folder>` (default `dist/stateless-mcp`),
 * then prints what went in and, as its last line, the tarball's absolute path. Publishing is not its
 * job (these machines hold no registry token).
 */
import { spawnSync } from 'node:child_process'
import { resolve, join } from 'node:path'
import { parseArgs } from 'node:util'
import { REPO_ROOT, stageEnginePackage } from './support/engine-build.ts'

/** What `npm pack --json` says about one tarball (the fields read here). */
interface PackReport {
  filename: string
  size: number
  unpackedSize: number
  entryCount: number
}

const { values } = parseArgs({ options: { out: { type: 'string' } } })
const outDir = resolve(values.out ?? join(REPO_ROOT, 'dist/stateless-mcp'))
const stageDir = join(outDir, 'package')

try {
  const manifest = stageEnginePackage(stageDir)
  const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', outDir], {
    cwd: stageDir,
    encoding: 'utf8',
  })
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stderr}${pack.stdout}`)
  const [report] = JSON.parse(pack.stdout) as PackReport[]
  if (!report) throw new Error(`npm pack reported no tarball:\n${pack.stdout}`)
  const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`
  console.log(
    `${String(manifest.name)}@${String(manifest.version)}: ${report.entryCount} files, ` +
      `${kB(report.size)} packed, ${kB(report.unpackedSize)} unpacked`
  )
  console.log(join(outDir, report.filename))
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
}
