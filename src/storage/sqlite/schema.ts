/**
 * @module storage/sqlite/schema
 * The notes application's tables on node:sqlite ({@link NOTES_SQLITE_SCHEMA}): notes and their
 * full-text index, the single-use keys, share requests and their links, kept in code (a schema of
 * the engine's kind, `stateless-mcp/sqlite`'s `SqliteSchema`) so that a bundle needs no file beside
 * it. The steps keep the numbers of the shared schema's files under `migrations/` that made these
 * tables (1, 2 and the notes part of 4), so a file an older deployment migrated is adopted as it is;
 * the engine's tables (sessions, streams, tasks) are the engine's own. On D1, wrangler applies those
 * files (`../d1.ts`), and each later step here has its file there too (9: `0009_notes_lookups.sql`).
 * Never edit a released step; append a new one (from 10 on).
 */
import type { SqliteSchema } from 'stateless-mcp/sqlite'
import { NOTES_LOOKUPS_STEP, NOTES_SCHEMA_BOOKKEEPING } from '../common/schema.ts'

export const NOTES_SQLITE_SCHEMA: SqliteSchema = {
  ...NOTES_SCHEMA_BOOKKEEPING,
  steps: [
    {
      // Notes, their FTS5 index kept in step by triggers, and what share approvals need.
      // `used_keys.claim` proves which batch spent a once-key (D1 has no interactive transaction).
      version: 1,
      statements: [
        `CREATE TABLE notes (
          seq INTEGER PRIMARY KEY,
          id TEXT NOT NULL,
          principal TEXT NOT NULL,
          title TEXT NOT NULL,
          body TEXT NOT NULL,
          tags TEXT NOT NULL DEFAULT '[]',
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          version INTEGER NOT NULL DEFAULT 1,
          UNIQUE (principal, id)
        )`,
        `CREATE INDEX notes_by_recency ON notes (principal, updated_at DESC, seq DESC)`,
        `CREATE VIRTUAL TABLE notes_fts USING fts5 (
          title, body, tags,
          content = 'notes', content_rowid = 'seq',
          tokenize = 'unicode61 remove_diacritics 2'
        )`,
        `CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
          INSERT INTO notes_fts (rowid, title, body, tags)
            VALUES (new.seq, new.title, new.body, new.tags);
        END`,
        `CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
          INSERT INTO notes_fts (notes_fts, rowid, title, body, tags)
            VALUES ('delete', old.seq, old.title, old.body, old.tags);
        END`,
        `CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, tags ON notes BEGIN
          INSERT INTO notes_fts (notes_fts, rowid, title, body, tags)
            VALUES ('delete', old.seq, old.title, old.body, old.tags);
          INSERT INTO notes_fts (rowid, title, body, tags)
            VALUES (new.seq, new.title, new.body, new.tags);
        END`,
        `CREATE TABLE used_keys (
          once_key TEXT PRIMARY KEY,
          used_at INTEGER NOT NULL,
          claim TEXT
        ) WITHOUT ROWID`,
        `CREATE TABLE share_requests (
          id TEXT PRIMARY KEY,
          principal TEXT NOT NULL,
          note_id TEXT NOT NULL,
          status TEXT NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'approved', 'refused')),
          expires_at INTEGER NOT NULL,
          decided_at INTEGER,
          link_id TEXT
        ) WITHOUT ROWID`,
        `CREATE TABLE shared_links (
          id TEXT PRIMARY KEY,
          share_id TEXT NOT NULL UNIQUE REFERENCES share_requests (id),
          principal TEXT NOT NULL,
          note_id TEXT NOT NULL,
          created_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
      ],
    },
    {
      // What the purge of expired rows needs, and used_keys rebuilt with its claim column (files
      // made before step 1 lacked it; SQLite cannot add a column only where it is missing).
      version: 2,
      statements: [
        `CREATE TABLE used_keys_v2 (
          once_key TEXT PRIMARY KEY,
          used_at INTEGER NOT NULL,
          claim TEXT
        ) WITHOUT ROWID`,
        `INSERT INTO used_keys_v2 (once_key, used_at) SELECT once_key, used_at FROM used_keys`,
        `DROP TABLE used_keys`,
        `ALTER TABLE used_keys_v2 RENAME TO used_keys`,
        `CREATE INDEX used_keys_by_use ON used_keys (used_at)`,
        `CREATE INDEX share_requests_unpublished_by_expiry ON share_requests (expires_at)
          WHERE link_id IS NULL`,
      ],
    },
    {
      // importNotes skips an id that names a note of any principal.
      version: 4,
      statements: [`CREATE INDEX notes_by_id ON notes (id)`],
    },
    NOTES_LOOKUPS_STEP,
  ],
}
