/**
 * The random-byte pool: every byte handed out once (no nonce or IV can repeat across calls, even across
 * pool refills), copies rather than views of the pool, and counts outside the pool's size refused.
 */
import { describe, expect, it } from 'vitest'
import { randomBytes } from '../../src/mcp/random.ts'

describe('randomBytes', () => {
  it('never hands out the same 12-byte IV twice across many pool refills', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 20_000; i++) seen.add(Buffer.from(randomBytes(12)).toString('hex'))
    expect(seen.size).toBe(20_000)
  })

  it('returns copies: changing one result does not change the next', () => {
    const first = randomBytes(16)
    first.fill(0)
    expect(randomBytes(16).every((byte) => byte === 0)).toBe(false)
    expect(first.buffer.byteLength).toBe(16)
  })

  it('refuses counts it cannot serve', () => {
    expect(() => randomBytes(0)).toThrow(RangeError)
    expect(() => randomBytes(4097)).toThrow(RangeError)
    expect(() => randomBytes(1.5)).toThrow(RangeError)
  })
})
