/**
 * The import hold of the fault-injection replica (`scripts/support/import-hold.ts`), the seam the
 * SIGKILL takeover test and the load test's `--kill` rely on, on a real SQLite store and a channel
 * that delivers messages as Node's IPC does: unarmed, the store is the store; armed with `after: n`,
 * the next n `importNotes` calls go through and the one after waits, writing nothing, reported once
 * with the notes created before it (a call let through still writing included), until released;
 * other methods are never held.
 */
import { EventEmitter } from 'node:events'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  holdImports,
  type HoldCommand,
  type HoldReport,
} from '../../scripts/support/import-hold.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { newNoteId } from '../../src/notes/note-id.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { tempDataDir } from '../support/server-process.ts'

const dir = await tempDataDir('notes-mcp-import-hold-')
const stores: SqliteNotesStore[] = []
afterAll(async () => {
  for (const store of stores) await store.close()
  await rm(dir, { recursive: true, force: true })
})

/** A held store on a fresh file, and its channel: `tell` sends a command, `reports` what came back. */
async function heldStore(): Promise<{
  store: NotesStore
  tell: (command: HoldCommand) => void
  reports: HoldReport[]
}> {
  const inner = new SqliteNotesStore({ path: join(dir, `${stores.length}.db`) })
  await inner.migrate()
  stores.push(inner)
  const channel = new EventEmitter()
  const reports: HoldReport[] = []
  const store = holdImports(inner, {
    on: (event, listener) => channel.on(event, listener),
    send: (report) => reports.push(report),
  })
  return { store, tell: (command) => channel.emit('message', command), reports }
}

const notes = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ id: newNoteId(), title: `n${i}`, body: '', tags: [] }))

/** Whether `promise` has settled once everything already queued has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false
  void promise.then(() => (done = true))
  await new Promise((resolve) => setImmediate(resolve))
  return done
}

describe('holdImports', () => {
  it('is the store itself until armed', async () => {
    const { store, reports } = await heldStore()
    expect(await store.importNotes('p', notes(3), 1)).toBe(3)
    expect((await store.list('p', 0, 10)).items).toHaveLength(3)
    expect(reports).toEqual([])
  })

  it('lets the next calls through, holds the one after until released, and reports it once', async () => {
    const { store, tell, reports } = await heldStore()
    tell({ type: 'hold-imports', after: 1 })
    expect(reports).toEqual([{ type: 'hold-armed' }])

    expect(await store.importNotes('p', notes(2), 1)).toBe(2)
    const held = store.importNotes('p', notes(5), 1)
    const alsoHeld = store.importNotes('p', notes(1), 1)
    expect(await settled(held)).toBe(false)
    expect(await settled(alsoHeld)).toBe(false)
    expect(reports).toEqual([{ type: 'hold-armed' }, { type: 'import-held', created: 2 }])
    // Nothing of the held calls is written, and the rest of the store is not held.
    expect((await store.list('p', 0, 10)).items).toHaveLength(2)

    tell({ type: 'release-imports' })
    expect(await held).toBe(5)
    expect(await alsoHeld).toBe(1)
    expect(await store.importNotes('p', notes(1), 1)).toBe(1)
    expect((await store.list('p', 0, 10)).items).toHaveLength(9)
  })

  it('reports the notes of a call let through that is still writing when another reaches the hold', async () => {
    const { store, tell, reports } = await heldStore()
    tell({ type: 'hold-imports', after: 1 })
    // Two imports at once: the first call passes and is still writing when the second is held.
    const passing = store.importNotes('p', notes(4), 1)
    const held = store.importNotes('p', notes(1), 1)
    expect(await passing).toBe(4)
    expect(await settled(held)).toBe(false)
    expect(reports).toEqual([{ type: 'hold-armed' }, { type: 'import-held', created: 4 }])
    tell({ type: 'release-imports' })
    expect(await held).toBe(1)
  })

  it('ignores messages that are not its commands', async () => {
    const { store, tell, reports } = await heldStore()
    for (const message of [
      'hold-imports',
      { type: 'hold-imports' },
      { type: 'hold-imports', after: -1 },
      { type: 'hold-imports', after: 0.5 },
    ]) {
      tell(message as unknown as HoldCommand)
    }
    expect(reports).toEqual([])
    expect(await store.importNotes('p', notes(1), 1)).toBe(1)
  })
})
