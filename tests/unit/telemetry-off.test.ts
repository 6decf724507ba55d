/**
 * With telemetry off nothing of it is loaded: the modules both runtime entries load at start (their
 * static imports and top-level `await import()`s, followed through every relative import and every
 * entry of the engine package, `stateless-mcp/…`, through its `exports` map; type-only imports are
 * erased) reach no `@opentelemetry/*` package and no telemetry module but the OpenTelemetry-free
 * one (the environment parser). The implementation is reached only through the entries' dynamic
 * `import()`, taken when an `OTEL_*` variable (or METRICS_PORT on Node) is set. The engine's own
 * entries load no OpenTelemetry either, but `stateless-mcp/otel`.
 */
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')

/** Static imports and re-exports that stay at run time (not `import type`, not `import()`). */
const STATIC_IMPORT = /^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm

/** A module's own top-level `await import()` (unindented: taken at start, not in a function). */
const TOP_LEVEL_IMPORT = /^(?:const|let)\s[^\n]*=\s*await import\(['"]([^'"]+)['"]\)/gm

/** The engine package's entries: `stateless-mcp/…` → its source module. */
const ENGINE_EXPORTS = (
  JSON.parse(readFileSync(join(root, 'src/mcp/package.json'), 'utf8')) as {
    exports: Record<string, string>
  }
).exports

/** The module of `specifier` when it names an entry of the engine package. */
function engineModule(specifier: string): string | undefined {
  const [name, ...rest] = specifier.split('/')
  if (name !== 'stateless-mcp') return undefined
  const target = ENGINE_EXPORTS[['.', ...rest].join('/')]
  return target && join('src/mcp', target)
}

function staticImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  return [...text.matchAll(STATIC_IMPORT), ...text.matchAll(TOP_LEVEL_IMPORT)].map(
    (match) => match[1] as string
  )
}

/** Every module and package an entry loads before serving its first request. */
function loadedAtStart(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>()
  const packages = new Set<string>()
  const pending = [entry]
  while (pending.length > 0) {
    const file = pending.pop()!
    if (files.has(file)) continue
    files.add(file)
    for (const specifier of staticImports(file)) {
      const engine = engineModule(specifier)
      if (engine) pending.push(engine)
      else if (specifier.startsWith('.'))
        pending.push(relative(root, resolve(root, dirname(file), specifier)))
      else packages.add(specifier)
    }
  }
  return { files, packages }
}

const OPENTELEMETRY_FREE = ['src/telemetry/env.ts']

/** Each entry, and the module of it that starts telemetry when it is configured. */
const ENTRIES = [
  ['src/node.ts', 'src/node/replica.ts'],
  ['src/deno.ts', 'src/node/replica.ts'],
  ['src/bun.ts', 'src/node/replica.ts'],
  ['src/lambda.ts', 'src/node/replica.ts'],
  ['src/netlify.ts', 'src/node/replica.ts'],
  ['src/worker.ts', 'src/worker.ts'],
] as const

describe.each(ENTRIES)('the entry %s with telemetry off', (entry, starter) => {
  const { files, packages } = loadedAtStart(entry)

  it('follows its imports into the engine and the app', () => {
    expect(files).toContain('src/app.ts')
    expect(files).toContain('src/mcp/handler.ts')
    expect(files).toContain('src/telemetry/env.ts')
  })

  it('loads no OpenTelemetry package', () => {
    expect([...packages].filter((name) => name.startsWith('@opentelemetry/'))).toEqual([])
  })

  it('loads no telemetry module that imports OpenTelemetry', () => {
    const telemetry = [...files].filter(
      (file) =>
        file.startsWith('src/telemetry/') ||
        file.startsWith('src/mcp/otel') ||
        file.endsWith('/telemetry.ts')
    )
    expect(telemetry.filter((file) => !OPENTELEMETRY_FREE.includes(file))).toEqual([])
  })

  it('reaches the implementation only through a dynamic import', () => {
    expect(files).toContain(starter)
    const text = readFileSync(join(root, starter), 'utf8')
    expect(text).toMatch(/await import\('\.\/(workers\/)?telemetry\.ts'\)/)
  })
})

describe.each(Object.entries(ENGINE_EXPORTS).filter(([, target]) => target.endsWith('.ts')))(
  'the engine entry stateless-mcp%s',
  (subpath, target) => {
    const { files, packages } = loadedAtStart(join('src/mcp', target))
    const openTelemetry = [...packages].filter((name) => name.startsWith('@opentelemetry/'))

    if (subpath === './otel') {
      it('loads @opentelemetry/api alone of OpenTelemetry', () => {
        expect(openTelemetry).toEqual(['@opentelemetry/api'])
      })
    } else {
      it('loads no OpenTelemetry package and no module of mcp/otel/', () => {
        expect(openTelemetry).toEqual([])
        expect([...files].filter((file) => file.startsWith('src/mcp/otel'))).toEqual([])
      })
    }
  }
)
