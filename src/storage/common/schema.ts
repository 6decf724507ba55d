/**
 * @module storage/common/schema
 * What the notes schemas of both SQL dialects share ({@link NOTES_SCHEMA_BOOKKEEPING}): the table
 * that records their steps, and that they adopt the older shared bookkeeping (the steps they keep
 * were recorded there, `stateless-mcp/sqlite`'s and `/postgres`'s module headers). Runtime-neutral.
 */

/** The bookkeeping of the notes schemas (`sqlite/schema.ts`, `postgres/schema.ts`). */
export const NOTES_SCHEMA_BOOKKEEPING = {
  table: 'notes_schema',
  adoptsSharedBookkeeping: true,
} as const
