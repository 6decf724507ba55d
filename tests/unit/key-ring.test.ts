import { createHmac, hkdfSync } from 'node:crypto'
import { base64url } from 'jose'
import { describe, expect, it } from 'vitest'
import {
  formatKeyRing,
  generateKey,
  importKeyRing,
  parseKeyRing,
  PRINCIPAL_TAG_INFO,
  STATE_KEY_BYTES,
} from '../../src/mcp/key-ring.ts'

const SECRET_A = base64url.encode(new Uint8Array(32).map((_, i) => i + 1))
const SECRET_B = base64url.encode(new Uint8Array(32).map((_, i) => 200 - i))

function parseError(text: string): Error {
  try {
    parseKeyRing(text)
  } catch (error) {
    return error as Error
  }
  throw new Error('parseKeyRing accepted the input')
}

describe('parseKeyRing', () => {
  it('reads entries in order: the first seals, all open', () => {
    const keys = parseKeyRing(`new:${SECRET_A},old:${SECRET_B}`)
    expect(keys.map((key) => key.kid)).toEqual(['new', 'old'])
    expect(keys[0]?.secret).toEqual(base64url.decode(SECRET_A))
    expect(keys[1]?.secret.byteLength).toBe(STATE_KEY_BYTES)
  })

  it('tolerates whitespace around entries (env files, multi-line secrets)', () => {
    const keys = parseKeyRing(`  a:${SECRET_A} ,\n b:${SECRET_B}\n`)
    expect(keys.map((key) => key.kid)).toEqual(['a', 'b'])
  })

  it('accepts a padded standard-base64 secret such as `openssl rand -base64 32` prints', () => {
    const bytes = new Uint8Array(32).map((_, i) => (i * 37 + 251) & 255)
    const standard = btoa(String.fromCharCode(...bytes))
    expect(standard).toMatch(/[+/]/)
    expect(standard).toHaveLength(44)
    expect(parseKeyRing(`k:${standard}`)[0]?.secret).toEqual(bytes)
  })

  it('accepts kids up to 32 of A-Za-z0-9_-', () => {
    const kid = 'Ab_-9'.padEnd(32, 'z')
    expect(parseKeyRing(`${kid}:${SECRET_A}`)[0]?.kid).toBe(kid)
  })

  const rejections: [string, string, ErrorConstructor | RangeErrorConstructor][] = [
    ['an empty ring', '', RangeError],
    ['a blank ring', '  \n ', RangeError],
    ['a stray comma', `a:${SECRET_A},`, TypeError],
    ['an entry without a colon', SECRET_A, TypeError],
    ['an empty kid', `:${SECRET_A}`, TypeError],
    ['a kid with a space', `my key:${SECRET_A}`, TypeError],
    ['a kid with a dot', `k.1:${SECRET_A}`, TypeError],
    ['a 33-char kid', `${'k'.repeat(33)}:${SECRET_A}`, TypeError],
    ['a duplicate kid', `a:${SECRET_A},a:${SECRET_B}`, TypeError],
    ['a 31-byte secret', `a:${base64url.encode(new Uint8Array(31).fill(7))}`, RangeError],
    ['a 33-byte secret', `a:${base64url.encode(new Uint8Array(33).fill(7))}`, RangeError],
    ['an empty secret', 'a:', RangeError],
    ['a 16-byte secret', `a:${base64url.encode(new Uint8Array(16).fill(9))}`, RangeError],
    ['a secret with a bad character', `a:${SECRET_A.slice(0, 42)}!`, TypeError],
    [
      'a secret with inner whitespace',
      `a:${SECRET_A.slice(0, 20)} ${SECRET_A.slice(20)}`,
      TypeError,
    ],
    ['a secret mixing both alphabets', `a:${'-'.repeat(21)}${'+'.repeat(21)}A`, TypeError],
    ['unpadded standard base64 with + or /', `a:${'+'.repeat(42)}A`, RangeError],
    ['a non-canonical last character', `a:${SECRET_A.slice(0, 42)}B`, TypeError],
  ]
  for (const [name, text, type] of rejections) {
    it(`rejects ${name} with ${type.name}`, () => {
      expect(parseError(text)).toBeInstanceOf(type)
    })
  }

  it('never echoes a secret (or an entry that may be one) in an error message', () => {
    const secret = 'Zm9vYmFyLXNlY3JldC12YWx1ZS10aGF0LWlzLWxvbmc'
    const cases = [
      secret,
      `a:${secret},a:${secret}`,
      `a:${secret}x`,
      `a:${secret.slice(0, 40)}`,
      `a:${secret.slice(0, 42)}!`,
      `${secret}:${SECRET_A}`,
      `${secret.slice(0, 20)} x:${SECRET_A}`,
      `a:${SECRET_A},${secret}`,
    ]
    for (const text of cases) {
      const { message } = parseError(text)
      expect(message).not.toContain(secret.slice(0, 12))
      expect(message).not.toContain(SECRET_A.slice(0, 12))
    }
  })

  it('names the offending entry by position', () => {
    expect(parseError(`a:${SECRET_A},b:short`).message).toContain('entry 2')
  })
})

