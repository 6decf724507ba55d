/**
 * The layering of README "Architecture", read from the import statements of every TypeScript module
 * (type-only imports, re-exports and dynamic `import()` included):
 * - no import cycles among the modules of `src/` and `routes/`, nor among those of `scripts/`;
 * - the layers, bottom to top: the engine (`src/mcp/`) < the notes application (`src/notes/`) <
 *   its adapters and services (`src/storage/`, `src/auth/`, `src/telemetry/`, `src/config.ts`) < the
 *   HTTP face (`src/http/`, `routes/`) < the composition root (`src/app.ts`) < the runtimes
 *   (`src/node/` with its entries `src/node.ts`, `src/deno.ts`, `src/bun.ts`, `src/lambda.ts` and
 *   `src/netlify.ts`, `src/workers/` with `src/worker.ts`). A module imports from its
 *   own unit and from lower layers; across units of one layer only the arrows of `PEER_IMPORTS`;
 *   never upwards. Every module belongs to a unit, so a new folder has to be placed here;
 * - the engine imports nothing outside `src/mcp/`, notes never imports storage (storage implements
 *   notes' `NotesStore`, not the other way round), auth never imports the HTTP face, and
 *   `src/config.ts` imports only the engine and telemetry;
 * - the app's own pages (`routes/`) are mounted by the composition root `src/app.ts` alone; the
 *   client driver (`src/client/`) imports only the engine and nothing of the server imports it; the
 *   scripts never import test code.
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
    .sort()
}

/**
 * The specifier of an `import … from`, `export … from` or bare `import '…'` statement starting a
 * line (so an example inside a doc comment, whose lines start with `*`, is not read as one), or of a
 * dynamic `import('…')`.
 */
const SPECIFIER = new RegExp(
  [
    String.raw`^[ \t]*(?:import|export)\b[^'"\`]*?\bfrom\s*['"]([^'"]+)['"]`,
    String.raw`^[ \t]*import\s*['"]([^'"]+)['"]`,
    String.raw`\bimport\(\s*['"]([^'"]+)['"]\s*\)`,
  ].join('|'),
  'gm'
)

/** What a module's text imports, in order. */
function specifiers(text: string): string[] {
  return [...text.matchAll(SPECIFIER)].map((match) => (match[1] ?? match[2] ?? match[3]) as string)
}

/** The repository-relative targets of a module's relative imports and re-exports. */
function localImports(file: string): string[] {
  return specifiers(readFileSync(join(root, file), 'utf8'))
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

type Graph = ReadonlyMap<string, readonly string[]>

/** The modules under `dirs`, each with its relative imports (cycles are sought among `dirs`). */
function importGraph(...dirs: string[]): Graph {
  const files = dirs.flatMap((dir) => modules(dir))
  return new Map(files.map((file) => [file, [...new Set(localImports(file))]]))
}

/**
 * Every import cycle of `graph`, one line per strongly connected component (Tarjan): the shortest
 * cycle through each of its modules, `a → b → a`, so the imports to cut can be read off.
 */
function cycles(graph: Graph): string[] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (node: string): void => {
    index.set(node, index.size)
    low.set(node, index.get(node) as number)
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop() as string
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    const selfImport = graph.get(node)?.includes(node) ?? false
    if (component.length > 1 || selfImport) components.push(component.sort())
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return components
    .map((component) => {
      const inside = new Set(component)
      const loops = component.map((start) => written(shortestCycle(graph, start, inside)))
      return [...new Set(loops)].sort().join('; ')
    })
    .sort()
}

/** The modules of the shortest path from `start` back to itself through `inside`, `start` first. */
function shortestCycle(graph: Graph, start: string, inside: ReadonlySet<string>): string[] {
  const cameFrom = new Map<string, string>()
  const queue = [start]
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head] as string
    for (const next of graph.get(node) ?? []) {
      if (!inside.has(next)) continue
      if (next === start) {
        const path: string[] = []
        for (let step = node; step !== start; step = cameFrom.get(step) as string)
          path.unshift(step)
        return [start, ...path]
      }
      if (cameFrom.has(next)) continue
      cameFrom.set(next, node)
      queue.push(next)
    }
  }
  return [start]
}

