-- notes-mcp schema, step 5, for both SQLite-dialect adapters (see src/storage/sql-store.ts): 2025-era
-- sessions are recorded by `initialize` with their principal, creation time and the expiry sealed in
-- their id, and a session is live only while its row exists (DELETE removes it), so that a principal's
-- sessions and subscriptions can be capped (src/mcp/session-store.ts: a new session at the cap ends
-- the oldest-created ones) and an ended session can never come back.
--
-- Both tables are rebuilt rather than altered: every row of step 3 belongs to a session that this
-- step no longer counts as live (its id was never recorded), so none is worth keeping, and SQLite
-- cannot add a NOT NULL column without a default. Clients of those sessions get 404 and initialize
-- again, as the 2025 transport specifies.

DROP TABLE sessions;

DROP TABLE session_subscriptions;

-- One row per live session: its principal, the level of logging/setLevel, when it was created (by
-- the clock of the replica that ran initialize) and the id's own expiry.
CREATE TABLE sessions (
  sid TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  log_level TEXT CHECK (log_level IN
    ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- The cap on a principal's live sessions reads its rows through this index, newest first (the
-- order of eviction, ties by sid), their expiry included.
CREATE INDEX sessions_by_principal ON sessions (principal, created_at, sid, expires_at);

-- resources/subscribe of a live session, with the session's principal and expiry (at most
-- MAX_SUBSCRIPTIONS_PER_SESSION per sid, and a cap per principal counted through the second index).
CREATE TABLE session_subscriptions (
  sid TEXT NOT NULL,
  uri TEXT NOT NULL,
  principal TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (sid, uri)
) WITHOUT ROWID;

CREATE INDEX session_subscriptions_by_expiry ON session_subscriptions (expires_at);

CREATE INDEX session_subscriptions_by_principal ON session_subscriptions (principal, expires_at);
