import { base64url, CompactEncrypt, compactDecrypt } from 'jose'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { BASE64URL_ALPHABET as ALPHABET } from '../../src/mcp/base64url.ts'
import { canonicalJson, sha256Base64url } from '../../src/mcp/canonical-json.ts'
import { INVALID_REQUEST_STATE_MESSAGE, InvalidRequestStateError } from '../../src/mcp/errors.ts'
import { importKeyRing, type RawKey } from '../../src/mcp/key-ring.ts'
import { nodeAesGcm, nodeSha256 } from '../../src/node/crypto.ts'
import {
  type OpenFailureReason,
  type StateBinding,
  StateSealer,
  type StateSealerOptions,
  StateTooLargeError,
} from '../../src/mcp/sealed-state.ts'

const T0 = 1_780_000_000_000 // ms, a whole second

function rawKey(kid: string, seed: number): RawKey {
  return { kid, secret: new Uint8Array(32).map((_, i) => (seed * 31 + i * 7) & 255) }
}
const OLD = rawKey('old', 1)
const NEW = rawKey('new', 2)
const OTHER = rawKey('other', 3)

const BINDING: StateBinding = {
  principal: 'https://issuer.example|user-123|client-abc',
  method: 'tools/call',
  target: 'delete_note',
  args: { id: 'note-1', options: { force: true, tags: ['a', 'b'] } },
}
const JOURNAL = { v: 1, answers: { confirm: { action: 'accept', content: { confirm: true } } } }

let clock = T0
afterEach(() => {
  clock = T0
  vi.restoreAllMocks()
})

async function sealer(
  keys: RawKey[],
  options: Omit<StateSealerOptions, 'keyRing'> = {}
): Promise<StateSealer> {
  return StateSealer.create({ keyRing: await importKeyRing(keys), now: () => clock, ...options })
}

async function rejection(promise: Promise<unknown>): Promise<InvalidRequestStateError> {
  let error: unknown
  try {
    await promise
  } catch (caught) {
    error = caught
  }
  expect(error, 'open accepted the token').toBeInstanceOf(InvalidRequestStateError)
  expect((error as Error).message).toBe(INVALID_REQUEST_STATE_MESSAGE)
  return error as InvalidRequestStateError
}

async function expectReason(promise: Promise<unknown>, reason: OpenFailureReason): Promise<void> {
  expect((await rejection(promise)).reason).toBe(reason)
}

function encodeJson(value: unknown): string {
  return base64url.encode(JSON.stringify(value))
}

function withHeader(token: string, header: unknown): string {
  return [encodeJson(header), ...token.split('.').slice(1)].join('.')
}

/** Encrypts arbitrary plaintext under a raw key, as an attacker holding the key could. */
async function forge(key: RawKey, plaintext: string | Uint8Array): Promise<string> {
  const bytes = typeof plaintext === 'string' ? new TextEncoder().encode(plaintext) : plaintext
  return new CompactEncrypt(bytes)
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: key.kid })
    .encrypt(key.secret)
}

async function rawClaims(token: string, key: RawKey): Promise<Record<string, unknown>> {
  const { plaintext } = await compactDecrypt(token, key.secret)
  return JSON.parse(new TextDecoder().decode(plaintext))
}

async function payloadBytes(token: string, key: RawKey): Promise<number> {
  return (await compactDecrypt(token, key.secret)).plaintext.byteLength
}

async function validClaims(binding: StateBinding = BINDING): Promise<Record<string, unknown>> {
  return {
    v: 1,
    iat: T0 / 1000,
    exp: T0 / 1000 + 600,
    p: 'A'.repeat(22),
    m: binding.method,
    t: binding.target,
    a: await sha256Base64url(canonicalJson(binding.args ?? {})),
    j: null,
    n: 'B'.repeat(22),
  }
}

describe('canonicalJson', () => {
  it('sorts object keys recursively and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}'
    )
  })

  it('drops undefined members and writes undefined array items as null, like JSON.stringify', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}')
  })

  it('formats strings and numbers exactly as JSON.stringify, and honours toJSON', () => {
    const value = ['é\u2028"\\\n\ud800', -0, 1e21, 0.1, new Date(0)]
    expect(canonicalJson(value)).toBe(JSON.stringify(value))
  })

  it('throws TypeError for what JSON cannot represent exactly', () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    for (const value of [NaN, Infinity, { a: -Infinity }, [1n], () => 1, Symbol('s'), cycle]) {
      expect(() => canonicalJson(value)).toThrow(TypeError)
    }
    expect(() => canonicalJson(undefined)).toThrow(TypeError)
  })

  it('allows the same object twice when it is not a cycle', () => {
    const shared = { x: 1 }
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}')
  })

  it('digests with SHA-256 as unpadded base64url', async () => {
    expect(await sha256Base64url('')).toBe('47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU')
    expect(await sha256Base64url('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0')
  })
})

