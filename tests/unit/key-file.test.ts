/**
 * The zero-configuration key ring on Node: generated once under DATA_DIR with mode 0600, reused on
 * every later start, and never split between replicas that start at the same moment.
 */
import { stat } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { parseKeyRing } from '../../src/mcp/key-ring.ts'
import { loadOrCreateKeyRing } from '../../src/node/key-file.ts'
import { tempDataDir } from '../support/server-process.ts'

describe('the generated key ring file', () => {
  it('is created once with file mode 0600 and holds a valid ring', async () => {
    const dir = await tempDataDir()
    const first = await loadOrCreateKeyRing(dir)
    expect(first.created).toBe(true)
    expect(parseKeyRing(first.text)).toHaveLength(1)
    expect((await stat(first.path)).mode & 0o777).toBe(0o600)
  })

  it('is reused on the next start instead of being replaced', async () => {
    const dir = await tempDataDir()
    const first = await loadOrCreateKeyRing(dir)
    const second = await loadOrCreateKeyRing(dir)
    expect(second).toEqual({ ...first, created: false })
  })

  it('gives every replica starting at once the same ring', async () => {
    const dir = await tempDataDir()
    const results = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateKeyRing(dir)))
    expect(new Set(results.map((result) => result.text)).size).toBe(1)
    expect(results.filter((result) => result.created)).toHaveLength(1)
  })
})
