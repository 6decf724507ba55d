/**
 * @module tests/unit/utf8
 * `decodeUtf8` answers exactly what a fatal `TextDecoder` answers — the same text for well-formed
 * UTF-8 (U+FFFD written by the client included, a BOM dropped), a `TypeError` for anything
 * malformed — over hand-picked cases and many pseudo-random byte strings (a fixed seed).
 */
import { describe, expect, it } from 'vitest'
import { decodeUtf8 } from '../../src/mcp/utf8.ts'

const fatal = new TextDecoder('utf-8', { fatal: true })
const encode = (text: string) => new TextEncoder().encode(text)

/** The text, or `null` when refused. */
function reference(bytes: Uint8Array): string | null {
  try {
    return fatal.decode(bytes)
  } catch {
    return null
  }
}

function ours(bytes: Uint8Array): string | null {
  try {
    return decodeUtf8(bytes)
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError)
    return null
  }
}

describe('decodeUtf8', () => {
  it('decodes well-formed text, a U+FFFD the client wrote included', () => {
    for (const text of ['', 'hello', 'ünïcödé ✓ 𝄞', 'a\uFFFDb', '\uFFFD']) {
      expect(decodeUtf8(encode(text))).toBe(text)
    }
    expect(decodeUtf8(encode('{"a":1}').buffer)).toBe('{"a":1}')
  })

  it('drops a leading BOM as the fatal decoder does', () => {
    const bytes = Uint8Array.of(0xef, 0xbb, 0xbf, 0x7b, 0x7d)
    expect(decodeUtf8(bytes)).toBe(reference(bytes))
  })

  it.each([
    ['a lone continuation byte', [0x61, 0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['an overlong encoding', [0xc0, 0xaf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a byte never used', [0xff]],
    ['malformed next to a real U+FFFD', [0xef, 0xbf, 0xbd, 0x80]],
  ])('refuses %s', (_name, bytes) => {
    expect(() => decodeUtf8(Uint8Array.from(bytes))).toThrow(TypeError)
  })

  it('agrees with the fatal decoder on 20,000 pseudo-random byte strings', () => {
    let seed = 0x2545f491
    const next = () => {
      seed ^= seed << 13
      seed ^= seed >>> 17
      seed ^= seed << 5
      return seed >>> 0
    }
    // Mostly ASCII with multi-byte lead and continuation bytes mixed in, so both outcomes occur.
    const pool = [
      0x41, 0x7a, 0x22, 0x80, 0xbf, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0xef, 0xbd,
    ]
    let refused = 0
    for (let round = 0; round < 20_000; round++) {
      const bytes = Uint8Array.from({ length: next() % 12 }, () => pool[next() % pool.length]!)
      const expected = reference(bytes)
      if (expected === null) refused += 1
      expect(ours(bytes)).toBe(expected)
    }
    expect(refused).toBeGreaterThan(1_000)
    expect(refused).toBeLessThan(19_000)
  })
})
