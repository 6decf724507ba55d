/**
 * The documentation's links hold: in README.md and every docs/*.md page, each relative link names a
 * file or folder that exists, each `#anchor` (in the same page or another Markdown page) matches a
 * heading's GitHub slug there, and each `npm run <script>` (or `npm run -s <script>`) names a script
 * of package.json. Also the README stays a five-minute read (at most 250 lines). The checker is
 * tested on pages with broken links first, so a checker that finds nothing cannot pass unnoticed.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')

/** The lines of `markdown` outside fenced code blocks (``` or ~~~), others blanked. */
function outsideFences(markdown: string): string[] {
  let fence: string | undefined
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined
      return ''
    }
    return fence === undefined ? line : ''
  })
}

/** A heading's anchor as GitHub makes it: plain text, lower case, punctuation dropped, spaces → '-'. */
function githubSlug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** Every anchor the headings of `markdown` define; a repeated slug gets -1, -2… as on GitHub. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of outsideFences(markdown)) {
    const text = /^#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1]
    if (text === undefined) continue
    const slug = githubSlug(text)
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** The targets of the inline links and images of `markdown`, outside code blocks and code spans. */
function linkTargets(markdown: string): string[] {
  const prose = outsideFences(markdown)
    .join('\n')
    .replace(/`[^`]*`/g, (span) => ' '.repeat(span.length))
  return [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!)
}

/** The scripts `npm run <script>` and `npm run -s <script>` name in `markdown`, code included. */
function npmRunScripts(markdown: string): string[] {
  const runs = markdown.matchAll(/\bnpm run(?:\s+(?:-s|--silent))?\s+([\w:-]+(?:\.[\w:-]+)*)/g)
  return [...runs].map((match) => match[1]!).filter((name) => !name.startsWith('-'))
}

/**
 * What is wrong with the links of `markdown`, the page at `path` (relative to `base`): each broken
 * link, missing anchor and unknown script as one line, none when all hold.
 */
function linkProblems(
  base: string,
  path: string,
  markdown: string,
  scripts: ReadonlySet<string>
): string[] {
  const problems: string[] = []
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z\d+.-]*:/i.test(target)) continue // https:, mailto: and other absolute links
    const [file = '', anchor] = target.split('#', 2)
    if (file === '') {
      if (!headingAnchors(markdown).has(decodeURIComponent(anchor ?? ''))) {
        problems.push(`${path}: ${target}: no heading with anchor #${anchor}`)
      }
      continue
    }
    const targetPath = resolve(dirname(join(base, path)), file)
    if (!existsSync(targetPath)) {
      problems.push(`${path}: ${target}: no such file (${relative(base, targetPath)})`)
      continue
    }
    if (anchor === undefined || !targetPath.endsWith('.md') || statSync(targetPath).isDirectory()) {
      continue
    }
    if (!headingAnchors(readFileSync(targetPath, 'utf8')).has(decodeURIComponent(anchor))) {
      problems.push(`${path}: ${target}: no heading with anchor #${anchor}`)
    }
  }
  for (const script of npmRunScripts(markdown)) {
    if (!scripts.has(script)) problems.push(`${path}: npm run ${script}: no such script`)
  }
  return problems
}

const packageScripts = new Set(
  Object.keys(
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: object }).scripts
  )
)
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
]

describe('the link checker', () => {
  it('makes GitHub slugs', () => {
    expect(githubSlug('2025-era clients')).toBe('2025-era-clients')
    expect(githubSlug('Deno, Bun, AWS Lambda and Netlify')).toBe('deno-bun-aws-lambda-and-netlify')
    expect(githubSlug('`npm start` & the [store](x.md)')).toBe('npm-start--the-store')
    expect(githubSlug('STATE_KEYS: rotation')).toBe('state_keys-rotation')
    expect([...headingAnchors('# Limits\n\n```sh\n# not a heading\n```\n## Limits\n')]).toEqual([
      'limits',
      'limits-1',
    ])
  })

  it('reads links outside code and scripts everywhere', () => {
    const page = [
      'See [Limits](docs/limits.md#one-stream) and [the\nspec](https://example.com/a).',
      '`[not](a-link.md)`, ![image](img.png)',
      '```sh\nnpm run -s image:build  # [no](link.md)\n```',
      'Then `npm run bench -- --quick` and npm run lint.',
    ].join('\n')
    expect(linkTargets(page)).toEqual([
      'docs/limits.md#one-stream',
      'https://example.com/a',
      'img.png',
    ])
    expect(npmRunScripts(page)).toEqual(['image:build', 'bench', 'lint'])
  })

  it('reports a missing file, a missing anchor and an unknown script', () => {
    const page = [
      '# Broken',
      'See [a page](no-such-page.md), [a heading](limits.md#no-such-heading), [here](#nowhere),',
      '[this page](#broken), [limits](limits.md#limits) and [the source](../src/config.ts).',
      'Run `npm run no-such-script`, then `npm run -s lint`.',
    ].join('\n')
    expect(linkProblems(root, 'docs/broken.md', page, packageScripts)).toEqual([
      'docs/broken.md: no-such-page.md: no such file (docs/no-such-page.md)',
      'docs/broken.md: limits.md#no-such-heading: no heading with anchor #no-such-heading',
      'docs/broken.md: #nowhere: no heading with anchor #nowhere',
      'docs/broken.md: npm run no-such-script: no such script',
    ])
  })
})

describe('the documentation', () => {
  it.each(pages)('%s: every relative link, anchor and npm script resolves', (page) => {
    const markdown = readFileSync(join(root, page), 'utf8')
    expect(linkProblems(root, page, markdown, packageScripts)).toEqual([])
  })

  it('keeps the README at most 250 lines', () => {
    expect(
      readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n').length
    ).toBeLessThanOrEqual(250)
  })
})
