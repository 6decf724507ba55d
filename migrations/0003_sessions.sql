-- notes-mcp schema, step 3, for both SQLite-dialect adapters (see src/storage/sql-store.ts): what
-- 2025-era sessions keep in the store (src/mcp/session-store.ts). The session itself is a sealed
-- token; these rows hold only what changes after `initialize`, keyed by the session's random id (sid).
-- Every row carries the expiry the engine gave it and is removed by NotesStore.purgeExpired once it
-- has passed (hence the expiry indexes).

-- One row per session: ended by DELETE, and the level of logging/setLevel.
CREATE TABLE sessions (
  sid TEXT PRIMARY KEY,
  ended INTEGER NOT NULL DEFAULT 0 CHECK (ended IN (0, 1)),
  log_level TEXT CHECK (log_level IN
    ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- resources/subscribe of a session (at most MAX_SUBSCRIPTIONS_PER_SESSION per sid).
CREATE TABLE session_subscriptions (
  sid TEXT NOT NULL,
  uri TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (sid, uri)
) WITHOUT ROWID;

CREATE INDEX session_subscriptions_by_expiry ON session_subscriptions (expires_at);

-- The slot of one server->client request's answer: NULL payload until the client's answer arrives.
-- A rowid table: an answer may be large (up to the request body limit), which WITHOUT ROWID tables
-- store poorly.
CREATE TABLE input_slots (
  sid TEXT NOT NULL,
  request_id TEXT NOT NULL,
  payload TEXT,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (sid, request_id)
);

CREATE INDEX input_slots_by_expiry ON input_slots (expires_at);
