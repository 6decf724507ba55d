/**
 * The engine package documents its public surface where users read it (their editor's hover, the
 * shipped declarations): every entry of `src/mcp/package.json` opens with a module header, and
 * every function, class and constant an entry exports carries a TSDoc comment with an `@example`
 * (Hono's style), every type and interface at least a TSDoc summary. Read from the sources with the
 * TypeScript compiler, following re-exports to the declaration. A summary is text (tags alone are
 * none); a module's header is not the documentation of its first statement, which the compiler
 * hands it too; a name declared twice (a constant and its type) is documented at each declaration,
 * an overloaded function at its first signature.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { ENGINE_DIR, readEngineEntries } from '../../scripts/support/engine-build.ts'

const { entries } = readEngineEntries()
const program = ts.createProgram(
  entries.map((entry) => join(ENGINE_DIR, entry.module)),
  {
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2024,
    noEmit: true,
    skipLibCheck: true,
  }
)
const checker = program.getTypeChecker()

/**
 * The TSDoc comments of a declaration: those right before it, minus a module header (`@module`),
 * which the compiler also hands to the first statement of a module.
 */
function ownDocs(declaration: ts.Declaration): ts.JSDoc[] {
  const node = ts.isVariableDeclaration(declaration) ? declaration.parent.parent : declaration
  return ts
    .getJSDocCommentsAndTags(node)
    .filter(ts.isJSDoc)
    .filter((doc) => !doc.tags?.some((tag) => tag.tagName.text === 'module'))
}

/** Whether users call or construct the declaration (a function, class or constant), not a type. */
function isValue(declaration: ts.Declaration): boolean {
  return (
    ts.isFunctionDeclaration(declaration) ||
    ts.isClassDeclaration(declaration) ||
    ts.isVariableDeclaration(declaration)
  )
}

/** What a declaration lacks: `'example'`, `'summary'` (tags alone are none), or nothing. */
function lacks(declaration: ts.Declaration): 'example' | 'summary' | undefined {
  const docs = ownDocs(declaration)
  if (!docs.some((doc) => ts.getTextOfJSDocComment(doc.comment)?.trim())) return 'summary'
  if (!isValue(declaration)) return undefined
  const tags = docs.flatMap((doc) => doc.tags ?? [])
  return tags.some((tag) => tag.tagName.text === 'example') ? undefined : 'example'
}

/**
 * The declarations of a symbol users read: each of a merged name (a constant and the type of the
 * same name), but of an overloaded function only its first signature.
 */
function documentedDeclarations(symbol: ts.Symbol): ts.Declaration[] {
  const declarations = symbol.declarations ?? []
  const firstFunction = declarations.find(ts.isFunctionDeclaration)
  return declarations.filter((d) => !ts.isFunctionDeclaration(d) || d === firstFunction)
}

/** Each exported name of `module` lacking its documentation, as `name: what`. */
function undocumented(module: string): string[] {
  const file = program.getSourceFile(join(ENGINE_DIR, module))
  if (!file) throw new Error(`${module} is not part of the program`)
  const symbol = checker.getSymbolAtLocation(file)
  if (!symbol) throw new Error(`${module} has no module symbol`)
  return checker.getExportsOfModule(symbol).flatMap((exported) => {
    const target =
      exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
    return documentedDeclarations(target).flatMap((declaration) => {
      const missing = lacks(declaration)
      if (!missing) return []
      const kind = isValue(declaration) ? '' : ' (type)'
      return [`${exported.name}${kind}: no ${missing === 'example' ? '@example' : 'TSDoc'}`]
    })
  })
}

describe.each(entries)('the entry $subpath ($module)', ({ module }) => {
  it('opens with a module header', () => {
    expect(readFileSync(join(ENGINE_DIR, module), 'utf8')).toMatch(/^\/\*\*\n \* @module /)
  })

  it('documents every export: values with an @example, types with a summary', () => {
    expect(undocumented(module)).toEqual([])
  })
})
