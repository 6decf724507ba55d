/**
 * @module scripts/bench/profile
 * Reads a V8 `.cpuprofile` (written by `node --cpu-prof`) and says where the time went: self time per
 * function (name, file, line), self time per area (our engine, our HTTP glue, Hono, zod, jose, Node
 * internals, GC, idle), and inclusive time of our own functions (`src/`, `routes/`). Used by
 * `scripts/bench.ts --profile DIR`; the profile files stay in DIR for Chrome DevTools.
 */
import { readFileSync } from 'node:fs'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}

interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileEntry {
  name: string
  where: string
  area: string
  ms: number
  percent: number
}

export interface ProfileSummary {
  totalMs: number
  topSelf: ProfileEntry[]
  areas: Array<{ area: string; ms: number; percent: number }>
  /** Inclusive (self + callees) time of functions defined in `src/` or `routes/`. */
  topInclusiveOwn: ProfileEntry[]
}

const AREAS: Array<[RegExp, string]> = [
  [/\/src\/mcp\//, 'engine (src/mcp)'],
  [/\/src\/(http|auth)\/|\/routes\//, 'http glue (src/http, routes)'],
  [/\/src\/|\/scripts\/bench\//, 'app/bench code'],
  [/node_modules\/@hono\/node-server\//, '@hono/node-server'],
  [/node_modules\/hono\//, 'hono'],
  [/node_modules\/zod\//, 'zod'],
  [/node_modules\/jose\//, 'jose'],
  [/node_modules\/@modelcontextprotocol\//, 'MCP SDK'],
  [/node_modules\//, 'other packages'],
  [/^node:/, 'node internals (JS)'],
]

function areaOf(frame: CallFrame): string {
  if (frame.url === '') {
    if (frame.functionName === '(garbage collector)') return 'GC'
    if (frame.functionName === '(idle)') return 'idle'
    if (frame.functionName === '(program)') return 'program (native, unattributed)'
    return 'native / builtins'
  }
  for (const [pattern, area] of AREAS) if (pattern.test(frame.url)) return area
  return 'other'
}

function shortUrl(url: string): string {
  const index = Math.max(url.lastIndexOf('/node_modules/'), -1)
  if (index >= 0) return url.slice(index + '/node_modules/'.length)
  const root = url.search(/\/(src|routes|scripts|tests)\//)
  return root >= 0 ? url.slice(root + 1) : url.replace(/^file:\/\//, '')
}

export function summarizeProfile(path: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  let totalUs = 0
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta)
    totalUs += delta
  })

  const key = (frame: CallFrame) =>
    `${frame.functionName}\u0000${frame.url}\u0000${frame.lineNumber}`
  const selfByFunction = new Map<string, { frame: CallFrame; us: number }>()
  const areaUs = new Map<string, number>()
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0
    if (us === 0) continue
    const k = key(node.callFrame)
    const entry = selfByFunction.get(k) ?? { frame: node.callFrame, us: 0 }
    entry.us += us
    selfByFunction.set(k, entry)
    const area = areaOf(node.callFrame)
    areaUs.set(area, (areaUs.get(area) ?? 0) + us)
  }

  // Inclusive time per function, counted once per stack even when it recurses.
  const inclusive = new Map<string, { frame: CallFrame; us: number }>()
  const walk = (id: number, onStack: Set<string>): number => {
    const node = byId.get(id)
    if (!node) return 0
    const k = key(node.callFrame)
    const first = !onStack.has(k)
    if (first) onStack.add(k)
    let us = selfUs.get(id) ?? 0
    for (const child of node.children ?? []) us += walk(child, onStack)
    if (first) {
      onStack.delete(k)
      const entry = inclusive.get(k) ?? { frame: node.callFrame, us: 0 }
      entry.us += us
      inclusive.set(k, entry)
    }
    return us
  }
  const root = profile.nodes[0]
  if (root) walk(root.id, new Set())

  const toEntry = ({ frame, us }: { frame: CallFrame; us: number }): ProfileEntry => ({
    name: frame.functionName || '(anonymous)',
    where: frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : '',
    area: areaOf(frame),
    ms: us / 1000,
    percent: (100 * us) / totalUs,
  })
  return {
    totalMs: totalUs / 1000,
    topSelf: [...selfByFunction.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(toEntry),
    areas: [...areaUs.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, ms: us / 1000, percent: (100 * us) / totalUs })),
    topInclusiveOwn: [...inclusive.values()]
      .filter(({ frame }) => /\/(src|routes)\//.test(frame.url))
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(toEntry),
  }
}

export function formatProfile(title: string, summary: ProfileSummary): string {
  const pct = (value: number) => `${value.toFixed(1)}%`.padStart(6)
  const lines = [
    `## ${title} (${(summary.totalMs / 1000).toFixed(1)} s sampled)`,
    '',
    'Self time by area:',
  ]
  for (const { area, percent } of summary.areas) lines.push(`  ${pct(percent)}  ${area}`)
  lines.push('', 'Top self time:')
  for (const entry of summary.topSelf) {
    lines.push(`  ${pct(entry.percent)}  ${entry.name}  ${entry.where}`)
  }
  lines.push('', 'Inclusive time of our functions (src/, routes/):')
  for (const entry of summary.topInclusiveOwn) {
    lines.push(`  ${pct(entry.percent)}  ${entry.name}  ${entry.where}`)
  }
  return lines.join('\n')
}
