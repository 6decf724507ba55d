/**
 * @module mcp/state-claims
 * The plaintext of a sealed `requestState` (`sealed-state.ts` seals and opens it): JSON claims, in
 * this order
 *   `v` version (1) · `iat`/`exp` seconds since the epoch · `p` principal tag (16 bytes, base64url;
 *   never the raw principal) · `m` method · `t` target (tool/prompt name or resource URI) · `a` the
 *   arguments digest (32 bytes, base64url) · `j` the journal · `n` a 16-byte random nonce (base64url).
 * {@link claimsText} writes them from a {@link ClaimsDraft} and the two values the sealer computes
 * last; {@link readClaims} reads them back, admitting exactly these keys, each of its type. Also the
 * journal's JSON text ({@link journalText}) and the stand-ins that size a plaintext without those two
 * values. Runtime-neutral: plain JSON, no crypto.
 */

const STATE_VERSION = 1
/** The claims' keys, in the order `claimsText` writes them; `readClaims` admits exactly these. */
const CLAIM_KEYS = ['v', 'iat', 'exp', 'p', 'm', 't', 'a', 'j', 'n'] as const
const TAG_22 = /^[A-Za-z0-9_-]{22}$/
const DIGEST_43 = /^[A-Za-z0-9_-]{43}$/

/** Stand-ins of a principal tag and an arguments digest, of their lengths (`hold` sizes a plaintext). */
export const SIZED_PRINCIPAL_TAG = 'p'.repeat(22)
export const SIZED_ARGS_DIGEST = 'a'.repeat(43)

/** The claims of a state, as `readClaims` admits them. */
export interface Claims {
  v: typeof STATE_VERSION
  iat: number
  exp: number
  p: string
  m: string
  t: string
  a: string
  j: unknown
  n: string
}

/** A new state's claims but the principal tag and the arguments digest, which the sealer computes. */
export interface ClaimsDraft {
  iat: number
  exp: number
  method: string
  target: string
  /** The journal's JSON text (`journalText`). */
  journalText: string
  nonce: string
}

/**
 * The claims' text: what `JSON.stringify` writes for the claims object (keys in `CLAIM_KEYS` order).
 * The tag, the digest and the nonce are base64url and the times integers, so none of them needs
 * escaping.
 */
export function claimsText(draft: ClaimsDraft, principalTag: string, argsDigest: string): string {
  return (
    `{"v":${STATE_VERSION},"iat":${draft.iat},"exp":${draft.exp},"p":"${principalTag}",` +
    `"m":${JSON.stringify(draft.method)},"t":${JSON.stringify(draft.target)},` +
    `"a":"${argsDigest}","j":${draft.journalText},"n":"${draft.nonce}"}`
  )
}

/**
 * The journal as plain JSON (only the arguments digest needs a canonical form); throws `TypeError`
 * for a value with no JSON form or one JSON would alter.
 */
export function journalText(journal: unknown): string {
  const text: unknown = JSON.stringify(journal, exactJson)
  if (typeof text !== 'string') {
    throw new TypeError('seal: the journal must be a JSON value')
  }
  return text
}

/** The claims in `value`, when it is exactly a claims object (no other key, each of its type). */
export function readClaims(value: unknown): Claims | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const claims = value as Record<string, unknown>
  const keys = Object.keys(claims)
  if (keys.length !== CLAIM_KEYS.length || !CLAIM_KEYS.every((key) => Object.hasOwn(claims, key)))
    return undefined
  const { v, iat, exp, p, m, t, a, n } = claims
  return v === STATE_VERSION &&
    Number.isSafeInteger(iat) &&
    (iat as number) >= 0 &&
    Number.isSafeInteger(exp) &&
    (exp as number) > (iat as number) &&
    typeof p === 'string' &&
    TAG_22.test(p) &&
    typeof m === 'string' &&
    typeof t === 'string' &&
    typeof a === 'string' &&
    DIGEST_43.test(a) &&
    typeof n === 'string' &&
    TAG_22.test(n)
    ? (claims as unknown as Claims)
    : undefined
}

/** A `JSON.stringify` replacer that refuses values JSON would silently change (NaN, ±Infinity). */
function exactJson(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new TypeError('seal: the journal holds a number JSON cannot represent')
  }
  return value
}
