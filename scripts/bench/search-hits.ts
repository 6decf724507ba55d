/**
 * @module scripts/bench/search-hits
 * What the benchmark's own `search_notes` tool answers per hit (the notes server's hit shape: id, uri,
 * title, tags, version, updatedAt, excerpt) and its cursor, shared by our engine's bench server and the
 * SDK's so both do the same work per request; and the principal the seeded notes belong to.
 * Runtime-neutral (the Worker builds of the bench servers import it).
 */
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import type { Note } from '../../src/notes/store.ts'

export const BENCH_PRINCIPAL = LOCAL_PRINCIPAL

export interface SearchHitView {
  id: string
  uri: string
  title: string
  tags: string[]
  version: number
  updatedAt: string
  excerpt: string
}

const EXCERPT_CHARS = 160

export function searchHit(note: Note): SearchHitView {
  const flat = note.body.replace(/\s+/g, ' ').trim()
  return {
    id: note.id,
    uri: `note://${note.id}`,
    title: note.title,
    tags: note.tags,
    version: note.version,
    updatedAt: new Date(note.updatedAt).toISOString(),
    excerpt: flat.length <= EXCERPT_CHARS ? flat : `${flat.slice(0, EXCERPT_CHARS - 1).trimEnd()}…`,
  }
}

/** The page cursor of the bench tool: the next offset, base64url of `{"o":n}` (opaque to clients). */
export function searchCursor(offset: number): string {
  return btoa(JSON.stringify({ o: offset }))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '')
}
