/**
 * The single-round notes tools through the whole app: happy paths, every input limit answered as an
 * `isError` result with a message naming the field, optimistic concurrency, search paging with an
 * opaque cursor, and `notes-db` logging / progress sent only when the request asked for them.
 */
import { describe, expect, it } from 'vitest'
import {
  MAX_BODY_CHARS,
  MAX_QUERY_CHARS,
  MAX_SEARCH_LIMIT,
  MAX_TAG_CHARS,
  MAX_TAGS,
  MAX_TITLE_CHARS,
} from '../../src/notes/limits.ts'
import { createNotesHarness, toolErrorText, useNotesHarness } from '../support/notes-harness.ts'

const h = useNotesHarness()

async function createNote(args: Record<string, unknown>) {
  const response = await h().tool('create_note', args)
  expect(response.result.isError).toBeUndefined()
  return response.result.structuredContent.note
}

describe('create_note', () => {
  it('creates a note with a trimmed title and lower-cased tags, returned structured with a link', async () => {
    const response = await h().tool('create_note', {
      title: '  Groceries  ',
      body: 'Milk, eggs.',
      tags: [' Home ', 'ERRANDS', 'home'],
    })
    expect(response.result.resultType).toBe('complete')
    const { note } = response.result.structuredContent
    expect(note).toMatchObject({
      title: 'Groceries',
      body: 'Milk, eggs.',
      tags: ['errands', 'home'],
      version: 1,
      uri: `note://${note.id}`,
    })
    expect(note.id).toMatch(/^n_[A-Za-z0-9_-]{16}$/)
    expect(JSON.parse(response.result.content[0].text)).toEqual({ note })
    expect(response.result.content[1]).toEqual({
      type: 'resource_link',
      uri: `note://${note.id}`,
      name: 'Groceries',
      mimeType: 'text/markdown',
    })
    expect(await h().store.get('local', note.id)).toMatchObject({ title: 'Groceries' })
  })

  it('publishes a resource list change scoped to the caller', async () => {
    await createNote({ title: 'One' })
    expect(h().events).toEqual([{ kind: 'resources_list_changed', principal: 'local' }])
  })

  it('accepts a title of exactly the maximum length and an empty body by default', async () => {
    const note = await createNote({ title: 'x'.repeat(MAX_TITLE_CHARS) })
    expect(note.title).toHaveLength(MAX_TITLE_CHARS)
    expect(note.body).toBe('')
  })

  it.each([
    ['an empty title', { title: '' }, /title: must not be empty/],
    ['a whitespace-only title', { title: '   ' }, /title: must not be empty/],
    [
      'a title over the limit',
      { title: 'x'.repeat(MAX_TITLE_CHARS + 1) },
      new RegExp(`title: must be at most ${MAX_TITLE_CHARS} characters`),
    ],
    ['a multi-line title', { title: 'one\ntwo' }, /title: must be a single line/],
    [
      'a body over the limit',
      { title: 't', body: 'x'.repeat(MAX_BODY_CHARS + 1) },
      new RegExp(`body: must be at most ${MAX_BODY_CHARS} characters`),
    ],
    [
      'too many tags',
      { title: 't', tags: Array.from({ length: MAX_TAGS + 1 }, (_, i) => `t${i}`) },
      new RegExp(`tags: at most ${MAX_TAGS} tags are allowed`),
    ],
    [
      'a tag over the limit',
      { title: 't', tags: ['x'.repeat(MAX_TAG_CHARS + 1)] },
      new RegExp(`tags.0: a tag must be at most ${MAX_TAG_CHARS} characters`),
    ],
    ['a tag with a space', { title: 't', tags: ['two words'] }, /tags.0: a tag may contain only/],
    ['an empty tag', { title: 't', tags: ['  '] }, /tags.0: a tag must not be empty/],
    ['an unknown argument', { title: 't', colour: 'red' }, /Unrecognized key: "colour"/],
    ['a missing title', {}, /title/],
  ])('refuses %s with an isError result naming the field', async (_case, args, message) => {
    const text = toolErrorText(await h().tool('create_note', args))
    expect(text).toMatch(/^Invalid arguments for tool create_note: /)
    expect(text).toMatch(message)
    expect(h().events).toEqual([])
  })
})

