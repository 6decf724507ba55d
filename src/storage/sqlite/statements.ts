/**
 * @module storage/sqlite/statements
 * The SQLite dialect of the notes store, shared by node:sqlite and D1: every statement the port
 * modules of this folder run (notes, search, single-use keys, share requests and links, the purge of
 * their expired rows). Statements use numbered parameters (`?1`, `?2`…), which both drivers bind
 * positionally; each statement's comment lists them, and a statement that decides a check-and-set
 * returns a row (or changes one) only when it applied. Runtime-neutral text and the fresh claim the
 * once-key statements bind ({@link newClaim}); the tables are `schema.ts`'s.
 */
import { randomBase64url } from 'stateless-mcp'
import { REPLAY_RETENTION_MS } from '../../notes/store.ts'

/** Weights of the FTS columns (title, body, tags) in bm25 ranking: title above tags above body. */
const BM25_WEIGHTS = '4.0, 1.0, 2.0'
const NOTE_COLUMNS = 'n.id, n.title, n.body, n.tags, n.created_at, n.updated_at, n.version'
const RETURNING_NOTE = 'RETURNING id, title, body, tags, created_at, updated_at, version'

/** Keeps only notes carrying every tag of the JSON array `?2` (`?3` distinct tags). */
const TAG_FILTER = `(?3 = 0 OR (
  SELECT count(DISTINCT t.value) FROM json_each(n.tags) AS t
  WHERE t.value IN (SELECT value FROM json_each(?2))
) = ?3)`

/** The condition that the once-key bound at placeholder `key` carries this call's claim (at `claim`). */
const CLAIMED = (key: string, claim: string) =>
  `EXISTS (SELECT 1 FROM used_keys WHERE once_key = ${key} AND claim = ${claim})`

/** A fresh claim: 128 random bits proving which call spent a once-key (see {@link CLAIMED}). */
export function newClaim(): string {
  return randomBase64url(16)
}

