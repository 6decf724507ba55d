-- notes-mcp schema, step 7, for both SQLite-dialect adapters (see src/storage/sqlite/store.ts): the
-- resumable SSE streams of 2025-era sessions (src/mcp/stream-store.ts), so that a client resuming a
-- stream with Last-Event-ID on any replica is sent what followed on that stream, and a call waiting
-- for the client outlives the replica driving it.
--
-- Both tables are keyed by the session's random id (sid) first, so that ending a session
-- (SessionStore.endSession, or a creation at the principal's cap ending its oldest sessions) removes
-- its streams and events through the primary keys. Rows are removed by NotesStore.purgeExpired once
-- expires_at has passed (hence the expiry indexes). Rowid tables: a call and an event may be large (up
-- to the request body limit), which WITHOUT ROWID tables store poorly.

-- One record per stream of a session: the suspended call it holds (NULL for none), the lease of the
-- replica driving it (owner and expiry set and cleared together), whether its last event is stored,
-- and the version every change compares and sets (UPDATE ... WHERE sid = ? AND stream = ? AND
-- version = ?).
CREATE TABLE session_streams (
  sid TEXT NOT NULL,
  stream TEXT NOT NULL,
  call TEXT,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  ended INTEGER NOT NULL DEFAULT 0 CHECK (ended IN (0, 1)),
  expires_at INTEGER NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (sid, stream)
);

CREATE INDEX session_streams_by_expiry ON session_streams (expires_at);

-- The events of a stream, numbered from 1: one SSE message each, as its JSON text. A resuming read
-- (sid, stream, seq > n, in order) walks the primary key; a second writer of one seq is refused by it.
CREATE TABLE stream_events (
  sid TEXT NOT NULL,
  stream TEXT NOT NULL,
  seq INTEGER NOT NULL,
  payload TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (sid, stream, seq)
);

CREATE INDEX stream_events_by_expiry ON stream_events (expires_at);
