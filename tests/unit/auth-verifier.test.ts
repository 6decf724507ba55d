/**
 * `TokenVerifier` and the scope helpers, with tokens signed in the test: the audience is matched
 * exactly (string or array, no prefix, no look-alike); the algorithm list follows the key (asymmetric
 * with a JWKS, HS256 alone with a secret); the clock skew is bounded for `exp`, `nbf` and `iat`;
 * `sub` is required; verified tokens are remembered until they expire, a bounded number of them; the
 * granted scopes come from `scope` or `scp` with the hierarchy applied transitively.
 */
import {
  SignJWT,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose'
import { describe, expect, it } from 'vitest'
import {
  CLOCK_TOLERANCE_SECONDS,
  expandScopes,
  InvalidTokenError,
  mergeScopes,
  TokenVerifier,
  tokenScopes,
  VERIFIED_CACHE_SIZE,
} from 'stateless-mcp/bearer'

const ISSUER = 'https://as.example'
const AUDIENCE = 'https://notes.example/mcp'
const SECRET = new TextEncoder().encode('a-shared-secret-of-at-least-32-characters!')
const { privateKey, publicKey } = await generateKeyPair('ES256')
const jwks = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] })

const NOW = 1_800_000_000
/** Counts key lookups: one per signature actually checked. */
let lookups = 0
const countingJwks: JWTVerifyGetKey = (header, token) => (lookups++, jwks(header, token))

function verifier(key: JWTVerifyGetKey | Uint8Array = countingJwks, now = NOW * 1000) {
  return new TokenVerifier({
    issuer: ISSUER,
    audience: AUDIENCE,
    key,
    implies: { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] },
    now: () => now,
  })
}

function sign(claims: JWTPayload = {}, alg = 'ES256'): Promise<string> {
  const payload: JWTPayload = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    iat: NOW,
    exp: NOW + 300,
    ...claims,
  }
  for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name]
  return new SignJWT(payload)
    .setProtectedHeader({ alg, kid: 'k1' })
    .sign(alg === 'HS256' ? SECRET : privateKey)
}

async function refusal(token: Promise<string>, key?: JWTVerifyGetKey | Uint8Array, now?: number) {
  const error = await verifier(key, now)
    .verify(await token)
    .catch((e: unknown) => e)
  expect(error).toBeInstanceOf(InvalidTokenError)
  return (error as InvalidTokenError).description
}

describe('TokenVerifier', () => {
  it('accepts a token for exactly its audience, alone or among others', async () => {
    for (const aud of [AUDIENCE, ['https://other.example', AUDIENCE]]) {
      const verified = await verifier().verify(await sign({ aud, azp: 'host-app' }))
      expect(verified).toMatchObject({ issuer: ISSUER, subject: 'alice', client: 'host-app' })
      expect(verified.expiresAt).toBe((NOW + 300) * 1000)
    }
  })

  it.each([
    ['a prefix of it', 'https://notes.example'],
    ['a longer path', 'https://notes.example/mcp/other'],
    ['a look-alike host', 'https://notes.example.evil/mcp'],
    ['the upper-cased URL', 'HTTPS://NOTES.EXAMPLE/mcp'],
    ['another resource only', ['https://other.example/mcp']],
  ])('refuses an audience that is %s', async (_case, aud) => {
    expect(await refusal(sign({ aud }))).toBe(
      `The access token is not for this server: its audience must be ${AUDIENCE}.`
    )
  })

  it('refuses HS256 when verifying with a JWKS, and asymmetric algorithms with a secret', async () => {
    expect(await refusal(sign({}, 'HS256'))).toMatch(/algorithm this server refuses/)
    expect(await refusal(sign({}, 'ES256'), SECRET)).toMatch(/algorithm this server refuses/)
    expect((await verifier(SECRET).verify(await sign({}, 'HS256'))).subject).toBe('alice')
  })

  it('bounds the clock skew of exp, nbf and iat', async () => {
    const skew = CLOCK_TOLERANCE_SECONDS
    const within = [{ exp: NOW - skew + 1 }, { nbf: NOW + skew }, { iat: NOW + skew }]
    for (const claims of within)
      expect((await verifier().verify(await sign(claims))).subject).toBe('alice')
    expect(await refusal(sign({ exp: NOW - skew - 1 }))).toBe('The access token expired.')
    expect(await refusal(sign({ nbf: NOW + skew + 1 }))).toBe('The access token is not valid yet.')
    expect(await refusal(sign({ iat: NOW + skew + 1 }))).toBe('The access token is not valid yet.')
  })

  it.each([
    ['no sub', { sub: undefined }],
    ['an empty sub', { sub: '' }],
    ['no exp', { exp: undefined }],
  ])('refuses a token with %s', async (_case, claims) => {
    expect(await refusal(sign(claims))).toMatch(/claim is missing or invalid/)
  })

  it('refuses another issuer', async () => {
    expect(await refusal(sign({ iss: 'https://as.example/' }))).toMatch(
      /another authorization server/
    )
  })

  it('remembers a verified token until it expires, without checking its signature again', async () => {
    let now = NOW * 1000
    const cached = new TokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      key: countingJwks,
      now: () => now,
    })
    const token = await sign()
    lookups = 0
    await cached.verify(token)
    await cached.verify(token)
    expect(lookups).toBe(1)
    // Once expired, the token is checked again (and, past the skew, refused).
    now = (NOW + 300) * 1000
    await cached.verify(token)
    expect(lookups).toBe(2)
    now = (NOW + 300 + CLOCK_TOLERANCE_SECONDS + 1) * 1000
    await expect(cached.verify(token)).rejects.toBeInstanceOf(InvalidTokenError)
  })

  it(`remembers at most ${VERIFIED_CACHE_SIZE} tokens, dropping the oldest`, async () => {
    const cached = verifier()
    const first = await sign({ jti: 'first' })
    await cached.verify(first)
    for (let i = 0; i < VERIFIED_CACHE_SIZE; i++) await cached.verify(await sign({ jti: `t${i}` }))
    lookups = 0
    await cached.verify(first)
    expect(lookups).toBe(1)
  })

  it('grants the scopes of the token with the hierarchy applied', async () => {
    const verified = await verifier().verify(await sign({ scope: 'notes:admin profile' }))
    expect([...verified.scopes].sort()).toEqual([
      'notes:admin',
      'notes:read',
      'notes:write',
      'profile',
    ])
  })
})

describe('scopes', () => {
  it('reads scope (string) or scp (array or string), and nothing else', () => {
    expect(tokenScopes({ scope: 'a b  c' })).toEqual(['a', 'b', 'c'])
    expect(tokenScopes({ scp: ['a', 7, 'b'] })).toEqual(['a', 'b'])
    expect(tokenScopes({ scp: 'a b' })).toEqual(['a', 'b'])
    expect(tokenScopes({ scope: ['a'] })).toEqual([])
    expect(tokenScopes({})).toEqual([])
  })

  it('expands implications transitively and survives a cycle', () => {
    const implies = { a: ['b'], b: ['c', 'a'], toString: ['x'] }
    expect([...expandScopes(['a'], implies)].sort()).toEqual(['a', 'b', 'c'])
    expect([...expandScopes(['constructor'], implies)]).toEqual(['constructor'])
  })

  it('merges scope lists once each, in first-seen order', () => {
    expect(mergeScopes(['base'], ['notes:write', 'base'])).toEqual(['base', 'notes:write'])
  })
})
