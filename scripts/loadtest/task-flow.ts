/**
 * @module scripts/loadtest/task-flow
 * The tasks scenario of the load test (extension `io.modelcontextprotocol/tasks`): the flow a task
 * user runs, over and over, through a {@link TaskAgent} (the 2026-07-28 agent with the extension
 * declared, `modern-agent.ts`), and what the store must hold after it (`expectedNotes`):
 * 1. `import_notes` as a task: 150 to 250 new notes under the flow's own tag;
 * 2. `import_notes` as a task again: 1 to 30 of those titles with new bodies and one more tag (more
 *    than 20 make two conflict batches: two questions at once), plus 150 new notes. The task parks in
 *    `input_required`; each question is answered through `tasks/update` with overwrite, skip or
 *    keep both, in turn, and the task's result must count exactly what was chosen;
 * 3. `export_notes` as a task, by the flow's tag: the bundle must hold exactly the notes the two
 *    imports left, each once.
 * Every task is polled to its end, every poll and answer to another replica than the request before.
 * Notes are compared by title, body and tags (`sameNotes`): the titles name the run, the flow's
 * tag and the note, so the store check (`task-verify.ts`) finds a flow's notes by title.
 *
 * Re-sending: an import's creating call is never re-sent after a transport failure (a second task
 * would import again, under new ids). The flow then fails cleanly, and what that import did is left
 * to the check: its task may exist with nobody knowing its id. A first import runs to its end then
 * (on another replica once the lease runs out), all of its notes or none; a second one asks before
 * it writes, so with nobody to answer it writes nothing. A transport failure after the task is
 * known (the driver re-sends polls and answers for seconds) is an error, as is any other outcome;
 * only a store outage's refusal of them is waited through (`modern-agent.ts`), and a question whose
 * answer it refused is answered the same when asked again.
 * The export, read-only, is re-sent.
 */
import {
  DEFAULT_TASK_LEASE_MS,
  DEFAULT_TASK_TAKEOVER_INTERVAL_MS,
} from '../../src/mcp/tasks/options.ts'
import type { TaskInfo } from '../../src/client/index.ts'
import type { JsonObject } from '../../src/mcp/wire.ts'
import { CALL_TIMEOUT_MS } from './routing.ts'
import { CallError, WrongOutcome, type Answer, type Answerer, type Question } from './flows.ts'

/**
 * Longest a task may take to change hands after its runner died: the lease it held runs out, then
 * another replica's takeover sweep (every 2 s) must come round, twice to leave room.
 */
export const TAKEOVER_BOUND_MS = DEFAULT_TASK_LEASE_MS + 2 * DEFAULT_TASK_TAKEOVER_INTERVAL_MS
/** Bound on one task, from its creation to its end: a takeover plus a call's own bound. */
export const TASK_WAIT_MS = TAKEOVER_BOUND_MS + CALL_TIMEOUT_MS
/** Notes of the first import: 150 to 250. */
const FIRST_MIN_NOTES = 150
/** New notes of the second import (enough that its run, after the answers, takes a while too). */
const SECOND_NEW_NOTES = 150
/** Titles of the first import the second one imports again: 1 to 30. */
const MAX_CONFLICTS = 30
/** The tag the second import adds to the notes it writes. */
const SECOND_TAG = 'reimported'
const RESOLUTIONS = ['overwrite', 'skip', 'keep_both'] as const

export type Resolution = (typeof RESOLUTIONS)[number]

/** A note as a flow imports it and expects it back. */
export interface SpecNote {
  title: string
  body: string
  tags: string[]
}

/** A note of an export bundle. */
export interface BundleNote extends SpecNote {
  id: string
}

export type TaskStep = 'first_import' | 'second_import' | 'export'

export interface TaskStepRecord {
  step: TaskStep
  /** Known once the `CreateTaskResult` arrived. */
  taskId?: string
  /** The status `tasks/get` showed last: the flow's own wait, then the check at the end. */
  status?: string
  /** The creating call failed on the wire: a task may exist that nobody knows the id of. */
  unanswered: boolean
}

export interface TaskFlowRecord {
  user: number
  seq: number
  /** Unique to the flow: every note of the flow carries it, in its tags and its title. */
  tag: string
  /** What the first import holds. */
  first: SpecNote[]
  /** What the second import holds: titles of the first one (new bodies, one more tag), new ones. */
  second: { again: SpecNote[]; fresh: SpecNote[] }
  /** How the flow answered each question, by the title it asked about. */
  resolutions: Record<string, Resolution>
  /** Questions the second import asked. */
  questions: number
  /**
   * Each question answered, by its message, and its answer: asked again when the answer did not get
   * through (the two questions of two conflict batches are answered in one `tasks/update`).
   */
  answered: Record<string, Resolution>
  steps: TaskStepRecord[]
  /** The export's notes, once it completed. */
  bundle?: BundleNote[]
  completed: boolean
  failedCleanly: boolean
  error?: string
}