describe('StateSealer.create', () => {
  it('rejects a missing or foreign key ring with TypeError', async () => {
    expect(() => StateSealer.create({} as StateSealerOptions)).toThrow(TypeError)
    expect(() =>
      StateSealer.create({
        keyRing: { sealingKid: 'x', kids: ['x'], get: () => undefined },
      })
    ).toThrow(TypeError)
  })

  it('rejects a non-integer, non-finite or out-of-range TTL with RangeError', async () => {
    const keyRing = await importKeyRing([OLD])
    for (const ttlSeconds of [0, -1, 1.5, NaN, Infinity, 86_401]) {
      expect(() => StateSealer.create({ keyRing, ttlSeconds })).toThrow(RangeError)
    }
    expect(StateSealer.create({ keyRing, ttlSeconds: 86_400 }).ttlSeconds).toBe(86_400)
  })

  it('rejects caps that disagree: a token cap too small for the payload cap', async () => {
    const keyRing = await importKeyRing([OLD])
    expect(() => StateSealer.create({ keyRing, maxTokenChars: 8192 })).toThrow(RangeError)
    expect(() => StateSealer.create({ keyRing, maxPayloadBytes: 100 })).toThrow(RangeError)
    expect(() => StateSealer.create({ keyRing, maxPayloadBytes: NaN })).toThrow(RangeError)
    expect(() => StateSealer.create({ keyRing, maxTokenChars: Infinity })).toThrow(RangeError)
  })

  it('rejects a bad clock skew or clock', async () => {
    const keyRing = await importKeyRing([OLD])
    expect(() => StateSealer.create({ keyRing, clockSkewSeconds: -1 })).toThrow(RangeError)
    expect(() => StateSealer.create({ keyRing, clockSkewSeconds: NaN })).toThrow(RangeError)
    expect(() => StateSealer.create({ keyRing, now: 5 as unknown as () => number })).toThrow(
      TypeError
    )
  })

  it('has the documented defaults', async () => {
    const s = StateSealer.create({ keyRing: await importKeyRing([OLD]) })
    expect([s.ttlSeconds, s.maxTokenChars, s.maxPayloadBytes, s.clockSkewSeconds]).toEqual([
      600, 16_384, 8_192, 60,
    ])
  })
})

