/**
 * @module notes/limits
 * Every bound the notes application puts on its inputs and outputs, as named constants: field lengths
 * and counts of tool arguments, page sizes, how much note text may reach the host's model, and the
 * lifetime of a share approval, what one bulk delete, import or export may hold. Nothing here has
 * behaviour; `schemas.ts` turns these numbers into zod schemas, and the tools, resources, prompts and
 * the share page read them from here (the import's internal batch and page sizes stay with it).
 */

/** Longest note title, in characters (after trimming; an empty title is refused). */
export const MAX_TITLE_CHARS = 200
/** Longest note body (markdown), in characters. */
export const MAX_BODY_CHARS = 100_000
/** Most tags on one note, and in one tag filter. */
export const MAX_TAGS = 20
/** Longest tag, in characters. */
export const MAX_TAG_CHARS = 40
/** A tag after trimming: letters, digits, `-` and `_` (stored lower-cased). */
export const TAG_PATTERN = /^[A-Za-z0-9_-]+$/
/** Note ids as the stores mint them: `n_` and 16 base64url characters (96 random bits). */
export const NOTE_ID_PATTERN = /^n_[A-Za-z0-9_-]{16}$/
/** Largest `expectedVersion` accepted by `update_note`. */
export const MAX_NOTE_VERSION = Number.MAX_SAFE_INTEGER

/** Longest free-text search query, in characters. */
export const MAX_QUERY_CHARS = 500
/** Results per `search_notes` page: default and maximum. */
export const DEFAULT_SEARCH_LIMIT = 10
export const MAX_SEARCH_LIMIT = 50
/** Longest `search_notes` cursor accepted, in characters (real cursors are far shorter). */
export const MAX_CURSOR_CHARS = 200
/** Characters of a note body shown as the excerpt of a search hit. */
export const EXCERPT_CHARS = 160

/** Notes `summarize_notes` reads: default and maximum. */
export const DEFAULT_SUMMARY_NOTES = 10
export const MAX_SUMMARY_NOTES = 20
/** Characters of each note's body sent to the host's model when summarising. */
export const MAX_SAMPLED_BODY_CHARS = 4_000
/** `maxTokens` of the sampling request of `summarize_notes`. */
export const SUMMARY_MAX_TOKENS = 800
/** Characters of the first sentence quoted per note by the extractive summary. */
export const EXTRACT_CHARS = 200

/** Longest `focus` argument of the `review_note` prompt, in characters. */
export const MAX_FOCUS_CHARS = 300
/** Days back the `weekly_digest` prompt looks, and how many notes it embeds at most. */
export const DIGEST_DAYS = 7
export const MAX_DIGEST_NOTES = 10
/** Characters of note markdown the digest embeds in total; later notes are linked, not embedded. */
export const MAX_DIGEST_CHARS = 40_000

/**
 * Values asked of the store per completion. The engine sends at most 100 and reports `hasMore` when it
 * received more, so asking for one extra makes `hasMore` exact (see notes/completions.ts).
 */
export const COMPLETION_FETCH = 101

/** How long a share approval page can be decided, in milliseconds. */
export const SHARE_REQUEST_TTL_MS = 10 * 60_000
/** Random bytes in a share-request id, a read-only link id and a CSRF token (256 bits). */
export const SHARE_TOKEN_BYTES = 32
/** What such a token looks like: unpadded base64url of `SHARE_TOKEN_BYTES` bytes. */
export const SHARE_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/

/**
 * Most notes one `delete_notes_by_tag` call offers: a form stays readable; call again for more. Far
 * below the store's `MAX_DELETE_NOTES`, so a whole selection always fits one `deleteMany`.
 */
export const MAX_BULK_NOTES = 20

/** Longest markdown `import_notes` reads, in characters (the HTTP body limit usually comes first). */
export const MAX_IMPORT_CHARS = 16 * 1024 * 1024
/** Most notes one `import_notes` call creates. */
export const MAX_IMPORTED_NOTES = 5_000
/** Most notes an import without a task (the client did not declare the extension) may hold. */
export const MAX_SYNC_IMPORT_NOTES = 50
/** Conflicting titles one form asks about. */
export const MAX_CONFLICTS_PER_ASK = 20
/**
 * Largest export bundle, in UTF-8 bytes as the task record stores it (the JSON text of its result,
 * where a control character, quote or backslash counts as its escape): the result is kept in the
 * task record, and 1 MiB is what every store (D1 included) holds in one field.
 */
export const MAX_EXPORT_BYTES = 1_000_000
