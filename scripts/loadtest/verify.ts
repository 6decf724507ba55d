/**
 * @module scripts/loadtest/verify
 * The check after the load: reads every note of the run straight from the shared store (the adapter
 * the replicas use, opened in this process, `readAllNotes`) and holds the era users' notes against
 * the ledger they kept, counting per era (the era of the flow a note belongs to); the tasks
 * scenario's notes are `task-verify.ts`'s. Titles are unique per note of the run, so each ledger
 * note matches at most one stored note:
 * - lost: a note that must be present (created, kept, or its delete declined — a declined delete
 *   never removes it, even when its flow failed) is missing or stored with other content; or a note
 *   whose delete the server confirmed is still stored (`notDeleted`, counted in `lost` too);
 * - duplicated: a title stored more than once, a stored note no flow knows (a create that happened
 *   twice), or a delete that acted twice (its flow saw the note already gone);
 * - half done: a `bulk_delete` that failed and left some of the notes it selected deleted and others
 *   not. The tool deletes the whole selection in one transaction under one single-use key, so any
 *   half-done selection is a defect, in either era (a 2025 flow has no second chance to re-send its
 *   final round, which ran inside the POST whose replica died).
 * Notes of a flow that failed before it learned their fate (`unsettled`) may be present or absent,
 * but at most once.
 */
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import type { Note, NotesStore } from '../../src/notes/store.ts'
import { flowTagOf, type Expectation, type FlowRecord, type LedgerNote } from './flows.ts'
import { ERAS, type Era } from './metrics.ts'

const PAGE = 500
/** Bound on the pages read (5 million notes): a run never comes near it. */
const MAX_PAGES = 10_000
/** Problems described in the summary, at most. */
const MAX_PROBLEMS = 20

export interface EraVerification {
  expected: Record<Expectation, number>
  lost: number
  notDeleted: number
  duplicated: number
  halfDone: number
}

export interface Verification {
  storedNotes: number
  eras: Record<Era, EraVerification>
  /** Stored notes of the run whose title names no flow (counted as duplicated in the totals). */
  unattributed: number
  problems: string[]
}

/** Every note in the store (the run's store holds the run's notes only). */
export async function readAllNotes(store: NotesStore): Promise<Note[]> {
  const notes: Note[] = []
  let offset: number | undefined = 0
  for (let page = 0; offset !== undefined && page < MAX_PAGES; page++) {
    const result = await store.list(LOCAL_PRINCIPAL, offset, PAGE)
    notes.push(...result.items)
    offset = result.nextOffset
  }
  return notes
}

function sameContent(note: LedgerNote, stored: Note): boolean {
  return (
    stored.title === note.title &&
    stored.body === note.body &&
    [...stored.tags].sort().join(',') === [...note.tags].sort().join(',')
  )
}

function emptyEra(): EraVerification {
  return {
    expected: { present: 0, absent: 0, unsettled: 0 },
    lost: 0,
    notDeleted: 0,
    duplicated: 0,
    halfDone: 0,
  }
}

/** Checks the era users' stored `notes` (none of the tasks scenario) against their `ledger`. */
export function verifyStore(
  notes: Note[],
  ledger: FlowRecord[],
  repeatedDeletes: Record<Era, number>
): Verification {
  const byTitle = new Map<string, Note[]>()
  for (const note of notes) {
    const same = byTitle.get(note.title)
    if (same) same.push(note)
    else byTitle.set(note.title, [note])
  }
  const result: Verification = {
    storedNotes: notes.length,
    eras: { modern: emptyEra(), '2025': emptyEra() },
    unattributed: 0,
    problems: [],
  }
  const problem = (text: string) => {
    if (result.problems.length < MAX_PROBLEMS) result.problems.push(text)
  }
  for (const era of ERAS) {
    result.eras[era].duplicated += repeatedDeletes[era]
    if (repeatedDeletes[era] > 0) {
      problem(`${era}: ${repeatedDeletes[era]} delete(s) found their note already gone`)
    }
  }

  const known = new Set<string>()
  const eraOfTag = new Map<string, Era>()
  for (const flow of ledger) {
    eraOfTag.set(flow.tag, flow.era)
    const counts = result.eras[flow.era]
    const unsettledPresence = new Set<boolean>()
    for (const note of flow.notes) {
      known.add(note.title)
      counts.expected[note.expect] += 1
      const stored = byTitle.get(note.title) ?? []
      const own = stored.find((candidate) => candidate.id === note.id)
      switch (note.expect) {
        case 'present':
          if (!own || !sameContent(note, own)) {
            counts.lost += 1
            problem(
              `${flow.era} lost: "${note.title}" (${note.id}) ${own ? 'has other content' : 'is missing'}`
            )
          }
          break
        case 'absent':
          if (own) {
            counts.lost += 1
            counts.notDeleted += 1
            problem(`${flow.era} not deleted: "${note.title}" (${note.id})`)
          }
          break
        case 'unsettled':
          if (note.id !== undefined) unsettledPresence.add(own !== undefined)
          break
      }
      // The flow's own note once; anything else with its title was created again.
      const extra =
        note.expect === 'unsettled' ? Math.max(0, stored.length - 1) : stored.length - (own ? 1 : 0)
      if (extra > 0) {
        counts.duplicated += extra
        problem(`${flow.era} duplicated: "${note.title}" stored ${stored.length} time(s)`)
      }
    }
    if (flow.kind === 'bulk_delete' && !flow.completed && unsettledPresence.size > 1) {
      counts.halfDone += 1
      problem(`${flow.era} half done: ${flow.tag} deleted some of its selected notes, not all`)
    }
  }
  for (const note of notes) {
    if (known.has(note.title)) continue
    const tag = flowTagOf(note.title)
    const era = tag === undefined ? undefined : eraOfTag.get(tag)
    if (era) result.eras[era].duplicated += 1
    else result.unattributed += 1
    problem(`unknown note "${note.title}" (${note.id}): created by no flow's answer`)
  }
  return result
}
