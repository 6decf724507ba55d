-- notes-mcp schema, step 4, for both SQLite-dialect adapters (see src/storage/sql-store.ts): the
-- records of tasks (src/mcp/task-store.ts, extension io.modelcontextprotocol/tasks), and what the
-- idempotent import of notes (NotesStore.importNotes) needs.
--
-- One row per task, with every field of a TaskRecord (JSON-valued fields as the text the engine gave,
-- NULL for an absent optional field). A rowid table: args, journal, input and result may be large (up
-- to the request body limit each), which WITHOUT ROWID tables store poorly. Every change is one
-- UPDATE … WHERE id = ? AND version = ?. Rows are removed by NotesStore.purgeExpired once expires_at
-- has passed (hence tasks_by_expiry).
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  tool TEXT NOT NULL,
  args TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('working', 'input_required', 'completed', 'cancelled', 'failed')),
  status_message TEXT,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  poll_interval_ms INTEGER NOT NULL,
  journal TEXT NOT NULL,
  input_requests TEXT,
  input_responses TEXT,
  result TEXT,
  error TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
  lease_owner TEXT,
  lease_expires_at INTEGER,
  version INTEGER NOT NULL DEFAULT 1
);

CREATE INDEX tasks_by_expiry ON tasks (expires_at);

-- findRunnableTasks: working tasks whose lease is absent (0) or over, oldest lease first. Partial, so
-- it holds only working tasks, and covering, so the search never reads a (possibly large) row: the
-- trailing lease_expires_at is there for that alone (a column used under an expression is otherwise
-- read from the table).
CREATE INDEX tasks_runnable ON tasks (coalesce(lease_expires_at, 0), expires_at, id, lease_expires_at)
  WHERE status = 'working';

-- importNotes skips an id that names a note of any principal; notes are otherwise found by
-- (principal, id), whose index cannot answer "does this id exist at all".
CREATE INDEX notes_by_id ON notes (id);