describe('StateSealer round trip', () => {
  it('opens what it sealed and returns the journal, nonce, issue time and expiry', async () => {
    const s = await sealer([OLD])
    const sealed = await s.seal(BINDING, JOURNAL)
    expect(sealed.expiresAt).toBe(T0 / 1000 + 600)
    const opened = await s.open(sealed.token, BINDING)
    expect(opened).toEqual({
      journal: JOURNAL,
      nonce: sealed.nonce,
      issuedAt: T0 / 1000,
      expiresAt: T0 / 1000 + 600,
    })
  })

  it('round-trips any JSON journal (unicode, nesting, scalars)', async () => {
    const s = await sealer([OLD])
    for (const journal of [null, 0, false, 'text', [1, [2, [3]]], { ключ: '値 😀', n: -1.5e-7 }]) {
      const { token } = await s.seal(BINDING, journal)
      expect((await s.open(token, BINDING)).journal).toEqual(journal)
    }
  })

  it('opens on another replica sharing the ring (a separate import of the same keys)', async () => {
    const a = await sealer([OLD])
    const b = await sealer([OLD])
    const { token } = await a.seal(BINDING, JOURNAL)
    expect((await b.open(token, BINDING)).journal).toEqual(JOURNAL)
  })

  it('writes a compact dir/A256GCM JWE whose header is exactly {alg, enc, kid}', async () => {
    const { token } = await (await sealer([OLD])).seal(BINDING, JOURNAL)
    const parts = token.split('.')
    expect(parts).toHaveLength(5)
    expect(parts[1]).toBe('')
    expect(JSON.parse(new TextDecoder().decode(base64url.decode(parts[0]!)))).toEqual({
      alg: 'dir',
      enc: 'A256GCM',
      kid: 'old',
    })
  })

  it('seals the short claims, with a principal tag instead of the raw principal', async () => {
    const sealed = await (await sealer([OLD])).seal(BINDING, JOURNAL)
    const claims = await rawClaims(sealed.token, OLD)
    expect(Object.keys(claims).sort()).toEqual(['a', 'exp', 'iat', 'j', 'm', 'n', 'p', 't', 'v'])
    expect(claims).toMatchObject({
      v: 1,
      iat: T0 / 1000,
      exp: T0 / 1000 + 600,
      m: 'tools/call',
      t: 'delete_note',
      a: await sha256Base64url(canonicalJson(BINDING.args)),
      j: JOURNAL,
      n: sealed.nonce,
    })
    expect(claims.p).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(JSON.stringify(claims)).not.toContain('user-123')
  })

  it('keeps the journal and principal unreadable in the token', async () => {
    const { token } = await (
      await sealer([OLD])
    ).seal({ ...BINDING, principal: 'MARKER-PRINCIPAL' }, { secret: 'MARKER-JOURNAL' })
    const visible = token
      .split('.')
      .map((part) => new TextDecoder('latin1').decode(base64url.decode(part)))
      .join('|')
    expect(visible + token).not.toMatch(/MARKER/)
  })

  it('uses the TTL option for exp, and answers the exp it sealed', async () => {
    const sealed = await (await sealer([OLD], { ttlSeconds: 30 })).seal(BINDING, JOURNAL)
    const claims = await rawClaims(sealed.token, OLD)
    expect(claims.exp).toBe(T0 / 1000 + 30)
    expect(sealed.expiresAt).toBe(claims.exp)
  })

  it("answers the expiry sealed in the token, whatever the opening sealer's own lifetime", async () => {
    const long = await sealer([OLD])
    const short = long.withTtl(30)
    const { token } = await long.withTtl(7 * 86_400).seal(BINDING, JOURNAL)
    for (const opener of [long, short]) {
      expect((await opener.open(token, BINDING)).expiresAt).toBe(T0 / 1000 + 7 * 86_400)
    }
  })

  it('draws a fresh nonce on every seal, and two seals of the same input differ', async () => {
    const s = await sealer([OLD])
    const sealed = await Promise.all(Array.from({ length: 100 }, () => s.seal(BINDING, JOURNAL)))
    expect(new Set(sealed.map((x) => x.nonce)).size).toBe(100)
    expect(new Set(sealed.map((x) => x.token)).size).toBe(100)
    for (const { nonce } of sealed) expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/)
  })
})

