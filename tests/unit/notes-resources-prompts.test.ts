/**
 * Notes resources, prompts and completions through the whole app: the help page listed first, the
 * caller's notes listed page by page and read as markdown, unknown and foreign notes answered -32602
 * with `data.uri`, prompts that embed notes as resources and reject bad arguments with -32602, and
 * completions of note ids and tags capped at 100.
 */
import { describe, expect, it } from 'vitest'
import { DIGEST_DAYS, MAX_DIGEST_CHARS, MAX_FOCUS_CHARS } from '../../src/notes/limits.ts'
import { createNotesHarness, useNotesHarness } from '../support/notes-harness.ts'

const h = useNotesHarness()

const DAY_MS = 86_400_000

describe('resources', () => {
  it('lists the help page first, then the caller’s notes newest first with name, type and size', async () => {
    const older = await h().seed({ title: 'Older' })
    h().clock.advance(1000)
    const newer = await h().seed({ title: 'Newer', body: 'ünïcode body' })
    const response = await h().rpc('resources/list')
    expect(response.result).toMatchObject({ ttlMs: 0, cacheScope: 'private' })
    const { resources } = response.result
    expect(resources.map((r: { uri: string }) => r.uri)).toEqual([
      'notes://help',
      `note://${newer}`,
      `note://${older}`,
    ])
    const read = await h().rpc('resources/read', { uri: `note://${newer}` })
    expect(resources[1]).toEqual({
      uri: `note://${newer}`,
      name: 'Newer',
      mimeType: 'text/markdown',
      size: new TextEncoder().encode(read.result.contents[0].text).length,
      annotations: { lastModified: new Date(h().clock.now).toISOString() },
    })
  })

  it('pages resources/list with a cursor, each note once', async () => {
    for (let i = 0; i < 60; i++) await h().seed({ title: `Note ${i}` })
    const first = await h().rpc('resources/list')
    expect(first.result.resources).toHaveLength(50)
    expect(typeof first.result.nextCursor).toBe('string')
    const second = await h().rpc('resources/list', { cursor: first.result.nextCursor })
    expect(second.result.nextCursor).toBeUndefined()
    const uris = [...first.result.resources, ...second.result.resources].map((r) => r.uri)
    expect(uris).toHaveLength(61)
    expect(new Set(uris).size).toBe(61)
  })

  it('publishes the note template', async () => {
    const response = await h().rpc('resources/templates/list')
    expect(response.result.resourceTemplates).toEqual([
      {
        uriTemplate: 'note://{id}',
        name: 'note',
        title: 'Note',
        description: expect.any(String),
        mimeType: 'text/markdown',
      },
    ])
  })

  it('reads a note as markdown with its title, tags, metadata and body', async () => {
    const id = await h().seed({ title: 'Trip', body: 'Pack *light*.', tags: ['travel', 'summer'] })
    const response = await h().rpc('resources/read', { uri: `note://${id}` })
    expect(response.result).toMatchObject({
      resultType: 'complete',
      ttlMs: 0,
      cacheScope: 'private',
    })
    const [contents] = response.result.contents
    expect(contents.uri).toBe(`note://${id}`)
    expect(contents.mimeType).toBe('text/markdown')
    expect(contents.text).toMatch(/^# Trip\n\n- Id: /)
    expect(contents.text).toContain('- Tags: `summer`, `travel`')
    expect(contents.text).toContain('- Version: 1')
    expect(contents.text).toMatch(/\n\nPack \*light\*\.\n$/)
  })

  it('reads the help page', async () => {
    const response = await h().rpc('resources/read', { uri: 'notes://help' })
    expect(response.result.contents[0]).toMatchObject({
      uri: 'notes://help',
      mimeType: 'text/markdown',
    })
    expect(response.result.contents[0].text).toContain('search_notes')
  })

  it.each([
    ['an unknown id', 'note://n_AAAAAAAAAAAAAAAA'],
    ['a malformed id', 'note://whatever'],
    ['a non-ASCII id (sent Base64-encoded in Mcp-Name)', 'note://nöte'],
    ['an unknown scheme', 'other://n_AAAAAAAAAAAAAAAA'],
  ])('answers %s with -32602 and data.uri', async (_case, uri) => {
    const response = await h().rpc('resources/read', { uri })
    expect(response.status).toBe(200)
    expect(response.error).toMatchObject({ code: -32602, data: { uri } })
  })

  it("does not list or read another principal's note", async () => {
    const auth = await createNotesHarness({ auth: true })
    try {
      const id = await auth.seed({ title: 'Alice only' }, auth.principalOf('alice'))
      const uri = `note://${id}`
      expect(
        (await auth.rpc('resources/read', { uri }, { as: 'alice' })).result.contents
      ).toHaveLength(1)
      const asBob = await auth.rpc('resources/read', { uri }, { as: 'bob' })
      expect(asBob.error).toMatchObject({ code: -32602, data: { uri } })
      const listed = await auth.rpc('resources/list', {}, { as: 'bob' })
      expect(listed.result.resources.map((r: { uri: string }) => r.uri)).toEqual(['notes://help'])
      const completed = await auth.rpc(
        'completion/complete',
        {
          ref: { type: 'ref/resource', uri: 'note://{id}' },
          argument: { name: 'id', value: 'n_' },
        },
        { as: 'bob' }
      )
      expect(completed.result.completion.values).toEqual([])
    } finally {
      await auth.close()
    }
  })
})

describe('completions', () => {
  it('completes note ids of the template by prefix', async () => {
    const id = await h().seed({ title: 'One' })
    const response = await h().rpc('completion/complete', {
      ref: { type: 'ref/resource', uri: 'note://{id}' },
      argument: { name: 'id', value: id.slice(0, 6) },
    })
    expect(response.result.completion).toMatchObject({ values: [id] })
  })

  it('caps completions at 100 and says more exist', async () => {
    for (let i = 0; i < 105; i++) await h().seed({ title: `N${i}` })
    const response = await h().rpc('completion/complete', {
      ref: { type: 'ref/prompt', name: 'review_note' },
      argument: { name: 'id', value: 'n_' },
    })
    expect(response.result.completion.values).toHaveLength(100)
    expect(response.result.completion.hasMore).toBe(true)
  })

  it('completes tags of weekly_digest case-insensitively', async () => {
    await h().seed({ title: 'A', tags: ['work', 'workshop', 'home'] })
    const response = await h().rpc('completion/complete', {
      ref: { type: 'ref/prompt', name: 'weekly_digest' },
      argument: { name: 'tag', value: 'WOR' },
    })
    expect(response.result.completion).toEqual({
      values: ['work', 'workshop'],
      total: 2,
      hasMore: false,
    })
  })
})

describe('prompts', () => {
  it('lists review_note and weekly_digest with their arguments', async () => {
    const response = await h().rpc('prompts/list')
    expect(response.result.prompts.map((p: { name: string }) => p.name)).toEqual([
      'review_note',
      'weekly_digest',
    ])
    expect(response.result.prompts[0].arguments).toEqual([
      expect.objectContaining({ name: 'id', required: true }),
      expect.objectContaining({ name: 'focus' }),
    ])
  })

  it('review_note embeds the note as a resource, then the instruction with the focus', async () => {
    const id = await h().seed({ title: 'Essay', body: 'Draft text.' })
    const response = await h().rpc('prompts/get', {
      name: 'review_note',
      arguments: { id, focus: 'clarity' },
    })
    expect(response.result.resultType).toBe('complete')
    const [note, instruction] = response.result.messages
    expect(note).toEqual({
      role: 'user',
      content: {
        type: 'resource',
        resource: {
          uri: `note://${id}`,
          mimeType: 'text/markdown',
          text: expect.stringMatching(/^# Essay\n[\s\S]*\n\nDraft text\.\n$/),
        },
      },
    })
    expect(instruction.role).toBe('user')
    expect(instruction.content.type).toBe('text')
    expect(instruction.content.text).toContain('focusing on: clarity')
  })

  it.each([
    ['an unknown note', { id: 'n_AAAAAAAAAAAAAAAA' }, /no note with id/],
    ['a malformed id', { id: 'x' }, /argument id must be a note id/],
    ['a missing id', {}, /requires the argument\(s\) id/],
    [
      'a focus over the limit',
      { id: 'n_AAAAAAAAAAAAAAAA', focus: 'x'.repeat(MAX_FOCUS_CHARS + 1) },
      /argument focus must be at most/,
    ],
  ])('review_note answers %s with -32602', async (_case, args, message) => {
    const response = await h().rpc('prompts/get', { name: 'review_note', arguments: args })
    expect(response.error.code).toBe(-32602)
    expect(response.error.message).toMatch(message)
  })

  it('weekly_digest embeds the recent notes with the tag and leaves out older or other ones', async () => {
    await h().store.create(
      'local',
      { title: 'Old work', body: '', tags: ['work'] },
      h().clock.now - (DIGEST_DAYS + 1) * DAY_MS
    )
    await h().seed({ title: 'Home', tags: ['home'] })
    const recent = await h().seed({ title: 'Sprint', body: 'Ship it.', tags: ['work'] })
    const response = await h().rpc('prompts/get', {
      name: 'weekly_digest',
      arguments: { tag: 'Work' },
    })
    const messages = response.result.messages
    expect(messages).toHaveLength(2)
    expect(messages[0].content.resource.uri).toBe(`note://${recent}`)
    expect(messages[1].content.text).toContain('tagged "work"')
  })

  it('weekly_digest links the notes that do not fit its size budget instead of embedding them', async () => {
    const big = await h().seed({ title: 'Big', body: 'x'.repeat(MAX_DIGEST_CHARS) })
    h().clock.advance(1000)
    const small = await h().seed({ title: 'Small', body: 'short' })
    const response = await h().rpc('prompts/get', { name: 'weekly_digest', arguments: {} })
    const [first, second, instruction] = response.result.messages
    expect(first.content).toMatchObject({ type: 'resource', resource: { uri: `note://${small}` } })
    expect(second.content).toEqual({
      type: 'resource_link',
      uri: `note://${big}`,
      name: 'Big',
      mimeType: 'text/markdown',
    })
    expect(instruction.content.text).toContain('Notes given as links were too long to include')
  })

  it('weekly_digest says when there is nothing to digest', async () => {
    const response = await h().rpc('prompts/get', { name: 'weekly_digest', arguments: {} })
    expect(response.result.messages).toEqual([
      {
        role: 'user',
        content: {
          type: 'text',
          text: `I have no notes updated in the last ${DIGEST_DAYS} days. Say so in one sentence.`,
        },
      },
    ])
  })

  it('weekly_digest refuses a malformed tag with -32602', async () => {
    const response = await h().rpc('prompts/get', {
      name: 'weekly_digest',
      arguments: { tag: 'two words' },
    })
    expect(response.error.code).toBe(-32602)
  })
})
