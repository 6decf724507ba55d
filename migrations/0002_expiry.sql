-- notes-mcp schema, step 2, for both SQLite-dialect adapters (see src/storage/sql-store.ts): what the
-- purge of expired rows (NotesStore.purgeExpired) needs, and one used_keys shape everywhere.
-- used_keys is rebuilt rather than altered: node:sqlite files created before step 1 became the shared
-- schema lack its `claim` column, which the one shared implementation now uses on node:sqlite too
-- (step 1's note that it serves D1 only no longer holds), and SQLite cannot add a column only where
-- it is missing. Claims matter only inside the batch that wrote them, so the copy leaves them NULL.
-- The indexes let each purge find its expired rows without a scan.

CREATE TABLE used_keys_v2 (
  once_key TEXT PRIMARY KEY,
  used_at INTEGER NOT NULL,
  claim TEXT
) WITHOUT ROWID;

INSERT INTO used_keys_v2 (once_key, used_at) SELECT once_key, used_at FROM used_keys;

DROP TABLE used_keys;

ALTER TABLE used_keys_v2 RENAME TO used_keys;

CREATE INDEX used_keys_by_use ON used_keys (used_at);

CREATE INDEX share_requests_unpublished_by_expiry ON share_requests (expires_at)
  WHERE link_id IS NULL;