describe('StateSealer.open rejects tampering', () => {
  it('rejects a bit flipped at every character position of a real token', async () => {
    const s = await sealer([OLD, NEW])
    const { token } = await s.seal(BINDING, JOURNAL)
    const reasons = new Set<string>()
    let variants = 0
    for (let i = 0; i < token.length; i++) {
      const char = token[i]!
      const replacements =
        char === '.'
          ? ['A', '-']
          : [0, 1, 2, 3, 4, 5].map((bit) => ALPHABET[ALPHABET.indexOf(char) ^ (1 << bit)]!)
      for (const replacement of replacements) {
        const tampered = token.slice(0, i) + replacement + token.slice(i + 1)
        reasons.add((await rejection(s.open(tampered, BINDING))).reason)
        variants++
      }
    }
    expect(variants).toBeGreaterThan(6 * 300)
    // Nothing tampered ever got as far as the claims.
    for (const reason of reasons) {
      expect(['malformed', 'bad_header', 'unknown_kid', 'decrypt_failed']).toContain(reason)
    }
  })

  it('rejects a non-canonical spelling of a valid token (ignored low bits of the last char)', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const last = token.at(-1)!
    const sibling = ALPHABET[ALPHABET.indexOf(last) ^ 1]! // a 22-char tag has 4 unused low bits
    await expectReason(s.open(token.slice(0, -1) + sibling, BINDING), 'malformed')
  })

  it('rejects truncations at many lengths', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const headerEnd = token.indexOf('.')
    const lengths = [0, 1, 10, headerEnd, headerEnd + 1, headerEnd + 2, headerEnd + 18]
    lengths.push(Math.floor(token.length / 2), token.length - 23, token.length - 22)
    lengths.push(token.length - 2, token.length - 1)
    for (const length of lengths) await rejection(s.open(token.slice(0, length), BINDING))
  })

  it('rejects appended or surrounding bytes', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    for (const suffix of ['.', 'A', 'AA', 'AAAA', '.A', '=', '==', ' ', '\n', '\u0000']) {
      await rejection(s.open(token + suffix, BINDING))
    }
    await rejection(s.open(` ${token}`, BINDING))
    await rejection(s.open(`${token}.${token}`, BINDING))
  })

  it('rejects a header re-encoded to name another kid that is in the ring', async () => {
    const s = await sealer([OLD, NEW])
    const { token } = await s.seal(BINDING, JOURNAL)
    const forged = withHeader(token, { alg: 'dir', enc: 'A256GCM', kid: 'new' })
    await expectReason(s.open(forged, BINDING), 'decrypt_failed')
  })

  it('rejects any re-spelling of the header, even with the same values (the header is AAD)', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const reordered = withHeader(token, { kid: 'old', enc: 'A256GCM', alg: 'dir' })
    await expectReason(s.open(reordered, BINDING), 'decrypt_failed')
  })

  it('rejects a token sealed under the same kid with another secret', async () => {
    const { token } = await (await sealer([OLD])).seal(BINDING, JOURNAL)
    const impostor = await sealer([{ kid: 'old', secret: OTHER.secret }])
    await expectReason(impostor.open(token, BINDING), 'decrypt_failed')
  })

  it('rejects an unknown kid before decrypting', async () => {
    const { token } = await (await sealer([OLD])).seal(BINDING, JOURNAL)
    const s = await sealer([OTHER])
    const decrypt = vi.spyOn(crypto.subtle, 'decrypt')
    await expectReason(s.open(token, BINDING), 'unknown_kid')
    for (const kid of ['__proto__', 'constructor', 'toString', '', 'OLD']) {
      await expectReason(
        s.open(withHeader(token, { alg: 'dir', enc: 'A256GCM', kid }), BINDING),
        'unknown_kid'
      )
    }
    expect(decrypt).not.toHaveBeenCalled()
  })

  it('rejects headers with another algorithm, extra parameters or no kid', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const base = { alg: 'dir', enc: 'A256GCM', kid: 'old' }
    const headers: unknown[] = [
      { ...base, alg: 'A256KW' },
      { ...base, alg: 'none' },
      { ...base, enc: 'A128GCM' },
      { ...base, enc: 'A256CBC-HS512' },
      { ...base, zip: 'DEF' },
      { ...base, crit: ['exp'], exp: 1 },
      { ...base, typ: 'JWE' },
      { alg: 'dir', enc: 'A256GCM' },
      { ...base, kid: 7 },
      JSON.parse('{"alg":"dir","enc":"A256GCM","kid":"old","__proto__":"x"}'),
    ]
    for (const header of headers) {
      await expectReason(s.open(withHeader(token, header), BINDING), 'bad_header')
    }
  })

  it('rejects a header that is not a JSON object, and malformed compact structure', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const [, , iv, ciphertext, tag] = token.split('.')
    const rest = `.${iv}.${ciphertext}.${tag}`
    const cases = [
      base64url.encode('not json') + `.${rest}`,
      encodeJson([1, 2]) + `.${rest}`,
      encodeJson(null) + `.${rest}`,
      encodeJson('dir') + `.${rest}`,
      base64url.encode(new Uint8Array([0x7b, 0xff, 0x7d])) + `.${rest}`, // invalid UTF-8
      token.replace('..', '.AAAA.'), // an encrypted key where dir has none
      token.replace(`.${iv}.`, `.${iv}AAAA.`), // a 15-byte IV
      token.replace(`.${tag}`, ''), // four parts
      `${token}.`, // six parts
      // standard alphabet (a token may lack '-' by chance; then it has '_')
      token.includes('-') ? token.replaceAll('-', '+') : token.replaceAll('_', '/'),
      '....',
      '',
    ]
    for (const candidate of cases) await expectReason(s.open(candidate, BINDING), 'malformed')
  })

  it('rejects well-encrypted plaintext that is not the expected claims', async () => {
    const s = await sealer([OLD])
    const good = await validClaims()
    const plaintexts: (string | Uint8Array)[] = [
      'not json',
      new Uint8Array([0x7b, 0xff, 0x7d]),
      '[]',
      'null',
      JSON.stringify({ ...good, v: 2 }),
      JSON.stringify({ ...good, v: '1' }),
      JSON.stringify({ ...good, exp: String(good.exp) }),
      JSON.stringify({ ...good, exp: good.iat }),
      JSON.stringify({ ...good, iat: 1.5 }),
      JSON.stringify({ ...good, p: 'short' }),
      JSON.stringify({ ...good, n: 'A'.repeat(23) }),
      JSON.stringify({ ...good, a: 'not-a-digest' }),
      JSON.stringify({ ...good, m: 1 }),
      JSON.stringify({ ...good, extra: true }),
      JSON.stringify({ ...good, j: undefined }),
    ]
    for (const plaintext of plaintexts) {
      await expectReason(s.open(await forge(OLD, plaintext), BINDING), 'bad_claims')
    }
  })

  it('accepts the forged-claims baseline up to the principal check (the helper is sound)', async () => {
    const s = await sealer([OLD])
    const token = await forge(OLD, JSON.stringify(await validClaims()))
    await expectReason(s.open(token, BINDING), 'principal_mismatch')
  })
})

