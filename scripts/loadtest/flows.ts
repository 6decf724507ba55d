/**
 * @module scripts/loadtest/flows
 * The flows a virtual user runs, written once for both eras against an {@link Agent} (one
 * `tools/call` on the era's wire: `modern-agent.ts` or `legacy-agent.ts`):
 * - `create_delete`: `create_note`, then `delete_note` with its confirmation accepted;
 * - `bulk_delete`: 3–5 notes under a tag of the flow's own, then the three rounds of
 *   `delete_notes_by_tag`, selecting some and keeping the others;
 * - `declined_delete`: `create_note`, then `delete_note` declined — the note must survive;
 * - `template`: `create_note_from_template`, its form answered with a title unique to the flow.
 * Questions are recognised by their form's fields and message (the 2025 wire has no input keys);
 * every answer the server gives is checked against what the flow asked for, and every note goes into
 * the flow's ledger record with what the store must hold at the end (`verify.ts` checks it).
 *
 * `create_note` has no single-use key, so no agent re-sends it blindly: after a transport failure
 * the flow waits for anything in flight to settle, looks for the note by its unique title under the
 * flow's unique tag, and creates it again only when it is not there.
 *
 * How a flow fails: {@link WrongOutcome} (the server answered, but not what the flow asked for) or
 * {@link CallError} from the agent, whose `transport` flag says the wire broke and the server may or
 * may not have acted — the user saw an error, and the store check decides whether anything was left
 * half done.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { JsonObject } from '../../src/mcp/wire.ts'
import type { Era, EraMetrics, FlowKind } from './metrics.ts'

/** Attempts at one `create_note` (each after the search found nothing). */
const CREATE_ATTEMPTS = 6
/** Pause after a failed `create_note` before searching: lets a write in flight commit. */
const CREATE_SETTLE_MS = 500
/** Notes of one `bulk_delete` flow: 3 to 5. */
const BULK_MIN_NOTES = 3
const TEMPLATES = ['meeting', 'journal', 'todo'] as const
/** The date and priority every template form is answered with. */
const TEMPLATE_DATE = '2025-11-25'
const TEMPLATE_PRIORITY = 'high'

export type Expectation = 'present' | 'absent' | 'unsettled'

export interface LedgerNote {
  title: string
  body: string
  tags: string[]
  /** Known once the create answered, or once a search found the note after a lost answer. */
  id?: string
  /** What the store must hold at the end; `unsettled` when the flow failed before it knew. */
  expect: Expectation
}

export interface FlowRecord {
  era: Era
  kind: FlowKind
  user: number
  seq: number
  /** Unique to the flow: every note of the flow carries it, in its tags or (template) its title. */
  tag: string
  notes: LedgerNote[]
  completed: boolean
  /** The flow ended with a transport failure: an error the user saw. */
  failedCleanly: boolean
  error?: string
}

/** What an agent shows a flow of one server question (an `elicitation/create` in form mode). */
export interface Question {
  message: string
  /** The form's field names, sorted. */
  fields: string[]
  requestedSchema: JsonObject
}

export type Answer =
  | { action: 'accept'; content: Record<string, string | number | boolean | string[]> }
  | { action: 'decline' }
  | { action: 'cancel' }

export type Answerer = (question: Question) => Answer

/** What a result looks like on both wires (the v1 SDK's result type and the driver's). */
export interface ToolResult {
  content: Array<{ type: string; text?: string }>
  structuredContent?: unknown
  isError?: boolean
}

/**
 * Which call this is: `create_note` (never re-sent by the agent), `search_notes` (read-only), or
 * `flow` (an interactive call: its rounds are what the latency labels `round_N` measure).
 */
export type CallLabel = 'create_note' | 'search_notes' | 'flow'

