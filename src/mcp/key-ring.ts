/**
 * @module mcp/key-ring
 * The `requestState` key ring: parsing its configuration text, generating and formatting new entries,
 * and importing the secrets once as non-extractable Web Crypto keys.
 *
 * Configuration format (`STATE_KEYS`): comma-separated `kid:secret` entries, e.g.
 * `k20260801ab3d:<43 base64url chars>,k20260501zz7q:<...>`. The FIRST entry seals, EVERY entry opens.
 * A kid is 1–32 of `[A-Za-z0-9_-]`; a secret is exactly 32 random bytes, written as unpadded base64url
 * (43 chars) or padded standard base64 (44 chars, as `openssl rand -base64 32` prints it), canonical in
 * both cases. Rotation is add (append the new entry on every replica) → promote (move it first) →
 * retire (drop the old entry one state TTL later); no in-flight flow breaks.
 *
 * Per kid the ring holds two keys derived from the one secret:
 * - `contentKey`: the secret itself as an AES-256-GCM key (JWE `dir` + `A256GCM`);
 * - `principalKey`: HMAC-SHA256 key = HKDF-SHA256(secret, salt = empty, info = `PRINCIPAL_TAG_INFO`),
 *   used to tag the principal so a sealed state never carries the raw identity.
 *
 * Errors are `TypeError` (syntax) or `RangeError` (counts, lengths). Their messages name entries by
 * position and never include a secret (nor an unvalidated kid, which might be a misplaced secret).
 * The token format belongs to `mcp/compact-jwe`, what `requestState` seals to `mcp/sealed-state`;
 * reading the environment belongs to config. Runtime-neutral: Web Crypto and jose only.
 */

import { base64url } from 'jose'
import { isCanonicalBase64url } from './base64url.ts'

/** Size of every state secret, in bytes (AES-256). */
export const STATE_KEY_BYTES = 32
/** HKDF `info` for the principal-tag key; changing it invalidates every in-flight state. */
export const PRINCIPAL_TAG_INFO = 'notes-mcp/principal-tag/v1'

/** Longest kid the ring admits (tokens name it in their header, so caps are sized with it). */
export const MAX_KID_CHARS = 32