describe('StateSealer.open rejects wrong inputs', () => {
  it('rejects values that are not strings', async () => {
    const s = await sealer([OLD])
    for (const value of [null, undefined, 42, {}, { token: 'x' }, ['a'], true, new String('x')]) {
      await expectReason(s.open(value, BINDING), 'not_a_string')
    }
  })

  it('rejects the empty string as malformed', async () => {
    await expectReason((await sealer([OLD])).open('', BINDING), 'malformed')
  })

  it('rejects a 1 MiB string as too_long without decoding or decrypting it', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const atob = vi.spyOn(globalThis, 'atob')
    const decrypt = vi.spyOn(crypto.subtle, 'decrypt')
    await expectReason(s.open('A'.repeat(1 << 20), BINDING), 'too_long')
    await expectReason(s.open(token + 'A'.repeat(1 << 20), BINDING), 'too_long')
    expect(atob).not.toHaveBeenCalled()
    expect(decrypt).not.toHaveBeenCalled()
  })

  it('applies maxTokenChars inclusively at open', async () => {
    const big = { notes: 'x'.repeat(2000) }
    const { token } = await (await sealer([OLD])).seal(BINDING, big)
    const exact = await sealer([OLD], { maxPayloadBytes: 512, maxTokenChars: token.length })
    expect((await exact.open(token, BINDING)).journal).toEqual(big)
    const short = await sealer([OLD], { maxPayloadBytes: 512, maxTokenChars: token.length - 1 })
    await expectReason(short.open(token, BINDING), 'too_long')
  })

  it('rejects a state at or after its expiry', async () => {
    const s = await sealer([OLD])
    const { token, nonce } = await s.seal(BINDING, JOURNAL)
    clock = T0 + 599_999
    await expect(s.open(token, BINDING)).resolves.toEqual({
      journal: JOURNAL,
      nonce,
      issuedAt: T0 / 1000,
      expiresAt: T0 / 1000 + 600,
    })
    clock = T0 + 600_000
    await expectReason(s.open(token, BINDING), 'expired')
    clock = T0 + 86_400_000
    await expectReason(s.open(token, BINDING), 'expired')
  })

  it("opens an authentic state past its expiry only with { expired: 'accept' }; requestState's default still refuses it", async () => {
    const s = await sealer([OLD])
    const { token, nonce } = await s.seal(BINDING, JOURNAL)
    clock = T0 + 30 * 86_400_000
    await expectReason(s.open(token, BINDING), 'expired')
    await expectReason(s.open(token, BINDING, {}), 'expired')
    await expectReason(s.open(token, BINDING, { expired: 'refuse' }), 'expired')
    await expect(s.open(token, BINDING, { expired: 'accept' })).resolves.toEqual({
      journal: JOURNAL,
      nonce,
      issuedAt: T0 / 1000,
      expiresAt: T0 / 1000 + 600,
    })
    // Everything else still fails closed: another principal, a tampered or foreign token, a
    // retired key, a token issued in the future.
    const accept = { expired: 'accept' } as const
    const other = { ...BINDING, principal: 'https://issuer.example|user-124|client-abc' }
    await expectReason(s.open(token, other, accept), 'principal_mismatch')
    const [header, , iv, ciphertext, tag] = token.split('.')
    const flipped = ciphertext!.startsWith('A')
      ? 'B' + ciphertext!.slice(1)
      : 'A' + ciphertext!.slice(1)
    await expectReason(
      s.open([header, '', iv, flipped, tag].join('.'), BINDING, accept),
      'decrypt_failed'
    )
    await expectReason((await sealer([NEW])).open(token, BINDING, accept), 'unknown_kid')
    clock = T0 + 61_000
    const ahead = await s.seal(BINDING, JOURNAL)
    clock = T0
    await expectReason(s.open(ahead.token, BINDING, accept), 'issued_in_future')
  })

  it('rejects a state issued further in the future than the clock skew allows', async () => {
    const s = await sealer([OLD])
    clock = T0 + 61_000
    const ahead = await s.seal(BINDING, JOURNAL)
    clock = T0
    await expectReason(s.open(ahead.token, BINDING), 'issued_in_future')
    clock = T0 + 1_000
    await expect(s.open(ahead.token, BINDING)).resolves.toEqual({
      journal: JOURNAL,
      nonce: ahead.nonce,
      issuedAt: (T0 + 61_000) / 1000,
      expiresAt: (T0 + 61_000) / 1000 + 600,
    })
    const strict = await sealer([OLD], { clockSkewSeconds: 0 })
    await expectReason(strict.open(ahead.token, BINDING), 'issued_in_future')
  })

  it('fails closed when the clock reads NaN', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    clock = NaN
    await expectReason(s.open(token, BINDING), 'expired')
  })

  it('rejects a state sealed for another principal', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    for (const principal of [
      'https://issuer.example|user-124|client-abc',
      '',
      BINDING.principal + ' ',
    ]) {
      await expectReason(s.open(token, { ...BINDING, principal }), 'principal_mismatch')
    }
  })

  it('rejects a state sealed for another method', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    await expectReason(s.open(token, { ...BINDING, method: 'prompts/get' }), 'method_mismatch')
  })

  it('rejects a state sealed for another target', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    await expectReason(s.open(token, { ...BINDING, target: 'update_note' }), 'target_mismatch')
  })

  it('rejects a state sealed for other arguments', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    const others: unknown[] = [
      { id: 'note-2', options: { force: true, tags: ['a', 'b'] } },
      { id: 'note-1', options: { force: true, tags: ['b', 'a'] } },
      { id: 'note-1', options: { force: 'true', tags: ['a', 'b'] } },
      { id: 'note-1' },
      {},
      null,
    ]
    for (const args of others) {
      await expectReason(s.open(token, { ...BINDING, args }), 'args_mismatch')
    }
  })

  it('accepts the same arguments with keys in another order (canonical JSON)', async () => {
    const s = await sealer([OLD])
    const { token, nonce } = await s.seal(BINDING, JOURNAL)
    const reordered = { options: { tags: ['a', 'b'], force: true }, id: 'note-1', gone: undefined }
    await expect(s.open(token, { ...BINDING, args: reordered })).resolves.toEqual({
      journal: JOURNAL,
      nonce,
      issuedAt: T0 / 1000,
      expiresAt: T0 / 1000 + 600,
    })
  })

  it('treats absent and null arguments as {}', async () => {
    const s = await sealer([OLD])
    const { token, nonce } = await s.seal({ ...BINDING, args: undefined }, JOURNAL)
    const opened = { journal: JOURNAL, nonce, issuedAt: T0 / 1000, expiresAt: T0 / 1000 + 600 }
    await expect(s.open(token, { ...BINDING, args: null })).resolves.toEqual(opened)
    await expect(s.open(token, { ...BINDING, args: {} })).resolves.toEqual(opened)
  })

  it('answers a malformed binding closed, never with another error type', async () => {
    const s = await sealer([OLD])
    const { token } = await s.seal(BINDING, JOURNAL)
    await expectReason(s.open(token, null as unknown as StateBinding), 'bad_binding')
    await expectReason(
      s.open(token, { ...BINDING, principal: 1 } as unknown as StateBinding),
      'bad_binding'
    )
    await expectReason(s.open(token, { ...BINDING, args: { n: 1n } }), 'bad_binding')
    await expectReason(s.open(token, { ...BINDING, args: { n: NaN } }), 'bad_binding')
  })

  it('lets nothing but InvalidRequestStateError escape open, even from a throwing clock', async () => {
    const good = await sealer([OLD])
    const { token } = await good.seal(BINDING, JOURNAL)
    const broken = StateSealer.create({
      keyRing: await importKeyRing([OLD]),
      now: () => {
        throw new Error('clock exploded')
      },
    })
    await expectReason(broken.open(token, BINDING), 'internal_error')
  })
})

