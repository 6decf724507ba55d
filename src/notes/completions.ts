/**
 * @module notes/completions
 * Argument completions shared by the notes prompts and the `note://{id}` template: the caller's note
 * ids and tags by prefix. The store is asked for one value more than the engine sends, so the answer
 * can say truthfully whether more exist (without claiming a total it does not know).
 */
import type { Completer, Completion } from '../mcp/definitions.ts'
import { COMPLETION_FETCH } from './limits.ts'
import type { NotesApp } from './app.ts'

function bounded(values: string[]): Completion {
  return values.length < COMPLETION_FETCH ? values : { values }
}

export const completeNoteIds: Completer<NotesApp> = async (value, { ctx }) =>
  bounded(await ctx.app.notes.completeIds(ctx.principal, value, COMPLETION_FETCH))

export const completeTags: Completer<NotesApp> = async (value, { ctx }) =>
  bounded(
    await ctx.app.notes.completeTags(ctx.principal, value.trim().toLowerCase(), COMPLETION_FETCH)
  )
