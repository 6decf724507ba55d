/**
 * The ciphers and base64url codecs the sealer runs on (Web Crypto and jose's base64url by default,
 * `node:crypto` and `Buffer` on Node): every combination writes the compact JWE jose reads and opens
 * what jose writes, the protected headers it keeps ready do not narrow what it reads, the claims are
 * the bytes `JSON.stringify` would write, and the sealer the Node entry builds fails closed on every
 * altered character.
 */
import { base64url, CompactEncrypt, compactDecrypt } from 'jose'
import { describe, expect, it } from 'vitest'
import { JOSE_BASE64URL, type Base64urlCodec } from '../../src/mcp/base64url.ts'
import { CompactJwe, InvalidJweError, type AesGcm } from '../../src/mcp/compact-jwe.ts'
import { INVALID_REQUEST_STATE_MESSAGE } from '../../src/mcp/errors.ts'
import { importKeyRing, type RawKey } from '../../src/mcp/key-ring.ts'
import { StateSealer, type StateBinding } from '../../src/mcp/sealed-state.ts'
import { createNodeSealer, nodeAesGcm, nodeBase64url } from '../../src/node/crypto.ts'

function rawKey(kid: string, seed: number): RawKey {
  return { kid, secret: new Uint8Array(32).map((_, i) => (seed * 13 + i * 11) & 255) }
}
const OLD = rawKey('old', 1)
const NEW = rawKey('new', 2)
const PLAINTEXT = new TextEncoder().encode('{"claims":"é and \u2028 as UTF-8"}')
const BINDING: StateBinding = {
  principal: 'principal-1',
  method: 'tools/call',
  target: 'say "hi" \u2014 to\\everyone\u2028',
  args: { b: [1, 2], a: 'x' },
}

const COMBINATIONS: Array<{ name: string; aesGcm?: AesGcm; base64url?: Base64urlCodec }> = [
  { name: 'Web Crypto, jose base64url' },
  { name: 'node:crypto, jose base64url', aesGcm: nodeAesGcm([NEW, OLD]) },
  { name: 'Web Crypto, Buffer base64url', base64url: nodeBase64url },
  {
    name: 'node:crypto, Buffer base64url',
    aesGcm: nodeAesGcm([NEW, OLD]),
    base64url: nodeBase64url,
  },
]

async function codec(options: { aesGcm?: AesGcm; base64url?: Base64urlCodec }) {
  return CompactJwe.create({
    keyRing: await importKeyRing([NEW, OLD]),
    maxTokenChars: 4096,
    ...options,
  })
}

function bytesOf(view: Uint8Array): Uint8Array {
  return new Uint8Array(view)
}

function headerOf(token: string): string {
  return new TextDecoder().decode(base64url.decode(token.split('.')[0] as string))
}

describe('base64url codecs', () => {
  it('Buffer base64url writes what jose writes and reads it back, for every length up to 64 bytes', () => {
    for (let length = 0; length <= 64; length++) {
      const bytes = new Uint8Array(length).map((_, i) => (i * 97 + length * 31) & 255)
      const text = nodeBase64url.encode(bytes)
      expect(text).toBe(JOSE_BASE64URL.encode(bytes))
      expect(new Uint8Array(nodeBase64url.decode(text))).toEqual(bytes)
    }
    // A view into a larger buffer encodes only its own bytes.
    const backing = new Uint8Array([9, 1, 2, 3, 9])
    expect(nodeBase64url.encode(backing.subarray(1, 4))).toBe(
      JOSE_BASE64URL.encode(new Uint8Array([1, 2, 3]))
    )
  })
})

