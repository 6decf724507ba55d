-- notes-mcp schema, step 6, for both SQLite-dialect adapters (see src/storage/sql-store.ts): the cap on
-- live tasks per principal (TaskStore.createTask; the engine's maxLiveTasks, src/mcp/tasks/engine.ts).
--
-- A task's owner binds the principal and the OAuth client it came through; the cap counts the
-- principal's tasks under every client, so each row names the principal alone too. A task is live
-- until its expires_at, whatever its status, and tasks_live_by_principal answers "how many unexpired
-- tasks does this principal hold" from the index alone (the insert that counts them runs on every
-- task creation).
--
-- Rows stored before this step have principal '' (no principal is empty) and count for no one; they
-- are gone within their TTL (an hour by default).
ALTER TABLE tasks ADD COLUMN principal TEXT NOT NULL DEFAULT '';

CREATE INDEX tasks_live_by_principal ON tasks (principal, expires_at);
