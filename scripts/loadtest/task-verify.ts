/**
 * @module scripts/loadtest/task-verify
 * The check of the tasks scenario after the load (`task-flow.ts`), from `tasks/get` and the store:
 * - `settleTasks`: every task a flow learned the id of is read with `tasks/get` until it is terminal
 *   or the grace (from the end of the run: a takeover's bound and a poll or two) is over, and its
 *   last status is kept in the ledger. Still not terminal: stuck;
 * - the census (every task record in the store, `store.ts`): a record whose id no flow knows was
 *   created by a call whose answer was lost, so there may be at most as many as such calls
 *   (`creationsUnanswered`). Such a task still `working` is stuck; one in `input_required` is
 *   abandoned: it waits for answers only its creator could give, who never learned its id (the
 *   protocol has no way to find it), which is no defect of the server. A known task's stored status
 *   must be the one `tasks/get` showed;
 * - the notes: per flow, the store must hold exactly what its imports left (`expectedNotes`, from the
 *   imports' final statuses). Lost: an expected note missing, or stored with other content;
 *   duplicated: a note stored more often than expected (a re-run that created it again) or one no
 *   import explains. A first import nobody learned the id of: all of its notes or none, each once;
 * - the exports: a completed export's bundle held against the same expectation (a note it lacks is
 *   lost, one it lists twice or that was never imported is duplicated);
 * - the kill: every task the killed replica held the lease of at the SIGKILL must have ended.
 */
import type { TaskInfo } from '../../src/client/index.ts'
import { TERMINAL_TASK_STATUSES, type TaskStatus } from '../../src/mcp/task-store.ts'
import type { Note } from '../../src/notes/store.ts'
import type { TaskRow } from './store.ts'
import {
  expectedNotes,
  sameNotes,
  taskFlowTagOf,
  type SpecNote,
  type TaskFlowRecord,
  type TaskStepRecord,
} from './task-flow.ts'

/** Pause between the settling rounds of `tasks/get`. */
const SETTLE_POLL_MS = 1_000
/** Problems described in the summary, at most. */
const MAX_PROBLEMS = 20

export interface TaskVerification {
  /** Tasks whose id a flow learned, by the status `tasks/get` showed last. */
  statuses: Record<string, number>
  census: { total: number; statuses: Record<string, number> }
  lost: number
  duplicated: number
  stuck: number
  /** Tasks of unknown id: in all, and those parked in `input_required` for good. */
  orphaned: number
  abandoned: number
  /** Known tasks whose stored status is not the one `tasks/get` showed. */
  mismatched: number
  notesExpected: number
  exportsChecked: number
  /** Tasks the killed replica held the lease of at the SIGKILL, and how many of them ended. */
  killed: { leased: number; ended: number } | null
  problems: string[]
}

export interface TaskCheckInput {
  /** The stored notes of the tasks scenario (titles `taskFlowTagOf` reads). */
  notes: Note[]
  ledger: TaskFlowRecord[]
  census: TaskRow[]
  /** Ids of the tasks the killed replica held the lease of at the SIGKILL; none without a fault. */
  leasedAtKill: string[] | undefined
  /** Creating calls that got no answer (each may have made a task of unknown id). */
  creationsUnanswered: number
}

function terminal(status: string | undefined): boolean {
  return status !== undefined && TERMINAL_TASK_STATUSES.has(status as TaskStatus)
}

function knownSteps(ledger: TaskFlowRecord[]): Array<TaskStepRecord & { taskId: string }> {
  return ledger.flatMap((flow) =>
    flow.steps.filter((step): step is TaskStepRecord & { taskId: string } => !!step.taskId)
  )
}

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1
}

/**
 * Reads every known task with `getTask` until all are terminal or `graceMs` is over (each at least
 * once), keeping the last status seen in the ledger; stops early once `signal` aborts. A read that
 * fails keeps the status before.
 */
export async function settleTasks(
  getTask: (taskId: string, signal: AbortSignal) => Promise<TaskInfo>,
  ledger: TaskFlowRecord[],
  graceMs: number,
  signal: AbortSignal
): Promise<void> {
  const deadline = performance.now() + graceMs
  let open = knownSteps(ledger)
  while (!signal.aborted) {
    for (const step of open) {
      try {
        step.status = (await getTask(step.taskId, signal)).status
      } catch {
        // Kept as it was: a task no replica can read at the end is counted by its last status.
      }
    }
    open = open.filter((step) => !terminal(step.status))
    if (open.length === 0 || performance.now() >= deadline) return
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS))
  }
}