/** One task of the flow, as the agent runs it. */
export interface TaskCall {
  name: string
  args: JsonObject
  /** Whether the creating call may be re-sent after a transport failure (a second task is harmless). */
  resend: boolean
  answer?: Answerer
  /** As soon as the task exists. */
  onCreated(taskId: string): void
}

export interface TaskAgent {
  /** `tools/call` of a task tool, then the task followed to its end: the terminal task. */
  runTask(call: TaskCall): Promise<TaskInfo>
}

function noteTitle(runId: string, tag: string, note: string): string {
  return `Task ${runId} ${tag} ${note}`
}

/** The flow tag inside a title {@link noteTitle} made, if it is one. */
export function taskFlowTagOf(title: string): string | undefined {
  return /^Task \S+ (\S+) [ab]\d+$/.exec(title)?.[1]
}

/** A new flow's record: what it will import, nothing done yet. */
export function newTaskFlow(runId: string, user: number, seq: number): TaskFlowRecord {
  const tag = `u${user}-t${seq}`
  const count = FIRST_MIN_NOTES + ((seq * 37) % 101)
  const first = Array.from({ length: count }, (_, i) => ({
    title: noteTitle(runId, tag, `a${i + 1}`),
    body: `Note ${i + 1} of task flow ${seq} by virtual user ${user}, first import.`,
    tags: [tag],
  }))
  const again = first.slice(0, 1 + ((seq * 7) % MAX_CONFLICTS)).map((note, i) => ({
    title: note.title,
    body: `Note ${i + 1} of task flow ${seq} by virtual user ${user}, imported again.`,
    tags: [tag, SECOND_TAG],
  }))
  const fresh = Array.from({ length: SECOND_NEW_NOTES }, (_, i) => ({
    title: noteTitle(runId, tag, `b${i + 1}`),
    body: `New note ${i + 1} of task flow ${seq} by virtual user ${user}, second import.`,
    tags: [tag, SECOND_TAG],
  }))
  return {
    user,
    seq,
    tag,
    first,
    second: { again, fresh },
    resolutions: {},
    questions: 0,
    answered: {},
    steps: [],
    completed: false,
    failedCleanly: false,
  }
}