describe('generateKey / formatKeyRing', () => {
  it('generates a dated kid and 32 random bytes', () => {
    const key = generateKey()
    expect(key.kid).toMatch(/^k\d{8}[a-z2-7]{4}$/)
    expect(key.kid.slice(1, 9)).toBe(new Date().toISOString().slice(0, 10).replaceAll('-', ''))
    expect(key.secret.byteLength).toBe(32)
  })

  it('never generates the same key twice', () => {
    const keys = Array.from({ length: 50 }, generateKey)
    expect(new Set(keys.map((key) => base64url.encode(key.secret))).size).toBe(50)
  })

  it('formats a ring that parseKeyRing reads back byte for byte', () => {
    const keys = [generateKey(), { kid: 'old', secret: base64url.decode(SECRET_B) }]
    const text = formatKeyRing(keys)
    expect(text).toMatch(/^k\d{8}[a-z2-7]{4}:[A-Za-z0-9_-]{43},old:[A-Za-z0-9_-]{43}$/)
    expect(parseKeyRing(text)).toEqual(keys)
  })

  it('refuses to format an invalid ring', () => {
    expect(() => formatKeyRing([])).toThrow(RangeError)
    expect(() => formatKeyRing([{ kid: 'a', secret: new Uint8Array(16) }])).toThrow(RangeError)
    expect(() => formatKeyRing([{ kid: 'a b', secret: new Uint8Array(32) }])).toThrow(TypeError)
  })
})

describe('importKeyRing', () => {
  it('exposes the sealing kid, every kid in order, and a lookup by kid', async () => {
    const ring = await importKeyRing(parseKeyRing(`new:${SECRET_A},old:${SECRET_B}`))
    expect(ring.sealingKid).toBe('new')
    expect(ring.kids).toEqual(['new', 'old'])
    expect(ring.get('old')?.kid).toBe('old')
    expect(ring.get('missing')).toBeUndefined()
  })

  it('does not resolve prototype names as kids', async () => {
    const ring = await importKeyRing(parseKeyRing(`a:${SECRET_A}`))
    for (const kid of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(ring.get(kid)).toBeUndefined()
    }
  })

  it('holds only non-extractable keys: AES-256-GCM content key, HMAC-SHA256 principal key', async () => {
    const ring = await importKeyRing(parseKeyRing(`a:${SECRET_A}`))
    const key = ring.get('a')!
    expect(key.contentKey.extractable).toBe(false)
    expect(key.contentKey.algorithm).toMatchObject({ name: 'AES-GCM', length: 256 })
    expect([...key.contentKey.usages].sort()).toEqual(['decrypt', 'encrypt'])
    expect(key.principalKey.extractable).toBe(false)
    expect(key.principalKey.algorithm).toMatchObject({ name: 'HMAC', hash: { name: 'SHA-256' } })
    expect(key.principalKey.usages).toEqual(['sign'])
  })

  it('derives the principal key as HKDF-SHA256(secret, empty salt, PRINCIPAL_TAG_INFO)', async () => {
    const secret = base64url.decode(SECRET_A)
    const ring = await importKeyRing([{ kid: 'a', secret }])
    const derived = Buffer.from(
      hkdfSync('sha256', secret, new Uint8Array(0), PRINCIPAL_TAG_INFO, 32)
    )
    const expected = createHmac('sha256', derived).update('alice').digest()
    const actual = await crypto.subtle.sign(
      'HMAC',
      ring.get('a')!.principalKey,
      new TextEncoder().encode('alice')
    )
    expect(Buffer.from(actual)).toEqual(expected)
  })

  it('does not keep or alter the caller’s secret bytes', async () => {
    const secret = base64url.decode(SECRET_A)
    const copy = Uint8Array.from(secret)
    const ring = await importKeyRing([{ kid: 'a', secret }])
    expect(secret).toEqual(copy)
    expect(JSON.stringify(ring)).not.toContain(SECRET_A)
  })

  it('rejects an empty ring, a duplicate kid and a short secret', async () => {
    await expect(importKeyRing([])).rejects.toThrow(RangeError)
    const secret = base64url.decode(SECRET_A)
    await expect(
      importKeyRing([
        { kid: 'a', secret },
        { kid: 'a', secret },
      ])
    ).rejects.toThrow(TypeError)
    await expect(importKeyRing([{ kid: 'a', secret: secret.slice(1) }])).rejects.toThrow(RangeError)
  })
})