describe('get_note', () => {
  it('returns the note', async () => {
    const note = await createNote({ title: 'Read me', body: 'Text' })
    const response = await h().tool('get_note', { id: note.id })
    expect(response.result.structuredContent).toEqual({ note })
  })

  it('answers an unknown id with isError, not a protocol error', async () => {
    expect(toolErrorText(await h().tool('get_note', { id: 'n_AAAAAAAAAAAAAAAA' }))).toBe(
      'No note with id n_AAAAAAAAAAAAAAAA. Find ids with search_notes.'
    )
  })

  it.each(['', 'abc', 'n_short', 'n_AAAAAAAAAAAAAAAA/', "n_AAAAAAAAAAAAAA'"])(
    'refuses the malformed id %j',
    async (id) => {
      expect(toolErrorText(await h().tool('get_note', { id }))).toMatch(/id: must be a note id/)
    }
  )
})

describe('update_note', () => {
  it('applies a patch at the expected version and bumps the version', async () => {
    const note = await createNote({ title: 'Draft', body: 'v1', tags: ['a'] })
    h().events.length = 0
    const response = await h().tool('update_note', {
      id: note.id,
      expectedVersion: 1,
      body: 'v2',
      tags: ['B'],
    })
    expect(response.result.structuredContent.note).toMatchObject({
      title: 'Draft',
      body: 'v2',
      tags: ['b'],
      version: 2,
    })
    expect(h().events).toEqual([
      { kind: 'resource_updated', uri: `note://${note.id}`, principal: 'local' },
    ])
  })

  it('refuses a stale version, names the current one and says to re-read; nothing changes', async () => {
    const note = await createNote({ title: 'Shared', body: 'original' })
    await h().tool('update_note', { id: note.id, expectedVersion: 1, body: 'first writer' })
    const text = toolErrorText(
      await h().tool('update_note', { id: note.id, expectedVersion: 1, body: 'second writer' })
    )
    expect(text).toContain('Version conflict')
    expect(text).toContain('version 2')
    expect(text).toContain('re-read it with get_note')
    expect(await h().store.get('local', note.id)).toMatchObject({
      body: 'first writer',
      version: 2,
    })
  })

  it('answers an unknown note with isError', async () => {
    const text = toolErrorText(
      await h().tool('update_note', { id: 'n_AAAAAAAAAAAAAAAA', expectedVersion: 1, title: 'x' })
    )
    expect(text).toContain('No note with id n_AAAAAAAAAAAAAAAA')
  })

  it('refuses a call that changes nothing', async () => {
    const note = await createNote({ title: 'Same' })
    const text = toolErrorText(await h().tool('update_note', { id: note.id, expectedVersion: 1 }))
    expect(text).toContain('give at least one of title, body or tags to change')
  })

  it.each([0, -1, 1.5, '1'])('refuses the expectedVersion %j', async (expectedVersion) => {
    const note = await createNote({ title: 'Same' })
    const text = toolErrorText(
      await h().tool('update_note', { id: note.id, expectedVersion, title: 'New' })
    )
    expect(text).toContain('expectedVersion')
  })

  it('applies the same title limits as create_note', async () => {
    const note = await createNote({ title: 'Same' })
    const text = toolErrorText(
      await h().tool('update_note', {
        id: note.id,
        expectedVersion: 1,
        title: 'x'.repeat(MAX_TITLE_CHARS + 1),
      })
    )
    expect(text).toContain(`title: must be at most ${MAX_TITLE_CHARS} characters`)
  })
})

