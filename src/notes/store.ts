/**
 * @module notes/store
 * The `NotesStore` contract every storage adapter implements (node:sqlite, PostgreSQL, D1), and the
 * note and share-request shapes. Adapters own persistence, migrations, full-text search and atomicity;
 * the notes application owns validation, limits and wording. Every method is scoped to a principal:
 * one principal can never read, change or learn of another's notes. The engine's state (2025-era
 * sessions, their streams, tasks) is not here: it is the engine's own store (`EngineStore`), which a
 * deployment keeps in the same database. `importNotes` is the idempotent bulk insert behind task steps that may run again
 * after their replica died: it creates notes under ids the caller chose (and journaled) once.
 * `deleteMany` is its counterpart for a chosen set of notes: all of them go in one transaction that
 * spends a single-use key, so a flow that dies part-way (a 2025-era flow cannot re-send its final
 * round) leaves either nothing or the whole selection deleted, never half of it. The reads a task
 * makes of many notes while others write are consistent: `findByTitles` finds an import's
 * conflicting titles in one read, and `listByCreation` pages by a key no write changes (an export
 * has every note that exists throughout it exactly once), where `list`'s offsets over a recency order
 * skip or repeat notes that move between two pages.
 *
 * Every row that can outlive its use has a lifetime, and `purgeExpired` removes the rows whose lifetime
 * is over, a bounded number per call (the runtime entries sweep on a timer or a cron trigger): spent
 * single-use keys and unpublished share requests are kept for {@link REPLAY_RETENTION_MS} after their
 * last use, because a sealed state still in flight may refer to them until then. Published shares
 * and their links do not expire.
 *
 * Errors every adapter shares (defined once, so `instanceof` holds whichever adapter threw):
 * {@link ShareNotApprovedError} from `publishShare`, and the engine's `StoreNotMigratedError` from
 * any method called before `migrate()` or after `close()`. A store whose database cannot be reached throws the
 * engine's `StoreUnavailableError` (`mcp/errors.ts`: the engine and the HTTP layer answer it 503),
 * having changed nothing; the PostgreSQL adapter does (`storage/postgres/outage.ts`).
 */

import type { StoreLifecycle } from 'stateless-mcp'

/**
 * How long a row that a sealed `requestState` may still refer to is kept after its last use: a spent
 * single-use key after it was spent (a retry of the round that spent it must still answer
 * `already_done`), an unpublished share request after its `expiresAt` (a retry of a round sealed before
 * the deadline may still publish an approved share). A state lives at most STATE_TTL_SECONDS, which
 * configuration caps at 86 400 s; twice that leaves a day of margin for replicas whose clocks disagree.
 */
export const REPLAY_RETENTION_MS = 2 * 86_400_000

export interface Note {
  id: string
  title: string
  /** Markdown. */
  body: string
  /** Lower-case, unique, sorted. */
  tags: string[]
  /** Milliseconds since the epoch. */
  createdAt: number
  updatedAt: number
  /** Starts at 1; every successful update adds 1. */
  version: number
}

/** Most notes one `importNotes` call accepts. */
export const MAX_IMPORT_NOTES = 1000

/** Most ids one `deleteMany` call accepts. */
export const MAX_DELETE_NOTES = 1000

/**
 * Most titles one `findByTitles` call accepts: a read's titles stay far below D1's 2 MB bound on one
 * parameter (500 titles of at most 200 characters), and an import looks its titles up in reads of
 * this many.
 */
export const MAX_FIND_TITLES = 500

/** A note as `findByTitles` answers it: which note carries the title, at which version. */
export type NoteTitle = Pick<Note, 'id' | 'title' | 'version'>

export interface NewNote {
  title: string
  body: string
  tags: string[]
}

export interface NotePatch {
  title?: string
  body?: string
  tags?: string[]
}

export interface Page<T> {
  items: T[]
  /** Offset of the next page; absent on the last page. */
  nextOffset?: number
}

export interface SearchQuery {
  /** Free text; every word must match (prefix match on the last word). Empty matches every note. */
  text: string
  /** When set, only notes carrying every one of these tags. */
  tags?: string[]
  offset: number
  limit: number
}

export interface CreationQuery {
  /** When set, only notes carrying every one of these tags. */
  tags?: string[]
  /** The `next` of the page before; absent for the first page. */
  after?: string
  limit: number
}

export interface CreationPage {
  items: Note[]
  /** Where the next page starts (pass it as `after`); absent on the last page. */
  next?: string
}

export type UpdateOutcome =
  { kind: 'updated'; note: Note } | { kind: 'not_found' } | { kind: 'conflict'; current: Note }

/** Outcome of a side effect guarded by a single-use key (the sealed state's nonce). */
export type OnceOutcome<T> = { kind: 'done'; value: T } | { kind: 'already_done' }

export type ShareStatus = 'pending' | 'approved' | 'refused'

export interface ShareRequest {
  /** Unguessable id (≥128 bits, base64url) that appears in the approval URL. */
  id: string
  principal: string
  noteId: string
  status: ShareStatus
  /** Milliseconds since the epoch; after this the request can no longer be decided. */
  expiresAt: number
  /** Set once the approved share was published: the id of the read-only link. */
  linkId?: string
}

