/**
 * @module storage/common/search-words
 * Which words of a search text reach the query, the same on every adapter: words are runs of
 * letters, digits and private-use characters ({@link wordsOf}, what SQLite's FTS5 `unicode61`
 * indexes), and at most {@link MAX_SEARCH_WORDS} distinct ones are used ({@link searchTerms}). How a
 * word becomes query syntax is the dialect's (`sqlite/notes.ts`, `postgres/search.ts`).
 * Runtime-neutral.
 */

/** Upper bound on the number of distinct words of a search text that reach the query. */
export const MAX_SEARCH_WORDS = 64

/** Word tokens: runs of letters, digits and private-use characters (what FTS5's unicode61 indexes). */
const WORD = /[\p{L}\p{N}\p{Co}]+/gu

/** The words of a text, in order (see {@link WORD}). */
export function wordsOf(text: string): string[] {
  return text.match(WORD) ?? []
}

/**
 * The words of a search that reach the query, or `undefined` when there are none. Every word must
 * match and the last one is a prefix, so the last is kept as it is; the earlier ones are made distinct
 * (after `fold`) and only the first {@link MAX_SEARCH_WORDS} − 1 of them are kept, which bounds the cost
 * of a query.
 */
export function searchTerms(
  words: readonly string[],
  fold: (word: string) => string = (word) => word
): { earlier: string[]; last: string } | undefined {
  const last = words.at(-1)
  if (last === undefined) return undefined
  const earlier = [...new Set(words.slice(0, -1).map(fold))].slice(0, MAX_SEARCH_WORDS - 1)
  return { earlier, last }
}
