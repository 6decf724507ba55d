/**
 * @module notes/prompts
 * The notes prompts: `review_note` (the note embedded as a `note://` resource plus a review
 * instruction) and `weekly_digest` (the notes updated in the last `DIGEST_DAYS` days, optionally with
 * one tag, embedded within a size budget and linked beyond it). Arguments arrive as strings and are
 * checked with the same field schemas as the tools; a bad or unknown argument is -32602. Completions:
 * note ids and tags by prefix, from the caller's own notes only.
 */
import * as z from 'zod'
import { definitions, ErrorCode, McpError, type PromptMessage } from 'stateless-mcp'
import { completeNoteIds, completeTags } from './completions.ts'
import { NOTE_MIME_TYPE, noteUri, renderNoteMarkdown } from './format.ts'
import { DIGEST_DAYS, MAX_DIGEST_CHARS, MAX_DIGEST_NOTES, MAX_FOCUS_CHARS } from './limits.ts'
import { noteIdField, tagField } from './schemas.ts'
import type { NotesDeps } from './deps.ts'
import type { Note } from './store.ts'

const { prompt } = definitions<NotesDeps>()

const DAY_MS = 86_400_000

const focusField = z
  .string()
  .trim()
  .max(MAX_FOCUS_CHARS, `must be at most ${MAX_FOCUS_CHARS} characters`)

/** The argument parsed by `field`, or -32602 naming the argument. */
function argument<T>(name: string, value: string, field: z.ZodType<T>): T {
  const parsed = field.safeParse(value)
  if (parsed.success) return parsed.data
  throw new McpError(
    ErrorCode.InvalidParams,
    `Invalid params: argument ${name} ${parsed.error.issues[0]?.message ?? 'is invalid'}.`
  )
}

function embedded(note: Note, text: string): PromptMessage {
  return {
    role: 'user',
    content: {
      type: 'resource',
      resource: { uri: noteUri(note.id), mimeType: NOTE_MIME_TYPE, text },
    },
  }
}

export const reviewNote = prompt({
  name: 'review_note',
  title: 'Review a note',
  description: 'Ask for a critical review of one note, optionally with a focus.',
  arguments: [
    { name: 'id', title: 'Note', description: 'Id of the note to review.', required: true },
    {
      name: 'focus',
      title: 'Focus',
      description: `What to look at, e.g. "clarity" or "missing steps" (≤ ${MAX_FOCUS_CHARS} characters).`,
    },
  ],
  async get(args, ctx) {
    const id = argument('id', args.id ?? '', noteIdField)
    const focus = argument('focus', args.focus ?? '', focusField)
    const note = await ctx.deps.notes.get(ctx.principal, id)
    if (!note) throw new McpError(ErrorCode.InvalidParams, `Invalid params: no note with id ${id}.`)
    const instruction =
      `Review the note "${note.title}" above${focus ? `, focusing on: ${focus}` : ''}. Point out ` +
      'unclear passages, gaps and contradictions, and suggest concrete edits. Keep its meaning; ' +
      'do not invent facts.'
    return {
      description: `Review of "${note.title}"`,
      messages: [
        embedded(note, renderNoteMarkdown(note)),
        { role: 'user', content: { type: 'text', text: instruction } },
      ],
    }
  },
  complete: { id: completeNoteIds },
})

export const weeklyDigest = prompt({
  name: 'weekly_digest',
  title: 'Weekly digest',
  description: `Summarise the notes updated in the last ${DIGEST_DAYS} days, optionally with one tag.`,
  arguments: [{ name: 'tag', title: 'Tag', description: 'Only notes with this tag.' }],
  async get(args, ctx) {
    const tag = args.tag === undefined ? undefined : argument('tag', args.tag, tagField)
    const since = ctx.deps.now() - DIGEST_DAYS * DAY_MS
    const { items } = await ctx.deps.notes.search(ctx.principal, {
      text: '',
      tags: tag === undefined ? undefined : [tag],
      offset: 0,
      limit: MAX_DIGEST_NOTES,
    })
    const recent = items.filter((note) => note.updatedAt >= since)
    const scope = `notes updated in the last ${DIGEST_DAYS} days${tag ? ` tagged "${tag}"` : ''}`
    if (recent.length === 0) {
      return {
        description: `Weekly digest: no notes`,
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `I have no ${scope}. Say so in one sentence.` },
          },
        ],
      }
    }
    let budget = MAX_DIGEST_CHARS
    let linked = 0
    const messages = recent.map((note): PromptMessage => {
      const markdown = renderNoteMarkdown(note)
      if (markdown.length > budget) {
        linked += 1
        return {
          role: 'user',
          content: {
            type: 'resource_link',
            uri: noteUri(note.id),
            name: note.title,
            mimeType: NOTE_MIME_TYPE,
          },
        }
      }
      budget -= markdown.length
      return embedded(note, markdown)
    })
    const instruction =
      `Write a short digest of my ${scope} (${recent.length} above): group them by theme, list open ` +
      'action items, and name the notes that need a follow-up.' +
      (linked > 0 ? ' Notes given as links were too long to include; read them if needed.' : '')
    return {
      description: `Weekly digest of ${recent.length} note(s)`,
      messages: [...messages, { role: 'user', content: { type: 'text', text: instruction } }],
    }
  },
  complete: { tag: completeTags },
})
