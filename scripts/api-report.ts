/**
 * @module scripts/api-report
 * The engine package's API report: for each entry of its `exports` map, one Markdown file in
 * `src/mcp/api-report/` listing every name the entry exports with its declaration, and every
 * declaration of the package those reach that no entry exports (an internal type leaking into the
 * surface shows up there). Read from the `.d.ts` the package ships (scripts/support/engine-build.ts),
 * printed without comments in a fixed order, so the report changes only when the surface does.
 * `npm run -s api:report` rewrites the files; tests/e2e/engine-package.test.ts fails when the
 * committed ones differ from {@link renderApiReports}.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import {
  ENGINE_DIR,
  REPO_ROOT,
  compileEngine,
  readEngineEntries,
  readEngineManifest,
  type EngineEntry,
} from './support/engine-build.ts'

/** Where the committed reports live. */
export const API_REPORT_DIR = join(ENGINE_DIR, 'api-report')
const REPORT_SUFFIX = '.api.md'

/** Declarations of the package a set of nodes refers to through its types (type parameters aside). */
function referencedSymbols(checker: ts.TypeChecker, nodes: readonly ts.Node[]): ts.Symbol[] {
  const found: ts.Symbol[] = []
  const visit = (node: ts.Node): void => {
    let symbol: ts.Symbol | undefined
    if (ts.isTypeReferenceNode(node)) symbol = symbolOfName(checker, node.typeName)
    else if (ts.isExpressionWithTypeArguments(node)) symbol = symbolOfName(checker, node.expression)
    else if (ts.isTypeQueryNode(node)) symbol = symbolOfName(checker, node.exprName)
    else if (ts.isImportTypeNode(node)) symbol = checker.getTypeFromTypeNode(node).getSymbol()
    if (symbol) found.push(symbol)
    ts.forEachChild(node, visit)
  }
  nodes.forEach(visit)
  return found
}

function symbolOfName(checker: ts.TypeChecker, name: ts.Node): ts.Symbol | undefined {
  const last = ts.isQualifiedName(name)
    ? name.right
    : ts.isPropertyAccessExpression(name)
      ? name.name
      : name
  const symbol = checker.getSymbolAtLocation(last)
  return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
}

/** A declaration as the report prints it: comments dropped, TypeScript's own layout. */
function declarationText(printer: ts.Printer, declaration: ts.Declaration): string {
  const source = declaration.getSourceFile()
  if (ts.isVariableDeclaration(declaration)) {
    const list = declaration.parent as ts.VariableDeclarationList
    const keyword =
      list.flags & ts.NodeFlags.Const ? 'const' : list.flags & ts.NodeFlags.Let ? 'let' : 'var'
    const statement = list.parent as ts.VariableStatement
    const exported = ts
      .getModifiers(statement)
      ?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
    return `${exported ? 'export ' : ''}declare ${keyword} ${printer.printNode(ts.EmitHint.Unspecified, declaration, source)};`
  }
  if (ts.isSourceFile(declaration) || ts.isModuleDeclaration(declaration)) {
    throw new Error(
      'api-report: namespaces and `export * as` are not supported; export names one by one'
    )
  }
  return printer.printNode(ts.EmitHint.Unspecified, declaration, source)
}

function fenced(blocks: readonly string[]): string {
  return blocks.length === 0 ? '(none)\n' : `\`\`\`ts\n${blocks.join('\n\n')}\n\`\`\`\n`
}

/** One name an entry exports and the declaration it stands for (aliases followed). */
interface ExportedName {
  name: string
  target: ts.Symbol
}

/** The compiled declarations of the package, read by one program. */
interface Declarations {
  dir: string
  checker: ts.TypeChecker
  printer: ts.Printer
}

function entryExports(
  program: ts.Program,
  { dir, checker }: Declarations,
  entry: EngineEntry
): ExportedName[] {
  const source = program.getSourceFile(join(dir, entry.module.replace(/\.ts$/, '.d.ts')))
  const module = source && checker.getSymbolAtLocation(source)
  if (!module) throw new Error(`api-report: no declarations for ${entry.module}`)
  return checker
    .getExportsOfModule(module)
    .map((symbol) => ({
      name: symbol.name,
      target: symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol,
    }))
    .sort((a, b) => (a.name < b.name ? -1 : 1))
}

/**
 * The report of one entry: its exports, then the package's declarations they reach that no entry
 * exports (`publicSymbols`: what any entry exports, reported there).
 */
