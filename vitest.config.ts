import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'node', include: ['tests/**/*.test.ts'], exclude: ['tests/workers/**'] },
      },
      // Tests that run inside workerd (@cloudflare/vitest-plugin, local D1): its own config.
      './tests/workers/vitest.config.ts',
    ],
  },
})