describe('CompactJwe on every cipher and codec', () => {
  for (const combination of COMBINATIONS) {
    it(`${combination.name}: writes the compact JWE jose reads, and opens what jose writes`, async () => {
      const jwe = await codec(combination)
      const token = await jwe.encrypt(PLAINTEXT)
      expect(headerOf(token)).toBe('{"alg":"dir","enc":"A256GCM","kid":"new"}')
      const { plaintext } = await compactDecrypt(token, NEW.secret)
      expect(plaintext).toEqual(PLAINTEXT)

      const fromJose = await new CompactEncrypt(PLAINTEXT)
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'old' })
        .encrypt(OLD.secret)
      const opened = await jwe.decrypt(fromJose)
      expect(opened.key.kid).toBe('old')
      expect(new Uint8Array(opened.plaintext)).toEqual(PLAINTEXT)
    })
  }

  it('reads a header naming a ring key in another spelling (checked in full), and refuses its unknown kid', async () => {
    const jwe = await codec({ aesGcm: nodeAesGcm([NEW, OLD]), base64url: nodeBase64url })
    const reordered = await new CompactEncrypt(PLAINTEXT)
      .setProtectedHeader({ kid: 'old', enc: 'A256GCM', alg: 'dir' })
      .encrypt(OLD.secret)
    expect(headerOf(reordered)).toBe('{"kid":"old","enc":"A256GCM","alg":"dir"}')
    expect(new Uint8Array((await jwe.decrypt(reordered)).plaintext)).toEqual(PLAINTEXT)

    const gone = await new CompactEncrypt(PLAINTEXT)
      .setProtectedHeader({ kid: 'gone', enc: 'A256GCM', alg: 'dir' })
      .encrypt(OLD.secret)
    const error = await (async () => jwe.decrypt(gone))().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(InvalidJweError)
    expect((error as InvalidJweError).reason).toBe('unknown_kid')
  })

  it('answers at once on a synchronous cipher, and only through a promise on Web Crypto; a wrong tag is refused either way', async () => {
    const sync = await codec({ aesGcm: nodeAesGcm([NEW, OLD]), base64url: nodeBase64url })
    const web = await codec({})
    const token = sync.encrypt(PLAINTEXT)
    expect(typeof token).toBe('string')
    const opened = sync.decrypt(token)
    expect(opened).not.toBeInstanceOf(Promise)
    expect(bytesOf((opened as { plaintext: Uint8Array }).plaintext)).toEqual(PLAINTEXT)
    const fromWeb = web.encrypt(PLAINTEXT)
    expect(fromWeb).toBeInstanceOf(Promise)
    expect(web.decrypt(await fromWeb)).toBeInstanceOf(Promise)

    const [header, , iv, ciphertext, tag = ''] = (token as string).split('.')
    const flipped = [header, '', iv, ciphertext, (tag[0] === 'A' ? 'B' : 'A') + tag.slice(1)].join(
      '.'
    )
    expect(() => sync.decrypt(flipped)).toThrow(InvalidJweError)
    const rejected = web.decrypt(flipped)
    expect(rejected).toBeInstanceOf(Promise)
    await expect(rejected).rejects.toMatchObject({ reason: 'decrypt_failed' })
  })

  it('refuses a base64url option without encode and decode', async () => {
    const keyRing = await importKeyRing([OLD])
    const broken = { encode: (bytes: Uint8Array) => String(bytes) } as unknown as Base64urlCodec
    expect(() => CompactJwe.create({ keyRing, maxTokenChars: 4096, base64url: broken })).toThrow(
      TypeError
    )
    expect(() => StateSealer.create({ keyRing, base64url: broken })).toThrow(TypeError)
  })
})

describe('StateSealer claims and the Node sealer', () => {
  it('writes the claims exactly as JSON.stringify writes them, escaping the method and target', async () => {
    const sealer = await createNodeSealer([OLD], 600)
    const { token } = await sealer.seal(BINDING, { q: { confirm: 'x' }, o: { s: 'é\u2028' } })
    const text = new TextDecoder().decode((await compactDecrypt(token, OLD.secret)).plaintext)
    const claims = JSON.parse(text) as Record<string, unknown>
    expect(Object.keys(claims)).toEqual(['v', 'iat', 'exp', 'p', 'm', 't', 'a', 'j', 'n'])
    expect(text).toBe(JSON.stringify(claims))
    expect(claims.t).toBe(BINDING.target)
  })

  it('opens what the default sealer seals and the other way round, and refuses a character changed at every position', async () => {
    const node = await createNodeSealer([OLD], 600)
    const web = StateSealer.create({ keyRing: await importKeyRing([OLD]) })
    const journal = { a: { confirm: { d: 'x', r: { action: 'accept' } } } }
    await expect(
      web.open((await node.seal(BINDING, journal)).token, BINDING)
    ).resolves.toMatchObject({ journal })
    const { token } = await web.seal(BINDING, journal)
    await expect(node.open(token, BINDING)).resolves.toMatchObject({ journal })
    for (let i = 0; i < token.length; i++) {
      if (token[i] === '.') continue
      const changed = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1)
      const error = await node.open(changed, BINDING).catch((caught: unknown) => caught)
      expect((error as Error).message, `position ${i}`).toBe(INVALID_REQUEST_STATE_MESSAGE)
    }
  })
})
