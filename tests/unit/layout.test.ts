/**
 * The layering of design §2, read from the import statements of every TypeScript module: the engine
 * and the other `src/` modules never reach into the app's own pages (`routes/`) — only the notes app's
 * composition root `src/app.ts` mounts them — nor into the client driver (`src/client/`); the scripts
 * never import test code.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')

/** Every `.ts` module under `dir`, as a path relative to the repository root. */
function modules(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(dir, name))
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g

/** The repository-relative targets of a module's relative imports and re-exports. */
function localImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  return [...text.matchAll(SPECIFIER)]
    .map((match) => match[1] as string)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(root, resolve(root, dirname(file), specifier)))
}

/** `importer → imported` for every import of a module under `from` that lands under `into`. */
function crossings(from: string, into: string, except: readonly string[] = []): string[] {
  return modules(from)
    .filter((file) => !except.includes(file))
    .flatMap((file) =>
      localImports(file)
        .filter((target) => target.startsWith(`${into}/`))
        .map((target) => `${file} → ${target}`)
    )
}

describe('module layout', () => {
  it('finds the imports it checks', () => {
    expect(localImports('src/app.ts')).toContain('routes/share.ts')
  })

  it('no module under src/ imports routes/ except the composition root src/app.ts', () => {
    expect(crossings('src', 'routes', ['src/app.ts'])).toEqual([])
  })

  it('the server never imports the client driver', () => {
    const outside = modules('src').filter((file) => !file.startsWith('src/client/'))
    const found = outside.flatMap((file) =>
      localImports(file).filter((target) => target.startsWith('src/client/'))
    )
    expect(found).toEqual([])
  })

  it('no script imports test code', () => {
    expect(crossings('scripts', 'tests')).toEqual([])
  })
})
