// @ts-check
/**
 * @module eslint.config
 * The linter for the whole tree (src, routes, tests, scripts and this file), run by `npm run lint`
 * and by `.ci/run`: ESLint's recommended rules and typescript-eslint's `recommendedTypeChecked`,
 * with types from tsconfig.json through the project service, so the type-aware rules (floating and
 * misused promises, unsafe `any`) see what `tsc` sees. Formatting is prettier's alone:
 * eslint-config-prettier, last, switches off every rule that would fight it.
 */
import eslint from '@eslint/js'
import prettier from 'eslint-config-prettier'
import { defineConfig } from 'eslint/config'
import tseslint from 'typescript-eslint'

export default defineConfig(
  {
    ignores: [
      'node_modules/',
      'data/',
      'bench-results/',
      'loadtest-results/',
      'conformance-results/',
      '.wrangler/',
      'dist/',
    ],
  },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // This file is outside tsconfig.json (it is JavaScript); the default project types it.
        projectService: {
          allowDefaultProject: ['eslint.config.js'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // On in recommendedTypeChecked already; named here because they are why the linter exists.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unsafe-argument': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-call': 'error',
      '@typescript-eslint/no-unsafe-member-access': 'error',
      '@typescript-eslint/no-unsafe-return': 'error',
      // A leading underscore marks a parameter or binding kept for its position; a rest sibling omits keys.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // A `let` read by a closure before its one assignment (a handler wired both ways) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Forwarding an AbortSignal's reason (typed `any` by the DOM lib) unchanged is the platform's way.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true }],
      // Off: an `async` method without `await` implements a promise-returning port and turns a throw into
      // a rejection; dropping `async` to satisfy the rule would change that behaviour.
      '@typescript-eslint/require-await': 'off',
      // zod's named `z` is its whole classic API with every locale: a Worker bundle carries ~80 KiB
      // gzip more than with the namespace, which esbuild can shake.
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']",
          message: "Import zod as a namespace: import * as z from 'zod'.",
        },
      ],
      // Off: the schemas and the PostgreSQL text escape match control characters on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    // Dogfooding: the applications on the engine (the notes server and its runtimes, its pages, the
    // conformance fixture, the benchmark's servers) reach it only through the package's public
    // entries, as any team would, so nothing they need can hide outside the API report.
    files: ['src/**/*.ts', 'routes/**/*.ts', 'tests/conformance/**/*.ts', 'scripts/bench/**/*.ts'],
    ignores: ['src/mcp/**', 'src/client/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\.?/)+(src/)?mcp/',
              message:
                "Import the engine through its public entries ('stateless-mcp', 'stateless-mcp/compose', 'stateless-mcp/sqlite', …), not by path.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ['tests/**/*.ts'],
    rules: {
      // Off in tests only: they read arbitrary JSON answers as JsonObject (Record<string, any>, see
      // tests/support/mcp-request.ts) and assert on them with expect; src and scripts keep these on.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  prettier
)
