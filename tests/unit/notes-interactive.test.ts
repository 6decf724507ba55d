/**
 * The multi round-trip notes tools through the whole app: every branch of `delete_note` and its
 * exactly-once final round, the one-round form of `create_note_from_template` and its re-asks,
 * `summarize_notes` with and without sampling, and the url-mode `share_note` flow end to end with the
 * approval page (approve, refuse, still pending, expired, replayed final round, another principal).
 * The destructive flows ignore answers sent with the first call and ask: consent is to a question
 * the server sealed into a round.
 */
import { describe, expect, it } from 'vitest'
import { SHARE_REQUEST_TTL_MS } from '../../src/notes/limits.ts'
import { ShareNotApprovedError } from '../../src/notes/store.ts'
import {
  accept,
  completedText,
  createNotesHarness,
  expectInputRequired,
  useNotesHarness,
} from '../support/notes-harness.ts'

const h = useNotesHarness()

describe('delete_note', () => {
  async function askToDelete(title = 'Old plan') {
    const id = await h().seed({ title, body: 'to be removed' })
    const first = await h().tool('delete_note', { id })
    expectInputRequired(first, ['confirm'])
    return { id, first }
  }

  it('asks for confirmation with the one-checkbox form naming the note', async () => {
    const { first } = await askToDelete('Old plan')
    expect(first.result.inputRequests.confirm).toEqual({
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Delete the note "Old plan"? This cannot be undone.',
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Delete permanently' } },
          required: ['confirm'],
        },
      },
    })
  })

  it.each([
    ['decline', { action: 'decline' }, 'Kept the note.'],
    ['cancel', { action: 'cancel' }, 'Nothing deleted; ask again later.'],
    ['accept without the box checked', accept({ confirm: false }), 'Kept the note.'],
  ])('keeps the note on %s', async (_case, answer, expected) => {
    const { id, first } = await askToDelete()
    const second = await h().retry(first, 'delete_note', { id }, { confirm: answer })
    expect(completedText(second)).toBe(expected)
    expect(second.result.isError).toBeUndefined()
    expect(await h().store.get('local', id)).toBeDefined()
  })

  it('deletes the note once confirmed and publishes the change', async () => {
    const { id, first } = await askToDelete('Old plan')
    h().events.length = 0
    const second = await h().retry(
      first,
      'delete_note',
      { id },
      { confirm: accept({ confirm: true }) }
    )
    expect(completedText(second)).toBe('Deleted the note "Old plan".')
    expect(await h().store.get('local', id)).toBeUndefined()
    expect(h().events).toEqual([
      { kind: 'resources_list_changed', principal: 'local' },
      { kind: 'resource_updated', uri: `note://${id}`, principal: 'local' },
    ])
  })

  it('a duplicated final round answers the same success and deletes nothing more', async () => {
    const { id, first } = await askToDelete('Old plan')
    const survivor = await h().seed({ title: 'Keep me' })
    const answers = { confirm: accept({ confirm: true }) }
    const once = await h().retry(first, 'delete_note', { id }, answers)
    const again = await h().retry(first, 'delete_note', { id }, answers)
    expect(completedText(once)).toBe('Deleted the note "Old plan".')
    expect(completedText(again)).toBe('Deleted the note "Old plan".')
    expect(again.result.isError).toBeUndefined()
    expect(await h().store.get('local', survivor)).toMatchObject({ title: 'Keep me' })
    expect((await h().store.list('local', 0, 10)).items.map((n) => n.id)).toEqual([survivor])
    expect(h().events.filter((e) => e.kind === 'resource_updated')).toHaveLength(1)
  })

  it('asks, deleting nothing, when a confirmation comes with the first call, then honours the sealed one', async () => {
    const id = await h().seed({ title: 'Old plan' })
    const confirmed = { confirm: accept({ confirm: true }) }
    const first = await h().prefilled('delete_note', { id }, confirmed)
    expectInputRequired(first, ['confirm'])
    expect(first.result.inputRequests.confirm.params.message).toBe(
      'Delete the note "Old plan"? This cannot be undone.'
    )
    expect(await h().store.get('local', id)).toMatchObject({ title: 'Old plan' })
    const second = await h().retry(first, 'delete_note', { id }, confirmed)
    expect(completedText(second)).toBe('Deleted the note "Old plan".')
    expect(await h().store.get('local', id)).toBeUndefined()
  })

  it('answers a missing note with isError without asking anything', async () => {
    const response = await h().tool('delete_note', { id: 'n_AAAAAAAAAAAAAAAA' })
    expect(response.result.resultType).toBe('complete')
    expect(response.result.isError).toBe(true)
    expect(response.result.content[0].text).toContain('No note with id n_AAAAAAAAAAAAAAAA')
  })

  it('reports a note deleted by someone else between the rounds', async () => {
    const { id, first } = await askToDelete()
    await h().store.delete('local', id, 'another-flow')
    const second = await h().retry(
      first,
      'delete_note',
      { id },
      { confirm: accept({ confirm: true }) }
    )
    expect(second.result.isError).toBe(true)
    expect(second.result.content[0].text).toContain(`No note with id ${id}`)
  })

  it.each([
    ['no answer', {}],
    ['an answer without the field', { confirm: accept({}) }],
    ['an answer of the wrong type', { confirm: accept({ confirm: 'yes' }) }],
    ['a malformed answer', { confirm: { action: 'maybe' } }],
  ])('asks again, deleting nothing, on %s', async (_case, inputResponses) => {
    const { id, first } = await askToDelete()
    const second = await h().retry(first, 'delete_note', { id }, inputResponses)
    expectInputRequired(second, ['confirm'])
    expect(second.result.inputRequests).toEqual(first.result.inputRequests)
    expect(await h().store.get('local', id)).toBeDefined()
  })

  it('without the elicitation capability answers HTTP 400 with -32021 and the capability needed', async () => {
    const id = await h().seed({ title: 'Old plan' })
    const response = await h().tool('delete_note', { id }, { capabilities: {} })
    expect(response.status).toBe(400)
    expect(response.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { elicitation: {} } },
    })
    expect(await h().store.get('local', id)).toBeDefined()
  })
})

