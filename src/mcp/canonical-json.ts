/**
 * @module mcp/canonical-json
 * One deterministic JSON text per JSON value, and its SHA-256 digest. `canonicalJson` sorts object
 * keys (by UTF-16 code units, recursively), keeps array order, and otherwise follows `JSON.stringify`
 * (number and string formatting, `toJSON`, `undefined` object members dropped and `undefined` array
 * items written as `null`), so two requests whose arguments differ only in key order produce the same
 * text and the same digest. Where `JSON.stringify` would silently lose or fail on data it throws a
 * `TypeError` instead: non-finite numbers, bigints, functions and symbols, cycles, and a top-level
 * value with no JSON form.
 *
 * Used wherever a value needs one text: the arguments digest a sealed `requestState` is bound to
 * (its claims are plain JSON, `state-claims.ts`), the caller binding, the questions of a replay
 * journal, and the names derived from ids (Durable Objects, rendezvous keys); deciding *which* fields
 * of a request are digested belongs to the caller. It recurses once per level of nesting: what a client
 * sends reaches it only through `parseJson` (`envelope.ts`), which refuses bodies nested deeper than
 * `MAX_JSON_DEPTH`, so the stack it needs stays small. Runtime-neutral: Web Crypto and jose only.
 */

import { base64url } from 'jose'

const encoder = new TextEncoder()

/**
 * The canonical JSON text of `value`. Throws `TypeError` for anything JSON cannot represent
 * exactly. Use it where two equal values must give one text: a digest, a cache key, a derived name.
 *
 * @example
 * ```ts
 * import { canonicalJson } from 'stateless-mcp/compose'
 *
 * canonicalJson({ b: 1, a: [true, null] }) // '{"a":[true,null],"b":1}'
 * canonicalJson({ a: 1, b: 2 }) === canonicalJson({ b: 2, a: 1 }) // true
 * ```
 */
export function canonicalJson(value: unknown): string {
  const text = write(value, new Set(), '')
  if (text === undefined) throw new TypeError('canonicalJson: the value has no JSON representation')
  return text
}

/**
 * Base64url (no padding) of the SHA-256 of the UTF-8 bytes of `text`: a short, URL-safe digest (a
 * PKCE code challenge, an id derived from a secret), on Web Crypto in every runtime.
 *
 * @example
 * ```ts
 * import { randomBase64url, sha256Base64url } from 'stateless-mcp'
 *
 * const codeVerifier = randomBase64url(32)
 * const codeChallenge = await sha256Base64url(codeVerifier) // 43 characters
 * ```
 */
export async function sha256Base64url(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(text))
  return base64url.encode(new Uint8Array(digest))
}

/** Returns `undefined` where `JSON.stringify` would omit the value (an `undefined` member). */
function write(input: unknown, ancestors: Set<object>, key: string): string | undefined {
  let value = input
  if (isObjectLike(value) && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(key)
  }
  switch (typeof value) {
    case 'undefined':
      return undefined
    case 'string':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value))
        throw new TypeError(`canonicalJson: ${value} is not a JSON number`)
      return JSON.stringify(value)
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new TypeError(`canonicalJson: a ${typeof value} has no JSON representation`)
  }
  if (value === null) return 'null'
  const object = value as object
  if (ancestors.has(object)) throw new TypeError('canonicalJson: the value contains a cycle')
  ancestors.add(object)
  let text: string
  if (Array.isArray(object)) {
    const items = object.map(
      (item: unknown, index) => write(item, ancestors, String(index)) ?? 'null'
    )
    text = `[${items.join(',')}]`
  } else {
    const record = object as Record<string, unknown>
    const members: string[] = []
    for (const name of Object.keys(record).sort()) {
      const member = write(record[name], ancestors, name)
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`)
    }
    text = `{${members.join(',')}}`
  }
  ancestors.delete(object)
  return text
}

function isObjectLike(value: unknown): value is object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function'
}
