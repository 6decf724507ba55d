/**
 * `delete_notes_by_tag`, the three-round flow, through the whole app: the multi-select question
 * built from the tagged notes, the confirmation naming how many, the final round deleting exactly
 * the selection once (also when that round is sent twice) and all of it or nothing (also when it
 * fails part-way), what a duplicated final round reports without the first one's result,
 * decline/cancel at either step deleting nothing, answers outside the offer asked again, answers
 * sent before their question asked instead, and questions that stay the same across rounds.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MAX_BULK_NOTES } from '../../src/notes/limits.ts'
import {
  type RpcResponse,
  useNotesHarness,
  expectInputRequired,
  accept,
} from '../support/notes-harness.ts'

const h = useNotesHarness()

const TOOL = 'delete_notes_by_tag'
function completed(response: RpcResponse) {
  expect(response.status).toBe(200)
  expect(response.result.resultType).toBe('complete')
  expect(response.result.isError).toBeUndefined()
  return response.result.structuredContent
}

/** Three notes tagged `trip` (ids sorted) and one tagged otherwise. */
async function seedTrip() {
  const ids = [
    await h().seed({ title: 'Lisbon', body: 'Flights', tags: ['trip'] }),
    await h().seed({ title: 'Porto', body: 'Trains', tags: ['trip', 'rail'] }),
    await h().seed({ title: 'Faro', body: 'Beach', tags: ['trip'] }),
  ]
  const other = await h().seed({ title: 'Groceries', body: 'Milk', tags: ['home'] })
  const titles = new Map([
    [ids[0], 'Lisbon'],
    [ids[1], 'Porto'],
    [ids[2], 'Faro'],
  ])
  const sorted = [...ids].sort()
  return { ids: sorted, other, titleOf: (id: string) => titles.get(id) as string }
}

async function storedIds(): Promise<string[]> {
  return (await h().store.list('local', 0, 100)).items.map((note) => note.id).sort()
}

/** Runs the flow up to its final round, choosing `chosen`; answers that round's answers. */
async function upToFinalRound(chosen: string[]) {
  const first = await h().tool(TOOL, { tag: 'trip' })
  const second = await h().retry(
    first,
    TOOL,
    { tag: 'trip' },
    { select: accept({ notes: chosen }) }
  )
  expectInputRequired(second, ['confirm'])
  return () => h().retry(second, TOOL, { tag: 'trip' }, { confirm: accept({ confirm: true }) })
}

const ref = (id: string, title: string) => ({ id, title })

