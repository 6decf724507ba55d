/**
 * @module notes/schemas
 * The zod field schemas shared by the notes tools, prompts and resources (note id, title, body, tags),
 * built once from the bounds in `limits.ts`, with messages a model can act on; and the structured
 * shape of a note in tool results (`NoteSchema`). Each tool composes its own strict input object from
 * these fields in `tools.ts` / `interactive-tools.ts`.
 */
import * as z from 'zod'
import {
  MAX_BODY_CHARS,
  MAX_TAG_CHARS,
  MAX_TAGS,
  MAX_TITLE_CHARS,
  NOTE_ID_PATTERN,
  TAG_PATTERN,
} from './limits.ts'

/** Visible characters only: a title is one line. */
const SINGLE_LINE = /^[^\x00-\x1f\x7f]*$/

export const noteIdField = z
  .string()
  .regex(
    NOTE_ID_PATTERN,
    'must be a note id such as n_AbCdEfGh12345678, as returned by create_note'
  )

export const titleField = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_TITLE_CHARS, `must be at most ${MAX_TITLE_CHARS} characters`)
  .regex(SINGLE_LINE, 'must be a single line without control characters')

export const bodyField = z
  .string()
  .max(MAX_BODY_CHARS, `must be at most ${MAX_BODY_CHARS} characters`)

/** One tag, trimmed and lower-cased before it is stored or compared. */
export const tagField = z
  .string()
  .trim()
  .min(1, 'a tag must not be empty')
  .max(MAX_TAG_CHARS, `a tag must be at most ${MAX_TAG_CHARS} characters`)
  .regex(TAG_PATTERN, 'a tag may contain only letters, digits, "-" and "_"')
  .toLowerCase()

export const tagsField = z.array(tagField).max(MAX_TAGS, `at most ${MAX_TAGS} tags are allowed`)

/** A note as tools return it: timestamps as RFC 3339 strings, plus its resource URI. */
export const NoteSchema = z.object({
  id: z.string(),
  uri: z.string(),
  title: z.string(),
  body: z.string(),
  tags: z.array(z.string()),
  version: z.int(),
  createdAt: z.string(),
  updatedAt: z.string(),
})

export type NoteView = z.output<typeof NoteSchema>

/** A search hit: the note without its body, plus a short excerpt of the body. */
export const SearchHitSchema = NoteSchema.omit({ body: true, createdAt: true }).extend({
  excerpt: z.string(),
})

export type SearchHit = z.output<typeof SearchHitSchema>
