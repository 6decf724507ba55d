/**
 * @module scripts/loadtest/report-table
 * The load test's summary (`report.ts`) as the plain-text tables printed at the end of a run: the
 * run's setup, totals and infrastructure counters, the two eras side by side, then per era its
 * failures by kind (and the kinds it may fail with), its flows by kind and latency percentiles, the
 * tasks scenario's section, a soak's section (per replica: its samples, the resident set, heap and
 * handles from first to last judged sample with their slope, and its verdict; then where its memory
 * is, from the warm-up's end to the last sample), the problems the
 * store check found and the first failed flows.
 */
import { ERAS, type Era, type Percentiles } from './metrics.ts'
import type { DatabaseReport } from './faults/database.ts'
import type { RollingReport } from './faults/rolling.ts'
import type { EraSummary, FaultReport, LoadtestSummary, TasksSummary } from './report.ts'
import type { MetricTrend, ReplicaSoak, SoakReport } from './soak.ts'

function pct(part: number, whole: number): string {
  return whole === 0 ? '—' : `${((100 * part) / whole).toFixed(1)}%`
}

function counts(record: Record<string, number>): string {
  const entries = Object.entries(record)
  return entries.length === 0 ? 'none' : entries.map(([kind, n]) => `${kind} ${n}`).join(', ')
}

function aligned(rows: Array<[string, ...string[]]>): string[] {
  const widths = rows[0]?.map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length))
  )
  return rows.map((row) =>
    `  ${row.map((cell, column) => cell.padEnd(widths?.[column] ?? 0)).join('  ')}`.trimEnd()
  )
}

function eraRows(eras: Record<Era, EraSummary>): Array<[string, ...string[]]> {
  const cells = (cell: (era: EraSummary) => string): [string, string] => [
    cell(eras.modern),
    cell(eras['2025']),
  ]
  return [
    ['', 'modern (2026-07-28)', '2025 (v1 SDK client)'],
    ['users', ...cells((era) => String(era.users))],
    [
      'flows ok',
      ...cells(
        (era) => `${era.flows_ok} / ${era.flows_started} (${pct(era.flows_ok, era.flows_started)})`
      ),
    ],
    ['failed cleanly', ...cells((era) => String(era.flows_failed_cleanly))],
    ['streams resumed', ...cells((era) => String(era.streams_resumed))],
    ['lost / duplicated', ...cells((era) => `${era.lost} / ${era.duplicated}`)],
    ['not deleted / half done', ...cells((era) => `${era.not_deleted} / ${era.half_done}`)],
    [
      'cross-replica',
      ...cells(
        (era) =>
          `${era.cross_replica_rounds} / ${era.rounds_after_first} (${pct(era.cross_replica_rounds, era.rounds_after_first)})`
      ),
    ],
    [
      'create recovery',
      ...cells(
        (era) => `${era.create_transport_failures} lost, ${era.creates_recovered_by_search} found`
      ),
    ],
    ['passed', ...cells((era) => (era.passed ? 'yes' : 'NO'))],
  ]
}

function latencyTable(latency: Record<string, Percentiles>): string[] {
  return aligned([
    ['latency (ms)', 'p50', 'p90', 'p99', 'max', 'count'],
    ...Object.entries(latency).map(([label, p]): [string, ...string[]] => [
      label,
      p.p50.toFixed(1),
      p.p90.toFixed(1),
      p.p99.toFixed(1),
      p.max.toFixed(1),
      String(p.count),
    ]),
  ])
}

/** What the fault did, in one line. */
function faultLine(fault: FaultReport): string {
  const verdict = fault.passed ? '' : ' (FAILED)'
  switch (fault.kind) {
    case 'kill':
      return `SIGKILL ${fault.replica} at ${fault.killed_at_s} s, back at ${fault.restarted_at_s} s`
    case 'rolling': {
      const { kid, added_at_s, promoted_at_s } = fault.key_rotation
      return (
        `${fault.restarts.length} graceful restarts; key ${kid} added by ${added_at_s} s, ` +
        `promoted by ${promoted_at_s} s${verdict}`
      )
    }
    case 'pg-restart':
    case 'pg-kill':
      return (
        `PostgreSQL ${fault.kind === 'pg-kill' ? 'SIGKILLed' : 'stopped'} at ${fault.down_at_s} s, ` +
        `back at ${fault.back_at_s} s (${fault.outage_s} s down), ${fault.refused} requests refused; ` +
        `replicas serving again by ${fault.recovered_at_s ?? 'never'} s${verdict}`
      )
    case 'redis-restart':
      return (
        `Redis master ${fault.killed_node} SIGKILLed at ${fault.killed_at_s} s, replica promoted by ` +
        `${fault.failed_over_at_s ?? 'never'} s, node back by ${fault.rejoined_at_s ?? 'never'} s; ` +
        `buses heard again after ${fault.heard_again.map(({ replica, after_ms }) => `${replica} ${after_ms ?? 'never'} ms`).join(', ')}${verdict}`
      )
  }
}