/** A cycle as `a → b → a`, from its first module in sort order, whichever it was found from. */
function written(cycle: readonly string[]): string {
  const first = cycle.indexOf([...cycle].sort()[0] as string)
  const rotated = [...cycle.slice(first), ...cycle.slice(0, first)]
  return [...rotated, rotated[0]].join(' → ')
}

/**
 * The units of the code, each a folder of `src/` (or one module, or `routes/`) with the paths it
 * holds, and the server's layers, bottom (0) to top. The client driver is no layer of the server:
 * its own rules are below.
 */
const UNITS: Readonly<Record<string, { layer?: number; paths: readonly string[] }>> = {
  engine: { layer: 0, paths: ['src/mcp/'] },
  notes: { layer: 1, paths: ['src/notes/'] },
  storage: { layer: 2, paths: ['src/storage/'] },
  auth: { layer: 2, paths: ['src/auth/'] },
  telemetry: { layer: 2, paths: ['src/telemetry/'] },
  config: { layer: 2, paths: ['src/config.ts'] },
  http: { layer: 3, paths: ['src/http/'] },
  routes: { layer: 3, paths: ['routes/'] },
  app: { layer: 4, paths: ['src/app.ts'] },
  node: {
    layer: 5,
    paths: [
      'src/node/',
      'src/node.ts',
      'src/deno.ts',
      'src/bun.ts',
      'src/lambda.ts',
      'src/netlify.ts',
    ],
  },
  workers: { layer: 5, paths: ['src/workers/', 'src/worker.ts'] },
  client: { paths: ['src/client/'] },
}

/**
 * The imports allowed between units of one layer: the auth services read the parsed configuration,
 * which reads telemetry's parser of the `OTEL_*` variables. Otherwise storage, auth and telemetry
 * do not know each other, the HTTP face and the app's pages neither, and the two runtimes never
 * import each other.
 */
const PEER_IMPORTS: ReadonlySet<string> = new Set(['auth → config', 'config → telemetry'])

/** The unit a module belongs to. */
function unitOf(file: string): string | undefined {
  return Object.keys(UNITS).find((unit) =>
    UNITS[unit]?.paths.some((path) => (path.endsWith('/') ? file.startsWith(path) : file === path))
  )
}

/** `importer → imported (why)` for every import of `graph` that the layers do not allow. */
function layerViolations(graph: Graph): string[] {
  const found: string[] = []
  for (const [file, targets] of graph) {
    const from = unitOf(file)
    for (const target of targets) {
      const into = unitOf(target)
      if (from === undefined || into === undefined || from === into) continue
      const [fromLayer, intoLayer] = [UNITS[from]?.layer, UNITS[into]?.layer]
      if (fromLayer === undefined || intoLayer === undefined) continue
      if (intoLayer > fromLayer) found.push(`${file} → ${target} (${from} is below ${into})`)
      else if (intoLayer === fromLayer && !PEER_IMPORTS.has(`${from} → ${into}`))
        found.push(`${file} → ${target} (${from} and ${into} are peers)`)
    }
  }
  return found
}

/** `importer → imported` for every import by a module of `unit` of a module not in `allowed`. */
function importsOutside(graph: Graph, unit: string, allowed: readonly string[]): string[] {
  return [...graph].flatMap(([file, targets]) =>
    unitOf(file) === unit
      ? targets
          .filter((target) => !allowed.includes(unitOf(target) ?? target))
          .map((target) => `${file} → ${target}`)
      : []
  )
}

/** `importer → imported` for every import by a module of `from` of a module of `into`. */
function arrows(graph: Graph, from: string, into: string): string[] {
  return [...graph].flatMap(([file, targets]) =>
    unitOf(file) === from
      ? targets.filter((target) => unitOf(target) === into).map((target) => `${file} → ${target}`)
      : []
  )
}

