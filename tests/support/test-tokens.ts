/**
 * @module tests/support/test-tokens
 * The HS256 bearer tokens of the in-process tests: `TEST_AUTH_ENV` configures an app to verify them
 * (issuer, audience, shared secret), `signTestToken` signs one for a subject with the scope and OAuth
 * client (`azp`) a test asks for, valid for five minutes, and `bearer` is the `Authorization` header
 * of a caller allowed every notes operation. `expectInsufficientScope` asserts the 403 step-up such
 * an app answers a token with too few scopes. `claimRefusals` are the claims every verifier of access
 * tokens refuses alike (too old, too young, another issuer's), for the suites of RS256 tokens.
 *
 * Leaves to the suites: which app they configure with it, and what each token should be allowed.
 */
import { SignJWT, type JWTPayload } from 'jose'
import { expect } from 'vitest'

/** Configuration of an app that verifies the tokens of `signTestToken`. */
export const TEST_AUTH_ENV = {
  AUTH_ISSUER: 'https://issuer.example',
  AUTH_AUDIENCE: 'http://127.0.0.1:8787/mcp',
  AUTH_JWT_SECRET: 'a-test-signing-secret-of-more-than-32-characters',
} as const

/** The protected-resource metadata an app configured with `TEST_AUTH_ENV` names in its challenges. */
export const TEST_RESOURCE_METADATA =
  'http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp'

export interface TestTokenClaims {
  subject: string
  /** The `scope` claim; without it the token has none. */
  scope?: string
  /** The OAuth client the token was issued to; without it the token has no `azp`. */
  azp?: string
}

/** A compact HS256 JWT for an app configured with `TEST_AUTH_ENV`. */
export function signTestToken({ subject, scope, azp }: TestTokenClaims): Promise<string> {
  return new SignJWT({
    ...(scope === undefined ? {} : { scope }),
    ...(azp === undefined ? {} : { azp }),
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(TEST_AUTH_ENV.AUTH_ISSUER)
    .setAudience(TEST_AUTH_ENV.AUTH_AUDIENCE)
    .setSubject(subject)
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(TEST_AUTH_ENV.AUTH_JWT_SECRET))
}

/**
 * The `Authorization` header of a token of `subject` (and OAuth client `azp`) granting every notes
 * scope (`notes:write` implies `notes:read`).
 */
export async function bearer(subject: string, azp?: string): Promise<{ authorization: string }> {
  return { authorization: `Bearer ${await signTestToken({ subject, scope: 'notes:write', azp })}` }
}

/**
 * Asserts the 403 step-up challenge naming `scopes` (every scope the operation needs, base scopes
 * first) with a JSON-RPC error echoing `id`; answers the body text, for a test to check what it
 * must not hold.
 */
export async function expectInsufficientScope(
  response: Response,
  scopes: string,
  id: string | number | null
): Promise<string> {
  const description = `This operation needs the scope(s) ${scopes}.`
  expect(response.status).toBe(403)
  expect(response.headers.get('www-authenticate')).toBe(
    `Bearer error="insufficient_scope", scope="${scopes}", error_description="${description}", resource_metadata="${TEST_RESOURCE_METADATA}"`
  )
  expect(response.headers.get('cache-control')).toBe('no-store')
  const body = await response.text()
  expect(JSON.parse(body)).toEqual({
    jsonrpc: '2.0',
    id,
    error: { code: -32600, message: `Forbidden: ${description}` },
  })
  return body
}

/**
 * The tokens every verifier refuses for a claim, as `it.each` rows: the case, the token `forge` signs
 * with the claim changed (`otherIssuer` as the issuer of the third), and what the refusal says.
 */
export function claimRefusals(
  forge: (claims: JWTPayload) => Promise<string>,
  otherIssuer: string
): Array<[string, () => Promise<string>, RegExp]> {
  return [
    ['an expired token', () => forge({ iat: 1_000_000, exp: 1_000_300 }), /expired/],
    [
      'a token not valid yet',
      () => forge({ nbf: Math.floor(Date.now() / 1000) + 3600 }),
      /not valid yet/,
    ],
    [
      'a token of another issuer',
      () => forge({ iss: otherIssuer }),
      /another authorization server/,
    ],
  ]
}
