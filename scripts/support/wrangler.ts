/**
 * @module scripts/support/wrangler
 * How the scripts (`dev:worker`, the benchmark's Worker builds) and the tests run the installed
 * wrangler and workerd: the path of wrangler's CLI, the workerd binary wrangler itself runs, the
 * environment that keeps wrangler offline and quiet, and the compatibility date of `wrangler.toml`
 * for the Workers they configure outside it. Node only. Spawning and watching the processes belongs
 * to each caller (their needs differ).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

const root = join(import.meta.dirname, '../..')

/** wrangler's CLI, to run with `process.execPath`. */
export const WRANGLER_CLI = join(root, 'node_modules/wrangler/bin/wrangler.js')

/** Keeps wrangler offline and quiet: no metrics, no update check, no Request.cf fetch, no error reports. */
export const WRANGLER_ENV: Readonly<Record<string, string>> = {
  WRANGLER_SEND_METRICS: 'false',
  WRANGLER_HIDE_BANNER: 'true',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_SEND_ERROR_REPORTS: 'false',
}

/** The workerd binary of the installed wrangler (the one `wrangler dev` runs). */
export function workerdBinary(): string {
  const fromWrangler = createRequire(join(root, 'node_modules/wrangler/package.json'))
  return (fromWrangler('workerd') as { default: string }).default
}

/** The `compatibility_date = "YYYY-MM-DD"` line of `wrangler.toml`; throws unless there is exactly one. */
export function readCompatibilityDate(): string {
  const config = join(root, 'wrangler.toml')
  const lines = [
    ...readFileSync(config, 'utf8').matchAll(/^compatibility_date = "(\d{4}-\d{2}-\d{2})"$/gm),
  ]
  const date = lines.length === 1 ? lines[0]?.[1] : undefined
  if (date === undefined) {
    throw new Error(`${config} must have one line compatibility_date = "YYYY-MM-DD"`)
  }
  return date
}
