/**
 * @module storage/postgres/schema
 * The notes application's tables on PostgreSQL ({@link NOTES_POSTGRES_SCHEMA}): notes with their
 * search vectors, the single-use keys, share requests and their links, applied by the engine's
 * `migratePostgresSchema` (`stateless-mcp/postgres`). The steps keep the numbers of the shared
 * schema's steps that made these tables (1, 2 and the notes part of 4), so a database an older
 * deployment migrated is adopted as it is; the engine's tables (sessions, streams, tasks) are the
 * engine's own. The `*_tsv` columns hold the `tsvector` literals `search.ts` builds. Never edit a
 * released step; append a new one (from 10 on).
 */
import type { PostgresSchema } from 'stateless-mcp/postgres'
import { NOTES_LOOKUPS_STEP, NOTES_SCHEMA_BOOKKEEPING } from '../common/schema.ts'

export const NOTES_POSTGRES_SCHEMA: PostgresSchema = {
  ...NOTES_SCHEMA_BOOKKEEPING,
  steps: [
    {
      version: 1,
      statements: [
        `CREATE TABLE notes (
          seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          id text COLLATE "C" NOT NULL,
          principal text COLLATE "C" NOT NULL,
          title text NOT NULL,
          body text NOT NULL,
          tags text[] COLLATE "C" NOT NULL DEFAULT '{}',
          created_at bigint NOT NULL,
          updated_at bigint NOT NULL,
          version bigint NOT NULL DEFAULT 1,
          title_tsv tsvector NOT NULL,
          tags_tsv tsvector NOT NULL,
          body_tsv tsvector NOT NULL,
          search tsvector GENERATED ALWAYS AS (title_tsv || tags_tsv || body_tsv) STORED,
          UNIQUE (principal, id)
        )`,
        `CREATE INDEX notes_by_recency ON notes (principal, updated_at DESC, seq DESC)`,
        `CREATE INDEX notes_search ON notes USING gin (search)`,
        `CREATE TABLE used_keys (
          once_key text PRIMARY KEY,
          used_at bigint NOT NULL
        )`,
        `CREATE TABLE share_requests (
          id text PRIMARY KEY,
          principal text NOT NULL,
          note_id text NOT NULL,
          status text NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'approved', 'refused')),
          expires_at bigint NOT NULL,
          decided_at bigint,
          link_id text
        )`,
        `CREATE TABLE shared_links (
          id text PRIMARY KEY,
          share_id text NOT NULL UNIQUE REFERENCES share_requests (id),
          principal text NOT NULL,
          note_id text NOT NULL,
          created_at bigint NOT NULL
        )`,
      ],
    },
    {
      // The purge of expired rows (NotesStore.purgeExpired) finds them without a scan.
      version: 2,
      statements: [
        `CREATE INDEX used_keys_by_use ON used_keys (used_at)`,
        `CREATE INDEX share_requests_unpublished_by_expiry ON share_requests (expires_at)
          WHERE link_id IS NULL`,
      ],
    },
    {
      // notes_by_id lets importNotes skip an id that names a note of any principal.
      version: 4,
      statements: [`CREATE INDEX notes_by_id ON notes (id)`],
    },
    NOTES_LOOKUPS_STEP,
  ],
}
