/**
 * `RemoteJwks` against a real JWKS endpoint on loopback (a Node HTTP server counting its requests)
 * with a clock the test moves: keys are fetched once and kept until stale; an unknown `kid` triggers
 * one refetch, at most once per cool-down; concurrent lookups share one fetch; a failed refresh keeps
 * the keys held; with none, the lookup fails as unavailable, without a new fetch until the cool-down
 * has passed; oversized or foreign documents are refused.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { errors, exportJWK, generateKeyPair, SignJWT, jwtVerify, type JWK } from 'jose'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  DEFAULT_JWKS_COOLDOWN_MS,
  DEFAULT_JWKS_MAX_AGE_MS,
  KeysUnavailableError,
  MAX_JWKS_BYTES,
  RemoteJwks,
} from 'stateless-mcp/bearer'

interface TestKey {
  kid: string
  privateKey: CryptoKey
  jwk: JWK
}

async function testKey(kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  }
}

/** What the endpoint answers next: the keys published, or a status / raw body. */
let published: TestKey[] = []
let answer: { status: number; body?: string } | undefined
let requests = 0
let server: Server
let url: string

beforeAll(async () => {
  server = createServer((_request, response) => {
    requests++
    if (answer) return response.writeHead(answer.status).end(answer.body ?? '')
    response
      .writeHead(200, { 'content-type': 'application/jwk-set+json' })
      .end(JSON.stringify({ keys: published.map((key) => key.jwk) }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

let clock = 0
let k1: TestKey
let k2: TestKey

beforeEach(async () => {
  clock = 1_000_000
  requests = 0
  answer = undefined
  k1 = await testKey('k1')
  k2 = await testKey('k2')
  published = [k1]
})

const jwks = () => new RemoteJwks({ url, now: () => clock })

function token(key: TestKey): Promise<string> {
  return new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setExpirationTime('5m')
    .sign(key.privateKey)
}

const verify = async (keys: RemoteJwks, key: TestKey) =>
  (await jwtVerify(await token(key), keys.getKey)).payload.sub

describe('RemoteJwks', () => {
  it('fetches the keys once and keeps them until they are stale', async () => {
    const keys = jwks()
    expect(await verify(keys, k1)).toBe('alice')
    expect(await verify(keys, k1)).toBe('alice')
    expect(requests).toBe(1)
    clock += DEFAULT_JWKS_MAX_AGE_MS
    expect(await verify(keys, k1)).toBe('alice')
    expect(requests).toBe(2)
  })

  it('refetches once on an unknown kid and then knows the rotated key', async () => {
    const keys = jwks()
    expect(await verify(keys, k1)).toBe('alice')
    published = [k2, k1]
    clock += DEFAULT_JWKS_COOLDOWN_MS
    expect(await verify(keys, k2)).toBe('alice')
    expect(requests).toBe(2)
  })

  it('refetches for unknown kids at most once per cool-down', async () => {
    const keys = jwks()
    await verify(keys, k1)
    const stranger = await testKey('stranger')
    for (let attempt = 0; attempt < 5; attempt++) {
      await expect(verify(keys, stranger)).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey)
    }
    expect(requests).toBe(2)
    // Within the cool-down even a real rotation waits; after it, the next unknown kid refetches.
    published = [k2, k1]
    await expect(verify(keys, k2)).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey)
    clock += DEFAULT_JWKS_COOLDOWN_MS
    expect(await verify(keys, k2)).toBe('alice')
    expect(requests).toBe(3)
  })

  it('never refetches for an unknown kid right after fetching', async () => {
    const keys = jwks()
    await expect(verify(keys, k2)).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey)
    expect(requests).toBe(1)
  })

  it('shares one fetch among concurrent lookups', async () => {
    const keys = jwks()
    const subjects = await Promise.all(Array.from({ length: 8 }, () => verify(keys, k1)))
    expect(subjects).toEqual(Array(8).fill('alice'))
    expect(requests).toBe(1)
  })

  it('keeps the keys it holds when a refresh fails, and tries again after the cool-down', async () => {
    const stale: string[] = []
    const keys = new RemoteJwks({ url, now: () => clock, onStale: (reason) => stale.push(reason) })
    await verify(keys, k1)
    answer = { status: 503 }
    clock += DEFAULT_JWKS_MAX_AGE_MS
    expect(await verify(keys, k1)).toBe('alice')
    expect(stale).toEqual([expect.stringContaining('HTTP 503')])
    expect(await verify(keys, k1)).toBe('alice')
    expect(requests).toBe(2)
    answer = undefined
    clock += DEFAULT_JWKS_COOLDOWN_MS
    expect(await verify(keys, k1)).toBe('alice')
    expect(requests).toBe(3)
  })

  it.each<[string, { status: number; body?: string }]>([
    ['an error status', { status: 500 }],
    ['a document that is not a JWK Set', { status: 200, body: '{"issuer":"x"}' }],
    ['a body over the size cap', { status: 200, body: 'x'.repeat(MAX_JWKS_BYTES + 1) }],
  ])('answers KeysUnavailableError when the first fetch gets %s', async (_case, reply) => {
    answer = reply
    await expect(verify(jwks(), k1)).rejects.toBeInstanceOf(KeysUnavailableError)
  })

  it('during an outage with no keys held, fetches once per cool-down and fails the lookups between', async () => {
    const keys = jwks()
    answer = { status: 503 }
    for (let i = 0; i < 5; i++) {
      await expect(verify(keys, k1)).rejects.toBeInstanceOf(KeysUnavailableError)
    }
    expect(requests).toBe(1)
    clock += DEFAULT_JWKS_COOLDOWN_MS - 1
    await expect(verify(keys, k1)).rejects.toBeInstanceOf(KeysUnavailableError)
    expect(requests).toBe(1)
    clock += 1
    await expect(verify(keys, k1)).rejects.toBeInstanceOf(KeysUnavailableError)
    expect(requests).toBe(2)
    answer = undefined
    clock += DEFAULT_JWKS_COOLDOWN_MS
    expect(await verify(keys, k1)).toBe('alice')
    expect(requests).toBe(3)
  })

  it('answers KeysUnavailableError when nothing listens at the URL', async () => {
    const keys = new RemoteJwks({ url: 'http://127.0.0.1:1/jwks', now: () => clock })
    await expect(verify(keys, k1)).rejects.toBeInstanceOf(KeysUnavailableError)
  })
})
