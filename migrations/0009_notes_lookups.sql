-- notes-mcp schema, step 9, for both SQLite-dialect adapters (see src/storage/sqlite/store.ts): an
-- index of a principal's notes by title, so that an import finds the titles it would duplicate
-- (NotesStore.findByTitles) without reading every note, and one by creation order (seq), so that an
-- export pages by that immutable key (NotesStore.listByCreation) without sorting them each page.
CREATE INDEX notes_by_title ON notes (principal, title);

CREATE INDEX notes_by_creation ON notes (principal, seq);
