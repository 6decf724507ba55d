/**
 * @module tests/support/scratch-files
 * Fresh paths in a folder of the calling test file's own, removed once its tests are done.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

/** Answers a new path ending in `name` at each call, in one folder made for these tests. */
export function scratchFiles(prefix: string): (name: string) => string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  return (name) => join(dir, `${++files}-${name}`)
}