/**
 * Lost and duplicated notes of `actual` against `expected`: a missing note whose title `actual`
 * holds with other content is lost once (not also duplicated).
 */
function compare(
  expected: SpecNote[],
  actual: SpecNote[],
  what: string,
  problem: (text: string) => void
): { lost: number; duplicated: number } {
  const { missing, extra } = sameNotes(expected, actual)
  for (const note of missing) {
    const other = extra.findIndex((candidate) => candidate.title === note.title)
    if (other !== -1) extra.splice(other, 1)
    problem(`${what} lost: "${note.title}" ${other === -1 ? 'is missing' : 'has other content'}`)
  }
  for (const note of extra) problem(`${what} duplicated or unexplained: "${note.title}"`)
  return { lost: missing.length, duplicated: extra.length }
}

export function verifyTasks(input: TaskCheckInput): TaskVerification {
  const { ledger, census } = input
  const result: TaskVerification = {
    statuses: {},
    census: { total: census.length, statuses: {} },
    lost: 0,
    duplicated: 0,
    stuck: 0,
    orphaned: 0,
    abandoned: 0,
    mismatched: 0,
    notesExpected: 0,
    exportsChecked: 0,
    killed: null,
    problems: [],
  }
  const problem = (text: string) => {
    if (result.problems.length < MAX_PROBLEMS) result.problems.push(text)
  }

  const stored = new Map(census.map((row) => [row.id, row]))
  const known = new Set<string>()
  for (const step of knownSteps(ledger)) {
    known.add(step.taskId)
    bump(result.statuses, step.status ?? 'unknown')
    if (!terminal(step.status)) {
      result.stuck += 1
      problem(`stuck: ${step.step} task ${step.taskId} is ${step.status ?? 'unread'}`)
    }
    const row = stored.get(step.taskId)
    if (row?.status !== step.status) {
      result.mismatched += 1
      problem(`task ${step.taskId}: tasks/get said ${step.status}, the store ${row?.status}`)
    }
  }
  for (const row of census) {
    bump(result.census.statuses, row.status)
    if (known.has(row.id)) continue
    result.orphaned += 1
    if (row.status === 'input_required') result.abandoned += 1
    else if (!terminal(row.status)) {
      result.stuck += 1
      problem(`stuck: task ${row.id} of unknown id is ${row.status}`)
    }
  }
  if (result.orphaned > input.creationsUnanswered) {
    problem(
      `${result.orphaned} tasks of unknown id, but only ${input.creationsUnanswered} creating calls lost their answer`
    )
  }

  const byTag = new Map<string, Note[]>()
  for (const note of input.notes) {
    const tag = taskFlowTagOf(note.title) ?? ''
    byTag.set(tag, [...(byTag.get(tag) ?? []), note])
  }
  for (const flow of ledger) {
    const notes = byTag.get(flow.tag) ?? []
    byTag.delete(flow.tag)
    const expected = expectedNotes(flow)
    const exactly =
      'exactly' in expected ? expected.exactly : notes.length === 0 ? [] : expected.allOrNone
    result.notesExpected += exactly.length
    const counts = compare(exactly, notes, `store, ${flow.tag}:`, problem)
    result.lost += counts.lost
    result.duplicated += counts.duplicated
    if (flow.bundle) {
      result.exportsChecked += 1
      const bundle = compare(exactly, flow.bundle, `export, ${flow.tag}:`, problem)
      result.lost += bundle.lost
      result.duplicated += bundle.duplicated
    }
  }
  for (const [tag, notes] of byTag) {
    result.duplicated += notes.length
    problem(`${notes.length} stored notes of no task flow (tag "${tag}")`)
  }

  if (input.leasedAtKill) {
    const ended = input.leasedAtKill.filter((id) => terminal(stored.get(id)?.status))
    result.killed = { leased: input.leasedAtKill.length, ended: ended.length }
  }
  return result
}