describe('StateSealer size cap', () => {
  it('refuses to seal a payload over maxPayloadBytes with StateTooLargeError', async () => {
    const s = await sealer([OLD])
    const journal = { notes: 'x'.repeat(9000) }
    const error = await s.seal(BINDING, journal).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(StateTooLargeError)
    expect(error).toBeInstanceOf(Error)
    expect(error).toMatchObject({ name: 'StateTooLargeError', limit: 8192 })
    expect((error as StateTooLargeError).bytes).toBeGreaterThan(9000)
    expect((error as Error).message).not.toContain('xxxx')
  })

  it('measures the cap in UTF-8 bytes, journal and claims included, inclusively', async () => {
    const journal = { ...JOURNAL, notes: 'n'.repeat(600) }
    const { token } = await (await sealer([OLD])).seal(BINDING, journal)
    const size = await payloadBytes(token, OLD)
    const atCap = await sealer([OLD], { maxPayloadBytes: size })
    const sealedAtCap = await atCap.seal(BINDING, journal)
    expect(await payloadBytes(sealedAtCap.token, OLD)).toBe(size)
    expect((await atCap.open(sealedAtCap.token, BINDING)).journal).toEqual(journal)
    const underCap = await sealer([OLD], { maxPayloadBytes: size - 1 })
    await expect(underCap.seal(BINDING, journal)).rejects.toThrow(StateTooLargeError)
    // 4100 two-byte characters: under 8192 chars, over 8192 bytes.
    await expect((await sealer([OLD])).seal(BINDING, 'é'.repeat(4100))).rejects.toThrow(
      StateTooLargeError
    )
  })

  it('seals the largest admitted payload (longest kid) into a token that open accepts', async () => {
    const longest = { kid: 'k'.repeat(32), secret: OLD.secret }
    const s = await sealer([longest])
    const overhead = (await payloadBytes((await s.seal(BINDING, '')).token, longest)) - 2
    const filler = 'y'.repeat(8192 - overhead - 2)
    const sealed = await s.seal(BINDING, filler)
    expect(await payloadBytes(sealed.token, longest)).toBe(8192)
    expect(sealed.token.length).toBeLessThanOrEqual(16_384)
    expect((await s.open(sealed.token, BINDING)).journal).toBe(filler)
    await expect(s.seal(BINDING, filler + 'y')).rejects.toThrow(StateTooLargeError)
  })

  it('refuses a journal with no exact JSON form, or none at all, with TypeError', async () => {
    const s = await sealer([OLD])
    await expect(s.seal(BINDING, undefined)).rejects.toThrow(TypeError)
    await expect(s.seal(BINDING, { n: NaN })).rejects.toThrow(TypeError)
    await expect(s.seal(BINDING, { n: 1n })).rejects.toThrow(TypeError)
    await expect(
      s.seal({ ...BINDING, method: undefined } as unknown as StateBinding, {})
    ).rejects.toThrow(TypeError)
  })
})