describe('delete_notes_by_tag', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('asks which tagged notes to delete, with a multi-select of their ids titled by their titles', async () => {
    const { ids, titleOf } = await seedTrip()
    const first = await h().tool(TOOL, { tag: 'Trip' })
    expectInputRequired(first, ['select'])
    expect(first.result.inputRequests.select).toEqual({
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Which of the 3 notes tagged "trip" should be deleted?',
        requestedSchema: {
          type: 'object',
          properties: {
            notes: {
              type: 'array',
              title: 'Notes to delete',
              maxItems: 3,
              items: { anyOf: ids.map((id) => ({ const: id, title: titleOf(id) })) },
              default: [],
            },
          },
        },
      },
    })
  })

  it('completes in three rounds, with a new requestState every round, deleting only the selection', async () => {
    const { ids, other, titleOf } = await seedTrip()
    const [a, b, c] = ids as [string, string, string]
    const first = await h().tool(TOOL, { tag: 'trip' })
    expectInputRequired(first, ['select'])

    const second = await h().retry(
      first,
      TOOL,
      { tag: 'trip' },
      { select: accept({ notes: [c, a] }) }
    )
    expectInputRequired(second, ['confirm'])
    expect(second.result.inputRequests.confirm.params).toMatchObject({
      mode: 'form',
      message: 'Delete 2 notes of the 3 notes tagged "trip"? This cannot be undone.',
      requestedSchema: { properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
    })
    expect(second.result.requestState).not.toBe(first.result.requestState)
    expect(await storedIds()).toHaveLength(4)

    h().events.length = 0
    const third = await h().retry(
      second,
      TOOL,
      { tag: 'trip' },
      { confirm: accept({ confirm: true }) }
    )
    expect(completed(third)).toEqual({
      tag: 'trip',
      outcome: 'deleted',
      deleted: [a, c].map((id) => ({ id, title: titleOf(id) })),
      kept: [{ id: b, title: titleOf(b) }],
      alreadyGone: [],
    })
    expect(third.result).not.toHaveProperty('requestState')
    expect(third.result.content[1].text).toBe('Deleted 2 notes tagged "trip"; kept 1 note.')
    expect(await storedIds()).toEqual([b, other].sort())
    expect(h().events).toEqual([
      { kind: 'resources_list_changed', principal: 'local' },
      { kind: 'resource_updated', uri: `note://${a}`, principal: 'local' },
      { kind: 'resources_list_changed', principal: 'local' },
      { kind: 'resource_updated', uri: `note://${c}`, principal: 'local' },
    ])
  })

  it('asks each question before counting its answer, when answers come before the questions', async () => {
    const { ids } = await seedTrip()
    const answers = { select: accept({ notes: ids }), confirm: accept({ confirm: true }) }
    const first = await h().prefilled(TOOL, { tag: 'trip' }, answers)
    expectInputRequired(first, ['select'])
    // The selection answers a question sealed into round 1; the confirmation's question was not.
    const second = await h().retry(first, TOOL, { tag: 'trip' }, answers)
    expectInputRequired(second, ['confirm'])
    expect(await storedIds()).toHaveLength(4)
    const third = await h().retry(second, TOOL, { tag: 'trip' }, answers)
    expect(completed(third).deleted).toHaveLength(3)
    expect(await storedIds()).toHaveLength(1)
  })

  it('a duplicated final round answers the same and deletes nothing twice', async () => {
    const { ids } = await seedTrip()
    const [a, b] = ids as [string, string, string]
    const first = await h().tool(TOOL, { tag: 'trip' })
    const second = await h().retry(first, TOOL, { tag: 'trip' }, { select: accept({ notes: [a] }) })
    const answers = { confirm: accept({ confirm: true }) }
    const once = await h().retry(second, TOOL, { tag: 'trip' }, answers)
    // Someone deletes another tagged note by hand; the duplicated final round must not touch it.
    const replacement = await h().seed({ title: 'Lisbon', body: 'Flights', tags: ['trip'] })
    const again = await h().retry(second, TOOL, { tag: 'trip' }, answers)
    expect(completed(again)).toEqual(completed(once))
    expect(completed(once).deleted.map((note: { id: string }) => note.id)).toEqual([a])
    expect(await h().store.get('local', b)).toBeDefined()
    expect(await h().store.get('local', replacement)).toBeDefined()
    expect(h().events.filter((event) => event.kind === 'resource_updated')).toHaveLength(1)
  })

  it('a final round that fails after its delete leaves the whole selection deleted, and sent again reports it deleted', async () => {
    const { ids, other, titleOf } = await seedTrip()
    const finalRound = await upToFinalRound(ids)
    // The round dies after the store call: the first change event cannot be published.
    vi.spyOn(h().bus, 'publish').mockImplementationOnce(() => {
      throw new Error('event bus unreachable')
    })
    const failed = await finalRound()
    expect(failed.result).toMatchObject({ resultType: 'complete', isError: true })
    expect(failed.result.content[0].text).toBe(
      'The tool delete_notes_by_tag failed unexpectedly; the failure was logged.'
    )
    expect(await storedIds()).toEqual([other])
    expect(completed(await finalRound())).toEqual({
      tag: 'trip',
      outcome: 'deleted',
      deleted: ids.map((id) => ref(id, titleOf(id))),
      kept: [],
      alreadyGone: [],
    })
  })

  it('reports a chosen note deleted elsewhere before the final round as already gone, and a duplicate of that round as deleted', async () => {
    const { ids, titleOf } = await seedTrip()
    const [a, b, c] = ids as [string, string, string]
    const finalRound = await upToFinalRound([a, b])
    await h().store.delete('local', b, 'deleted-by-hand')
    h().events.length = 0
    const once = await finalRound()
    expect(completed(once)).toEqual({
      tag: 'trip',
      outcome: 'deleted',
      deleted: [ref(a, titleOf(a))],
      kept: [ref(c, titleOf(c))],
      alreadyGone: [ref(b, titleOf(b))],
    })
    expect(once.result.content[1].text).toBe(
      'Deleted 1 note tagged "trip"; kept 1 note. 1 note had already gone.'
    )
    expect(h().events).toEqual([
      { kind: 'resources_list_changed', principal: 'local' },
      { kind: 'resource_updated', uri: `note://${a}`, principal: 'local' },
    ])
    // Without the first result, every chosen note that no longer exists counts as deleted.
    expect(completed(await finalRound())).toMatchObject({
      deleted: [ref(a, titleOf(a)), ref(b, titleOf(b))],
      kept: [ref(c, titleOf(c))],
      alreadyGone: [],
    })
    expect(h().events).toHaveLength(2)
  })

  it('a duplicated final round reports a chosen note created again under its id as kept, and leaves it', async () => {
    const { ids, titleOf } = await seedTrip()
    const [a, b, c] = ids as [string, string, string]
    const finalRound = await upToFinalRound([a, b])
    await finalRound()
    const again = { id: b, title: 'Porto again', body: '', tags: ['trip'] }
    expect(await h().store.importNotes('local', [again], h().clock.now)).toBe(1)
    expect(completed(await finalRound())).toMatchObject({
      deleted: [ref(a, titleOf(a))],
      kept: [ref(b, titleOf(b)), ref(c, titleOf(c))].sort((x, y) => (x.id < y.id ? -1 : 1)),
      alreadyGone: [],
    })
    expect(await h().store.get('local', b)).toMatchObject({ title: 'Porto again' })
  })

  it.each([
    ['decline', { action: 'decline' }, 'declined', 'Nothing deleted.'],
    ['cancel', { action: 'cancel' }, 'cancelled', 'Nothing deleted; ask again later.'],
    ['accept without the box checked', accept({ confirm: false }), 'declined', 'Nothing deleted.'],
  ])('deletes nothing on %s at the confirmation', async (_case, answer, outcome, sentence) => {
    const { ids } = await seedTrip()
    const first = await h().tool(TOOL, { tag: 'trip' })
    const second = await h().retry(first, TOOL, { tag: 'trip' }, { select: accept({ notes: ids }) })
    expectInputRequired(second, ['confirm'])
    const third = await h().retry(second, TOOL, { tag: 'trip' }, { confirm: answer })
    expect(completed(third)).toMatchObject({ outcome, deleted: [], alreadyGone: [] })
    expect(completed(third).kept).toHaveLength(3)
    expect(third.result.content[1].text).toBe(sentence)
    expect(await storedIds()).toHaveLength(4)
  })

  it.each([
    ['decline', 'declined'],
    ['cancel', 'cancelled'],
  ])(
    'deletes nothing on %s at the selection, without asking to confirm',
    async (action, outcome) => {
      await seedTrip()
      const first = await h().tool(TOOL, { tag: 'trip' })
      const second = await h().retry(first, TOOL, { tag: 'trip' }, { select: { action } })
      expect(completed(second)).toMatchObject({ outcome, deleted: [] })
      expect(await storedIds()).toHaveLength(4)
    }
  )

  it('finishes without a confirmation when nothing was selected', async () => {
    await seedTrip()
    const first = await h().tool(TOOL, { tag: 'trip' })
    const second = await h().retry(first, TOOL, { tag: 'trip' }, { select: accept({}) })
    expect(completed(second)).toMatchObject({ outcome: 'none_selected', deleted: [] })
    expect(second.result.content[1].text).toBe('No note selected; nothing deleted.')
    expect(await storedIds()).toHaveLength(4)
  })

  it.each([
    ['a note that was not offered', (other: string) => ({ notes: [other] })],
    ['an id that does not exist', () => ({ notes: ['n_AAAAAAAAAAAAAAAA'] })],
    ['a selection that is not a list', (other: string) => ({ notes: other })],
  ])('asks the same question again, deleting nothing, for %s', async (_case, content) => {
    const { other } = await seedTrip()
    const first = await h().tool(TOOL, { tag: 'trip' })
    const second = await h().retry(first, TOOL, { tag: 'trip' }, { select: accept(content(other)) })
    expectInputRequired(second, ['select'])
    expect(second.result.inputRequests).toEqual(first.result.inputRequests)
    expect(await storedIds()).toHaveLength(4)
  })

  it('keeps its question across rounds when tagged notes appear meanwhile', async () => {
    const { ids } = await seedTrip()
    const first = await h().tool(TOOL, { tag: 'trip' })
    const late = await h().seed({ title: 'Madeira', body: 'Hikes', tags: ['trip'] })
    // The answer counts for the question the person saw, and the late note is never offered.
    const second = await h().retry(first, TOOL, { tag: 'trip' }, { select: accept({ notes: ids }) })
    expectInputRequired(second, ['confirm'])
    expect(second.result.inputRequests.confirm.params.message).toContain('of the 3 notes')
    const third = await h().retry(
      second,
      TOOL,
      { tag: 'trip' },
      { confirm: accept({ confirm: true }) }
    )
    expect(completed(third).deleted).toHaveLength(3)
    expect(await storedIds()).toEqual(expect.arrayContaining([late]))
    expect(await storedIds()).toHaveLength(2)
  })

  it(`offers at most ${MAX_BULK_NOTES} notes, saying that more carry the tag`, async () => {
    for (let i = 0; i < MAX_BULK_NOTES + 2; i++) {
      await h().seed({ title: `Note ${i}`, tags: ['many'] })
    }
    const first = await h().tool(TOOL, { tag: 'many' })
    const { params } = first.result.inputRequests.select
    expect(params.message).toBe(
      `Which of the ${MAX_BULK_NOTES} most recent notes tagged "many" (more carry it) should be deleted?`
    )
    const offered = params.requestedSchema.properties.notes.items.anyOf.map(
      (option: { const: string }) => option.const
    )
    expect(offered).toHaveLength(MAX_BULK_NOTES)
    expect(offered).toEqual([...offered].sort())
  })

  it('answers isError without asking when no note carries the tag', async () => {
    await seedTrip()
    const response = await h().tool(TOOL, { tag: 'nothing' })
    expect(response.result.resultType).toBe('complete')
    expect(response.result.isError).toBe(true)
    expect(response.result.content[0].text).toContain('No note carries the tag "nothing"')
  })

  it('without the elicitation capability answers -32021 and deletes nothing', async () => {
    await seedTrip()
    const response = await h().tool(TOOL, { tag: 'trip' }, { capabilities: {} })
    expect(response.status).toBe(400)
    expect(response.error).toMatchObject({ code: -32021 })
    expect(await storedIds()).toHaveLength(4)
  })
})