export interface Agent {
  /** Before the first call: what a session-holding agent does to connect (2025: `initialize`). */
  open?(): Promise<void>
  /** One `tools/call`; `answer` answers the questions the server asks on the way. */
  call(label: CallLabel, name: string, args: JsonObject, answer?: Answerer): Promise<ToolResult>
  /** After the last call (2025: the session's DELETE). */
  close?(): Promise<void>
}

/** A note's title: unique to the run, the flow (by its tag) and the note. */
function noteTitle(runId: string, tag: string, index: number): string {
  return `Load ${runId} ${tag} n${index}`
}

/** The flow tag inside a title {@link noteTitle} made, if it is one. */
export function flowTagOf(title: string): string | undefined {
  return /^Load \S+ (\S+) n\d+$/.exec(title)?.[1]
}

/** The server answered, but not what the flow asked for. `kind` names it in the summary. */
export class WrongOutcome extends Error {
  override name = 'WrongOutcome'
  readonly kind: string
  constructor(kind: string, message: string) {
    super(message)
    this.kind = kind
  }
}

/**
 * A call that failed in the agent. `transport`: the wire broke (connection, gateway, stream), so the
 * server may or may not have acted; `at`: `performance.now()` when the agent saw it.
 */
export class CallError extends Error {
  override name = 'CallError'
  readonly kind: string
  readonly transport: boolean
  readonly at: number
  constructor(kind: string, message: string, transport: boolean, at = performance.now()) {
    super(message)
    this.kind = kind
    this.transport = transport
    this.at = at
  }
}

/** The kind an error is counted under in the summary. */
export function errorKind(error: unknown): string {
  if (error instanceof WrongOutcome || error instanceof CallError) return error.kind
  if (error instanceof Error) return error.name === 'AbortError' ? 'aborted' : error.name
  return 'unknown'
}

export function describeError(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return message.slice(0, 300)
}

/** The question as a flow sees it, from an `elicitation/create`'s params. */
export function questionOf(params: { message: string; requestedSchema?: unknown }): Question {
  const schema = (params.requestedSchema ?? {}) as JsonObject
  const properties = (schema.properties ?? {}) as JsonObject
  return {
    message: params.message,
    fields: Object.keys(properties).sort(),
    requestedSchema: schema,
  }
}

function textOf(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('\n')
}

function expectText(result: ToolResult, expected: string): void {
  const text = textOf(result)
  if (result.isError || text !== expected) {
    throw new WrongOutcome(
      result.isError ? 'tool_error' : 'wrong_outcome',
      `expected "${expected}", got ${result.isError ? 'an error: ' : ''}"${text.slice(0, 200)}"`
    )
  }
}

function sortedIds(notes: Array<{ id?: string }>): string {
  return notes
    .map((note) => note.id ?? '?')
    .sort()
    .join(',')
}

function plural(count: number): string {
  return count === 1 ? '1 note' : `${count} notes`
}

function wrongQuestion(question: Question): WrongOutcome {
  return new WrongOutcome(
    'wrong_question',
    `asked [${question.fields.join(',')}]: ${question.message.slice(0, 200)}`
  )
}

/** The `const` values a multi-select field offers (`items.anyOf` of `{const, title}`, or `items.enum`). */
function offered(schema: JsonObject, field: string): string[] {
  const property = (schema.properties as Record<string, JsonObject> | undefined)?.[field]
  const items = property?.items as
    { anyOf?: Array<{ const?: unknown }>; enum?: unknown[] } | undefined
  const values = items?.anyOf?.map((option) => option.const) ?? items?.enum ?? []
  return values.filter((value): value is string => typeof value === 'string')
}

interface BulkOutcome {
  outcome: string
  deleted: Array<{ id: string }>
  kept: Array<{ id: string }>
  alreadyGone: Array<{ id: string }>
}

interface NoteView {
  id?: unknown
  title?: unknown
  body?: unknown
  tags?: unknown
}

function storedNote(result: ToolResult): NoteView | undefined {
  return (result.structuredContent as { note?: NoteView } | undefined)?.note
}

