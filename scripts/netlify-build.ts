/**
 * @module scripts/netlify-build
 * Builds a folder of Netlify Functions as Netlify's build does (`@netlify/zip-it-and-ship-it`, the
 * bundler behind `netlify deploy` and `netlify functions:build`), unzipped: each function's folder
 * with its bundle, the files it reads (the SQL migrations) and Netlify's bootstrap, which turns a
 * gateway event into the function's `Request`. Prints the entry point of each function, the module
 * whose `handler` Netlify's Lambda invokes, for `scripts/lambda-url.ts --event netlify` to serve.
 *
 *   node scripts/netlify-build.ts <functions folder> <output folder>
 */
import { zipFunctions } from '@netlify/zip-it-and-ship-it'
import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'

/** The file of a built function that Netlify's Lambda loads. */
const ENTRY_POINT = '___netlify-entry-point.mjs'

const [source, output] = process.argv.slice(2)
if (source === undefined || output === undefined) {
  console.error('usage: node scripts/netlify-build.ts <functions folder> <output folder>')
  process.exit(2)
}
const root = process.cwd()
await rm(resolve(output), { recursive: true, force: true })
const built = await zipFunctions(resolve(source), resolve(output), {
  archiveFormat: 'none',
  basePath: root,
  repositoryRoot: root,
})
for (const fn of built) console.log(join(fn.path, ENTRY_POINT))