describe('create_note_from_template', () => {
  /** A form field's titled choices as its JSON Schema lists them: `{ const: value, title }`. */
  const titled = (choices: Record<string, string>) =>
    Object.entries(choices).map(([value, title]) => ({ const: value, title }))

  /** Calls the tool for `template`, then answers its form round with `inputResponses`. */
  async function answerTemplate(template: string, inputResponses: Record<string, unknown>) {
    const args = { template }
    const first = await h().tool('create_note_from_template', args)
    const second = await h().retry(first, 'create_note_from_template', args, inputResponses)
    return { first, second }
  }

  const details = { title: 'Weekly sync' }

  it('asks every field in one form round, with the priority default and the suggested tags', async () => {
    const first = await h().tool('create_note_from_template', { template: 'meeting' })
    expectInputRequired(first, ['details'])
    const { params } = first.result.inputRequests.details
    expect(params.mode).toBe('form')
    expect(params.requestedSchema).toEqual({
      type: 'object',
      properties: {
        title: {
          type: 'string',
          title: 'Title',
          description: 'One line.',
          minLength: 1,
          maxLength: 200,
        },
        date: {
          type: 'string',
          title: 'Date',
          description: 'YYYY-MM-DD; leave empty for today.',
          format: 'date',
        },
        tags: {
          type: 'array',
          title: 'Tags',
          maxItems: 4,
          items: {
            anyOf: titled({
              team: 'Team',
              'one-on-one': 'One-on-one',
              customer: 'Customer',
              planning: 'Planning',
            }),
          },
          default: [],
        },
        priority: {
          type: 'string',
          title: 'Priority',
          oneOf: titled({ low: 'Low', normal: 'Normal', high: 'High' }),
          default: 'normal',
        },
      },
      required: ['title'],
    })
  })

  it('creates the note from the answers, with the template tag and the defaults applied', async () => {
    const { second } = await answerTemplate('meeting', { details: accept(details) })
    const { note } = second.result.structuredContent
    const today = new Date(h().clock.now).toISOString().slice(0, 10)
    expect(note).toMatchObject({ title: 'Weekly sync', tags: ['meeting'], version: 1 })
    expect(note.body).toMatch(new RegExp(`^Date: ${today} · Priority: normal\\n\\n## Attendees`))
    expect(await h().store.get('local', note.id)).toBeDefined()
    expect(h().events).toEqual([{ kind: 'resources_list_changed', principal: 'local' }])
  })

  it('creates the note once when its final round is sent again, answering the same note', async () => {
    const args = { template: 'meeting' }
    const first = await h().tool('create_note_from_template', args)
    const answers = { details: accept(details) }
    const second = await h().retry(first, 'create_note_from_template', args, answers)
    const again = await h().retry(first, 'create_note_from_template', args, answers)
    const { note } = second.result.structuredContent
    expect(again.result.structuredContent.note).toEqual(note)
    expect((await h().store.list('local', 0, 10)).items.map((listed) => listed.id)).toEqual([
      note.id,
    ])
    // Heard once: the second run created nothing.
    expect(h().events).toEqual([{ kind: 'resources_list_changed', principal: 'local' }])
  })

  it('uses the chosen date, tags and priority', async () => {
    const { second } = await answerTemplate('todo', {
      details: accept({
        title: '  Saturday  ',
        date: '2026-08-01',
        tags: ['home', 'urgent'],
        priority: 'high',
      }),
    })
    const { note } = second.result.structuredContent
    expect(note.title).toBe('Saturday')
    expect(note.tags).toEqual(['home', 'todo', 'urgent'])
    expect(note.body).toMatch(/^Date: 2026-08-01 · Priority: high\n\n## Tasks/)
  })

  it.each([
    ['no answer', {}],
    ['a missing title', { details: accept({ priority: 'low' }) }],
    ['an invalid date', { details: accept({ ...details, date: '01/08/2026' }) }],
    ['a tag that was not offered', { details: accept({ ...details, tags: ['secret'] }) }],
    ['an unknown priority', { details: accept({ ...details, priority: 'urgent' }) }],
    ['a title of spaces only', { details: accept({ title: '   ' }) }],
    ['a title with a line break', { details: accept({ title: 'one\ntwo' }) }],
  ])('asks the same form again, creating nothing, on %s', async (_case, inputResponses) => {
    const { first, second } = await answerTemplate('journal', inputResponses)
    expectInputRequired(second, ['details'])
    expect(second.result.inputRequests).toEqual(first.result.inputRequests)
    expect((await h().store.list('local', 0, 10)).items).toEqual([])
  })

  it.each([
    ['decline', 'No note created: the form was declined.'],
    ['cancel', 'No note created: the form was dismissed; call the tool again when ready.'],
  ])('creates nothing on %s, with its own message', async (action, expected) => {
    const { second } = await answerTemplate('meeting', { details: { action } })
    expect(completedText(second)).toBe(expected)
    expect((await h().store.list('local', 0, 10)).items).toEqual([])
  })

  it('refuses an unknown template without asking', async () => {
    const response = await h().tool('create_note_from_template', { template: 'recipe' })
    expect(response.result.isError).toBe(true)
    expect(response.result.content[0].text).toContain('template')
  })
})

describe('summarize_notes', () => {
  async function seedNotes() {
    await h().seed({
      title: 'Trip',
      body: '## Plan\nVisit Lisbon in May. Book flights.',
      tags: ['travel'],
    })
    await h().seed({ title: 'Budget', body: 'Spend less on coffee! Track it weekly.' })
  }

  it('falls back to an extractive summary when the client offers no sampling', async () => {
    await seedNotes()
    const response = await h().tool('summarize_notes', {}, { capabilities: { elicitation: {} } })
    expect(response.result.resultType).toBe('complete')
    const { structuredContent, content } = response.result
    expect(structuredContent.method).toBe('extractive')
    expect(structuredContent.notes.map((n: { title: string }) => n.title).sort()).toEqual([
      'Budget',
      'Trip',
    ])
    expect(structuredContent.summary).toContain('- Trip (7 words; travel): Visit Lisbon in May.')
    expect(structuredContent.summary).toContain('- Budget (7 words): Spend less on coffee!')
    expect(content[1].text).toMatch(/^Extractive summary \(the client did not offer sampling\)/)
  })

  it("asks the host's model through sampling, then returns its text", async () => {
    await seedNotes()
    const first = await h().tool('summarize_notes', { tags: ['travel'] })
    expectInputRequired(first, ['summary'])
    const request = first.result.inputRequests.summary
    expect(request.method).toBe('sampling/createMessage')
    expect(request.params.maxTokens).toBeGreaterThan(0)
    expect(request.params.messages[0].content.text).toContain('Visit Lisbon in May.')
    expect(request.params.messages[0].content.text).not.toContain('coffee')
    expect(request.params).not.toHaveProperty('tools')

    const second = await h().retry(
      first,
      'summarize_notes',
      { tags: ['travel'] },
      {
        summary: {
          role: 'assistant',
          content: { type: 'text', text: '- A trip to Lisbon is planned.' },
          model: 'test-model-1',
        },
      }
    )
    expect(second.result.structuredContent).toEqual({
      method: 'sampling',
      model: 'test-model-1',
      notes: [{ id: expect.any(String), title: 'Trip' }],
      summary: '- A trip to Lisbon is planned.',
    })
    expect(second.result.content[1].text).toBe(
      "Summary by the host's model (test-model-1) of 1 note(s):\n\n- A trip to Lisbon is planned."
    )
  })

  it('falls back to the extractive summary when the model returns no text', async () => {
    await seedNotes()
    const first = await h().tool('summarize_notes', {})
    const second = await h().retry(
      first,
      'summarize_notes',
      {},
      {
        summary: {
          role: 'assistant',
          content: { type: 'image', data: '', mimeType: 'image/png' },
          model: 'm',
        },
      }
    )
    expect(second.result.structuredContent.method).toBe('extractive')
    expect(second.result.content[1].text).toMatch(
      /^Extractive summary \(the host's model returned no text\)/
    )
  })

  it('answers isError when no note matches, without sampling', async () => {
    const response = await h().tool('summarize_notes', { query: 'nothing' })
    expect(response.result.resultType).toBe('complete')
    expect(response.result.isError).toBe(true)
  })

  it('refuses more than the maximum number of notes', async () => {
    const response = await h().tool('summarize_notes', { maxNotes: 21 })
    expect(response.result.isError).toBe(true)
    expect(response.result.content[0].text).toContain('maxNotes')
  })
})

describe('share_note', () => {
  async function startShare(harness = h(), title = 'Recipe <b>&</b>', as?: string) {
    const id = await harness.seed(
      { title, body: '1. Mix <script>alert(1)</script>' },
      as && harness.principalOf(as)
    )
    const first = await harness.tool('share_note', { id }, as ? { as } : undefined)
    expectInputRequired(first, ['approve'])
    const { url } = first.result.inputRequests.approve.params
    return { id, first, url: url as string, shareId: new URL(url).pathname.split('/')[2] as string }
  }

  const accepted = { approve: { action: 'accept' } }

  it('asks the client to open the approval page, whose URL carries only an unguessable id', async () => {
    const { first, url } = await startShare()
    expect(first.result.inputRequests.approve).toEqual({
      method: 'elicitation/create',
      params: {
        mode: 'url',
        message:
          'Open this page to approve sharing "Recipe <b>&</b>" as a read-only link, then come back.',
        url,
      },
    })
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:8787\/share\/[A-Za-z0-9_-]{43}$/)
  })

  it('publishes a read-only link once the page approved, and a duplicated final round gives the same link', async () => {
    const { id, first, url, shareId } = await startShare()
    const page = await h().openSharePage(url)
    expect(page.status).toBe(200)
    expect((await h().submitDecision(url, 'approve', page)).status).toBe(200)

    const second = await h().retry(first, 'share_note', { id }, accepted)
    const text = completedText(second)
    const link = /read-only at (\S+)$/.exec(text)?.[1] as string
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:8787\/shared\/[A-Za-z0-9_-]{43}$/)
    expect(text).toBe(`Shared "Recipe <b>&</b>" read-only at ${link}`)
    expect(second.result.content[1]).toMatchObject({ type: 'resource_link', uri: link })

    const again = await h().retry(first, 'share_note', { id }, accepted)
    expect(completedText(again)).toBe(text)
    expect((await h().store.getShareRequest(shareId))?.linkId).toBe(
      new URL(link).pathname.split('/')[2]
    )

    const shared = await h().openSharePage(link)
    expect(shared.status).toBe(200)
    expect(shared.html).toContain('1. Mix &lt;script&gt;alert(1)&lt;/script&gt;')
    expect(shared.html).not.toContain('<script>')
    expect(shared.html).not.toContain('<form')
  })

  it('says so when the page refused, and publishes nothing', async () => {
    const { id, first, url, shareId } = await startShare()
    const page = await h().openSharePage(url)
    await h().submitDecision(url, 'refuse', page)
    const second = await h().retry(first, 'share_note', { id }, accepted)
    expect(completedText(second)).toBe(
      'Sharing "Recipe <b>&</b>" was refused on the approval page; nothing was shared.'
    )
    expect((await h().store.getShareRequest(shareId))?.linkId).toBeUndefined()
  })

  it('asks again while the request is still pending after the client says the page was opened', async () => {
    const { id, first, url } = await startShare()
    const second = await h().retry(first, 'share_note', { id }, accepted)
    expectInputRequired(second, ['approve'])
    expect(second.result.inputRequests).toEqual(first.result.inputRequests)
    // A third round still works: the flow keeps its share request across re-asks.
    const page = await h().openSharePage(url)
    await h().submitDecision(url, 'approve', page)
    const third = await h().retry(second, 'share_note', { id }, accepted)
    expect(completedText(third)).toMatch(/^Shared "Recipe <b>&<\/b>" read-only at /)
  })

  it.each(['decline', 'cancel'])('shares nothing on %s', async (action) => {
    const { id, first, shareId } = await startShare()
    const second = await h().retry(first, 'share_note', { id }, { approve: { action } })
    expect(completedText(second)).toBe('Not shared.')
    expect((await h().store.getShareRequest(shareId))?.status).toBe('pending')
  })

  it.each(['accept', 'decline', 'cancel'])(
    'asks to open the page when an %s comes with the first call',
    async (action) => {
      const id = await h().seed({ title: 'Recipe' })
      const first = await h().prefilled('share_note', { id }, { approve: { action } })
      expectInputRequired(first, ['approve'])
      const { url } = first.result.inputRequests.approve.params
      const page = await h().openSharePage(url)
      await h().submitDecision(url, 'approve', page)
      const second = await h().retry(first, 'share_note', { id }, accepted)
      expect(completedText(second)).toMatch(/^Shared "Recipe" read-only at /)
    }
  )

  it('tells to start again once the approval page expired', async () => {
    const { id, first, url } = await startShare()
    h().clock.advance(SHARE_REQUEST_TTL_MS)
    expect((await h().openSharePage(url)).status).toBe(410)
    const second = await h().retry(first, 'share_note', { id }, accepted)
    expect(second.result.isError).toBe(true)
    expect(second.result.content[0].text).toContain('Call share_note again')
  })

  it('without url elicitation answers isError and asks nothing', async () => {
    const id = await h().seed({ title: 'T' })
    const response = await h().tool('share_note', { id }, { capabilities: { elicitation: {} } })
    expect(response.result.resultType).toBe('complete')
    expect(response.result.isError).toBe(true)
    expect(response.result.content[0].text).toContain('elicitation.url')
  })

  it('answers a missing note with isError without creating a share request', async () => {
    const response = await h().tool('share_note', { id: 'n_AAAAAAAAAAAAAAAA' })
    expect(response.result.isError).toBe(true)
    expect(response.result.content[0].text).toContain('No note with id')
  })

  it("an approved share can be published only by its own principal's flow", async () => {
    const auth = await createNotesHarness({ auth: true })
    try {
      const { id, first, url, shareId } = await startShare(auth, 'Alice only', 'alice')
      const page = await auth.openSharePage(url)
      await auth.submitDecision(url, 'approve', page)

      const asBob = await auth.retry(first, 'share_note', { id }, accepted, { as: 'bob' })
      expect(asBob.error).toMatchObject({
        code: -32602,
        message: 'Invalid or expired requestState',
      })
      expect(auth.logs.at(-1)?.fields).toMatchObject({ reason: 'principal_mismatch' })
      await expect(
        auth.store.publishShare(auth.principalOf('bob'), shareId, 'link', 'key')
      ).rejects.toBeInstanceOf(ShareNotApprovedError)
      expect((await auth.store.getShareRequest(shareId))?.linkId).toBeUndefined()

      const asAlice = await auth.retry(first, 'share_note', { id }, accepted, { as: 'alice' })
      expect(completedText(asAlice)).toMatch(/^Shared "Alice only" read-only at /)
    } finally {
      await auth.close()
    }
  })
})
