/**
 * @module storage/postgres/search
 * Full-text search text for the PostgreSQL store, built in the adapter rather than by the database, so
 * matching is the same whatever the database's locale and needs no extension. Words are runs of
 * letters, digits and private-use characters (as on SQLite: `common/search-words.ts`), lower-cased,
 * with the diacritics of Latin letters removed (as SQLite's `unicode61 remove_diacritics`). A field
 * becomes a `tsvector` literal ({@link tsvectorLiteral}: its words with positions, one weight); free
 * text becomes a `tsquery` literal of quoted lexemes ({@link tsqueryLiteral}: every word must match,
 * the last as a prefix), so no character of user input can reach the query syntax. At most
 * `MAX_SEARCH_WORDS` distinct words are used (the first ones and the last, chosen as on every
 * adapter). Words longer than PostgreSQL's lexeme limit ({@link MAX_LEXEME_BYTES}) are not indexed,
 * and a query containing one matches nothing. Pure functions; the statements are `notes.ts`'s.
 */
import { searchTerms, wordsOf } from '../common/search-words.ts'

/** Longest lexeme PostgreSQL accepts in a `tsvector` or `tsquery`, in bytes of UTF-8. */
export const MAX_LEXEME_BYTES = 2046
/** `ts_rank` weights for {D, C, B, A}: body 1, tags 2, title 4 (SQLite's bm25 weights). */
export const RANK_WEIGHTS = '{0.25, 0, 0.5, 1}'
/** Highest word position a `tsvector` records (later words share it). */
const MAX_POSITION = 16383
/** Most positions a `tsvector` keeps per lexeme. */
const MAX_POSITIONS_PER_LEXEME = 256

const utf8 = new TextEncoder()

/**
 * The search words of a text: runs of letters, digits and private-use characters, with the diacritics of
 * Latin letters removed and lower-cased. Documents and queries go through this one function.
 */
function searchWords(text: string): string[] {
  const folded = text
    .normalize('NFD')
    .replace(/(\p{Script=Latin})\p{Mn}+/gu, '$1')
    .normalize('NFC')
    .toLowerCase()
  return wordsOf(folded)
}

function indexable(word: string): boolean {
  // A UTF-16 code unit is at most 3 bytes of UTF-8; only long words need the exact count.
  return word.length * 3 <= MAX_LEXEME_BYTES || utf8.encode(word).length <= MAX_LEXEME_BYTES
}

/** A `tsquery`/`tsvector` lexeme literal. Words hold no quote or backslash; escaped regardless. */
function lexeme(word: string): string {
  return `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`
}

/** The `tsvector` literal of a field: its words with their positions, all with one weight. */
export function tsvectorLiteral(text: string, weight: 'A' | 'B' | 'D'): string {
  const positions = new Map<string, number[]>()
  for (const [i, word] of searchWords(text).entries()) {
    if (!indexable(word)) continue
    let list = positions.get(word)
    if (list === undefined) positions.set(word, (list = []))
    const position = Math.min(i + 1, MAX_POSITION)
    if (list.length < MAX_POSITIONS_PER_LEXEME && list[list.length - 1] !== position) {
      list.push(position)
    }
  }
  const entries: string[] = []
  for (const [word, list] of positions) {
    entries.push(`${lexeme(word)}:${list.map((p) => `${p}${weight}`).join(',')}`)
  }
  return entries.join(' ')
}

/**
 * The `tsquery` literal for free text: `undefined` when the text holds no word (match every note),
 * `null` when it holds a word too long to be indexed (match no note). Words are ANDed; the last one is a
 * prefix.
 */
export function tsqueryLiteral(text: string): string | null | undefined {
  const terms = searchTerms(searchWords(text))
  if (terms === undefined) return undefined
  const { earlier, last } = terms
  if (!indexable(last) || !earlier.every(indexable)) return null
  return [...earlier.map(lexeme), `${lexeme(last)}:*`].join(' & ')
}
