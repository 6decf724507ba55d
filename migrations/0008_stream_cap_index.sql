-- notes-mcp schema, step 8, for both SQLite-dialect adapters (see src/storage/sqlite/store.ts): an
-- index of a session's stream records by whether they ended and when they expire, so that the cap a
-- stream creation checks (the session's live records, counted at every creation, and the ended ones
-- it evicts at the cap, oldest first) is read from the index alone instead of from every record of
-- the session.
CREATE INDEX session_streams_by_session ON session_streams (sid, ended, expires_at, stream);