describe('module layout', () => {
  const graph = importGraph('src', 'routes')

  it('finds the imports it checks', () => {
    expect(localImports('src/app.ts')).toContain('routes/share.ts')
    expect(graph.get('src/app.ts')).toContain('src/http/app.ts')
    const text = [
      "import { a } from './a.ts'",
      "import type { B } from '../b.ts'",
      'import {',
      '  c,',
      '  type C,',
      "} from './c.ts'",
      "export { d } from './d.ts'",
      "export type { E } from './e.ts'",
      "import './f.ts'",
      "  const { g } = await import('./g.ts')",
      "import * as z from 'zod'",
      '/**',
      ' * @example',
      " * import { h } from './not-an-import.ts'",
      ' */',
    ].join('\n')
    expect(specifiers(text)).toEqual([
      './a.ts',
      '../b.ts',
      './c.ts',
      './d.ts',
      './e.ts',
      './f.ts',
      './g.ts',
      'zod',
    ])
  })

  it('resolves every relative import to a module it reads', () => {
    const unresolved = [...graph].flatMap(([file, targets]) =>
      targets.filter((target) => !graph.has(target)).map((target) => `${file} → ${target}`)
    )
    expect(unresolved).toEqual([])
  })

  it('places every module of src/ and routes/ in a unit', () => {
    expect([...graph.keys()].filter((file) => unitOf(file) === undefined)).toEqual([])
  })

  it('finds a cycle, and the upward and peer imports, in a graph made to have them', () => {
    const made: Graph = new Map([
      ['src/mcp/a.ts', ['src/mcp/b.ts']],
      ['src/mcp/b.ts', ['src/mcp/c.ts', 'src/notes/n.ts']],
      ['src/mcp/c.ts', ['src/mcp/a.ts']],
      ['src/notes/n.ts', ['src/mcp/a.ts']],
      ['src/auth/x.ts', ['src/storage/y.ts', 'src/config.ts']],
      ['src/storage/y.ts', []],
      ['src/config.ts', []],
    ])
    expect(cycles(made)).toEqual([
      'src/mcp/a.ts → src/mcp/b.ts → src/mcp/c.ts → src/mcp/a.ts; ' +
        'src/mcp/a.ts → src/mcp/b.ts → src/notes/n.ts → src/mcp/a.ts',
    ])
    expect(layerViolations(made)).toEqual([
      'src/mcp/b.ts → src/notes/n.ts (engine is below notes)',
      'src/auth/x.ts → src/storage/y.ts (auth and storage are peers)',
    ])
  })

  it('has no import cycles in src/ and routes/', () => {
    expect(cycles(graph)).toEqual([])
  })

  it('has no import cycles in scripts/', () => {
    expect(cycles(importGraph('scripts'))).toEqual([])
  })

  it('imports nothing from a higher layer, and across a layer only the allowed peer arrows', () => {
    expect(layerViolations(graph)).toEqual([])
  })

  it('the engine (src/mcp/) imports nothing outside src/mcp/', () => {
    expect(importsOutside(graph, 'engine', ['engine'])).toEqual([])
  })

  it('the engine imports node:sqlite only in its SQLite driver, which its runtime-neutral entries never reach', () => {
    const importers = modules('src/mcp').filter((file) =>
      specifiers(readFileSync(join(root, file), 'utf8')).includes('node:sqlite')
    )
    expect(importers).toEqual(['src/mcp/stores/sqlite/node-sqlite.ts'])
    const reached = new Set<string>()
    const visit = (file: string): void => {
      if (reached.has(file)) return
      reached.add(file)
      for (const next of graph.get(file) ?? []) visit(next)
    }
    for (const entry of ['src/mcp/index.ts', 'src/mcp/d1.ts', 'src/mcp/compose.ts']) visit(entry)
    expect(reached).not.toContain('src/mcp/stores/sqlite/node-sqlite.ts')
  })

  it('notes never imports storage (storage implements the notes store)', () => {
    expect(arrows(graph, 'notes', 'storage')).toEqual([])
  })

  it('auth never imports the HTTP face (src/http/)', () => {
    expect(arrows(graph, 'auth', 'http')).toEqual([])
  })

  it('src/config.ts imports only the engine and telemetry', () => {
    expect(importsOutside(graph, 'config', ['engine', 'telemetry'])).toEqual([])
  })

  it('no module under src/ imports routes/ except the composition root src/app.ts', () => {
    expect(crossings('src', 'routes', ['src/app.ts'])).toEqual([])
  })

  it('the client driver imports only the engine', () => {
    expect(importsOutside(graph, 'client', ['client', 'engine'])).toEqual([])
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
