/**
 * @module notes/bulk-tools
 * `delete_notes_by_tag`, the notes application's three-round flow:
 * 1. a form (`select`) asks which of the caller's notes carrying the tag to delete: a multi-select
 *    of note ids titled by the notes' titles (at most {@link MAX_BULK_NOTES}, the most recently
 *    updated, listed by id);
 * 2. a form (`confirm`) asks to confirm, naming how many notes go;
 * 3. the chosen notes are deleted, all together and at most once, and the result reports what was
 *    deleted, kept and already gone.
 * Declining or cancelling either form deletes nothing.
 *
 * Determinism across rounds: the candidate list is read once, in the first round (`ctx.once`), so
 * every later round shows the person the very question they answered, even if notes with the tag
 * come and go meanwhile. A selection naming a note that was not offered fails the form's validation
 * and the engine asks again.
 *
 * All or nothing, exactly once: the final round deletes the whole selection with one
 * `NotesStore.deleteMany`, one transaction that also spends the round's idempotency key. A round
 * that dies part-way (its replica killed, the store unreachable) has deleted nothing or everything,
 * never part of the selection, which matters because a 2025-era client cannot re-send it (its flow
 * runs inside one POST). A duplicated or retried final round (on any replica) finds the key spent
 * and deletes nothing. It cannot read the first round's result (that round was the last: no sealed
 * state carries it), and the key remembers only that it was spent, so the tool rebuilds the answer
 * from what exists now, without a journal: every chosen note that no longer exists counts as
 * deleted by this flow, since the first round deleted every chosen note there was and the selection
 * was the person's; a chosen note that exists (created again under its id since) is reported kept.
 * This matches the first answer except for a note someone else deleted before the first final round
 * (`alreadyGone` then, `deleted` in the duplicate). Change events are published by the round that
 * deleted, after the delete, and never again: a duplicate does not repeat them, so a round that died
 * before publishing leaves them unsent.
 *
 * Every non-error answer is structured (`BulkDeleteSchema`) with a sentence for people after it.
 * Storage, validation of answers and the wire belong to the store and the engine.
 */
import * as z from 'zod'
import { defineForm, definitions, structured, titledEnum, toolError } from 'stateless-mcp'
import { publishNoteChange } from './changes.ts'
import { MAX_BULK_NOTES } from './limits.ts'
import { tagField } from './schemas.ts'
import type { NotesDeps } from './deps.ts'
import { WRITE } from './scopes.ts'

const { tool } = definitions<NotesDeps>()

interface NoteRef {
  id: string
  title: string
}

const NoteRefSchema = z.object({ id: z.string(), title: z.string() })

const BulkDeleteSchema = z.object({
  tag: z.string(),
  outcome: z.enum(['deleted', 'declined', 'cancelled', 'none_selected']),
  /** Notes this flow deleted. */
  deleted: z.array(NoteRefSchema),
  /**
   * Offered notes left in place: those not chosen, all of them when nothing was deleted, and on a
   * duplicated final round a chosen note that exists again.
   */
  kept: z.array(NoteRefSchema),
  /** Chosen notes that were already gone when the final round ran (deleted elsewhere). */
  alreadyGone: z.array(NoteRefSchema),
})

type BulkDelete = z.output<typeof BulkDeleteSchema>

const CONFIRM = defineForm(z.object({ confirm: z.boolean().meta({ title: 'Delete permanently' }) }))

/** The selection form of one flow, built per request from its (journaled) candidates. */
function selectionSchema(candidates: NoteRef[]) {
  const titles = Object.fromEntries(candidates.map((note) => [note.id, note.title]))
  return z.object({
    notes: z
      .array(titledEnum(titles))
      .max(candidates.length)
      .default([])
      .meta({ title: 'Notes to delete' }),
  })
}

function byId(a: NoteRef, b: NoteRef): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

function plural(count: number): string {
  return count === 1 ? '1 note' : `${count} notes`
}

function bulkResult(summary: BulkDelete, sentence: string) {
  return structured(summary, [{ type: 'text', text: sentence }])
}

