/**
 * @module scripts/loadtest/verify
 * The check after the load: reads every note of the run straight from the shared store (the adapter
 * the replicas use, opened in this process) and holds it against the ledger the virtual users kept.
 * Titles are unique per note of the run, so each ledger note matches at most one stored note:
 * - lost: a note that must be present is missing, or stored with other content;
 * - duplicated: a title stored more than once, a stored note no flow knows (a create that happened
 *   twice), or a delete that acted twice (its flow saw the note already gone);
 * - not deleted: a note whose delete the server confirmed is still stored.
 * Notes of a flow that failed before it learned their fate (`unsettled`) may be present or absent,
 * but at most once.
 */
import { LOCAL_PRINCIPAL } from '../../src/auth/bearer.ts'
import type { Note, NotesStore } from '../../src/notes/store.ts'
import type { FlowRecord, LedgerNote } from './users.ts'

const PAGE = 500
/** Bound on the pages read (5 million notes): a run never comes near it. */
const MAX_PAGES = 10_000
/** Problems described in the summary, at most. */
const MAX_PROBLEMS = 20

export interface Verification {
  storedNotes: number
  expected: { present: number; absent: number; unsettled: number }
  lost: number
  duplicated: number
  notDeleted: number
  problems: string[]
}

async function storedNotes(store: NotesStore): Promise<Note[]> {
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
    stored.tags.join(',') === [...note.tags].sort().join(',')
  )
}

export async function verifyStore(
  store: NotesStore,
  ledger: FlowRecord[],
  repeatedDeletes: number
): Promise<Verification> {
  const notes = await storedNotes(store)
  const byTitle = new Map<string, Note[]>()
  for (const note of notes) {
    const same = byTitle.get(note.title)
    if (same) same.push(note)
    else byTitle.set(note.title, [note])
  }
  const result: Verification = {
    storedNotes: notes.length,
    expected: { present: 0, absent: 0, unsettled: 0 },
    lost: 0,
    duplicated: repeatedDeletes,
    notDeleted: 0,
    problems: [],
  }
  const problem = (text: string) => {
    if (result.problems.length < MAX_PROBLEMS) result.problems.push(text)
  }
  if (repeatedDeletes > 0) problem(`${repeatedDeletes} delete(s) found their note already gone`)

  const known = new Set<string>()
  for (const flow of ledger) {
    for (const note of flow.notes) {
      known.add(note.title)
      result.expected[note.expect] += 1
      const stored = byTitle.get(note.title) ?? []
      const own = stored.find((candidate) => candidate.id === note.id)
      const others = stored.length - (own ? 1 : 0)
      switch (note.expect) {
        case 'present':
          if (!own || !sameContent(note, own)) {
            result.lost += 1
            problem(
              `lost: "${note.title}" (${note.id}) ${own ? 'has other content' : 'is missing'}`
            )
          }
          break
        case 'absent':
          if (own) {
            result.notDeleted += 1
            problem(`not deleted: "${note.title}" (${note.id})`)
          }
          break
        case 'unsettled':
          break
      }
      // The flow's own note once; anything else with its title was created again.
      const extra = note.expect === 'unsettled' ? Math.max(0, stored.length - 1) : others
      if (extra > 0) {
        result.duplicated += extra
        problem(`duplicated: "${note.title}" stored ${stored.length} time(s)`)
      }
    }
  }
  for (const note of notes) {
    if (known.has(note.title)) continue
    result.duplicated += 1
    problem(`unknown note "${note.title}" (${note.id}): created by no flow's answer`)
  }
  return result
}