/** A database fault: the outage, the requests refused in it, each replica's time to recover. */
function databaseSection(fault: DatabaseReport): string[] {
  return aligned([
    ['replica', 'store served again after the server was back'],
    ...fault.recovery.map((r): [string, string] => [
      r.replica,
      r.recovered_ms === null ? 'NOT within the bound' : `${r.recovered_ms} ms`,
    ]),
  ])
}

/** Every restart of a rolling deploy: when, how the replica ended, how long it drained. */
function rollingSection(fault: RollingReport): string[] {
  return aligned([
    ['deploy', 'replica', 'SIGTERM at', 'exit', 'drained in', 'back at'],
    ...fault.restarts.map((r): [string, ...string[]] => [
      r.deploy,
      r.replica,
      `${r.sigterm_at_s} s`,
      r.forced ? 'SIGKILLed' : String(r.exit_code ?? r.exit_signal),
      `${r.drain_ms} ms`,
      `${r.back_at_s} s`,
    ]),
  ])
}

/** The tasks scenario's own section. */
function tasksSection(t: TasksSummary): string[] {
  const killed = t.killed_replica_tasks
  const rows: Array<[string, string]> = [
    [
      'flows',
      `${t.flows_ok} ok, ${t.flows_failed_cleanly} failed cleanly, of ${t.flows_started} ` +
        `(${t.users} users)`,
    ],
    [
      'tasks',
      `${t.tasks_created} created, ${t.creations_unanswered} creating calls unanswered; ` +
        `tasks/get: ${counts(t.statuses)}`,
    ],
    ['store census', `${t.store_census.total}: ${counts(t.store_census.statuses)}`],
    ['requests', `${t.polls} polls, ${t.updates} updates (${t.answers} answers)`],
    [
      'cross-replica',
      `${t.cross_replica_requests} / ${t.requests_after_create} polls and answers ` +
        `(${pct(t.cross_replica_requests, t.requests_after_create)})`,
    ],
    [
      'checked',
      `${t.notes_expected} imported notes expected in the store, ${t.exports_checked} exports`,
    ],
    [
      'lost / duplicated / stuck',
      `${t.lost} / ${t.duplicated} / ${t.stuck} (${t.orphaned} of unknown id, ` +
        `${t.abandoned} abandoned; ${t.store_mismatches} store mismatches)`,
    ],
  ]
  if (killed) {
    rows.push([
      'killed replica',
      `ran ${killed.running} tasks at the SIGKILL; ${killed.ended} of them ended elsewhere`,
    ])
  }
  rows.push(
    ['failed cleanly', counts(t.failed_cleanly)],
    ['errors', counts(t.errors)],
    ['passed', t.passed ? 'yes' : 'NO']
  )
  return [
    '  tasks (import_notes and export_notes as tasks):',
    ...aligned(rows),
    ...latencyTable({ ...t.latency_ms, task_to_end: t.task_ms }),
    ...t.problems.map((p) => `    tasks problem: ${p}`),
  ]
}

/** One metric of a soak: first → last judged value, slope per hour, growth over the window. */
function trendCell(trend: MetricTrend | null): string {
  if (!trend) return '—'
  const sign = (value: number) => (value >= 0 ? `+${value}` : String(value))
  return (
    `${trend.first}→${trend.last} ${sign(trend.slope_per_h)}/h ` +
    `(${sign(trend.growth)})${trend.passed ? '' : ' OVER'}`
  )
}

/**
 * Where a replica's memory is, as `first→last` MiB from the first judged sample (the warm-up's end)
 * to the last, after its resident set's start, peak and end over the whole run.
 */
function memoryRow(r: ReplicaSoak, warmupS: number): [string, ...string[]] {
  const first = r.points.find((point) => point.s >= warmupS)
  const last = r.points.at(-1)
  const range = (figure: (point: ReplicaSoak['points'][number]) => number | null) => {
    const from = first && figure(first)
    const to = last && figure(last)
    return from === null || from === undefined || to === null || to === undefined
      ? '—'
      : `${from}→${to}`
  }
  const rss = r.rss_mib
  return [
    r.id,
    rss ? `${rss.start} / ${rss.peak} / ${rss.end}` : '—',
    range((point) => point.heap_total),
    range((point) => point.young),
    range((point) => point.external),
    range((point) => point.array_buffers),
    range((point) => point.native),
    range((point) => point.file),
  ]
}