describe('StateSealer key rotation', () => {
  it('add → promote → retire: no flow breaks until its kid is retired', async () => {
    const before = await sealer([OLD])
    const during = await sealer([NEW, OLD])
    const after = await sealer([NEW])

    const oldToken = (await before.seal(BINDING, JOURNAL)).token
    expect((await during.open(oldToken, BINDING)).journal).toEqual(JOURNAL)

    const newToken = (await during.seal(BINDING, JOURNAL)).token
    expect(
      JSON.parse(new TextDecoder().decode(base64url.decode(newToken.split('.')[0]!))).kid
    ).toBe('new')
    expect((await after.open(newToken, BINDING)).journal).toEqual(JOURNAL)
    expect((await during.open(newToken, BINDING)).journal).toEqual(JOURNAL)

    await expectReason(after.open(oldToken, BINDING), 'unknown_kid')
    await expectReason(before.open(newToken, BINDING), 'unknown_kid')
  })

  it('tags the principal with the key of the token’s own kid', async () => {
    const { token } = await (await sealer([OLD])).seal(BINDING, JOURNAL)
    const rotated = await sealer([NEW, OLD])
    expect((await rotated.open(token, BINDING)).journal).toEqual(JOURNAL)
    await expectReason(
      rotated.open(token, { ...BINDING, principal: 'someone-else' }),
      'principal_mismatch'
    )
  })
})

describe('StateSealer with a runtime-provided SHA-256', () => {
  it("agrees with Web Crypto's digest, so Node and Workers replicas open each other's states", async () => {
    const webCrypto = await sealer([OLD])
    const node = await sealer([OLD], { sha256: nodeSha256 })
    const args = { id: 'n_1', nested: { b: 2, a: [1, 'é'] } }
    const binding = { ...BINDING, args }
    expect(nodeSha256(canonicalJson(args))).toBe(await sha256Base64url(canonicalJson(args)))
    const fromWeb = await webCrypto.seal(binding, JOURNAL)
    const fromNode = await node.seal(binding, JOURNAL)
    await expect(node.open(fromWeb.token, binding)).resolves.toMatchObject({ journal: JOURNAL })
    await expect(webCrypto.open(fromNode.token, binding)).resolves.toMatchObject({
      journal: JOURNAL,
    })
    await expectReason(
      node.open(fromWeb.token, { ...binding, args: { id: 'n_2' } }),
      'args_mismatch'
    )
  })

  it('refuses a sha256 option that is not a function', async () => {
    await expect(sealer([OLD], { sha256: 'sha256' as never })).rejects.toThrow(TypeError)
  })
})

