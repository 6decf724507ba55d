/**
 * @module mcp/stores/postgres/text
 * How every string crosses into PostgreSQL `text`, which cannot hold U+0000: a reversible, order- and
 * prefix-preserving escape ({@link enc}, undone by {@link dec}), so stored values are escaped and
 * everything returned is exactly what was given. Every port module of the PostgreSQL store binds
 * strings through it. Pure functions.
 */

/**
 * Escapes a string for a PostgreSQL `text` value, which cannot hold U+0000: U+0000 becomes U+0001 U+0001
 * and U+0001 becomes U+0001 U+0002. The code is prefix-free and keeps the order of code points, so
 * equality, prefixes and bytewise order of escaped values are those of the originals. Bind every
 * string an application stores in PostgreSQL through it, and read it back with `decodePgText`.
 *
 * @example
 * ```ts
 * import { decodePgText, encodePgText } from 'stateless-mcp/postgres'
 *
 * await sql`INSERT INTO notes (id, body) VALUES (${id}, ${encodePgText(body)})`
 * const [row] = await sql<{ body: string }[]>`SELECT body FROM notes WHERE id = ${id}`
 * const stored = row && decodePgText(row.body) // exactly `body`, U+0000 included
 * ```
 */
export function enc(value: string): string {
  if (!value.includes('\u0000') && !value.includes('\u0001')) return value
  return value.replace(/[\u0000\u0001]/g, (c) => (c === '\u0000' ? '\u0001\u0001' : '\u0001\u0002'))
}

/**
 * Reverses {@link enc}: the string as it was given, from a `text` value written through it.
 *
 * @example
 * ```ts
 * import { decodePgText, encodePgText } from 'stateless-mcp/postgres'
 *
 * decodePgText(encodePgText('a\u0000b')) === 'a\u0000b' // true
 * ```
 */
export function dec(value: string): string {
  if (!value.includes('\u0001')) return value
  return value.replace(/\u0001([\u0001\u0002])/g, (_, c: string) =>
    c === '\u0001' ? '\u0000' : '\u0001'
  )
}

/** A value bound to a column of any type: strings escaped ({@link enc}), anything else as it is. */
export function encValue<T>(value: T): T | string {
  return typeof value === 'string' ? enc(value) : value
}
