/**
 * @module notes/tools
 * The single-round notes tools: `create_note`, `get_note`, `update_note` (optimistic concurrency on the
 * note's version), `search_notes` (full text, paged with an opaque cursor, with progress and `notes-db`
 * log messages when the request asks for them) and `list_tags`. Also the result builders the
 * interactive tools share (`noteResult`, `noteNotFound`). Inputs are strict objects bounded by
 * `limits.ts`; failures a model can fix are `isError` results, never protocol errors.
 *
 * Logging never includes note contents, query text or identities: only counts and timings.
 */
import * as z from 'zod'
import {
  type CallToolResult,
  decodeCursor,
  definitions,
  encodeCursor,
  McpError,
  structured,
  type ToolAnnotations,
  toolError,
} from 'stateless-mcp'
import { publishNoteChange } from './changes.ts'
import { NOTE_MIME_TYPE, noteUri, toNoteView, toSearchHit, wordCount } from './format.ts'
import {
  DEFAULT_SEARCH_LIMIT,
  MAX_BODY_CHARS,
  MAX_CURSOR_CHARS,
  MAX_NOTE_VERSION,
  MAX_QUERY_CHARS,
  MAX_SEARCH_LIMIT,
  MAX_TAGS,
  MAX_TITLE_CHARS,
} from './limits.ts'
import {
  bodyField,
  NoteSchema,
  noteIdField,
  SearchHitSchema,
  tagsField,
  titleField,
} from './schemas.ts'
import type { NotesDeps } from './deps.ts'
import type { Note } from './store.ts'
import { READ, WRITE } from './scopes.ts'

/** The logger name of the storage messages `search_notes` sends. */
const NOTES_DB_LOGGER = 'notes-db'
/** Names the list a `search_notes` cursor belongs to. */
const SEARCH_CURSOR_LIST = 'search_notes'

const { tool } = definitions<NotesDeps>()

const LOCAL_READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false }

const titleArg = titleField.describe(`Title: one line, 1–${MAX_TITLE_CHARS} characters.`)
const bodyArg = bodyField.describe(`Markdown body, up to ${MAX_BODY_CHARS} characters.`)
const tagsArg = tagsField.describe(
  `Up to ${MAX_TAGS} tags of letters, digits, "-" and "_"; stored lower-case.`
)

const NoteResultSchema = z.object({ note: NoteSchema })

export function noteNotFound(id: string): string {
  return `No note with id ${id}. Find ids with search_notes.`
}

/** A note as a tool result: structured, its JSON copy, and a link to its `note://` resource. */
export function noteResult(note: Note): CallToolResult {
  return structured({ note: toNoteView(note) }, [
    { type: 'resource_link', uri: noteUri(note.id), name: note.title, mimeType: NOTE_MIME_TYPE },
  ])
}

export const createNote = tool({
  name: 'create_note',
  title: 'Create a note',
  description: 'Create a note from a title, an optional markdown body and optional tags.',
  input: z.strictObject({
    title: titleArg,
    body: bodyArg.optional(),
    tags: tagsArg.optional(),
  }),
  output: NoteResultSchema,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  scopes: WRITE,
  async run({ title, body = '', tags = [] }, ctx) {
    const note = await ctx.deps.notes.create(ctx.principal, { title, body, tags }, ctx.deps.now())
    await publishNoteChange(ctx.deps.bus, ctx.principal, note.id, 'created')
    return noteResult(note)
  },
})

export const getNote = tool({
  name: 'get_note',
  title: 'Read a note',
  description: 'Read one note: title, markdown body, tags, version and timestamps.',
  input: z.strictObject({ id: noteIdField.describe('Id of the note.') }),
  output: NoteResultSchema,
  annotations: LOCAL_READ,
  scopes: READ,
  async run({ id }, ctx) {
    const note = await ctx.deps.notes.get(ctx.principal, id)
    return note ? noteResult(note) : toolError(noteNotFound(id))
  },
})

