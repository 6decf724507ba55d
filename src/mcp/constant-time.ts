/**
 * @module mcp/constant-time
 * The one comparison of secrets and their derivatives (principal tags, argument digests, CSRF
 * tokens): `constantTimeEqual` takes time that depends only on the lengths of its inputs, never on
 * where they first differ. Runtime-neutral (no `node:crypto` `timingSafeEqual`, which Workers lack).
 */

/**
 * Whether `a` and `b` are equal, comparing every UTF-16 code unit; unequal lengths are unequal.
 * Use it instead of `===` to compare a secret a client sent with the one kept (a token, a CSRF
 * `state`).
 *
 * @example
 * ```ts
 * import { constantTimeEqual } from 'stateless-mcp/compose'
 *
 * const state = new URL(request.url).searchParams.get('state') ?? ''
 * if (!constantTimeEqual(state, login.state)) {
 *   return new Response('Forbidden', { status: 403 })
 * }
 * ```
 */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}