/** Every statement. A statement that decides a check-and-set returns a row only when it applied. */
export const SQL = {
  /** ?1 id, ?2 principal, ?3 title, ?4 body, ?5 tags JSON, ?6 now. */
  insertNote: `
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)
    ${RETURNING_NOTE}`,
  /** ?1 principal, ?2 id. */
  getNote: `SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND n.id = ?2`,
  /** ?1 principal, ?2 id, ?3 expected version, ?4 title, ?5 body, ?6 tags JSON (null: keep), ?7 now. */
  updateNote: `
    UPDATE notes SET
      title = coalesce(?4, title),
      body = coalesce(?5, body),
      tags = coalesce(?6, tags),
      updated_at = ?7,
      version = version + 1
    WHERE principal = ?1 AND id = ?2 AND version = ?3
    ${RETURNING_NOTE}`,
  /**
   * ?1 id, ?2 principal, ?3 title, ?4 body, ?5 tags JSON, ?6 now. Returns a row only when it created
   * the note: an id naming a note of any principal is skipped (writes are serialised, so the check
   * and the insert cannot be split by another writer).
   */
  importNote: `
    INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6, 1
    WHERE NOT EXISTS (SELECT 1 FROM notes WHERE id = ?1)
    RETURNING id`,
  /** ?1 key, ?2 now, ?3 claim. Returns a row only when this statement spent the key. */
  spendKey: `
    INSERT INTO used_keys (once_key, used_at, claim) VALUES (?1, ?2, ?3)
    ON CONFLICT DO NOTHING RETURNING once_key`,
  /**
   * ?1 principal, ?2 ids (a JSON array of strings); deletes only when the key ?3 carries this call's
   * claim ?4. The FTS5 delete trigger keeps the search index in step.
   */
  deleteNotes: `
    DELETE FROM notes
    WHERE principal = ?1 AND id IN (SELECT value FROM json_each(?2)) AND ${CLAIMED('?3', '?4')}
    RETURNING id`,
  /** ?1 key. */
  keyUsed: `SELECT 1 AS used FROM used_keys WHERE once_key = ?1`,
  /** ?1 principal, ?2 limit, ?3 offset. */
  listNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?2 OFFSET ?3`,
  /** ?1 principal, ?2 tags JSON, ?3 tag count, ?4 limit, ?5 offset. */
  filterNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes AS n WHERE n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?4 OFFSET ?5`,
  /** As `filterNotes`, plus ?6 the FTS5 match expression (`ftsMatch` of notes.ts). */
  searchNotes: `
    SELECT ${NOTE_COLUMNS} FROM notes_fts JOIN notes AS n ON n.seq = notes_fts.rowid
    WHERE notes_fts MATCH ?6 AND n.principal = ?1 AND ${TAG_FILTER}
    ORDER BY bm25(notes_fts, ${BM25_WEIGHTS}), n.updated_at DESC, n.seq DESC
    LIMIT ?4 OFFSET ?5`,
  /**
   * ?1 principal, ?2 titles JSON: of the notes carrying each title, the most recently updated (the
   * first `listNotes` shows).
   */
  findByTitles: `
    SELECT id, title, version FROM (
      SELECT n.id, n.title, n.version, row_number() OVER (
        PARTITION BY n.title ORDER BY n.updated_at DESC, n.seq DESC
      ) AS rank
      FROM notes AS n
      WHERE n.principal = ?1 AND n.title IN (SELECT value FROM json_each(?2))
    ) WHERE rank = 1`,
  /** ?1 principal, ?2 tags JSON, ?3 tag count, ?4 limit, ?5 the seq the page starts after. */
  listByCreation: `
    SELECT ${NOTE_COLUMNS}, n.seq FROM notes AS n
    WHERE n.principal = ?1 AND n.seq > ?5 AND ${TAG_FILTER}
    ORDER BY n.seq LIMIT ?4`,
  /** ?1 principal. */
  listTags: `
    SELECT t.value AS tag, count(*) AS count FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 GROUP BY t.value ORDER BY t.value`,
  /**
   * ?1 principal, ?2 prefix, ?3 limit. Exact, case-sensitive prefix comparison: no wildcard of the
   * prefix can take effect.
   */
  completeIds: `
    SELECT n.id FROM notes AS n
    WHERE n.principal = ?1 AND substr(n.id, 1, length(?2)) = ?2
    ORDER BY n.id LIMIT ?3`,
  /** ?1 principal, ?2 `likePrefix` pattern (notes.ts), ?3 limit. */
  completeTags: `
    SELECT DISTINCT t.value AS tag FROM notes AS n, json_each(n.tags) AS t
    WHERE n.principal = ?1 AND t.value LIKE ?2 ESCAPE '\\'
    ORDER BY t.value LIMIT ?3`,
  /** ?1 id, ?2 principal, ?3 note id, ?4 expires at. */
  insertShare: `
    INSERT INTO share_requests (id, principal, note_id, status, expires_at)
    VALUES (?1, ?2, ?3, 'pending', ?4)`,
  /** ?1 id. */
  getShare: `
    SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests WHERE id = ?1`,
  /** ?1 id, ?2 decision, ?3 now. */
  decideShare: `
    UPDATE share_requests SET status = ?2, decided_at = ?3
    WHERE id = ?1 AND status = 'pending' AND expires_at > ?3
    RETURNING id`,
  /** ?1 key, ?2 now, ?3 claim, ?4 share, ?5 principal: spends the key only for a publishable share. */
  spendKeyForShare: `
    INSERT INTO used_keys (once_key, used_at, claim)
    SELECT ?1, ?2, ?3 WHERE EXISTS (
      SELECT 1 FROM share_requests
      WHERE id = ?4 AND principal = ?5 AND status = 'approved' AND link_id IS NULL
    )
    ON CONFLICT DO NOTHING RETURNING once_key`,
  /** ?1 link, ?2 now, ?3 share, ?4 key, ?5 claim. */
  insertLink: `
    INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
    SELECT ?1, s.id, s.principal, s.note_id, ?2 FROM share_requests AS s
    WHERE s.id = ?3 AND ${CLAIMED('?4', '?5')}`,
  /** ?1 link, ?2 share, ?3 key, ?4 claim. */
  setShareLink: `
    UPDATE share_requests SET link_id = ?1 WHERE id = ?2 AND ${CLAIMED('?3', '?4')}`,
  /** ?1 link id. */
  getSharedNote: `
    SELECT ${NOTE_COLUMNS} FROM shared_links AS l
    JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
    WHERE l.id = ?1`,
  /** ?1 cutoff (spent at or before it), ?2 limit. */
  purgeUsedKeys: `
    DELETE FROM used_keys WHERE once_key IN (
      SELECT once_key FROM used_keys WHERE used_at <= ?1 LIMIT ?2
    )`,
  /** ?1 cutoff (expired at or before it), ?2 limit. Published shares stay with their links. */
  purgeShares: `
    DELETE FROM share_requests WHERE id IN (
      SELECT id FROM share_requests WHERE link_id IS NULL AND expires_at <= ?1 LIMIT ?2
    )`,
} as const

/**
 * Purge statements, in the order a purge spends its budget, each with the cutoff it compares with
 * (`?1`) for a given `now`: once-keys and unpublished shares are kept {@link REPLAY_RETENTION_MS}
 * past their last use.
 */
export const PURGES: ReadonlyArray<{ sql: string; cutoff: (now: number) => number }> = [
  { sql: SQL.purgeUsedKeys, cutoff: (now) => now - REPLAY_RETENTION_MS },
  { sql: SQL.purgeShares, cutoff: (now) => now - REPLAY_RETENTION_MS },
]