/** The notes as `import_notes` reads them: a heading, the tags list `export_notes` writes, the body. */
function markdown(notes: SpecNote[]): string {
  return notes
    .map(
      (note) =>
        `# ${note.title}\n\n- Tags: ${note.tags.map((t) => `\`${t}\``).join(', ')}\n\n${note.body}\n`
    )
    .join('\n')
}

/** The notes of an export bundle (each as `renderNoteMarkdown` writes it). */
function bundleNotes(text: string): BundleNote[] {
  return text
    .split(/^(?=# )/m)
    .filter((part) => part.trim() !== '')
    .map((part) => {
      const lines = part.trimEnd().split('\n')
      const tags = /^- Tags: (.*)$/m.exec(part)?.[1] ?? 'none'
      const body = lines.slice(1).findIndex((line) => line !== '' && !line.startsWith('- '))
      return {
        title: (lines[0] ?? '').slice(2),
        id: /^- Id: (.*)$/m.exec(part)?.[1] ?? '',
        tags: tags === 'none' ? [] : tags.split(', ').map((tag) => tag.replace(/^`|`$/g, '')),
        body: body === -1 ? '' : lines.slice(body + 1).join('\n'),
      }
    })
}

function signature(note: SpecNote): string {
  return JSON.stringify([note.title, note.body, [...note.tags].sort()])
}

/** What `actual` lacks of `expected` and holds beyond it, note for note (a multiset difference). */
export function sameNotes(
  expected: readonly SpecNote[],
  actual: readonly SpecNote[]
): { missing: SpecNote[]; extra: SpecNote[] } {
  const left = new Map<string, SpecNote[]>()
  for (const note of expected) {
    const key = signature(note)
    left.set(key, [...(left.get(key) ?? []), note])
  }
  const extra: SpecNote[] = []
  for (const note of actual) {
    const same = left.get(signature(note))
    if (same && same.length > 0) same.pop()
    else extra.push(note)
  }
  return { missing: [...left.values()].flat(), extra }
}

/**
 * What the store must hold of a flow, from its imports' final statuses: `exactly` these notes, or
 * (a first import nobody learned the id of) `allOrNone` of these.
 */
export function expectedNotes(
  record: TaskFlowRecord
): { exactly: SpecNote[] } | { allOrNone: SpecNote[] } {
  const step = (name: TaskStep) => record.steps.find((s) => s.step === name)
  if (step('first_import')?.status !== 'completed') return { allOrNone: record.first }
  if (step('second_import')?.status !== 'completed') return { exactly: record.first }
  const notes: SpecNote[] = []
  const again = new Map(record.second.again.map((note) => [note.title, note]))
  for (const note of record.first) {
    const second = again.get(note.title)
    const resolution = second && record.resolutions[note.title]
    if (resolution !== 'overwrite') notes.push(note)
    if (second && (resolution === 'overwrite' || resolution === 'keep_both')) notes.push(second)
  }
  return { exactly: [...notes, ...record.second.fresh] }
}

interface ImportCounts {
  total: number
  created: number
  overwritten: number
  skipped: number
}

function expectImport(task: TaskInfo, counts: ImportCounts): void {
  const outcome = task.result?.structuredContent as JsonObject | undefined
  const expected: JsonObject = { outcome: 'imported', ...counts, notOverwritten: [] }
  const same = Object.entries(expected).every(
    ([key, value]) => JSON.stringify(outcome?.[key]) === JSON.stringify(value)
  )
  if (!same) {
    throw new WrongOutcome(
      'wrong_outcome',
      `import: expected ${JSON.stringify(expected)}, got ${JSON.stringify(outcome ?? task.result).slice(0, 300)}`
    )
  }
}

/** Runs the tasks flow of one task user. */
export class TaskFlowRunner {
  readonly #agent: TaskAgent

  constructor(agent: TaskAgent) {
    this.#agent = agent
  }

  /** Runs one flow to its end; throws what ended it early. */
  async run(record: TaskFlowRecord): Promise<void> {
    const { first, second, tag } = record
    expectImport(await this.#task(record, 'first_import', 'import_notes', markdown(first)), {
      total: first.length,
      created: first.length,
      overwritten: 0,
      skipped: 0,
    })

    const imported = await this.#task(
      record,
      'second_import',
      'import_notes',
      markdown([...second.again, ...second.fresh]),
      (question) => this.#resolve(record, question)
    )
    const chosen = second.again.map((note) => record.resolutions[note.title])
    if (chosen.includes(undefined)) {
      throw new WrongOutcome('wrong_question', 'the import asked about fewer titles than it has')
    }
    const count = (resolution: Resolution) => chosen.filter((c) => c === resolution).length
    expectImport(imported, {
      total: second.again.length + second.fresh.length,
      created: second.fresh.length + count('keep_both'),
      overwritten: count('overwrite'),
      skipped: count('skip'),
    })

    const exported = await this.#task(record, 'export', 'export_notes', { tag })
    const content = exported.result?.content as Array<{ resource?: { text?: unknown } }> | undefined
    const text = content?.[1]?.resource?.text
    if (typeof text !== 'string')
      throw new WrongOutcome('wrong_outcome', 'the export has no bundle')
    record.bundle = bundleNotes(text)
    const expected = expectedNotes(record)
    const { missing, extra } = sameNotes(
      'exactly' in expected ? expected.exactly : [],
      record.bundle
    )
    if (missing.length + extra.length > 0) {
      throw new WrongOutcome(
        'export_mismatch',
        `the export lacks ${missing.length} and has ${extra.length} more notes than imported`
      )
    }
  }

  /** One task of the flow, to its end; the import's markdown, or the export's args. */
  async #task(
    record: TaskFlowRecord,
    step: TaskStep,
    name: string,
    input: string | JsonObject,
    answer?: Answerer
  ): Promise<TaskInfo> {
    const entry: TaskStepRecord = { step, unanswered: false }
    record.steps.push(entry)
    let task: TaskInfo
    try {
      task = await this.#agent.runTask({
        name,
        args: typeof input === 'string' ? { markdown: input } : input,
        resend: typeof input !== 'string',
        answer,
        onCreated: (taskId) => (entry.taskId = taskId),
      })
    } catch (error) {
      if (error instanceof CallError && error.transport) {
        if (entry.taskId !== undefined) {
          throw new WrongOutcome('task_unreachable', `${step} ${entry.taskId}: ${error.message}`)
        }
        entry.unanswered = true
      }
      throw error
    }
    entry.status = task.status
    if (task.status !== 'completed') {
      throw new WrongOutcome(
        `task_${task.status}`,
        `${step}: ${JSON.stringify(task).slice(0, 300)}`
      )
    }
    return task
  }

  /**
   * Answers one conflict question of the second import, in turn overwrite, skip, keep both. A
   * question answered before, asked again (its `tasks/update` did not get through: refused while the
   * store was down), gets the same answer.
   */
  #resolve(record: TaskFlowRecord, question: Question): Answer {
    const given = record.answered[question.message]
    if (given !== undefined) return { action: 'accept', content: { resolution: given } }
    const titles = [...question.message.matchAll(/"([^"]+)"/g)].map((match) => match[1] as string)
    const again = new Set(record.second.again.map((note) => note.title))
    if (
      question.fields.join() !== 'resolution' ||
      titles.length === 0 ||
      titles.some((title) => !again.has(title) || record.resolutions[title] !== undefined)
    ) {
      throw new WrongOutcome('wrong_question', question.message.slice(0, 200))
    }
    const resolution = RESOLUTIONS[
      (record.seq + record.questions++) % RESOLUTIONS.length
    ] as Resolution
    for (const title of titles) record.resolutions[title] = resolution
    record.answered[question.message] = resolution
    return { action: 'accept', content: { resolution } }
  }
}