export type DecideOutcome = 'decided' | 'already_decided' | 'expired' | 'not_found'

/** `publishShare` was asked for a share that does not exist, is another principal's, or is not approved. */
export class ShareNotApprovedError extends Error {
  override name = 'ShareNotApprovedError'
}

export { StoreNotMigratedError } from 'stateless-mcp/compose'

export interface NotesStore extends StoreLifecycle {
  create(principal: string, note: NewNote, now: number): Promise<Note>
  /**
   * Creates the notes under the ids given (version 1, created and updated at `now`) in one
   * transaction, skipping every id that already names a note, of this principal or of any other
   * (which is left untouched and not revealed), and answers how many it created: a second call with
   * the same ids creates none. Throws `RangeError`, creating nothing, for more than
   * {@link MAX_IMPORT_NOTES} notes or an id not of the stores' own form (`n_` and 16 base64url
   * characters).
   */
  importNotes(
    principal: string,
    notes: Array<NewNote & { id: string }>,
    now: number
  ): Promise<number>
  get(principal: string, id: string): Promise<Note | undefined>
  /** Applies the patch only if the stored version equals `expectedVersion`. */
  update(
    principal: string,
    id: string,
    expectedVersion: number,
    patch: NotePatch,
    now: number
  ): Promise<UpdateOutcome>
  /**
   * Deletes the note and records `onceKey` in the same transaction. A second call with the same key
   * answers `already_done` and changes nothing, on any replica sharing the store.
   */
  delete(principal: string, id: string, onceKey: string): Promise<OnceOutcome<boolean>>
  /**
   * Spends `onceKey` and deletes every listed note of the principal, in one transaction, and answers
   * the ids it deleted, in the order given, each once. An id naming no note of this principal
   * (already gone, never there, another principal's) is simply not in the answer, and another
   * principal's note is left untouched. A second call with the same key (or one a `delete` or
   * `publishShare` spent) answers `already_done` and changes nothing, on any replica sharing the
   * store; calls racing with one key delete once. A call that fails part-way deletes nothing and
   * leaves the key unspent; an empty list only spends the key. Throws `RangeError`, changing nothing,
   * for more than {@link MAX_DELETE_NOTES} ids.
   */
  deleteMany(
    principal: string,
    ids: readonly string[],
    onceKey: string
  ): Promise<OnceOutcome<string[]>>
  /** Notes of the principal, most recently updated first. */
  list(principal: string, offset: number, limit: number): Promise<Page<Note>>
  /** Full-text search over title, body and tags, best match first. */
  search(principal: string, query: SearchQuery): Promise<Page<Note>>
  /**
   * For each of `titles` (exact, case-sensitive) that notes of the principal carry, the most
   * recently updated of them (the first of them `list` shows), in no particular order and each
   * title once, without its body and tags. One read: a note that keeps its title throughout the call
   * is found, whatever else is written meanwhile. Throws `RangeError` for more than
   * {@link MAX_FIND_TITLES} titles.
   */
  findByTitles(principal: string, titles: readonly string[]): Promise<NoteTitle[]>
  /**
   * Notes of the principal in the order they were created (oldest first), a page at a time. Pages
   * follow a key no write changes, so a note that exists from the first page's read to the last
   * page's is in exactly one page, whatever is created, updated or deleted meanwhile (a note created
   * or deleted meanwhile may or may not be). Throws `RangeError` for an `after` that is not a `next`
   * of this store, or a `limit` that is not a positive integer.
   */
  listByCreation(principal: string, query: CreationQuery): Promise<CreationPage>
  /** Every tag of the principal with its number of notes, by tag name. */
  listTags(principal: string): Promise<Array<{ tag: string; count: number }>>
  /** Up to `limit` note ids starting with `prefix`, for completions. */
  completeIds(principal: string, prefix: string, limit: number): Promise<string[]>
  /** Up to `limit` tags starting with `prefix`, for completions. */
  completeTags(principal: string, prefix: string, limit: number): Promise<string[]>

  /** Share approvals behind the url-mode elicitation of `share_note`. */
  createShareRequest(request: Omit<ShareRequest, 'status' | 'linkId'>): Promise<ShareRequest>
  getShareRequest(id: string): Promise<ShareRequest | undefined>
  /** Records the decision once; later calls answer `already_decided` and change nothing. */
  decideShareRequest(
    id: string,
    decision: 'approved' | 'refused',
    now: number
  ): Promise<DecideOutcome>
  /**
   * Publishes an approved share as a read-only link, once: records `onceKey` and the link in one
   * transaction; a second call with the same key (or for a share already published) answers
   * `already_done`.
   */
  publishShare(
    principal: string,
    shareId: string,
    linkId: string,
    onceKey: string
  ): Promise<OnceOutcome<string>>
  /** The note behind a published read-only link, if the link exists and the note still does. */
  getSharedNote(linkId: string): Promise<Note | undefined>

  /**
   * Removes at most `limit` rows whose lifetime ended at or before `now` (milliseconds since the
   * epoch), from every table with one, and answers how many it removed: fewer than `limit` means
   * nothing more had expired. Live rows are never touched; safe to run on several replicas at once.
   * Throws `RangeError` unless `now` is finite and `limit` a positive integer.
   */
  purgeExpired(now: number, limit: number): Promise<number>
}
