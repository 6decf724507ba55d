/**
 * @module notes/task-tools
 * The notes tools that run as tasks (extension `io.modelcontextprotocol/tasks`):
 * - `import_notes` (task optional) creates many notes from one markdown text, one note per `# `
 *   heading (the title; `## ` and deeper headings, and `# ` lines inside fenced code, stay in the
 *   body). The metadata list `export_notes` writes under each heading (`- Id:`, `- Tags:`, …) is
 *   read back: its tags are kept, the rest dropped, so an export imports as the same notes under new
 *   ids. Titles a note of the caller already has are asked about once per batch of
 *   {@link MAX_CONFLICTS_PER_ASK} through a form: overwrite them, skip them or keep both (the notes
 *   with those titles are found in one read, `NotesStore.findByTitles`, so no note that other
 *   writes move meanwhile is missed). Without the extension it runs synchronously up to
 *   {@link MAX_SYNC_IMPORT_NOTES} notes and answers -32021 beyond;
 * - `export_notes` (task required) answers the caller's notes, all or those of one tag, as one
 *   markdown bundle (each note as its `note://` resource renders it) in an embedded resource, up
 *   to {@link MAX_EXPORT_BYTES} as the task's record stores it (JSON text: escapes count), so the
 *   record of an export holds no more than that and its bundle once; the engine keeps it only a
 *   short while after the export ends (`resultTtlMs`). The notes come in the order they were
 *   created, oldest first (so an export imports back in its order), paged by a key no write changes
 *   (`NotesStore.listByCreation`): each note that exists throughout the export is in it once,
 *   whatever else is written meanwhile.
 * Both report progress (the task's `statusMessage`) and stop at a cancel between batches.
 *
 * Takeover safety (a replica may die mid-import and another run it again from the top): the ids of
 * the notes to create and the conflicts found are chosen once (`ctx.once`, stored in the task
 * before anything is written), notes are created with `NotesStore.importNotes` under those ids
 * (which skips ids that exist), and an overwrite that finds the note at another version counts as
 * done when the note already holds the imported text. So a re-run writes nothing twice.
 */
import * as z from 'zod'
import { definitions, structured, titledEnum, type ToolContext, toolError } from 'stateless-mcp'
import type { NotesDeps } from './deps.ts'
import { publishNoteChange } from './changes.ts'
import { NOTE_MIME_TYPE, renderNoteMarkdown } from './format.ts'
import {
  MAX_BODY_CHARS,
  MAX_CONFLICTS_PER_ASK,
  MAX_EXPORT_BYTES,
  MAX_IMPORT_CHARS,
  MAX_IMPORTED_NOTES,
  MAX_SYNC_IMPORT_NOTES,
} from './limits.ts'
import { newNoteId } from './note-id.ts'
import { tagField, tagsField, titleField } from './schemas.ts'
import { READ, WRITE } from './scopes.ts'
import { MAX_FIND_TITLES, type NewNote, type Note, type NoteTitle } from './store.ts'

/** Notes created per store call (and per progress step); the store takes up to 1000. */
const IMPORT_BATCH_NOTES = 100
/** Notes read per page of an export. */
const EXPORT_PAGE_NOTES = 500
/** Problems of an unreadable import that the answer lists. */
const MAX_REPORTED_PROBLEMS = 5

const { tool } = definitions<NotesDeps>()

const encoder = new TextEncoder()

/**
 * The UTF-8 bytes `text` takes in the stored result of a task, a JSON text: control characters,
 * quotes and backslashes count as their escapes (up to 6 bytes for 1 of markdown).
 */
function storedBytes(text: string): number {
  return encoder.encode(JSON.stringify(text)).length - 2
}

/** The bytes of the `\n` between two notes of a bundle, as stored (escaped). */
const STORED_SEPARATOR_BYTES = 2

/** "1 note", "2 notes". */
function notesCount(count: number): string {
  return count === 1 ? '1 note' : `${count} notes`
}

interface ImportedNote extends NewNote {
  /** The line of its heading (1-based), for messages. */
  line: number
}

