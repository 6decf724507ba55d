/**
 * The key ring's token codec on its own (`CompactJwe`): what it writes, which key it writes and reads
 * with, and that every check on a token from the wire happens before the cipher sees it.
 */
import { base64url, compactDecrypt } from 'jose'
import { describe, expect, it } from 'vitest'
import {
  CompactJwe,
  compactJweChars,
  InvalidJweError,
  type AesGcm,
  type CompactJweOptions,
  type JweFailureReason,
} from '../../src/mcp/compact-jwe.ts'
import { importKeyRing, MAX_KID_CHARS, type RawKey } from '../../src/mcp/key-ring.ts'
import { nodeAesGcm } from '../../src/node/crypto.ts'

function rawKey(kid: string, seed: number): RawKey {
  return { kid, secret: new Uint8Array(32).map((_, i) => (seed * 17 + i * 5) & 255) }
}
const OLD = rawKey('old', 1)
const NEW = rawKey('new', 2)
const MAX_TOKEN_CHARS = 4096
const PLAINTEXT = new TextEncoder().encode('{"claims":"any bytes the caller chooses"}')

async function codec(keys: RawKey[], aesGcm?: AesGcm): Promise<CompactJwe> {
  const keyRing = await importKeyRing(keys)
  return CompactJwe.create({ keyRing, maxTokenChars: MAX_TOKEN_CHARS, aesGcm })
}

/** A runtime cipher that counts how often it was asked to decrypt. */
function countingCipher(keys: RawKey[]): { cipher: AesGcm; decrypts: () => number } {
  const inner = nodeAesGcm(keys)
  let calls = 0
  return {
    cipher: {
      encrypt: (...args) => inner.encrypt(...args),
      decrypt: (...args) => (calls++, inner.decrypt(...args)),
    },
    decrypts: () => calls,
  }
}

/** Why `decrypt` refused: it may throw at once (before the cipher) or reject (an asynchronous cipher). */
async function refusal(decrypt: () => unknown): Promise<JweFailureReason> {
  const error = await (async () => decrypt())().then(
    () => undefined,
    (caught: unknown) => caught
  )
  expect(error).toBeInstanceOf(InvalidJweError)
  return (error as InvalidJweError).reason
}

/** Plain `Uint8Array` (a runtime cipher may hand back a `Buffer`). */
function bytes(view: Uint8Array): Uint8Array {
  return new Uint8Array(view)
}

function header(token: string): string {
  return new TextDecoder().decode(base64url.decode(token.split('.')[0] as string))
}

describe('CompactJwe', () => {
  it('encrypts with the ring’s first key and decrypts with whichever ring key the header names', async () => {
    const before = await codec([OLD])
    const promoted = await codec([NEW, OLD])
    const fromOld = await before.encrypt(PLAINTEXT)
    const fromNew = await promoted.encrypt(PLAINTEXT)
    expect(promoted.sealingKey.kid).toBe('new')
    expect(header(fromNew)).toBe('{"alg":"dir","enc":"A256GCM","kid":"new"}')

    const opened = await promoted.decrypt(fromOld)
    expect(opened.key.kid).toBe('old')
    expect(opened.plaintext).toEqual(PLAINTEXT)
    expect((await promoted.decrypt(fromNew)).key.kid).toBe('new')
    expect(await refusal(() => before.decrypt(fromNew))).toBe('unknown_kid')
  })

  it('writes the same compact JWE with jose and with a runtime cipher: each opens the other', async () => {
    const jose = await codec([OLD])
    const runtime = await codec([OLD], nodeAesGcm([OLD]))
    const fromJose = await jose.encrypt(PLAINTEXT)
    const fromRuntime = await runtime.encrypt(PLAINTEXT)
    const shape = (token: string) => token.split('.').map((part) => part.length)
    expect(shape(fromRuntime)).toEqual(shape(fromJose))
    expect(header(fromRuntime)).toBe(header(fromJose))
    expect(bytes((await runtime.decrypt(fromJose)).plaintext)).toEqual(PLAINTEXT)
    expect(bytes((await jose.decrypt(fromRuntime)).plaintext)).toEqual(PLAINTEXT)
    const contentKey = (await importKeyRing([OLD])).get('old')!.contentKey
    expect(bytes((await compactDecrypt(fromRuntime, contentKey)).plaintext)).toEqual(PLAINTEXT)
  })

  it('refuses a token before the cipher sees it: wrong type, over the cap, malformed, foreign header, unknown kid', async () => {
    const { cipher, decrypts } = countingCipher([OLD])
    const jwe = await codec([OLD], cipher)
    const token = await jwe.encrypt(PLAINTEXT)
    const [, , iv, ciphertext, tag] = token.split('.') as [string, string, string, string, string]
    const withHeader = (json: string) => [base64url.encode(json), '', iv, ciphertext, tag].join('.')

    expect(await refusal(() => jwe.decrypt(42))).toBe('not_a_string')
    expect(await refusal(() => jwe.decrypt('A'.repeat(MAX_TOKEN_CHARS + 1)))).toBe('too_long')
    expect(await refusal(() => jwe.decrypt(token.replace('..', '.AA.')))).toBe('malformed')
    expect(await refusal(() => jwe.decrypt(`${token}.`))).toBe('malformed')
    expect(
      await refusal(() =>
        jwe.decrypt(withHeader('{"alg":"dir","enc":"A256GCM","kid":"old","zip":"DEF"}'))
      )
    ).toBe('bad_header')
    expect(
      await refusal(() => jwe.decrypt(withHeader('{"alg":"dir","enc":"A128GCM","kid":"old"}')))
    ).toBe('bad_header')
    expect(
      await refusal(() => jwe.decrypt(withHeader('{"alg":"dir","enc":"A256GCM","kid":"gone"}')))
    ).toBe('unknown_kid')
    expect(decrypts()).toBe(0)

    const flipped = tag.startsWith('A') ? `B${tag.slice(1)}` : `A${tag.slice(1)}`
    expect(
      await refusal(() => jwe.decrypt([token.split('.')[0], '', iv, ciphertext, flipped].join('.')))
    ).toBe('decrypt_failed')
    expect(decrypts()).toBe(1)
  })

  it('sizes caps exactly: compactJweChars is the length of a token under the longest kid', async () => {
    const longest = rawKey('k'.repeat(MAX_KID_CHARS), 3)
    const jwe = await codec([longest])
    for (const bytes of [0, 1, 2, 3, 100, 1000]) {
      expect((await jwe.encrypt(new Uint8Array(bytes))).length).toBe(compactJweChars(bytes))
    }
  })

  it('checks its options at construction', async () => {
    const keyRing = await importKeyRing([OLD])
    const create = (options: Partial<CompactJweOptions>) => () =>
      CompactJwe.create({
        keyRing,
        maxTokenChars: MAX_TOKEN_CHARS,
        ...options,
      })
    expect(create({ keyRing: undefined })).toThrow(TypeError)
    expect(create({ keyRing: { sealingKid: 'x', kids: ['x'], get: () => undefined } })).toThrow(
      TypeError
    )
    expect(create({ maxTokenChars: compactJweChars(0) - 1 })).toThrow(RangeError)
    expect(create({ maxTokenChars: Infinity })).toThrow(RangeError)
    expect(create({ aesGcm: { encrypt: 1 } as unknown as AesGcm })).toThrow(TypeError)
    expect(create({})().maxTokenChars).toBe(MAX_TOKEN_CHARS)
  })
})
