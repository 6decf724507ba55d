/**
 * @module scripts/bench/notes-data
 * The notes the search scenario runs over: `seedNotes` writes a deterministic set (10,000 by default)
 * into a SQLite file through the real `SqliteNotesStore`, owned by the single local principal, so
 * every server process opens the same data. What the benchmark's `search_notes` tool answers per hit is
 * `search-hits.ts` (runtime-neutral, so the Worker builds of the bench servers can import the tools).
 */
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { BENCH_PRINCIPAL } from './search-hits.ts'
import { SEARCH_QUERY } from './wire.ts'

const SYLLABLES =
  'ka lo mi ren tas vel dor fin gra hul jor kel lum mar nis pol quen ros sul tir ulm var wen yor zan'.split(
    ' '
  )
/** A 4,000-word synthetic vocabulary; none of its words is a word of the query. */
const VOCABULARY = Array.from({ length: 4000 }, (_, i) => {
  const n = SYLLABLES.length
  const parts = [SYLLABLES[i % n], SYLLABLES[Math.floor(i / n) % n]]
  if (i >= n * n) parts.push(SYLLABLES[Math.floor(i / (n * n)) % n])
  return parts.join('')
})
const TAGS = 'work home ideas todo reading travel cooking music research draft'.split(' ')
const BASE_TIME = Date.UTC(2026, 0, 1)
/** Share of notes mentioning the first query word, and of those, the share mentioning the second. */
const FIRST_WORD_SHARE = 0.08
const SECOND_WORD_SHARE = 0.4

/** Small deterministic PRNG (mulberry32): the same seed always gives the same notes. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Log-uniform rank, i.e. roughly Zipf: a few words are everywhere, most are rare. */
function word(next: () => number): string {
  return VOCABULARY[Math.floor(Math.exp(next() * Math.log(VOCABULARY.length))) - 1] as string
}

function sentence(next: () => number, words: number, extra: string[] = []): string {
  const parts = Array.from({ length: words }, () => word(next))
  for (const item of extra) parts.splice(Math.floor(next() * parts.length), 0, item)
  const text = parts.join(' ')
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`
}

export interface SeedSummary {
  notes: number
  /** Notes matching `SEARCH_QUERY`. */
  matches: number
  seconds: number
}

/** Writes `count` notes into a fresh database at `path` and counts the matches of the query. */
export async function seedNotes(path: string, count: number): Promise<SeedSummary> {
  const started = performance.now()
  const store = new SqliteNotesStore({ path })
  try {
    await store.migrate()
    const next = random(20261129)
    const [first = '', second = ''] = SEARCH_QUERY.split(' ')
    for (let i = 0; i < count; i++) {
      const planted: string[] = []
      if (next() < FIRST_WORD_SHARE) {
        planted.push(first)
        if (next() < SECOND_WORD_SHARE) planted.push(second)
      }
      const paragraphs = Array.from({ length: 2 + Math.floor(next() * 3) }, (_, p) =>
        Array.from({ length: 2 + Math.floor(next() * 3) }, (_, s) =>
          sentence(next, 6 + Math.floor(next() * 8), p === 0 && s === 0 ? planted : [])
        ).join(' ')
      )
      const tags = [...new Set([TAGS[Math.floor(next() * TAGS.length)] as string, 'bench'])]
      await store.create(
        BENCH_PRINCIPAL,
        {
          title: sentence(next, 3 + Math.floor(next() * 4)).slice(0, -1),
          body: paragraphs.join('\n\n'),
          tags,
        },
        BASE_TIME + i * 60_000
      )
    }
    const all = await store.search(BENCH_PRINCIPAL, { text: SEARCH_QUERY, offset: 0, limit: count })
    return {
      notes: count,
      matches: all.items.length,
      seconds: (performance.now() - started) / 1000,
    }
  } finally {
    await store.close()
  }
}