/** The result of a final round that ran: what it deleted, kept and found already gone. */
function deletedResult(tag: string, deleted: NoteRef[], kept: NoteRef[], alreadyGone: NoteRef[]) {
  const gone = alreadyGone.length > 0 ? ` ${plural(alreadyGone.length)} had already gone.` : ''
  return bulkResult(
    { tag, outcome: 'deleted', deleted, kept, alreadyGone },
    `Deleted ${plural(deleted.length)} tagged "${tag}"; kept ${plural(kept.length)}.${gone}`
  )
}

export const deleteNotesByTag = tool({
  name: 'delete_notes_by_tag',
  title: 'Delete notes by tag',
  description:
    'Delete some of the notes carrying a tag: the user picks which in a form (up to ' +
    `${MAX_BULK_NOTES} of the most recent are offered), then confirms in a second one. Needs a ` +
    'client that supports form elicitation.',
  input: z.strictObject({ tag: tagField.describe('The tag whose notes to offer.') }),
  output: BulkDeleteSchema,
  annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  scopes: WRITE,
  async run({ tag }, ctx) {
    // Read once, in the first round; later rounds replay it, so the questions never change.
    const found = await ctx.once('candidates', async () => {
      const page = await ctx.deps.notes.search(ctx.principal, {
        text: '',
        tags: [tag],
        offset: 0,
        limit: MAX_BULK_NOTES,
      })
      return {
        notes: page.items.map((note) => ({ id: note.id, title: note.title })).sort(byId),
        more: page.nextOffset !== undefined,
      }
    })
    const candidates = found.notes
    if (candidates.length === 0) {
      return toolError(`No note carries the tag "${tag}". See list_tags for the tags in use.`)
    }
    const nothing = (outcome: BulkDelete['outcome'], sentence: string) =>
      bulkResult({ tag, outcome, deleted: [], kept: candidates, alreadyGone: [] }, sentence)

    const scope = found.more
      ? `the ${candidates.length} most recent notes tagged "${tag}" (more carry it)`
      : `the ${plural(candidates.length)} tagged "${tag}"`
    const selection = await ctx.elicit('select', {
      message: `Which of ${scope} should be deleted?`,
      schema: selectionSchema(candidates),
    })
    if (selection.action === 'decline') return nothing('declined', 'Nothing deleted.')
    if (selection.action === 'cancel') {
      return nothing('cancelled', 'Nothing deleted; ask again later.')
    }
    const chosen = new Set<string>(selection.content.notes)
    const selected = candidates.filter((note) => chosen.has(note.id))
    const kept = candidates.filter((note) => !chosen.has(note.id))
    if (selected.length === 0) return nothing('none_selected', 'No note selected; nothing deleted.')

    const confirm = await ctx.elicit('confirm', {
      message:
        `Delete ${plural(selected.length)} of the ${plural(candidates.length)} tagged "${tag}"? ` +
        'This cannot be undone.',
      schema: CONFIRM.schema,
    })
    if (confirm.action === 'cancel')
      return nothing('cancelled', 'Nothing deleted; ask again later.')
    if (confirm.action === 'decline' || !confirm.content.confirm) {
      return nothing('declined', 'Nothing deleted.')
    }

    const ids = selected.map((note) => note.id)
    const outcome = await ctx.deps.notes.deleteMany(ctx.principal, ids, ctx.idempotencyKey)
    if (outcome.kind === 'already_done') {
      // A duplicated final round: rebuilt from what exists now (see the module header).
      const present = await Promise.all(ids.map((id) => ctx.deps.notes.get(ctx.principal, id)))
      const deleted = selected.filter((_, i) => present[i] === undefined)
      const left = selected.filter((_, i) => present[i] !== undefined)
      return deletedResult(tag, deleted, [...kept, ...left].sort(byId), [])
    }
    const removed = new Set(outcome.value)
    const deleted = selected.filter((note) => removed.has(note.id))
    for (const note of deleted) {
      await publishNoteChange(ctx.deps.bus, ctx.principal, note.id, 'deleted')
    }
    const alreadyGone = selected.filter((note) => !removed.has(note.id))
    return deletedResult(tag, deleted, kept, alreadyGone)
  },
})
