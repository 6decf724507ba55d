/**
 * @module storage/common/schema
 * What the notes schemas of both SQL dialects share: their bookkeeping ({@link
 * NOTES_SCHEMA_BOOKKEEPING}: the table that records their steps, and that they adopt the older shared
 * bookkeeping, where the steps they keep were recorded, `stateless-mcp/sqlite`'s and `/postgres`'s
 * module headers), and the steps whose SQL is the same in both ({@link NOTES_LOOKUPS_STEP}; D1 gets
 * it as `migrations/0009_notes_lookups.sql`). Runtime-neutral.
 */

/** The bookkeeping of the notes schemas (`sqlite/schema.ts`, `postgres/schema.ts`). */
export const NOTES_SCHEMA_BOOKKEEPING = {
  table: 'notes_schema',
  adoptsSharedBookkeeping: true,
} as const

/**
 * Step 9: `findByTitles` finds an import's titles, and `listByCreation` pages in creation order,
 * without reading every note of the principal.
 */
export const NOTES_LOOKUPS_STEP = {
  version: 9,
  statements: [
    `CREATE INDEX notes_by_title ON notes (principal, title)`,
    `CREATE INDEX notes_by_creation ON notes (principal, seq)`,
  ],
} as const
