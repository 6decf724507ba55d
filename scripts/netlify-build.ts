/**
 * @module scripts/netlify-build
 * Builds a folder of Netlify Functions as a Netlify deploy of this repository does (netlify.toml:
 * the build command `npm run build:netlify`, then `@netlify/zip-it-and-ship-it`, the bundler behind
 * `netlify deploy`), unzipped. First each function is bundled with esbuild into one ES module
 * (`bundleFunctions`: the engine is the workspace package `stateless-mcp`, whose entries are
 * TypeScript that Netlify's file tracing does not follow under node_modules); then Netlify's
 * bundler makes each function's folder with that module and Netlify's bootstrap, which turns a
 * gateway event into the function's `Request`. Prints the entry point of each function, the module
 * whose `handler` Netlify's Lambda invokes, for `scripts/lambda-url.ts --event netlify` to serve.
 *
 *   node scripts/netlify-build.ts <functions folder> <output folder>
 *   node scripts/netlify-build.ts --bundle-only <functions folder> <bundled folder>
 */
import { zipFunctions } from '@netlify/zip-it-and-ship-it'
import { build } from 'esbuild'
import { readdir, rm } from 'node:fs/promises'
import { basename, extname, join, resolve } from 'node:path'

/** The file of a built function that Netlify's Lambda loads. */
const ENTRY_POINT = '___netlify-entry-point.mjs'

/**
 * Bundles each TypeScript function of `source` into `<bundled>/<name>.mjs`: one ES module for Node 24
 * with every dependency inside (its `config` export kept for Netlify to read).
 */
export async function bundleFunctions(source: string, bundled: string): Promise<void> {
  await rm(bundled, { recursive: true, force: true })
  const functions = (await readdir(source)).filter((file) => extname(file) === '.ts')
  await build({
    entryPoints: functions.map((file) => join(source, file)),
    outdir: bundled,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    // CommonJS dependencies inside an ES module still call require() for Node's own modules.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  })
  for (const file of functions) console.error(`bundled ${basename(file, '.ts')}`)
}

const args = process.argv.slice(2)
const bundleOnly = args[0] === '--bundle-only'
const [source, output] = bundleOnly ? args.slice(1) : args
if (source === undefined || output === undefined) {
  console.error(
    'usage: node scripts/netlify-build.ts [--bundle-only] <functions folder> <output folder>'
  )
  process.exit(2)
}
if (bundleOnly) {
  await bundleFunctions(resolve(source), resolve(output))
} else {
  const root = process.cwd()
  const bundled = `${resolve(output)}.functions`
  await bundleFunctions(resolve(source), bundled)
  await rm(resolve(output), { recursive: true, force: true })
  const built = await zipFunctions(bundled, resolve(output), {
    archiveFormat: 'none',
    basePath: root,
    repositoryRoot: root,
  })
  for (const fn of built) console.log(join(fn.path, ENTRY_POINT))
}
