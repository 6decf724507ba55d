/**
 * @module storage/common/notes
 * What every adapter's note methods ({@link NoteMethods}) decide the same way: the checks of an
 * import and of a bulk delete, what `deleteMany` and `delete` answer from the rows deleted, tag
 * normalisation, the paging check and the page built from a `LIMIT limit + 1` read. Runtime-neutral:
 * only the store contract and the note-id pattern of `notes/limits.ts`.
 */
import { NOTE_ID_PATTERN } from '../../notes/limits.ts'
import {
  MAX_DELETE_NOTES,
  MAX_IMPORT_NOTES,
  type NewNote,
  type Note,
  type NotesStore,
  type OnceOutcome,
  type Page,
} from '../../notes/store.ts'

/** The note methods of the store contract: one port module per dialect implements them. */
export type NoteMethods = Pick<
  NotesStore,
  | 'create'
  | 'importNotes'
  | 'get'
  | 'update'
  | 'delete'
  | 'deleteMany'
  | 'list'
  | 'search'
  | 'listTags'
  | 'completeIds'
  | 'completeTags'
>

/**
 * `importNotes`'s precondition on every adapter: throws `RangeError` for more than
 * `MAX_IMPORT_NOTES` notes or an id that is not of the form `newNoteId` (`notes/note-id.ts`) mints.
 */
export function checkImport(notes: ReadonlyArray<NewNote & { id: string }>): void {
  if (notes.length > MAX_IMPORT_NOTES) {
    throw new RangeError(`at most ${MAX_IMPORT_NOTES} notes may be imported at once`)
  }
  for (const { id } of notes) {
    if (typeof id !== 'string' || !NOTE_ID_PATTERN.test(id)) {
      throw new RangeError('an imported note id must be n_ followed by 16 base64url characters')
    }
  }
}

/** `deleteMany`'s precondition on every adapter: throws `RangeError` for more than `MAX_DELETE_NOTES` ids. */
export function checkDeleteMany(ids: readonly string[]): void {
  if (ids.length > MAX_DELETE_NOTES) {
    throw new RangeError(`at most ${MAX_DELETE_NOTES} notes may be deleted at once`)
  }
}

/** What `deleteMany` answers: the ids of `ids` the database deleted, in their order, each once. */
export function deletedInOrder(ids: readonly string[], deleted: readonly string[]): string[] {
  const gone = new Set(deleted)
  return [...new Set(ids)].filter((id) => gone.has(id))
}

/** `delete` on every adapter: the `deleteMany` of its one id, answering whether it deleted it. */
export function oneDeleted(outcome: OnceOutcome<string[]>): OnceOutcome<boolean> {
  return outcome.kind === 'done' ? { kind: 'done', value: outcome.value.length > 0 } : outcome
}

/** Tags as stored: each once, sorted by code unit. */
export function sortedTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort()
}

/** Throws `RangeError` unless `offset` is a non-negative and `limit` a positive integer. */
export function checkPaging(offset: number, limit: number): void {
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError('offset must be a non-negative integer')
  }
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
}

/**
 * One page from rows fetched with `LIMIT limit + 1`: the extra row only tells that another page
 * follows.
 */
export function toPage<Row>(
  rows: readonly Row[],
  offset: number,
  limit: number,
  toNote: (row: Row) => Note
): Page<Note> {
  const items = rows.slice(0, limit).map(toNote)
  return rows.length > limit ? { items, nextOffset: offset + limit } : { items }
}
