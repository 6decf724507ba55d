-- notes-mcp schema, step 1, for both SQLite-dialect adapters: the one source of truth (see
-- src/storage/shared.ts). On D1 it is applied by `wrangler d1 migrations apply DB` (recorded in the
-- d1_migrations table) and, in the workerd tests, by applyD1Migrations(). The node:sqlite adapter
-- (src/storage/sqlite.ts) reads this file and applies it itself (recorded in schema_migrations as
-- version 1). Never edit a released step: append 0002_….sql and list it in SQLITE_MIGRATIONS.
-- `used_keys.claim` serves D1 only (D1 has no interactive transactions: a batch proves it spent a
-- once-key by finding its own random claim). node:sqlite decides inside a transaction and leaves it
-- NULL, which equals no claim.

CREATE TABLE notes (
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
);

CREATE INDEX notes_by_recency ON notes (principal, updated_at DESC, seq DESC);

CREATE VIRTUAL TABLE notes_fts USING fts5 (
  title, body, tags,
  content = 'notes', content_rowid = 'seq',
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
  INSERT INTO notes_fts (rowid, title, body, tags)
    VALUES (new.seq, new.title, new.body, new.tags);
END;

CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
  INSERT INTO notes_fts (notes_fts, rowid, title, body, tags)
    VALUES ('delete', old.seq, old.title, old.body, old.tags);
END;

CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, body, tags ON notes BEGIN
  INSERT INTO notes_fts (notes_fts, rowid, title, body, tags)
    VALUES ('delete', old.seq, old.title, old.body, old.tags);
  INSERT INTO notes_fts (rowid, title, body, tags)
    VALUES (new.seq, new.title, new.body, new.tags);
END;

CREATE TABLE used_keys (
  once_key TEXT PRIMARY KEY,
  used_at INTEGER NOT NULL,
  claim TEXT
) WITHOUT ROWID;

CREATE TABLE share_requests (
  id TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  note_id TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'approved', 'refused')),
  expires_at INTEGER NOT NULL,
  decided_at INTEGER,
  link_id TEXT
) WITHOUT ROWID;

CREATE TABLE shared_links (
  id TEXT PRIMARY KEY,
  share_id TEXT NOT NULL UNIQUE REFERENCES share_requests (id),
  principal TEXT NOT NULL,
  note_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;