describe('search_notes', () => {
  it('finds notes by words of title and body, with excerpts and no bodies', async () => {
    const apple = await createNote({ title: 'Apple pie', body: 'Bake at 180 degrees.' })
    await createNote({ title: 'Pear', body: 'Poach gently.' })
    const response = await h().tool('search_notes', { query: 'bake' })
    expect(response.result.structuredContent).toEqual({
      notes: [
        {
          id: apple.id,
          uri: apple.uri,
          title: 'Apple pie',
          tags: [],
          version: 1,
          updatedAt: apple.updatedAt,
          excerpt: 'Bake at 180 degrees.',
        },
      ],
    })
  })

  it('filters by every given tag', async () => {
    await createNote({ title: 'A', tags: ['work', 'urgent'] })
    await createNote({ title: 'B', tags: ['work'] })
    const response = await h().tool('search_notes', { query: '', tags: ['WORK', 'urgent'] })
    expect(response.result.structuredContent.notes.map((n: { title: string }) => n.title)).toEqual([
      'A',
    ])
  })

  it('pages through every match with an opaque cursor, each note once', async () => {
    for (let i = 0; i < 5; i++) await createNote({ title: `Note ${i}`, body: 'common word' })
    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const response = await h().tool('search_notes', {
        query: 'common',
        limit: 2,
        ...(cursor !== undefined && { cursor }),
      })
      const page = response.result.structuredContent
      seen.push(...page.notes.map((n: { id: string }) => n.id))
      cursor = page.nextCursor
      pages += 1
    } while (cursor !== undefined)
    expect(pages).toBe(3)
    expect(new Set(seen).size).toBe(5)
  })

  it.each(['not-a-cursor', '', 'eyJsIjoicmVzb3VyY2VzIiwibyI6MH0'])(
    'answers the invalid cursor %j with isError',
    async (cursor) => {
      expect(toolErrorText(await h().tool('search_notes', { query: '', cursor }))).toMatch(
        /^Invalid cursor/
      )
    }
  )

  it.each([
    ['a limit of 0', { query: '', limit: 0 }, /limit/],
    ['a limit over the maximum', { query: '', limit: MAX_SEARCH_LIMIT + 1 }, /limit/],
    [
      'a query over the limit',
      { query: 'x'.repeat(MAX_QUERY_CHARS + 1) },
      /query: must be at most/,
    ],
    ['a missing query', {}, /query/],
  ])('refuses %s', async (_case, args, message) => {
    expect(toolErrorText(await h().tool('search_notes', args))).toMatch(message)
  })

  it('answers plain JSON with no notification when the request asked for neither logs nor progress', async () => {
    await createNote({ title: 'Quiet' })
    const response = await h().tool('search_notes', { query: 'quiet' })
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(response.notifications).toEqual([])
  })

  it('sends notes-db log messages at and above the requested level, without query text', async () => {
    await createNote({ title: 'Secretword plans' })
    const debug = await h().tool('search_notes', { query: 'secretword' }, { logLevel: 'debug' })
    expect(debug.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const messages = debug.notifications.filter((n) => n.method === 'notifications/message')
    expect(messages.map((m) => [m.params.level, m.params.logger])).toEqual([
      ['debug', 'notes-db'],
      ['info', 'notes-db'],
    ])
    expect(messages[1].params.data).toMatchObject({ event: 'search_done', results: 1 })
    expect(JSON.stringify(messages).toLowerCase()).not.toContain('secretword')
    expect(debug.notifications.some((n) => n.method === 'notifications/progress')).toBe(false)
    expect(debug.result.structuredContent.notes).toHaveLength(1)

    const info = await h().tool('search_notes', { query: 'secretword' }, { logLevel: 'info' })
    expect(info.notifications.map((n) => n.params.level)).toEqual(['info'])

    const error = await h().tool('search_notes', { query: 'secretword' }, { logLevel: 'error' })
    expect(error.notifications).toEqual([])
  })

  it('reports increasing progress only with a progress token, then the result on the same stream', async () => {
    await createNote({ title: 'Progress' })
    const response = await h().tool('search_notes', { query: '' }, { progressToken: 'tok-1' })
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const progress = response.notifications.map((n) => n.params)
    expect(response.notifications.every((n) => n.method === 'notifications/progress')).toBe(true)
    expect(progress.map((p) => p.progress)).toEqual([0, 1])
    expect(progress.every((p) => p.progressToken === 'tok-1' && p.total === 1)).toBe(true)
    expect(response.result.structuredContent.notes).toHaveLength(1)
  })
})

describe('list_tags', () => {
  it('lists every tag with its number of notes, by name', async () => {
    await createNote({ title: 'A', tags: ['work', 'urgent'] })
    await createNote({ title: 'B', tags: ['work'] })
    const response = await h().tool('list_tags')
    expect(response.result.structuredContent).toEqual({
      tags: [
        { tag: 'urgent', count: 1 },
        { tag: 'work', count: 2 },
      ],
    })
  })

  it('refuses arguments it does not define', async () => {
    expect(toolErrorText(await h().tool('list_tags', { tag: 'x' }))).toContain('Unrecognized key')
  })
})

describe('principal isolation', () => {
  it("another principal cannot read, change, find or count a note's tags", async () => {
    const auth = await createNotesHarness({ auth: true })
    try {
      const created = await auth.tool('create_note', { title: 'Private', tags: ['mine'] })
      const { id } = created.result.structuredContent.note
      const asBob = { as: 'bob' }
      expect((await auth.tool('get_note', { id }, asBob)).result.isError).toBe(true)
      expect(
        (await auth.tool('update_note', { id, expectedVersion: 1, title: 'Hijacked' }, asBob))
          .result.isError
      ).toBe(true)
      expect(
        (await auth.tool('search_notes', { query: 'private' }, asBob)).result.structuredContent
      ).toEqual({ notes: [] })
      expect((await auth.tool('list_tags', {}, asBob)).result.structuredContent).toEqual({
        tags: [],
      })
      expect((await auth.tool('get_note', { id })).result.structuredContent.note.title).toBe(
        'Private'
      )
    } finally {
      await auth.close()
    }
  })
})