describe('StateSealer with a runtime-provided AES-256-GCM', () => {
  it("writes the compact JWE jose writes: each opens the other's tokens", async () => {
    const jose = await sealer([OLD])
    const node = await sealer([OLD], { aesGcm: nodeAesGcm([OLD]), sha256: nodeSha256 })
    const fromJose = await jose.seal(BINDING, JOURNAL)
    const fromNode = await node.seal(BINDING, JOURNAL)
    expect(fromNode.token.split('.').map((part) => part.length > 0)).toEqual([
      true,
      false,
      true,
      true,
      true,
    ])
    await expect(node.open(fromJose.token, BINDING)).resolves.toMatchObject({ journal: JOURNAL })
    await expect(jose.open(fromNode.token, BINDING)).resolves.toMatchObject({ journal: JOURNAL })
    const decrypted = await compactDecrypt(
      fromNode.token,
      (await importKeyRing([OLD])).get(OLD.kid)!.contentKey
    )
    expect(JSON.parse(new TextDecoder().decode(decrypted.plaintext))).toMatchObject({ j: JOURNAL })
  })

  it('rejects a character changed at every position of a token it sealed', async () => {
    const node = await sealer([OLD], { aesGcm: nodeAesGcm([OLD]) })
    const { token } = await node.seal(BINDING, JOURNAL)
    for (let i = 0; i < token.length; i++) {
      if (token[i] === '.') continue
      const changed = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1)
      const error = await rejection(node.open(changed, BINDING))
      expect(error.message).toBe(INVALID_REQUEST_STATE_MESSAGE)
    }
  })

  it('rejects a token sealed under a key the cipher does not hold, and rotates like the default', async () => {
    const old = await sealer([OLD], { aesGcm: nodeAesGcm([OLD]) })
    const promoted = await sealer([NEW, OLD], { aesGcm: nodeAesGcm([NEW, OLD]) })
    const retired = await sealer([NEW], { aesGcm: nodeAesGcm([NEW]) })
    const { token } = await old.seal(BINDING, JOURNAL)
    await expect(promoted.open(token, BINDING)).resolves.toMatchObject({ journal: JOURNAL })
    await expectReason(retired.open(token, BINDING), 'unknown_kid')
  })
})

describe('StateSealer.hold (a state that never leaves the process)', () => {
  it('answers what open answers for the token seal would make, without any Web Crypto call', async () => {
    const s = await sealer([OLD])
    const journal = { ...JOURNAL, o: { at: new Date(T0), skipped: undefined } }
    const opened = await s.open((await s.seal(BINDING, journal)).token, BINDING)
    const calls = (['encrypt', 'sign', 'digest'] as const).map((name) =>
      vi.spyOn(crypto.subtle, name)
    )
    const held = s.hold(BINDING, journal)
    for (const call of calls) expect(call).not.toHaveBeenCalled()
    expect(held.journal).toEqual(opened.journal)
    expect(held.journal).not.toBe(journal)
    expect(held.nonce).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(held.nonce).not.toBe(s.hold(BINDING, journal).nonce)
    expect(held).toMatchObject({ issuedAt: T0 / 1000, expiresAt: T0 / 1000 + 600 })
  })

  it('refuses what seal refuses: a plaintext over the cap, counted the same, or no exact JSON form', async () => {
    const journal = { ...JOURNAL, notes: 'é'.repeat(300) }
    const size = await payloadBytes((await (await sealer([OLD])).seal(BINDING, journal)).token, OLD)
    expect((await sealer([OLD], { maxPayloadBytes: size })).hold(BINDING, journal).journal).toEqual(
      journal
    )
    const under = await sealer([OLD], { maxPayloadBytes: size - 1 })
    expect(() => under.hold(BINDING, journal)).toThrow(StateTooLargeError)
    const s = await sealer([OLD])
    expect(() => s.hold(BINDING, undefined)).toThrow(TypeError)
    expect(() => s.hold(BINDING, { n: NaN })).toThrow(TypeError)
    expect(() => s.hold({ ...BINDING, target: 7 } as unknown as StateBinding, {})).toThrow(
      TypeError
    )
  })

  it('opens a held state until its expiry, then refuses it as expired, as open would', async () => {
    const s = await sealer([OLD], { ttlSeconds: 60 })
    const held = s.hold(BINDING, JOURNAL)
    clock = T0 + 59_999
    expect(s.openHeld(held)).toBe(held)
    clock = T0 + 60_000
    let refused: unknown
    try {
      s.openHeld(held)
    } catch (error) {
      refused = error
    }
    expect(refused).toBeInstanceOf(InvalidRequestStateError)
    expect(refused).toMatchObject({ reason: 'expired', message: INVALID_REQUEST_STATE_MESSAGE })
  })
})