/** Runs flows of one user through its agent. */
export class FlowRunner {
  readonly #agent: Agent
  readonly #runId: string
  readonly #metrics: EraMetrics

  constructor(agent: Agent, runId: string, metrics: EraMetrics) {
    this.#agent = agent
    this.#runId = runId
    this.#metrics = metrics
  }

  /** Runs one flow to its end; throws what ended it early. */
  async run(record: FlowRecord): Promise<void> {
    switch (record.kind) {
      case 'create_delete':
        return this.#createDelete(record)
      case 'bulk_delete':
        return this.#bulkDelete(record)
      case 'declined_delete':
        return this.#declinedDelete(record)
      case 'template':
        return this.#template(record)
    }
  }

  async #createDelete(record: FlowRecord): Promise<void> {
    const note = await this.#create(record, 1)
    note.expect = 'unsettled'
    const result = await this.#agent.call(
      'flow',
      'delete_note',
      { id: note.id ?? '' },
      (q): Answer => {
        if (q.fields.join() !== 'confirm' || !q.message.includes(`"${note.title}"`)) {
          throw wrongQuestion(q)
        }
        return { action: 'accept', content: { confirm: true } }
      }
    )
    if (result.isError && textOf(result).startsWith('No note with id')) {
      // The confirmed delete found the note gone: something deleted it before (twice, or lost).
      this.#metrics.repeatedDeletes += 1
      throw new WrongOutcome('delete_repeated', textOf(result))
    }
    expectText(result, `Deleted the note "${note.title}".`)
    note.expect = 'absent'
  }

  async #bulkDelete(record: FlowRecord): Promise<void> {
    const count = BULK_MIN_NOTES + (record.seq % 3)
    const notes: LedgerNote[] = []
    for (let i = 1; i <= count; i++) notes.push(await this.#create(record, i))
    // Select at least one and keep at least one.
    const shuffled = [...notes].sort(() => Math.random() - 0.5)
    const selected = shuffled.slice(0, 1 + Math.floor(Math.random() * (count - 1)))
    const kept = notes.filter((note) => !selected.includes(note))
    for (const note of selected) note.expect = 'unsettled'
    const result = await this.#agent.call(
      'flow',
      'delete_notes_by_tag',
      { tag: record.tag },
      (q): Answer => {
        if (q.fields.join() === 'notes') {
          const ids = offered(q.requestedSchema, 'notes').map((id) => ({ id }))
          if (sortedIds(ids) !== sortedIds(notes)) {
            throw new WrongOutcome('wrong_question', `offered ${sortedIds(ids)}`)
          }
          return { action: 'accept', content: { notes: selected.map((note) => note.id ?? '') } }
        }
        if (
          q.fields.join() === 'confirm' &&
          q.message.startsWith(`Delete ${plural(selected.length)} of`)
        ) {
          return { action: 'accept', content: { confirm: true } }
        }
        throw wrongQuestion(q)
      }
    )
    const outcome = result.structuredContent as BulkOutcome | undefined
    if (result.isError || !outcome) throw new WrongOutcome('tool_error', textOf(result))
    if (outcome.alreadyGone.length > 0) {
      this.#metrics.repeatedDeletes += outcome.alreadyGone.length
      throw new WrongOutcome('delete_repeated', `already gone: ${sortedIds(outcome.alreadyGone)}`)
    }
    if (
      outcome.outcome !== 'deleted' ||
      sortedIds(outcome.deleted) !== sortedIds(selected) ||
      sortedIds(outcome.kept) !== sortedIds(kept)
    ) {
      throw new WrongOutcome('wrong_outcome', JSON.stringify(outcome).slice(0, 300))
    }
    for (const note of selected) note.expect = 'absent'
  }

  async #declinedDelete(record: FlowRecord): Promise<void> {
    // A declined delete never removes the note, whether the flow completes or not: it stays
    // `present` throughout, so a flow that failed still must not have lost it.
    const note = await this.#create(record, 1)
    const result = await this.#agent.call(
      'flow',
      'delete_note',
      { id: note.id ?? '' },
      (q): Answer => {
        if (q.fields.join() !== 'confirm') throw wrongQuestion(q)
        return { action: 'decline' }
      }
    )
    expectText(result, 'Kept the note.')
  }

  async #template(record: FlowRecord): Promise<void> {
    const template = TEMPLATES[record.seq % TEMPLATES.length] as (typeof TEMPLATES)[number]
    const note: LedgerNote = {
      title: noteTitle(this.#runId, record.tag, 1),
      body: '',
      tags: [template],
      expect: 'unsettled',
    }
    record.notes.push(note)
    const result = await this.#agent.call(
      'flow',
      'create_note_from_template',
      { template },
      (q): Answer => {
        if (q.fields.join() !== 'date,priority,tags,title' || !q.message.includes(template)) {
          throw wrongQuestion(q)
        }
        const tag = offered(q.requestedSchema, 'tags')[record.seq % 2]
        if (tag === undefined) throw new WrongOutcome('wrong_question', 'no tags offered')
        note.tags = [template, tag]
        return {
          action: 'accept',
          content: {
            title: note.title,
            date: TEMPLATE_DATE,
            tags: [tag],
            priority: TEMPLATE_PRIORITY,
          },
        }
      }
    )
    const stored = storedNote(result)
    const tags = Array.isArray(stored?.tags) ? [...(stored.tags as string[])].sort().join() : ''
    if (
      result.isError ||
      typeof stored?.id !== 'string' ||
      typeof stored.body !== 'string' ||
      stored.title !== note.title ||
      tags !== [...note.tags].sort().join() ||
      !stored.body.startsWith(`Date: ${TEMPLATE_DATE} · Priority: ${TEMPLATE_PRIORITY}`)
    ) {
      throw new WrongOutcome(
        result.isError ? 'tool_error' : 'wrong_outcome',
        JSON.stringify(stored ?? textOf(result)).slice(0, 300)
      )
    }
    note.id = stored.id
    note.body = stored.body
    note.expect = 'present'
  }

  /** `create_note`, at most once in the store: see the module header. */
  async #create(record: FlowRecord, index: number): Promise<LedgerNote> {
    const note: LedgerNote = {
      title: noteTitle(this.#runId, record.tag, index),
      body: `Note ${index} of ${record.kind} flow ${record.seq} by virtual user ${record.user}.`,
      tags: [record.tag],
      expect: 'unsettled',
    }
    record.notes.push(note)
    const args = { title: note.title, body: note.body, tags: note.tags }
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.#agent.call('create_note', 'create_note', args)
        const id = storedNote(result)?.id
        if (result.isError || typeof id !== 'string') {
          throw new WrongOutcome('tool_error', textOf(result).slice(0, 200))
        }
        note.id = id
        note.expect = 'present'
        return note
      } catch (error) {
        if (!(error instanceof CallError && error.transport) || attempt >= CREATE_ATTEMPTS) {
          throw error
        }
        this.#metrics.createTransportFailures += 1
        await sleep(CREATE_SETTLE_MS)
        const found = await this.#findStored(note)
        if (found) {
          this.#metrics.createsRecovered += 1
          note.id = found
          note.expect = 'present'
          return note
        }
      }
    }
  }

  /** The id of the stored note with this note's title under the flow's tag, if any. */
  async #findStored(note: LedgerNote): Promise<string | undefined> {
    const result = await this.#agent.call('search_notes', 'search_notes', {
      query: '',
      tags: note.tags,
      limit: 50,
    })
    const hits = (result.structuredContent as { notes?: Array<{ id: string; title: string }> })
      ?.notes
    if (result.isError || !hits) throw new WrongOutcome('tool_error', textOf(result).slice(0, 200))
    return hits.find((hit) => hit.title === note.title)?.id
  }
}