/** The soak's own section: how it was judged, then a row per replica, then its memory's parts. */
function soakSection(soak: SoakReport): string[] {
  const { bounds } = soak
  const per = soak.judged_by === 'slope_per_hour' ? 'per hour' : 'over the judged window'
  return [
    `  soak: ${soak.minutes} min at ${soak.rate_flows_per_s} flows/s, a sample every ` +
      `${soak.sample_interval_s} s, warm-up ${soak.warmup_s} s left out, ` +
      `${soak.judged_window_s} s judged`,
    `  bounds ${per}: RSS ${bounds.rss} MiB, heap after GC ${bounds.heap} MiB, ` +
      `handles ${bounds.handles}, fds ${bounds.fds}`,
    `  ${soak.note}`,
    ...aligned([
      ['replica', 'samples', 'RSS MiB', 'heap MiB (after GC)', 'handles', 'fds', 'passed'],
      ...soak.replicas.map((r): [string, ...string[]] => [
        r.id,
        `${r.judged_samples}/${r.samples}`,
        trendCell(r.rss),
        trendCell(r.heap),
        trendCell(r.handles),
        trendCell(r.fds),
        r.passed ? 'yes' : 'NO',
      ]),
    ]),
    ...soak.replicas.flatMap((r) => r.problems.map((p) => `    ${r.id}: ${p}`)),
    '  memory (MiB): RSS over the run; the rest from the warm-up to the end (native: anonymous ' +
      'memory outside the V8 heap; file: mapped files)',
    ...aligned([
      [
        'replica',
        'RSS start / peak / end',
        'heap total',
        'young gen',
        'external',
        'array buffers',
        'native',
        'file',
      ],
      ...soak.replicas.map((r) => memoryRow(r, soak.warmup_s)),
    ]),
  ]
}

/** The summary as plain-text tables. */
export function formatTable(s: LoadtestSummary): string {
  const rows: Array<[string, string]> = [
    [
      'setup',
      `${s.mode}${s.balancer ? ` (nginx, ${s.balancer})` : ''}, ${s.store}, ${s.replicas} replicas, ` +
        `${s.users} users (2025 share ${s.legacy_share}), ${s.duration_s} s`,
    ],
    [
      'flows',
      `${s.flows_completed} ok, ${s.flows_failed_cleanly} failed cleanly, of ${s.flows_started} ` +
        `(${s.flows_per_s} ok/s)`,
    ],
    ['lost / duplicated', `${s.lost} / ${s.duplicated}`],
    ['served by', counts(s.served_by)],
    [
      'requests',
      `${s.requests}${s.request_cap_reached ? ` (cap ${s.max_requests} reached)` : ''} in ${s.elapsed_s} s`,
    ],
    ['HTTP 5xx', `replica ${s.http_5xx.replica}, gateway ${s.http_5xx.gateway}`],
    [
      'transport failures',
      `${s.failed_attempts} attempts; ${s.retried_rounds} modern rounds re-sent ` +
        `(${s.retried_rounds_after_fault} after the fault)`,
    ],
  ]
  if (s.fault) rows.push(['fault', faultLine(s.fault)])
  rows.push(['errors', counts(s.errors)])
  const lines = aligned(rows)
  if (s.fault?.kind === 'rolling') lines.push('', ...rollingSection(s.fault))
  if (s.fault?.kind === 'pg-restart' || s.fault?.kind === 'pg-kill') {
    lines.push('', ...databaseSection(s.fault))
  }
  lines.push('', ...aligned(eraRows(s.eras)))

  for (const era of ERAS) {
    const e = s.eras[era]
    if (e.users === 0) continue
    const allowed = e.allowed_failure_kinds.join(', ') || 'none'
    lines.push('', `  ${era}: failed by kind: ${counts(e.failed_by_kind)} (allowed: ${allowed})`)
    if (e.failed_cleanly_outside_fault > 0) {
      lines.push(
        `  ${era}: ${e.failed_cleanly_outside_fault} failed cleanly outside the fault window`
      )
    }
    lines.push(
      ...aligned([
        ['flow kind', 'started', 'completed', 'failed cleanly'],
        ...Object.entries(e.flows).map(([kind, c]): [string, ...string[]] => [
          kind,
          String(c.started),
          String(c.completed),
          String(c.failed_cleanly),
        ]),
      ])
    )
    lines.push(...latencyTable(e.latency_ms))
  }
  if (s.tasks) lines.push('', ...tasksSection(s.tasks))
  if (s.soak) lines.push('', ...soakSection(s.soak))
  if (s.problems.length > 0) lines.push('', '  problems:', ...s.problems.map((p) => `    ${p}`))
  if (s.failed_flow_samples.length > 0) {
    lines.push('', '  failed flows (first 10):', ...s.failed_flow_samples.map((f) => `    ${f}`))
  }
  lines.push('', `  ${s.passed ? 'PASSED' : 'FAILED'}`)
  return lines.join('\n')
}
