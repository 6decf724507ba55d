/**
 * The workerd test project (`npm run test:workers`, and part of `npm test`): every `*.test.ts` under
 * tests/workers runs inside workerd through @cloudflare/vitest-plugin, against the real Worker entry
 * (`src/worker.ts`) and the real `wrangler.toml` (D1 binding `DB`, vars). Migrations are read here, in
 * Node, and applied to each test file's local D1 by `setup.ts`. STATE_KEYS is a fresh ring per run.
 */
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  // Vite's cache beside the root project's, not in a node_modules/ under tests/workers.
  cacheDir: here('../../node_modules/.vite/workerd'),
  plugins: [
    cloudflareTest(async () => ({
      main: here('../../src/worker.ts'),
      wrangler: { configPath: here('../../wrangler.toml') },
      miniflare: {
        bindings: {
          STATE_KEYS: `ktest:${randomBytes(32).toString('base64url')}`,
          TEST_MIGRATIONS: await readD1Migrations(here('../../migrations')),
        },
      },
    })),
  ],
  test: {
    name: 'workerd',
    root: here('.'),
    include: ['**/*.test.ts'],
    setupFiles: [here('setup.ts')],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
