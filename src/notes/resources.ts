/**
 * @module notes/resources
 * The notes resources: the static `notes://help` page (listed first) and the `note://{id}` template,
 * which lists the caller's notes page by page for `resources/list` (most recently updated first), reads
 * one note as markdown, and completes ids by prefix. An unknown, malformed or foreign id reads as
 * "not found" (the engine answers -32602 with `data.uri`), so nobody learns of another's notes.
 */
import { definitions, type Resource } from 'stateless-mcp'
import { completeNoteIds } from './completions.ts'
import {
  isoTime,
  markdownSize,
  NOTE_MIME_TYPE,
  NOTE_URI_TEMPLATE,
  noteUri,
  renderNoteMarkdown,
} from './format.ts'
import { MAX_BODY_CHARS, MAX_TAGS, MAX_TITLE_CHARS, NOTE_ID_PATTERN } from './limits.ts'
import type { NotesDeps } from './deps.ts'
import type { Note } from './store.ts'

const { resource, resourceTemplate } = definitions<NotesDeps>()

const HELP_URI = 'notes://help'

const HELP_TEXT = `# notes-mcp

Personal notes in markdown, with tags. Every note belongs to whoever created it.

- **Find**: \`search_notes\` (full text, every word must match, paged with \`nextCursor\`), \`list_tags\`.
- **Read**: \`get_note\`, or the resource \`note://{id}\` (markdown with title, tags and metadata).
- **Write**: \`create_note\`, \`update_note\` (pass the version you read; a conflict means: re-read).
- **With the user**: \`delete_note\` asks for confirmation; \`create_note_from_template\` asks for the
  details in one form; \`share_note\` sends the user to an approval page, then publishes a read-only link.
- **Summaries**: \`summarize_notes\` uses the host's model when the client offers sampling, otherwise a
  short extract per note. Prompts: \`review_note\`, \`weekly_digest\`.

Limits: titles ${MAX_TITLE_CHARS} characters on one line, bodies ${MAX_BODY_CHARS} characters, at most
${MAX_TAGS} tags of letters, digits, "-" and "_" (stored lower-case).
`

export const helpResource = resource({
  uri: HELP_URI,
  name: 'help',
  title: 'How to use notes-mcp',
  description: 'What this server offers and its limits.',
  mimeType: NOTE_MIME_TYPE,
  read: () => ({ contents: [{ uri: HELP_URI, mimeType: NOTE_MIME_TYPE, text: HELP_TEXT }] }),
})

function listing(note: Note): Resource {
  return {
    uri: noteUri(note.id),
    name: note.title,
    mimeType: NOTE_MIME_TYPE,
    size: markdownSize(note),
    annotations: { lastModified: isoTime(note.updatedAt) },
  }
}

export const noteTemplate = resourceTemplate({
  uriTemplate: NOTE_URI_TEMPLATE,
  name: 'note',
  title: 'Note',
  description: 'One of your notes as markdown: title, tags, version, timestamps, then the body.',
  mimeType: NOTE_MIME_TYPE,
  async list(ctx, offset, limit) {
    const page = await ctx.deps.notes.list(ctx.principal, offset, limit)
    return { items: page.items.map(listing), nextOffset: page.nextOffset }
  },
  async read({ id }, uri, ctx) {
    if (id === undefined || !NOTE_ID_PATTERN.test(id)) return undefined
    const note = await ctx.deps.notes.get(ctx.principal, id)
    if (!note) return undefined
    return { contents: [{ uri, mimeType: NOTE_MIME_TYPE, text: renderNoteMarkdown(note) }] }
  },
  complete: { id: completeNoteIds },
})
