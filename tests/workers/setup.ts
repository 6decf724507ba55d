/**
 * Setup of every test file inside workerd: applies `migrations/` to the local D1 database bound as
 * `DB` (each file gets a fresh Miniflare, so a fresh database), exactly as
 * `wrangler d1 migrations apply DB` would, recorded in the same `d1_migrations` table.
 */
import { applyD1Migrations, env } from 'cloudflare:test'

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS)
