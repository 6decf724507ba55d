/**
 * @module notes/format
 * How a note is shown: its `note://` URI, its markdown rendering (title, tags, metadata, body) used by
 * resource reads and prompts, its structured view in tool results, and the short text extracts used by
 * search hits and the extractive summary. Pure functions over `Note`; no store access, no wire shapes
 * beyond the note view.
 */
import { EXCERPT_CHARS } from './limits.ts'
import type { NoteView, SearchHit } from './schemas.ts'
import type { Note } from './store.ts'

/** The URI template of a note resource and its MIME type. */
export const NOTE_URI_TEMPLATE = 'note://{id}'
export const NOTE_MIME_TYPE = 'text/markdown'

const encoder = new TextEncoder()

export function noteUri(id: string): string {
  return `note://${id}`
}

export function isoTime(ms: number): string {
  return new Date(ms).toISOString()
}

/** The note as markdown: a heading, a metadata list, then the body as written. */
export function renderNoteMarkdown(note: Note): string {
  const tags = note.tags.length > 0 ? note.tags.map((tag) => `\`${tag}\``).join(', ') : 'none'
  const head = [
    `# ${note.title}`,
    '',
    `- Id: ${note.id}`,
    `- Tags: ${tags}`,
    `- Version: ${note.version}`,
    `- Created: ${isoTime(note.createdAt)}`,
    `- Updated: ${isoTime(note.updatedAt)}`,
  ].join('\n')
  return note.body === '' ? `${head}\n` : `${head}\n\n${note.body}\n`
}

/** Size in bytes of the markdown rendering (the `size` of a listed resource). */
export function markdownSize(note: Note): number {
  return encoder.encode(renderNoteMarkdown(note)).length
}

export function toNoteView(note: Note): NoteView {
  return {
    id: note.id,
    uri: noteUri(note.id),
    title: note.title,
    body: note.body,
    tags: note.tags,
    version: note.version,
    createdAt: isoTime(note.createdAt),
    updatedAt: isoTime(note.updatedAt),
  }
}

export function toSearchHit(note: Note): SearchHit {
  return {
    id: note.id,
    uri: noteUri(note.id),
    title: note.title,
    tags: note.tags,
    version: note.version,
    updatedAt: isoTime(note.updatedAt),
    excerpt: excerpt(note.body, EXCERPT_CHARS),
  }
}

/** The first `chars` characters of the body with whitespace runs collapsed, `…` when cut. */
function excerpt(body: string, chars: number): string {
  const flat = body.replace(/\s+/g, ' ').trim()
  return flat.length <= chars ? flat : `${flat.slice(0, chars - 1).trimEnd()}…`
}

const HEADING = /^\s*#{1,6}\s+/
/** List bullets (with an optional task box) and quote marks at the start of a line. */
const LINE_MARKS = /^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+|>\s*)/

/**
 * The first sentence of the body's first line of prose (bullets and quote marks removed), or its
 * first heading when it has no prose; at most `chars` characters. Empty for an empty body.
 */
export function firstSentence(body: string, chars: number): string {
  const lines = body
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
  const prose = lines.find((line) => !HEADING.test(line))
  const line = prose?.replace(LINE_MARKS, '') ?? lines[0]?.replace(HEADING, '') ?? ''
  const sentence = /^.*?[.!?](?=\s|$)/.exec(line)?.[0] ?? line
  return excerpt(sentence, chars)
}

/** Words: runs of letters and digits (markdown marks are not words). */
export function wordCount(text: string): number {
  return text.match(/[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu)?.length ?? 0
}