const KID_PATTERN = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_KID_CHARS}}$`)
const KID_RULE = `1-${MAX_KID_CHARS} of A-Za-z0-9_-`
const BASE64URL_SECRET = /^[A-Za-z0-9_-]{43}$/
const BASE64_SECRET = /^[A-Za-z0-9+/]{43}=$/
const KID_SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'
const KID_SUFFIX_LENGTH = 4

/** One ring entry before import. `secret` is exactly `STATE_KEY_BYTES` bytes. */
export interface RawKey {
  readonly kid: string
  readonly secret: Uint8Array
}

/** One imported ring entry. Both keys are non-extractable. */
export interface RingKey {
  readonly kid: string
  /** AES-256-GCM, usages `encrypt`/`decrypt`: the JWE `dir` content-encryption key. */
  readonly contentKey: CryptoKey
  /** HMAC-SHA256, usage `sign`: keys the principal tag. */
  readonly principalKey: CryptoKey
}

/** The imported keys of a `STATE_KEYS` ring: the first seals, every one opens. */
export interface KeyRing {
  /** The kid of the first entry, which seals every new state. */
  readonly sealingKid: string
  /** Every kid in configuration order; each one opens. */
  readonly kids: readonly string[]
  /** The entry for `kid`, or `undefined` when the ring does not hold it. */
  get(kid: string): RingKey | undefined
}

/**
 * Parses `STATE_KEYS` text into raw entries (first seals). Throws `TypeError`/`RangeError`, whose
 * messages name the entry by position and never include a secret.
 *
 * @example
 * ```ts
 * import { importKeyRing, parseKeyRing, StateSealer } from 'stateless-mcp/compose'
 *
 * const sealer = StateSealer.create({
 *   keyRing: await importKeyRing(parseKeyRing(process.env.STATE_KEYS!)),
 * })
 * ```
 */
export function parseKeyRing(text: string): RawKey[] {
  if (typeof text !== 'string') throw new TypeError('STATE_KEYS must be a string')
  if (text.trim() === '') throw new RangeError('STATE_KEYS must hold at least one kid:secret entry')
  const keys = text.split(',').map((part, index) => {
    const entry = part.trim()
    const label = `STATE_KEYS entry ${index + 1}`
    if (entry === '') throw new TypeError(`${label} is empty (stray comma?)`)
    const colon = entry.indexOf(':')
    if (colon < 0) throw new TypeError(`${label} is not of the form kid:secret`)
    const kid = entry.slice(0, colon)
    if (!KID_PATTERN.test(kid)) throw new TypeError(`${label} has an invalid kid (${KID_RULE})`)
    return { kid, secret: decodeSecret(entry.slice(colon + 1), `${label} (kid ${kid})`) }
  })
  validateRawKeys(keys)
  return keys
}

/**
 * A fresh entry: kid `k` + UTC date `YYYYMMDD` + 4 random chars, and 32 random bytes. Use it to
 * rotate the ring (add it on every replica, then move it first), or for an ephemeral ring in tests.
 *
 * @example
 * ```ts
 * import { formatKeyRing, generateKey, parseKeyRing } from 'stateless-mcp/compose'
 *
 * // rotation, step one: the new key appended (it opens; the first entry still seals)
 * const next = formatKeyRing([...parseKeyRing(process.env.STATE_KEYS!), generateKey()])
 * ```
 */
export function generateKey(): RawKey {
  const date = new Date().toISOString().slice(0, 10).replaceAll('-', '')
  const random = crypto.getRandomValues(new Uint8Array(KID_SUFFIX_LENGTH))
  // 32-letter alphabet, so masking to 5 bits keeps the choice uniform.
  const suffix = Array.from(random, (byte) => KID_SUFFIX_ALPHABET[byte & 31]).join('')
  return {
    kid: `k${date}${suffix}`,
    secret: crypto.getRandomValues(new Uint8Array(STATE_KEY_BYTES)),
  }
}

/**
 * The `STATE_KEYS` text for `keys` (unpadded base64url secrets); `parseKeyRing` reads it back.
 *
 * @example
 * ```ts
 * import { formatKeyRing, generateKey } from 'stateless-mcp/compose'
 *
 * console.log(formatKeyRing([generateKey()])) // k20261206q7za:Jq4…
 * ```
 */
export function formatKeyRing(keys: readonly RawKey[]): string {
  validateRawKeys(keys)
  return keys.map((key) => `${key.kid}:${base64url.encode(key.secret)}`).join(',')
}

/**
 * Imports every secret once, as non-extractable keys, and returns the ring. The first entry seals.
 * The caller keeps (and may wipe) the raw secrets; the ring holds only `CryptoKey`s.
 *
 * @example
 * ```ts
 * import { generateKey, importKeyRing, StateSealer } from 'stateless-mcp/compose'
 *
 * // an ephemeral ring: what it seals opens only in this process
 * const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
 * ```
 */
export async function importKeyRing(raw: readonly RawKey[]): Promise<KeyRing> {
  validateRawKeys(raw)
  const info = new TextEncoder().encode(PRINCIPAL_TAG_INFO)
  const entries = await Promise.all(
    raw.map(async ({ kid, secret }): Promise<RingKey> => {
      // A private copy (backed by a plain ArrayBuffer), wiped once both imports are done.
      const bytes = Uint8Array.from(secret)
      try {
        const contentKey = await crypto.subtle.importKey(
          'raw',
          bytes,
          { name: 'AES-GCM', length: 256 },
          false,
          ['encrypt', 'decrypt']
        )
        const base = await crypto.subtle.importKey('raw', bytes, 'HKDF', false, ['deriveKey'])
        const principalKey = await crypto.subtle.deriveKey(
          { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info },
          base,
          { name: 'HMAC', hash: 'SHA-256', length: 256 },
          false,
          ['sign']
        )
        return Object.freeze({ kid, contentKey, principalKey })
      } finally {
        bytes.fill(0)
      }
    })
  )
  const byKid = new Map(entries.map((entry) => [entry.kid, entry]))
  const kids = Object.freeze(entries.map((entry) => entry.kid))
  return Object.freeze({
    sealingKid: kids[0] as string,
    kids,
    get(kid: string): RingKey | undefined {
      return byKid.get(kid)
    },
  })
}

function validateRawKeys(keys: readonly RawKey[]): void {
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new RangeError('A state key ring must hold at least one key')
  }
  const seen = new Set<string>()
  keys.forEach((key: RawKey, index) => {
    const label = `State key ${index + 1}`
    if (typeof key?.kid !== 'string' || !KID_PATTERN.test(key.kid)) {
      throw new TypeError(`${label} has an invalid kid (${KID_RULE})`)
    }
    if (!(key.secret instanceof Uint8Array)) {
      throw new TypeError(`${label} (kid ${key.kid}) has no secret bytes`)
    }
    if (key.secret.byteLength !== STATE_KEY_BYTES) {
      throw new RangeError(`${label} (kid ${key.kid}) must be exactly ${STATE_KEY_BYTES} bytes`)
    }
    if (seen.has(key.kid)) throw new TypeError(`${label} repeats kid ${key.kid}`)
    seen.add(key.kid)
  })
}

/** Strict decode of one secret; `label` names the entry in errors, never the secret. */
function decodeSecret(text: string, label: string): Uint8Array {
  let url: string
  if (BASE64URL_SECRET.test(text)) {
    url = text
  } else if (BASE64_SECRET.test(text)) {
    url = text.slice(0, -1).replaceAll('+', '-').replaceAll('/', '_')
  } else if (/^[A-Za-z0-9_-]*$/.test(text) || /^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    throw new RangeError(
      `${label}: the secret must be exactly ${STATE_KEY_BYTES} bytes (43 base64url or 44 base64 chars)`
    )
  } else {
    throw new TypeError(`${label}: the secret is not base64url (or standard base64)`)
  }
  // 43 chars carry 258 bits for 256: the last char's two low bits must be zero (canonical form).
  if (!isCanonicalBase64url(url)) {
    throw new TypeError(`${label}: the secret is not canonical base64`)
  }
  return base64url.decode(url)
}
