/**
 * @module notes/completions
 * Argument completions shared by the notes prompts and the `note://{id}` template: the caller's note
 * ids and tags by prefix. The store is asked for one value more than the engine sends, so the answer
 * can say truthfully whether more exist (without claiming a total it does not know).
 */
import type { Completer, Completion } from 'stateless-mcp'
import { COMPLETION_FETCH } from './limits.ts'
import type { NotesDeps } from './deps.ts'

function bounded(values: string[]): Completion {
  return values.length < COMPLETION_FETCH ? values : { values }
}

export const completeNoteIds: Completer<NotesDeps> = async (value, { ctx }) =>
  bounded(await ctx.deps.notes.completeIds(ctx.principal, value, COMPLETION_FETCH))

export const completeTags: Completer<NotesDeps> = async (value, { ctx }) =>
  bounded(
    await ctx.deps.notes.completeTags(ctx.principal, value.trim().toLowerCase(), COMPLETION_FETCH)
  )