const HEADING = /^# (.*)$/
const FENCE = /^ {0,3}(`{3,}|~{3,})/
const METADATA = /^- (Id|Tags|Version|Created|Updated): (.*)$/

/** `- Tags: \`a\`, \`b\`` (or `none`) as `renderNoteMarkdown` writes it. */
function metadataTags(value: string): string[] {
  return value.trim() === 'none' ? [] : value.split(',').map((tag) => tag.trim().replace(/`/g, ''))
}

/** The lines of one note after its heading: the optional metadata list (its tags), then the body. */
function readNote(
  title: string,
  line: number,
  lines: string[]
): { note: ImportedNote } | { problem: string } {
  let at = 0
  while (at < lines.length && lines[at]!.trim() === '') at++
  let tags: string[] = []
  for (let match; at < lines.length && (match = METADATA.exec(lines[at]!)); at++) {
    if (match[1] === 'Tags') tags = metadataTags(match[2]!)
  }
  while (at < lines.length && lines[at]!.trim() === '') at++
  let end = lines.length
  while (end > at && lines[end - 1]!.trim() === '') end--
  const body = lines.slice(at, end).join('\n')
  const where = `the note at line ${line}`
  const parsedTitle = titleField.safeParse(title)
  if (!parsedTitle.success)
    return { problem: `${where}: its title ${parsedTitle.error.issues[0]?.message}` }
  if (body.length > MAX_BODY_CHARS)
    return { problem: `${where}: its body is longer than ${MAX_BODY_CHARS} characters` }
  const parsedTags = tagsField.safeParse(tags)
  if (!parsedTags.success) return { problem: `${where}: ${parsedTags.error.issues[0]?.message}` }
  return { note: { title: parsedTitle.data, body, tags: [...new Set(parsedTags.data)], line } }
}

/** Splits the markdown into notes, or lists what keeps it from being imported. */
export function parseImport(markdown: string): { notes: ImportedNote[] } | { problems: string[] } {
  const lines = markdown.split(/\r?\n/)
  const problems: string[] = []
  const notes: ImportedNote[] = []
  const starts: number[] = []
  let fence: string | undefined
  lines.forEach((line, index) => {
    const marker = FENCE.exec(line)?.[1]
    if (fence === undefined) {
      if (marker) fence = marker
      else if (HEADING.test(line)) starts.push(index)
    } else if (marker?.startsWith(fence) && line.trim() === marker) {
      fence = undefined // a closing fence: the same character, at least as many, nothing else
    }
  })
  const preamble = lines.slice(0, starts[0] ?? lines.length).findIndex((line) => line.trim() !== '')
  if (preamble !== -1) problems.push(`line ${preamble + 1}: text before the first "# " heading`)
  starts.forEach((start, n) => {
    const read = readNote(
      HEADING.exec(lines[start]!)![1]!,
      start + 1,
      lines.slice(start + 1, starts[n + 1] ?? lines.length)
    )
    if ('problem' in read) problems.push(read.problem)
    else notes.push(read.note)
  })
  if (starts.length === 0) problems.push('no "# " heading: every note starts with one')
  if (notes.length > MAX_IMPORTED_NOTES)
    problems.push(`${notes.length} notes; one import takes at most ${MAX_IMPORTED_NOTES}`)
  return problems.length > 0 ? { problems } : { notes }
}

/**
 * Every note of the principal (or those with `tag`), page by page, oldest first: each note that
 * exists throughout the export once, whatever is written meanwhile (`NotesStore.listByCreation`).
 */
async function* notesToExport(ctx: ToolContext<NotesDeps>, tag?: string): AsyncGenerator<Note[]> {
  const tags = tag === undefined ? [] : [tag]
  let after: string | undefined
  do {
    const page = await ctx.deps.notes.listByCreation(ctx.principal, {
      tags,
      after,
      limit: EXPORT_PAGE_NOTES,
    })
    yield page.items
    after = page.next
    if (after !== undefined) ctx.signal.throwIfAborted()
  } while (after !== undefined)
}

/** What an import will do, chosen once per task (so every run of it writes the same notes). */
interface ImportPlan {
  /** The id each note gets if it is created, in the order of the markdown. */
  ids: string[]
  /** Notes whose title a note of the caller already has: that note, at the version read. */
  conflicts: Array<{ index: number; id: string; version: number; title: string }>
}

async function planImport(ctx: ToolContext<NotesDeps>, notes: ImportedNote[]): Promise<ImportPlan> {
  const wanted = new Map<string, number>()
  notes.forEach((note, index) => {
    // Only a title's first note in the import conflicts; later ones are kept as new notes.
    if (!wanted.has(note.title)) wanted.set(note.title, index)
  })
  // Each title in one read (not pages of all notes, which other writes shift between two reads).
  const titles = [...wanted.keys()]
  const existing: NoteTitle[] = []
  for (let at = 0; at < titles.length; at += MAX_FIND_TITLES) {
    existing.push(
      ...(await ctx.deps.notes.findByTitles(ctx.principal, titles.slice(at, at + MAX_FIND_TITLES)))
    )
  }
  const conflicts = existing.map(({ title, id, version }) => ({
    index: wanted.get(title)!,
    id,
    version,
    title,
  }))
  conflicts.sort((a, b) => a.index - b.index)
  return { ids: notes.map(() => newNoteId()), conflicts }
}

const RESOLUTIONS = {
  overwrite: 'Overwrite the existing notes',
  skip: 'Skip them (keep the existing notes as they are)',
  keep_both: 'Keep both (import them as new notes)',
} as const

type Resolution = keyof typeof RESOLUTIONS

const ResolutionForm = z.object({
  resolution: titledEnum(RESOLUTIONS).meta({ title: 'Notes whose title exists' }),
})

/** How the person resolved each batch of conflicts, or `undefined` when they cancelled the import. */
async function askResolutions(
  ctx: ToolContext<NotesDeps>,
  conflicts: ImportPlan['conflicts']
): Promise<Resolution[] | undefined> {
  const batches: Array<ImportPlan['conflicts']> = []
  for (let at = 0; at < conflicts.length; at += MAX_CONFLICTS_PER_ASK)
    batches.push(conflicts.slice(at, at + MAX_CONFLICTS_PER_ASK))
  const answers = await Promise.all(
    batches.map((batch, n) =>
      ctx.elicit(`conflicts-${n + 1}`, {
        message:
          `${batch.length === 1 ? 'A note to import has' : `${batch.length} notes to import have`} ` +
          `the title of a note you already have: ${batch.map((c) => `"${c.title}"`).join(', ')}. ` +
          'What should the import do with them?',
        schema: ResolutionForm,
      })
    )
  )
  if (answers.some((answer) => answer.action === 'cancel')) return undefined
  return batches.flatMap((batch, n) => {
    const answer = answers[n]!
    const resolution: Resolution = answer.action === 'accept' ? answer.content.resolution : 'skip'
    return batch.map(() => resolution)
  })
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  const sorted = [...new Set(b)].sort()
  return a.length === sorted.length && a.every((tag, i) => tag === sorted[i])
}

const ImportResultSchema = z.object({
  outcome: z.enum(['imported', 'cancelled']),
  /** Notes in the markdown. */
  total: z.int(),
  /** Notes created: new titles, and the copies kept beside an existing note. */
  created: z.int(),
  overwritten: z.int(),
  /** Notes not imported because the person chose to skip (or declined the question). */
  skipped: z.int(),
  /** Titles of existing notes that changed before the import could overwrite them (left alone). */
  notOverwritten: z.array(z.string()),
})

type ImportResult = z.output<typeof ImportResultSchema>

function importResult(result: ImportResult) {
  const parts = [
    `created ${result.created}`,
    `overwrote ${result.overwritten}`,
    `skipped ${result.skipped}`,
  ]
  const sentence =
    result.outcome === 'cancelled'
      ? 'Import cancelled; nothing was imported.'
      : `Import done: of ${notesCount(result.total)}, ${parts.join(', ')}.` +
        (result.notOverwritten.length > 0
          ? ` ${notesCount(result.notOverwritten.length)} changed meanwhile and stayed as they were.`
          : '')
  return structured(result, [{ type: 'text', text: sentence }])
}

export const importNotes = tool({
  name: 'import_notes',
  title: 'Import notes',
  description:
    'Create many notes from one markdown text: each "# " heading starts a note and is its title, ' +
    'the text up to the next one its body (an export_notes bundle imports as the same notes, tags ' +
    `included). Up to ${MAX_IMPORTED_NOTES} notes, run as a task when the client supports tasks ` +
    `(otherwise up to ${MAX_SYNC_IMPORT_NOTES}). When a title already exists the user is asked ` +
    'whether to overwrite, skip or keep both.',
  input: z.strictObject({
    markdown: z
      .string()
      .max(MAX_IMPORT_CHARS)
      .describe('The notes as markdown, each starting with a "# Title" line.'),
  }),
  output: ImportResultSchema,
  annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
  scopes: WRITE,
  task: 'optional',
  async run({ markdown }, ctx) {
    const parsed = parseImport(markdown)
    if ('problems' in parsed) {
      const shown = parsed.problems.slice(0, MAX_REPORTED_PROBLEMS).join('; ')
      const more = parsed.problems.length - MAX_REPORTED_PROBLEMS
      return toolError(`Nothing imported: ${shown}${more > 0 ? `; and ${more} more` : ''}.`)
    }
    const { notes } = parsed
    await ctx.startTask({ required: notes.length > MAX_SYNC_IMPORT_NOTES })

    const plan = await ctx.once('plan', () => planImport(ctx, notes))
    const resolutions = await askResolutions(ctx, plan.conflicts)
    const result: ImportResult = {
      outcome: 'imported',
      total: notes.length,
      created: 0,
      overwritten: 0,
      skipped: 0,
      notOverwritten: [],
    }
    if (!resolutions) return importResult({ ...result, outcome: 'cancelled' })

    const { notes: store, bus, now } = ctx.deps
    const total = notes.length
    const progress = () => {
      const done =
        result.created + result.overwritten + result.skipped + result.notOverwritten.length
      ctx.progress(done, total, `Imported ${done} of ${notesCount(total)}.`)
    }
    const conflictOf = new Map(plan.conflicts.map((conflict, n) => [conflict.index, n]))
    const creates: Array<NewNote & { id: string }> = []
    for (const [index, note] of notes.entries()) {
      const n = conflictOf.get(index)
      const fields = { id: plan.ids[index]!, title: note.title, body: note.body, tags: note.tags }
      const resolution = n === undefined ? 'keep_both' : resolutions[n]!
      if (resolution === 'keep_both') {
        creates.push(fields)
      } else if (resolution === 'skip') {
        result.skipped++
      } else {
        ctx.signal.throwIfAborted()
        const conflict = plan.conflicts[n!]!
        const patch = { body: note.body, tags: note.tags }
        const outcome = await store.update(
          ctx.principal,
          conflict.id,
          conflict.version,
          patch,
          now()
        )
        if (outcome.kind === 'updated') {
          result.overwritten++
          await publishNoteChange(bus, ctx.principal, conflict.id, 'updated')
        } else if (outcome.kind === 'not_found') {
          creates.push(fields) // deleted since it was read: import the note instead
        } else if (
          outcome.current.body === note.body &&
          sameTags(outcome.current.tags, note.tags)
        ) {
          result.overwritten++ // an earlier run of this task overwrote it
        } else {
          result.notOverwritten.push(note.title)
        }
      }
    }
    if (result.overwritten + result.skipped + result.notOverwritten.length > 0) progress()

    for (let at = 0; at < creates.length; at += IMPORT_BATCH_NOTES) {
      ctx.signal.throwIfAborted()
      const batch = creates.slice(at, at + IMPORT_BATCH_NOTES)
      // Skips the ids an earlier run of this task created: each note is created once.
      if ((await store.importNotes(ctx.principal, batch, now())) > 0)
        await publishNoteChange(bus, ctx.principal, batch[0]!.id, 'created')
      result.created += batch.length
      progress()
    }
    return importResult(result)
  },
})

export const exportNotes = tool({
  name: 'export_notes',
  title: 'Export notes',
  description:
    'Export your notes (all of them, or those carrying one tag) as one markdown bundle, oldest ' +
    'first, each note under its "# Title" heading with its tags; import_notes reads it back. ' +
    'Runs as a task, so the client must support tasks. ' +
    `Up to ${MAX_EXPORT_BYTES} bytes: export by tag beyond that.`,
  input: z.strictObject({
    tag: tagField.optional().describe('Export only the notes with this tag.'),
  }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  scopes: READ,
  task: 'required',
  async run({ tag }, ctx) {
    await ctx.startTask()
    const parts: string[] = []
    let bytes = 0
    for await (const page of notesToExport(ctx, tag)) {
      for (const note of page) {
        const markdown = renderNoteMarkdown(note)
        bytes += storedBytes(markdown) + STORED_SEPARATOR_BYTES
        if (bytes > MAX_EXPORT_BYTES)
          return toolError(
            `The export is larger than ${MAX_EXPORT_BYTES} bytes; export one tag at a time (see list_tags).`
          )
        parts.push(markdown)
      }
      ctx.progress(parts.length, undefined, `Exported ${notesCount(parts.length)}.`)
    }
    const which = tag === undefined ? '' : ` tagged "${tag}"`
    return {
      content: [
        {
          type: 'text',
          text:
            parts.length === 0
              ? `No notes${which} to export.`
              : `Exported ${notesCount(parts.length)}${which}.`,
        },
        {
          type: 'resource',
          resource: {
            uri:
              tag === undefined
                ? 'notes://export'
                : `notes://export?tag=${encodeURIComponent(tag)}`,
            mimeType: NOTE_MIME_TYPE,
            text: parts.join('\n'),
          },
        },
      ],
    }
  },
})