export const updateNote = tool({
  name: 'update_note',
  title: 'Update a note',
  description:
    'Change the title, body and/or tags of a note. Pass the version you read as expectedVersion: ' +
    'if the note changed since, nothing is written and you are told to re-read it.',
  input: z
    .strictObject({
      id: noteIdField.describe('Id of the note.'),
      expectedVersion: z
        .int()
        .min(1)
        .max(MAX_NOTE_VERSION)
        .describe('The version of the note you read (get_note, create_note or search_notes).'),
      title: titleArg.optional(),
      body: bodyArg.optional(),
      tags: tagsArg.optional().describe('Replaces every tag of the note.'),
    })
    .refine((args) => [args.title, args.body, args.tags].some((field) => field !== undefined), {
      message: 'give at least one of title, body or tags to change',
    }),
  output: NoteResultSchema,
  annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
  scopes: WRITE,
  async run({ id, expectedVersion, title, body, tags }, ctx) {
    const outcome = await ctx.deps.notes.update(
      ctx.principal,
      id,
      expectedVersion,
      { title, body, tags },
      ctx.deps.now()
    )
    switch (outcome.kind) {
      case 'not_found':
        return toolError(noteNotFound(id))
      case 'conflict':
        return toolError(
          `Version conflict: note ${id} is now at version ${outcome.current.version}, not ` +
            `${expectedVersion}. Nothing was changed; re-read it with get_note and apply your change ` +
            `to version ${outcome.current.version}.`
        )
      case 'updated':
        await publishNoteChange(ctx.deps.bus, ctx.principal, id, 'updated')
        return noteResult(outcome.note)
    }
  },
})

export const searchNotes = tool({
  name: 'search_notes',
  title: 'Search notes',
  description:
    'Full-text search over titles, bodies and tags, best match first, one page at a time. Every ' +
    'word must match (the last one as a prefix); an empty query lists every note, newest first. ' +
    'Pass nextCursor back as cursor for the next page.',
  input: z.strictObject({
    query: z
      .string()
      .max(MAX_QUERY_CHARS, `must be at most ${MAX_QUERY_CHARS} characters`)
      .describe('Words to look for; empty for every note.'),
    tags: tagsArg.optional().describe('Only notes carrying every one of these tags.'),
    cursor: z
      .string()
      .max(MAX_CURSOR_CHARS, 'is not a cursor this tool returned')
      .optional()
      .describe('The nextCursor of the previous page.'),
    limit: z
      .int()
      .min(1)
      .max(MAX_SEARCH_LIMIT)
      .default(DEFAULT_SEARCH_LIMIT)
      .describe(`Notes per page, 1–${MAX_SEARCH_LIMIT}.`),
  }),
  output: z.object({ notes: z.array(SearchHitSchema), nextCursor: z.string().optional() }),
  annotations: LOCAL_READ,
  scopes: READ,
  async run({ query, tags, cursor, limit }, ctx) {
    let offset: number
    try {
      offset = decodeCursor(SEARCH_CURSOR_LIST, cursor)
    } catch (error) {
      if (!(error instanceof McpError)) throw error
      return toolError('Invalid cursor: pass the nextCursor of a previous search_notes page as is.')
    }
    const started = performance.now()
    ctx.progress(0, 1, 'Searching notes')
    ctx.log(
      'debug',
      { event: 'search', words: wordCount(query), tags: tags?.length ?? 0, offset, limit },
      NOTES_DB_LOGGER
    )
    const page = await ctx.deps.notes.search(ctx.principal, { text: query, tags, offset, limit })
    ctx.log(
      'info',
      {
        event: 'search_done',
        results: page.items.length,
        more: page.nextOffset !== undefined,
        ms: Math.round(performance.now() - started),
      },
      NOTES_DB_LOGGER
    )
    ctx.progress(1, 1, `Found ${page.items.length} note(s)`)
    return structured({
      notes: page.items.map(toSearchHit),
      ...(page.nextOffset !== undefined && {
        nextCursor: encodeCursor(SEARCH_CURSOR_LIST, page.nextOffset),
      }),
    })
  },
})

export const listTags = tool({
  name: 'list_tags',
  title: 'List tags',
  description: 'Every tag used on your notes, with how many notes carry it, by name.',
  input: z.strictObject({}),
  output: z.object({ tags: z.array(z.object({ tag: z.string(), count: z.int() })) }),
  annotations: LOCAL_READ,
  scopes: READ,
  async run(_args, ctx) {
    return structured({ tags: await ctx.deps.notes.listTags(ctx.principal) })
  },
})
