/**
 * @module storage/common/notes
 * What every adapter's note methods ({@link NoteMethods}) decide the same way: the note a row maps
 * to ({@link noteOf}), the checks of an
 * import and of a bulk delete, what `deleteMany` answers from the rows deleted, `delete` itself
 * ({@link withDeleteOne}), what a missed `update` answers, tag normalisation, the paging check and the
 * page built from a `LIMIT limit + 1` read, the check of a title lookup, and the cursor of
 * `listByCreation` (the row's immutable `seq`, as a decimal string). Runtime-neutral:
 * only the store contract, the note-id pattern of `notes/limits.ts` and the engine's store-kit types.
 */
import type { PortMethods } from 'stateless-mcp/compose'
import { NOTE_ID_PATTERN } from '../../notes/limits.ts'
import {
  MAX_DELETE_NOTES,
  MAX_FIND_TITLES,
  MAX_IMPORT_NOTES,
  type CreationPage,
  type NewNote,
  type Note,
  type NotesStore,
  type Page,
  type UpdateOutcome,
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
  | 'findByTitles'
  | 'listByCreation'
  | 'listTags'
  | 'completeIds'
  | 'completeTags'
>

/** A note row as every adapter selects it: `tags` as the adapter stores them, integers as the driver returns them. */
export type NoteRow<Tags> = {
  id: string
  title: string
  body: string
  tags: Tags
  created_at: number | string
  updated_at: number | string
  version: number | string
}

/**
 * A stored note: `tags` reads its stored tags, `text` undoes the adapter's escaping of stored
 * strings, if any.
 */
export function noteOf<Tags>(
  row: NoteRow<Tags>,
  tags: (stored: Tags) => string[],
  text: (stored: string) => string = (stored) => stored
): Note {
  return {
    id: text(row.id),
    title: text(row.title),
    body: text(row.body),
    tags: tags(row.tags),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    version: Number(row.version),
  }
}

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

/**
 * A dialect's note methods with `delete`, the same on every adapter: the dialect's own `deleteMany`
 * of its one id (so its transaction and once-key), answering whether it deleted it. The dialect's
 * method, not the store's: a store whose methods are wrapped (the PostgreSQL outage breaker,
 * `withOutages`) would otherwise run one call through its wrapper twice, and a breaker probing for
 * the server refuses the inner call, so a server back from an outage would stay refused for as
 * long as only deletes came.
 */
export function withDeleteOne<Handle>(
  methods: PortMethods<Omit<NoteMethods, 'delete'>, Handle, NotesStore>
): PortMethods<NoteMethods, Handle, NotesStore> {
  const { deleteMany } = methods
  return {
    ...methods,
    async delete(principal, id, onceKey) {
      const outcome = await deleteMany.call(this, principal, [id], onceKey)
      return outcome.kind === 'done' ? { kind: 'done', value: outcome.value.length > 0 } : outcome
    },
  }
}

/**
 * What `update` answers when its conditional write did not apply, from the note read after it:
 * `not_found` without one, else a version conflict with the note as it is.
 */
export function updateMissed(current: Note | undefined): UpdateOutcome {
  return current === undefined ? { kind: 'not_found' } : { kind: 'conflict', current }
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

/**
 * `findByTitles`'s precondition on every adapter: throws `RangeError` for more than
 * `MAX_FIND_TITLES` titles. Answers the titles each once.
 */
export function distinctTitles(titles: readonly string[]): string[] {
  if (titles.length > MAX_FIND_TITLES) {
    throw new RangeError(`at most ${MAX_FIND_TITLES} titles may be looked up at once`)
  }
  return [...new Set(titles)]
}

/** A cursor `listByCreation` answers: a row's `seq` in decimal (a safe integer: checked once read). */
const CREATION_CURSOR = /^(0|[1-9][0-9]{0,15})$/

/**
 * The `seq` after which a `listByCreation` page starts (0, before every note, without `after`).
 * Throws `RangeError` for an `after` no page answered, or a `limit` that is not a positive integer.
 */
export function creationStart(after: string | undefined, limit: number): number {
  checkPaging(0, limit)
  if (after === undefined) return 0
  const seq = CREATION_CURSOR.test(after) ? Number(after) : Number.NaN
  if (!Number.isSafeInteger(seq)) throw new RangeError('after must be the next of an earlier page')
  return seq
}

/**
 * One `listByCreation` page from rows fetched in `seq` order with `LIMIT limit + 1`: the extra row
 * only tells that another page follows, which starts after the last row kept.
 */
export function toCreationPage<Row extends { seq: number | string }>(
  rows: readonly Row[],
  limit: number,
  toNote: (row: Row) => Note
): CreationPage {
  const kept = rows.slice(0, limit)
  const items = kept.map(toNote)
  return rows.length > limit ? { items, next: String(kept[kept.length - 1]!.seq) } : { items }
}