function entryReport(
  { dir, checker, printer }: Declarations,
  specifier: string,
  exported: readonly ExportedName[],
  publicSymbols: ReadonlySet<ts.Symbol>
): string {
  const inPackage = (declaration: ts.Declaration) =>
    declaration.getSourceFile().fileName.startsWith(dir) &&
    !ts.isTypeParameterDeclaration(declaration)

  const internal = new Set<ts.Symbol>()
  const pending = exported.flatMap(({ target }) =>
    referencedSymbols(checker, target.declarations ?? [])
  )
  for (let symbol = pending.pop(); symbol; symbol = pending.pop()) {
    const declarations = (symbol.declarations ?? []).filter(inPackage)
    if (declarations.length === 0 || publicSymbols.has(symbol) || internal.has(symbol)) continue
    internal.add(symbol)
    pending.push(...referencedSymbols(checker, declarations))
  }

  const exportBlocks = exported.map(({ name, target }) => {
    const texts = (target.declarations ?? []).map((declaration) =>
      declarationText(printer, declaration)
    )
    return target.name === name ? texts.join('\n') : `// exported as ${name}\n${texts.join('\n')}`
  })
  const internalBlocks = [...internal]
    .map((symbol) => {
      const declarations = (symbol.declarations ?? []).filter(inPackage)
      const file = relative(dir, declarations[0]!.getSourceFile().fileName)
      const texts = declarations.map((declaration) => declarationText(printer, declaration))
      return { key: `${file}\0${symbol.name}`, text: `// ${file}\n${texts.join('\n')}` }
    })
    .sort((a, b) => (a.key < b.key ? -1 : 1))
    .map(({ text }) => text)

  return [
    `# API report: \`${specifier}\``,
    '',
    'Generated by `npm run api:report` from the declarations the package ships; do not edit.',
    '',
    '## Exports',
    '',
    fenced(exportBlocks),
    '## Reached from the exports, exported by no entry',
    '',
    fenced(internalBlocks),
  ].join('\n')
}

/** Every entry's report, by file name (e.g. `stateless-mcp.api.md`, `stateless-mcp.sqlite.api.md`). */
export function renderApiReports(): Map<string, string> {
  const manifest = readEngineManifest()
  const { entries } = readEngineEntries(manifest)
  // Inside the repository, so the declarations' imports of zod and jose resolve.
  mkdirSync(join(REPO_ROOT, 'dist'), { recursive: true })
  const dir = mkdtempSync(join(REPO_ROOT, 'dist/api-report-'))
  try {
    compileEngine(entries, dir, { declarationsOnly: true })
    const program = ts.createProgram({
      rootNames: entries.map((entry) => join(dir, entry.module.replace(/\.ts$/, '.d.ts'))),
      options: {
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2024,
        strict: true,
        noEmit: true,
        types: [],
      },
    })
    const declarations: Declarations = {
      dir,
      checker: program.getTypeChecker(),
      printer: ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed }),
    }
    const exportsByEntry = entries.map((entry) => ({
      entry,
      exported: entryExports(program, declarations, entry),
    }))
    const publicSymbols = new Set(
      exportsByEntry.flatMap(({ exported }) => exported.map(({ target }) => target))
    )
    return new Map(
      exportsByEntry.map(({ entry, exported }) => {
        const specifier =
          entry.subpath === '.' ? manifest.name : `${manifest.name}/${entry.subpath.slice(2)}`
        return [
          `${specifier.replaceAll('/', '.')}${REPORT_SUFFIX}`,
          entryReport(declarations, specifier, exported, publicSymbols),
        ]
      })
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The committed reports, by file name (none before the first `npm run api:report`). */
export function readCommittedReports(): Map<string, string> {
  if (!existsSync(API_REPORT_DIR)) return new Map()
  const names = readdirSync(API_REPORT_DIR, { withFileTypes: true })
    .filter((file) => file.isFile() && file.name.endsWith(REPORT_SUFFIX))
    .map((file) => file.name)
  return new Map(names.map((name) => [name, readFileSync(join(API_REPORT_DIR, name), 'utf8')]))
}

if (import.meta.main) {
  const reports = renderApiReports()
  for (const name of readCommittedReports().keys()) {
    if (!reports.has(name)) rmSync(join(API_REPORT_DIR, name))
  }
  mkdirSync(API_REPORT_DIR, { recursive: true })
  for (const [name, text] of reports) writeFileSync(join(API_REPORT_DIR, name), text)
  console.log(
    `${reports.size} API report(s) in ${relative(REPO_ROOT, API_REPORT_DIR)}: ${[...reports.keys()].join(', ')}`
  )
}
