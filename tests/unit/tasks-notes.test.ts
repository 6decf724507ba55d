/**
 * The notes tools that run as tasks, `import_notes` and `export_notes` (src/notes/task-tools.ts),
 * through the whole notes app in-process (`createApp` with tasks, real in-memory SQLite): splitting
 * markdown into notes, the synchronous path for clients without the extension (small imports only;
 * export refused with -32021), progress as the task's statusMessage, conflicting titles asked once
 * per batch (overwrite, skip, keep both, decline, cancel), an export bundle imported back as the
 * same notes, the size bound of an export, and the takeover guarantee: a re-run of an import whose
 * first run already created some of its notes creates none of them twice. And what exports keep in
 * the store (on a SQLite file, measured in its rows and bytes, on a clock the test moves): each
 * record its bundle once, escapes counted against the bound, at most the cap on live tasks of them,
 * none once the retention of ended tasks has passed; the cap and the retention as configured.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { tokenPrincipal } from 'stateless-mcp/bearer'
import { ConfigError, parseConfig } from '../../src/config.ts'
import type { McpLogger } from '../../src/mcp/logger.ts'
import { InProcessEventBus } from '../../src/mcp/event-bus.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
const DEFAULT_MAX_LIVE_TASKS = 32
const DEFAULT_TASK_RESULT_TTL_MS = 600_000
import { readJournal } from '../../src/mcp/tasks/record.ts'
import { MAX_BODY_CHARS } from '../../src/notes/limits.ts'
import { READ, WRITE } from '../../src/notes/scopes.ts'
import { createNotesServer } from '../../src/notes/server.ts'
import type { Note, NotesStore } from '../../src/notes/store.ts'
import {
  MAX_CONFLICTS_PER_ASK,
  MAX_EXPORT_BYTES,
  MAX_SYNC_IMPORT_NOTES,
} from '../../src/notes/limits.ts'
import { parseImport } from '../../src/notes/task-tools.ts'
import { sweepExpired } from '../../src/mcp/stores/expiry-sweeps.ts'
import type { SqliteEngineStore } from '../../src/mcp/sqlite.ts'
import type { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { expectError, expectResult, postMcp, type JsonObject } from '../support/mcp-request.ts'
import { TASKS, TASKS_AND_FORMS, isTerminal, waitForTask } from '../support/tasks.ts'
import { TEST_AUTH_ENV, expectInsufficientScope, signTestToken } from '../support/test-tokens.ts'

const sealer = StateSealer.create({
  keyRing: await importKeyRing([generateKey()]),
  ttlSeconds: 600,
})
const logger: McpLogger = { warn: () => {}, error: () => {} }

let store: SqliteNotesStore
/** The engine's store of the app under test: the task records. */
let tasks: SqliteEngineStore
let closeStores: () => Promise<void>
let shutdown: AbortController
let app: ReturnType<typeof createApp>
let ids = 0

/**
 * The notes app configured by `env`, on its own stores (in memory unless `path` names a file); the
 * app reaches its notes store through `wrap` when given.
 */
async function notesApp(
  env: Record<string, string> = {},
  {
    path = ':memory:',
    now,
    wrap = (notes) => notes,
  }: { path?: string; now?: () => number; wrap?: (notes: NotesStore) => NotesStore } = {}
): Promise<{
  store: SqliteNotesStore
  tasks: SqliteEngineStore
  app: ReturnType<typeof createApp>
  close: () => Promise<void>
}> {
  const own = await sqliteStores(path)
  const built = createApp(parseConfig(env), {
    store: wrap(own.store),
    engineStore: own.engineStore,
    sealer,
    bus: new InProcessEventBus(),
    logger,
    shutdown: shutdown.signal,
    now,
    tasks: { replicaId: 'unit', takeoverIntervalMs: 0 },
  })
  return { store: own.store, tasks: own.engineStore, app: built, close: own.close }
}

beforeEach(async () => {
  shutdown = new AbortController()
  ;({ store, tasks, app, close: closeStores } = await notesApp())
})
afterEach(async () => {
  shutdown.abort()
  await closeStores()
})

async function rpc(
  method: string,
  params: JsonObject,
  capabilities: object = TASKS_AND_FORMS,
  on = app
): Promise<JsonObject> {
  const id = ++ids
  return expectResult(await postMcp(on, method, { id, params, capabilities }), id)
}

const call = (name: string, args: JsonObject, capabilities?: object, on = app) =>
  rpc('tools/call', { name, arguments: args }, capabilities, on)
const getTask = (taskId: string, on = app) => rpc('tasks/get', { taskId }, TASKS, on)
const finished = (taskId: string, on = app) =>
  waitForTask(() => getTask(taskId, on), isTerminal, 'the end of the task')
const parked = (taskId: string) =>
  waitForTask(
    () => getTask(taskId),
    (task) => task.status === 'input_required',
    'input_required'
  )

/** Every note of the local principal, by title. */
async function notesByTitle(from = store): Promise<Map<string, Note[]>> {
  const byTitle = new Map<string, Note[]>()
  for (let offset = 0; ; offset += 500) {
    const page = await from.list(LOCAL_PRINCIPAL, offset, 500)
    for (const note of page.items)
      byTitle.set(note.title, [...(byTitle.get(note.title) ?? []), note])
    if (page.nextOffset === undefined) return byTitle
  }
}

function markdownOf(count: number, prefix = 'Note'): string {
  return Array.from(
    { length: count },
    (_, i) => `# ${prefix} ${i + 1}\n\nBody of ${i + 1}.\n`
  ).join('\n')
}

async function seed(title: string, body = 'old body', tags: string[] = []): Promise<Note> {
  return store.create(LOCAL_PRINCIPAL, { title, body, tags }, Date.now())
}

describe('import_notes', () => {
  it('splits on "# " headings only: deeper headings and headings in fenced code stay in the body', () => {
    const parsed = parseImport(
      '# First\n\nIntro\n\n## Section\n\n```sh\n# not a note\n```\n\n~~~\n# nor this\n~~~\n# Second\nlast line\n\n'
    )
    expect(parsed).toEqual({
      notes: [
        {
          title: 'First',
          body: 'Intro\n\n## Section\n\n```sh\n# not a note\n```\n\n~~~\n# nor this\n~~~',
          tags: [],
          line: 1,
        },
        { title: 'Second', body: 'last line', tags: [], line: 14 },
      ],
    })
  })

  it('answers what keeps an import from being read, and imports nothing', async () => {
    const long = 'x'.repeat(MAX_BODY_CHARS + 1)
    const result = await call(
      'import_notes',
      {
        markdown: `intro text\n# Good\n\nfine\n#  \n\n# Long\n\n${long}\n# Tagged\n\n- Tags: \`no spaces\`\n`,
      },
      {}
    )
    expect(result.isError).toBe(true)
    const message = result.content[0].text
    expect(message).toMatch(/^Nothing imported: line 1: text before the first "# " heading;/)
    expect(message).toContain('the note at line 5: its title')
    expect(message).toContain(`the note at line 7: its body is longer than ${MAX_BODY_CHARS}`)
    expect(message).toContain('the note at line 10:')
    expect((await store.list(LOCAL_PRINCIPAL, 0, 10)).items).toEqual([])
  })

  it('runs synchronously for a client without the extension, up to the small-import bound', async () => {
    const result = await call('import_notes', { markdown: markdownOf(3) }, {})
    expect(result).toMatchObject({
      resultType: 'complete',
      structuredContent: { outcome: 'imported', total: 3, created: 3, overwritten: 0, skipped: 0 },
    })
    expect([...(await notesByTitle()).keys()].sort()).toEqual(['Note 1', 'Note 2', 'Note 3'])
  })

  it('answers -32021 to a client without the extension for a larger import', async () => {
    const response = await postMcp(app, 'tools/call', {
      params: {
        name: 'import_notes',
        arguments: { markdown: markdownOf(MAX_SYNC_IMPORT_NOTES + 1) },
      },
      capabilities: {},
    })
    const error = await expectError(response, { status: 400, code: -32021, id: 1 })
    expect(error.data).toEqual({
      requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    })
    expect((await store.list(LOCAL_PRINCIPAL, 0, 1)).items).toEqual([])
  })

  it('runs as a task for a declaring client, reporting progress as the statusMessage', async () => {
    const created = await call('import_notes', { markdown: markdownOf(250) })
    expect(created).toMatchObject({ resultType: 'task', status: 'working' })
    const done = await finished(created.taskId)
    expect(done).toMatchObject({
      status: 'completed',
      statusMessage: 'Imported 250 of 250 notes.',
      result: { structuredContent: { total: 250, created: 250 } },
    })
    const byTitle = await notesByTitle()
    expect(byTitle.size).toBe(250)
    expect([...byTitle.values()].every((notes) => notes.length === 1)).toBe(true)
    expect(byTitle.get('Note 7')?.[0]?.body).toBe('Body of 7.')
  })

  it('asks once per batch of conflicting titles, and overwrites what the person chose to', async () => {
    const alpha = await seed('Alpha', 'old alpha', ['old'])
    const markdown = '# Alpha\n\n- Tags: `new`\n\nnew alpha\n# Beta\n\nbeta\n'
    const { taskId } = await call('import_notes', { markdown })
    const asked = await parked(taskId)
    expect(Object.keys(asked.inputRequests)).toEqual(['conflicts-1'])
    const question = asked.inputRequests['conflicts-1']
    expect(question.method).toBe('elicitation/create')
    expect(question.params.message).toContain('"Alpha"')
    expect(
      question.params.requestedSchema.properties.resolution.oneOf.map((o: JsonObject) => o.const)
    ).toEqual(['overwrite', 'skip', 'keep_both'])
    await rpc('tasks/update', {
      taskId,
      inputResponses: { 'conflicts-1': { action: 'accept', content: { resolution: 'overwrite' } } },
    })
    const done = await finished(taskId)
    expect(done.result.structuredContent).toMatchObject({ created: 1, overwritten: 1, skipped: 0 })
    expect(await store.get(LOCAL_PRINCIPAL, alpha.id)).toMatchObject({
      body: 'new alpha',
      tags: ['new'],
      version: 2,
    })
    expect((await notesByTitle()).get('Beta')).toHaveLength(1)
  })

  it('skips conflicting notes when asked to, or when the question is declined, and keeps both when asked to', async () => {
    const cases = [
      { answer: { action: 'accept', content: { resolution: 'skip' } }, alphas: 1, skipped: 1 },
      { answer: { action: 'decline' }, alphas: 1, skipped: 1 },
      { answer: { action: 'accept', content: { resolution: 'keep_both' } }, alphas: 2, skipped: 0 },
    ]
    for (const { answer, alphas, skipped } of cases) {
      const own = await notesApp()
      await own.store.create(LOCAL_PRINCIPAL, { title: 'Alpha', body: 'old', tags: [] }, Date.now())
      const { taskId } = await call(
        'import_notes',
        { markdown: '# Alpha\n\nnew\n' },
        TASKS_AND_FORMS,
        own.app
      )
      await waitForTask(
        () => getTask(taskId, own.app),
        (t) => t.status === 'input_required',
        'the question'
      )
      await rpc(
        'tasks/update',
        { taskId, inputResponses: { 'conflicts-1': answer } },
        TASKS,
        own.app
      )
      const done = await finished(taskId, own.app)
      expect(done.result.structuredContent).toMatchObject({ skipped, created: alphas - 1 })
      const notes = (await notesByTitle(own.store)).get('Alpha') ?? []
      expect(notes).toHaveLength(alphas)
      expect(notes.some((note) => note.body === 'old')).toBe(true)
      await own.close()
    }
  })

  it('imports nothing when the person cancels the question', async () => {
    await seed('Alpha')
    const { taskId } = await call('import_notes', { markdown: '# Alpha\n\nnew\n# Beta\n\nb\n' })
    await parked(taskId)
    await rpc('tasks/update', { taskId, inputResponses: { 'conflicts-1': { action: 'cancel' } } })
    const done = await finished(taskId)
    expect(done.result.structuredContent).toMatchObject({ outcome: 'cancelled', created: 0 })
    expect([...(await notesByTitle()).keys()]).toEqual(['Alpha'])
  })

  it(`asks about at most ${MAX_CONFLICTS_PER_ASK} titles per form, all forms at once`, async () => {
    for (let i = 1; i <= 25; i++) await seed(`Note ${i}`)
    const { taskId } = await call('import_notes', { markdown: markdownOf(30) })
    const asked = await parked(taskId)
    expect(Object.keys(asked.inputRequests).sort()).toEqual(['conflicts-1', 'conflicts-2'])
    expect(asked.inputRequests['conflicts-2'].params.message).toMatch(/^5 notes to import have/)
    await rpc('tasks/update', {
      taskId,
      inputResponses: {
        'conflicts-1': { action: 'accept', content: { resolution: 'skip' } },
        'conflicts-2': { action: 'accept', content: { resolution: 'overwrite' } },
      },
    })
    const done = await finished(taskId)
    expect(done.result.structuredContent).toMatchObject({ created: 5, skipped: 20, overwritten: 5 })
  })

  it('asks a synchronous import’s conflict question as a multi round-trip round', async () => {
    await seed('Alpha')
    const first = await call('import_notes', { markdown: '# Alpha\n\nnew\n' }, { elicitation: {} })
    expect(first).toMatchObject({
      resultType: 'input_required',
      inputRequests: { 'conflicts-1': {} },
    })
    const second = await rpc(
      'tools/call',
      {
        name: 'import_notes',
        arguments: { markdown: '# Alpha\n\nnew\n' },
        inputResponses: {
          'conflicts-1': { action: 'accept', content: { resolution: 'overwrite' } },
        },
        requestState: first.requestState,
      },
      { elicitation: {} }
    )
    expect(second.structuredContent).toMatchObject({ overwritten: 1 })
  })

  it('creates none of its notes twice when a run repeats the work of an earlier one', async () => {
    await seed('Note 1')
    const { taskId } = await call('import_notes', { markdown: markdownOf(120) })
    await parked(taskId)
    // What a replica that died mid-import leaves: some planned notes created, the task not done.
    const record = await tasks.getTask(taskId)
    const plan = readJournal(record!.journal).replay.o?.plan as { ids: string[] }
    expect(plan.ids).toHaveLength(120)
    const earlier = plan.ids
      .slice(1, 61)
      .map((id, i) => ({ id, title: `Note ${i + 2}`, body: `Body of ${i + 2}.`, tags: [] }))
    expect(await store.importNotes(LOCAL_PRINCIPAL, earlier, Date.now())).toBe(60)
    await rpc('tasks/update', {
      taskId,
      inputResponses: { 'conflicts-1': { action: 'accept', content: { resolution: 'keep_both' } } },
    })
    const done = await finished(taskId)
    expect(done.result.structuredContent).toMatchObject({ total: 120, created: 120 })
    const byTitle = await notesByTitle()
    expect([...byTitle.values()].flat()).toHaveLength(121)
    expect(byTitle.get('Note 1')).toHaveLength(2)
    expect(byTitle.get('Note 30')).toHaveLength(1)
  })

  it('needs notes:write', () => {
    expect(createNotesServer().tools.get('import_notes')?.definition.scopes).toEqual(WRITE)
  })
})

describe('export_notes', () => {
  it('answers -32021 to a client without the extension', async () => {
    const response = await postMcp(app, 'tools/call', {
      params: { name: 'export_notes', arguments: {} },
      capabilities: {},
    })
    await expectError(response, { status: 400, code: -32021, id: 1 })
  })

  it('exports every note, or one tag’s, as one markdown bundle in an embedded resource', async () => {
    await seed('Groceries', 'milk', ['home'])
    await seed('Standup', 'notes', ['work'])
    const all = await finished((await call('export_notes', {})).taskId)
    expect(all.status).toBe('completed')
    expect(all.statusMessage).toBe('Exported 2 notes.')
    const [summary, bundle] = all.result.content
    expect(summary).toEqual({ type: 'text', text: 'Exported 2 notes.' })
    expect(bundle).toMatchObject({
      type: 'resource',
      resource: { uri: 'notes://export', mimeType: 'text/markdown' },
    })
    expect(bundle.resource.text).toMatch(/^# Standup\n/m)
    expect(bundle.resource.text).toMatch(/^# Groceries\n/m)

    const work = await finished((await call('export_notes', { tag: 'work' })).taskId)
    const text = work.result.content[1].resource.text
    expect(work.result.content[1].resource.uri).toBe('notes://export?tag=work')
    expect(text).toContain('# Standup')
    expect(text).not.toContain('Groceries')
  })

  it('writes a bundle import_notes reads back as the same notes', async () => {
    await seed('One', 'first body\n\n## with a section', ['a', 'b'])
    await seed('Two', '', [])
    await seed('Three', '```\n# code\n```', ['c'])
    const exported = await finished((await call('export_notes', {})).taskId)
    const markdown = exported.result.content[1].resource.text

    const other = await notesApp()
    const imported = await call('import_notes', { markdown }, {}, other.app)
    expect(imported.structuredContent).toMatchObject({ total: 3, created: 3 })
    const shape = (byTitle: Map<string, Note[]>) =>
      [...byTitle.values()]
        .flat()
        .map(({ title, body, tags }) => ({ title, body, tags }))
        .sort((x, y) => x.title.localeCompare(y.title))
    expect(shape(await notesByTitle(other.store))).toEqual(shape(await notesByTitle()))
    await other.close()
  })

  it(`refuses a bundle larger than ${MAX_EXPORT_BYTES} bytes`, async () => {
    const body = 'x'.repeat(MAX_BODY_CHARS)
    const notes = Array.from({ length: 11 }, (_, i) => ({
      id: `n_big${String(i).padStart(13, '0')}`,
      title: `Big ${i}`,
      body,
      tags: [],
    }))
    await store.importNotes(LOCAL_PRINCIPAL, notes, Date.now())
    const done = await finished((await call('export_notes', {})).taskId)
    expect(done.result).toMatchObject({ isError: true })
    expect(done.result.content[0].text).toContain('export one tag at a time')
  })

  it('needs notes:read', () => {
    expect(createNotesServer().tools.get('export_notes')?.definition.scopes).toEqual(READ)
  })
})

/** The reads of many notes the task tools may make: after each, {@link writesBetweenReads} writes. */
const MANY_NOTES_READS = new Set<string | symbol>([
  'list',
  'search',
  'findByTitles',
  'listByCreation',
])

/**
 * `store`, where each read of many notes (a page, or a lookup) is followed, before it answers, by
 * `write` (through `store` itself): another writer between any two reads of an import's plan or an
 * export, deterministically.
 */
function writesBetweenReads(store: NotesStore, write: () => Promise<void>): NotesStore {
  return new Proxy(store, {
    get(target, key): unknown {
      const value: unknown = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      if (!MANY_NOTES_READS.has(key)) return (value as (...args: unknown[]) => unknown).bind(target)
      return async (...args: unknown[]) => {
        const answer: unknown = await (value as (...args: unknown[]) => Promise<unknown>).apply(
          target,
          args
        )
        await write()
        return answer
      }
    },
  })
}

describe('while other writes happen between the reads of a task', () => {
  /**
   * The app on its own store with `fillers` notes and the `before` ones older than them; its first
   * read of many notes is followed by `write`. The tools read 500 notes a page.
   */
  async function busyApp(
    before: string[],
    fillers: number,
    write: (notes: NotesStore) => Promise<void>
  ) {
    let writing: Promise<void> | undefined
    /** Reads of many notes so far, and how many there were when the write began. */
    const reads = { total: 0, beforeWrite: undefined as number | undefined }
    const busy = await notesApp(
      {},
      {
        wrap: (notes) =>
          writesBetweenReads(notes, () => {
            reads.total++
            reads.beforeWrite ??= reads.total
            return (writing ??= write(notes))
          }),
      }
    )
    const at = Date.now()
    const seeded: Note[] = []
    for (const [i, title] of [
      ...before,
      ...Array.from({ length: fillers }, (_, n) => `Filler ${n}`),
    ].entries())
      seeded.push(await busy.store.create(LOCAL_PRINCIPAL, { title, body: '', tags: [] }, at + i))
    return { ...busy, seeded, reads, later: at + seeded.length + 1 }
  }

  it('an import asks about every title that exists throughout, whichever notes move meanwhile', async () => {
    // "Pulled" is just past the newest 500 and "Moved" older: once two newer notes are deleted and
    // "Moved" updated, pages of 500 by offset over recency would miss both.
    const busy = await busyApp(['Moved', 'Pulled'], 500, async (notes) => {
      const { seeded, later } = busy
      const newest = seeded.slice(-2).map((note) => note.id)
      await notes.deleteMany(LOCAL_PRINCIPAL, newest, 'between-reads')
      await notes.update(LOCAL_PRINCIPAL, seeded[0]!.id, 1, { body: 'moved' }, later)
    })
    const markdown = '# Pulled\n\nnew\n# Moved\n\nnew\n# Fresh\n\nfresh\n'
    const { taskId } = await call('import_notes', { markdown }, undefined, busy.app)
    const asked = await waitForTask(
      () => getTask(taskId, busy.app),
      (task) => task.status === 'input_required' || isTerminal(task),
      'a question or the end of the import'
    )
    expect(asked.status).toBe('input_required')
    const message: string = asked.inputRequests['conflicts-1'].params.message
    expect(message).toContain('"Pulled"')
    expect(message).toContain('"Moved"')
    await rpc(
      'tasks/update',
      {
        taskId,
        inputResponses: { 'conflicts-1': { action: 'accept', content: { resolution: 'skip' } } },
      },
      TASKS,
      busy.app
    )
    const done = await finished(taskId, busy.app)
    expect(done.result.structuredContent).toMatchObject({ created: 1, skipped: 2 })
    const byTitle = await notesByTitle(busy.store)
    expect(byTitle.get('Pulled')).toHaveLength(1)
    expect(byTitle.get('Moved')).toHaveLength(1)
    expect(busy.reads.beforeWrite).toBe(1)
    await busy.close()
  })

  it('an export has every note that exists throughout it exactly once, whatever is written meanwhile', async () => {
    // Between two pages: the oldest note and one in the middle updated (to the top of the recency
    // order), the newest and an old one deleted, a note created.
    const busy = await busyApp([], 600, async (notes) => {
      const { seeded, later } = busy
      for (const moved of [seeded[0]!, seeded[300]!])
        await notes.update(LOCAL_PRINCIPAL, moved.id, 1, { body: 'moved' }, later)
      await notes.deleteMany(LOCAL_PRINCIPAL, [seeded.at(-1)!.id, seeded[10]!.id], 'between-pages')
      await notes.create(LOCAL_PRINCIPAL, { title: 'Created meanwhile', body: '', tags: [] }, later)
    })
    const done = await finished(
      (await call('export_notes', {}, undefined, busy.app)).taskId,
      busy.app
    )
    const exported: string[] = [...done.result.content[1].resource.text.matchAll(/^# (.*)$/gm)].map(
      (match: RegExpMatchArray) => match[1]!
    )
    // Notes deleted or created meanwhile may be in it or not, once at most.
    const meanwhile = new Set([
      busy.seeded.at(-1)!.title,
      busy.seeded[10]!.title,
      'Created meanwhile',
    ])
    const throughout = exported.filter((title) => !meanwhile.has(title))
    const expected = busy.seeded.map((note) => note.title).filter((title) => !meanwhile.has(title))
    expect([...throughout].sort()).toEqual([...expected].sort())
    expect(new Set(exported).size).toBe(exported.length)
    expect(throughout).toEqual(expected) // oldest first
    // The write came after the first page, and pages were read after it.
    expect(busy.reads.beforeWrite).toBe(1)
    expect(busy.reads.total).toBeGreaterThan(1)
    await busy.close()
  })
})

describe('scopes of the task operations', () => {
  const alice = tokenPrincipal(TEST_AUTH_ENV.AUTH_ISSUER, 'alice')
  let own: Awaited<ReturnType<typeof notesApp>>
  beforeEach(async () => {
    own = await notesApp(TEST_AUTH_ENV)
  })
  afterEach(() => own.close())

  /** One request of alice's with a token granting `scope` (none at all when absent). */
  async function asAlice(
    scope: string | undefined,
    method: string,
    params: JsonObject,
    capabilities: object = TASKS_AND_FORMS
  ): Promise<Response> {
    const token = await signTestToken({ subject: 'alice', scope })
    return postMcp(own.app, method, {
      id: ++ids,
      params,
      capabilities,
      headers: { authorization: `Bearer ${token}` },
    })
  }
  const resultOf = async (response: Response) => expectResult(response, ids)
  const startTask = async (scope: string, name: string, args: JsonObject) =>
    (await resultOf(await asAlice(scope, 'tools/call', { name, arguments: args }))).taskId as string
  const getAs = async (scope: string, taskId: string) =>
    resultOf(await asAlice(scope, 'tasks/get', { taskId }, TASKS))

  const expectStepUp = (response: Response, scopes: string) =>
    expectInsufficientScope(response, scopes, ids)

  /** An import of alice's parked on its conflict question about "Alpha". */
  async function parkedImport(): Promise<{ taskId: string; alpha: Note }> {
    const alpha = await own.store.create(
      alice,
      { title: 'Alpha', body: 'old', tags: [] },
      Date.now()
    )
    const taskId = await startTask('notes:write', 'import_notes', {
      markdown: '# Alpha\n\nnew alpha\n',
    })
    await waitForTask(
      () => getAs('notes:write', taskId),
      (task) => task.status === 'input_required',
      'input_required'
    )
    return { taskId, alpha }
  }
  const OVERWRITE = { 'conflicts-1': { action: 'accept', content: { resolution: 'overwrite' } } }

  it('answers tasks/get of an export only to a token with notes:read, never its bundle to one without', async () => {
    await own.store.create(alice, { title: 'Diary', body: 'a private entry', tags: [] }, Date.now())
    const taskId = await startTask('notes:read', 'export_notes', {})
    const done = await waitForTask(() => getAs('notes:read', taskId), isTerminal, 'the export')
    expect(done.result.content[1].resource.text).toContain('a private entry')
    for (const scope of [undefined, 'profile']) {
      const body = await expectStepUp(
        await asAlice(scope, 'tasks/get', { taskId }, TASKS),
        'notes:read'
      )
      expect(body).not.toContain('private entry')
    }
  })

  it('refuses tasks/update of an import to a token without notes:write, applying nothing; the writer’s answer is applied', async () => {
    const { taskId, alpha } = await parkedImport()
    for (const scope of [undefined, 'notes:read']) {
      const refused = await asAlice(
        scope,
        'tasks/update',
        { taskId, inputResponses: OVERWRITE },
        TASKS
      )
      await expectStepUp(refused, 'notes:write')
    }
    const record = await own.tasks.getTask(taskId)
    expect(record).toMatchObject({ status: 'input_required' })
    expect(record?.inputResponses).toBeUndefined()
    await expectStepUp(await asAlice('notes:read', 'tasks/get', { taskId }, TASKS), 'notes:write')
    expect(await own.store.get(alice, alpha.id)).toMatchObject({ body: 'old', version: 1 })

    await resultOf(
      await asAlice('notes:write', 'tasks/update', { taskId, inputResponses: OVERWRITE }, TASKS)
    )
    const done = await waitForTask(() => getAs('notes:write', taskId), isTerminal, 'the import')
    expect(done.result.structuredContent).toMatchObject({ overwritten: 1 })
    expect(await own.store.get(alice, alpha.id)).toMatchObject({ body: 'new alpha', version: 2 })
  })

  it('refuses tasks/cancel to a token without the tool’s scopes: the task goes on; the writer’s cancel ends it', async () => {
    const { taskId } = await parkedImport()
    for (const scope of [undefined, 'notes:read']) {
      await expectStepUp(await asAlice(scope, 'tasks/cancel', { taskId }, TASKS), 'notes:write')
    }
    expect(await own.tasks.getTask(taskId)).toMatchObject({ status: 'input_required' })
    expect((await own.tasks.getTask(taskId))?.cancelRequested).toBeFalsy()
    await resultOf(await asAlice('notes:write', 'tasks/cancel', { taskId }, TASKS))
    expect(await getAs('notes:write', taskId)).toMatchObject({ status: 'cancelled' })
  })

  it('names the base scope with the tool’s in the one challenge', async () => {
    await own.close()
    own = await notesApp({ ...TEST_AUTH_ENV, AUTH_REQUIRED_SCOPE: 'mcp' })
    const taskId = await startTask('mcp notes:read', 'export_notes', {})
    await expectStepUp(await asAlice('mcp', 'tasks/get', { taskId }, TASKS), 'mcp notes:read')
    // Without the base scope the request is refused before the task is looked up.
    await expectStepUp(await asAlice('notes:read', 'tasks/get', { taskId }, TASKS), 'mcp')
    expect((await getAs('mcp notes:read', taskId)).taskId).toBe(taskId)
  })

  it('answers another caller’s task with the same -32602 as an unknown id, whatever the scopes', async () => {
    const taskId = await startTask('notes:read', 'export_notes', {})
    const bob = `Bearer ${await signTestToken({ subject: 'bob' })}`
    for (const id of [taskId, 'no-such-task']) {
      const response = await postMcp(own.app, 'tasks/get', {
        id: ++ids,
        params: { taskId: id },
        capabilities: TASKS,
        headers: { authorization: bob },
      })
      await expectError(response, { status: 200, code: -32602, id: ids })
    }
  })
})

describe('what exports keep in the store', () => {
  /** Nearly the longest body: ten such notes make a bundle of about 1 MB. */
  const BIG_BODY_CHARS = 95_000
  /** What a record holds besides its bundle: ids, owner, arguments, journal, status message. */
  const RECORD_OVERHEAD_BYTES = 4_096
  const dir = mkdtempSync(join(tmpdir(), 'notes-exports-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  let clock: number
  let path: string
  let own: Awaited<ReturnType<typeof notesApp>>

  /** The notes app on a new SQLite file, configured by `env`, on the test's clock. */
  function appOnFile(env: Record<string, string> = {}): Promise<typeof own> {
    path = join(dir, `exports-${++files}.db`)
    return notesApp(env, { path, now: () => clock })
  }

  beforeEach(async () => {
    clock = Date.now()
    own = await appOnFile()
  })
  afterEach(() => own.close())

  /** The rows of `tasks` and the UTF-8 bytes of every value they hold, read from the file. */
  function storedTasks(): { rows: number; bytes: number } {
    const db = new DatabaseSync(path, { readOnly: true })
    try {
      const columns = db
        .prepare(`SELECT name FROM pragma_table_info('tasks')`)
        .all()
        .map(({ name }) => `coalesce(length(CAST(${String(name)} AS BLOB)), 0)`)
      const row = db
        .prepare(
          `SELECT count(*) AS rows, coalesce(sum(${columns.join(' + ')}), 0) AS bytes FROM tasks`
        )
        .get()
      return { rows: Number(row?.rows), bytes: Number(row?.bytes) }
    } finally {
      db.close()
    }
  }

  async function seedNotes(count: number, body: string, tags: string[] = []): Promise<void> {
    for (let i = 0; i < count; i++)
      await own.store.create(LOCAL_PRINCIPAL, { title: `Big ${i}`, body, tags }, Date.now())
  }

  async function exported(args: JsonObject = {}): Promise<JsonObject> {
    const { taskId } = await call('export_notes', args, TASKS, own.app)
    return finished(taskId, own.app)
  }

  it(`stores 30 exports of 10 notes each in proportion to its bundle, at most ${DEFAULT_MAX_LIVE_TASKS} at once, and none ${DEFAULT_TASK_RESULT_TTL_MS / 60_000} minutes after they ended`, async () => {
    await seedNotes(10, 'word '.repeat(BIG_BODY_CHARS / 5))
    const first = await exported()
    expect(first.status).toBe('completed')
    const bundle: string = first.result.content[1].resource.text
    const bundleBytes = Buffer.byteLength(JSON.stringify(bundle))
    expect(bundleBytes).toBeGreaterThan(10 * BIG_BODY_CHARS)
    for (let i = 1; i < 30; i++) expect((await exported()).status).toBe('completed')

    const thirty = storedTasks()
    expect(thirty.rows).toBe(30)
    expect(thirty.bytes).toBeGreaterThan(30 * bundleBytes)
    expect(thirty.bytes).toBeLessThanOrEqual(30 * (bundleBytes + RECORD_OVERHEAD_BYTES))

    for (let i = 30; i < DEFAULT_MAX_LIVE_TASKS; i++) await exported()
    const refused = await postMcp(own.app, 'tools/call', {
      id: ++ids,
      params: { name: 'export_notes', arguments: {} },
      capabilities: TASKS,
    })
    const error = await expectError(refused, { status: 200, code: -32602, id: ids })
    expect(error.message).toMatch(
      new RegExp(
        `^Too many tasks: you hold ${DEFAULT_MAX_LIVE_TASKS} live tasks .* kept 10 minutes`
      )
    )
    const full = storedTasks()
    expect(full.rows).toBe(DEFAULT_MAX_LIVE_TASKS)
    expect(full.bytes).toBeLessThanOrEqual(
      DEFAULT_MAX_LIVE_TASKS * (bundleBytes + RECORD_OVERHEAD_BYTES)
    )

    clock += DEFAULT_TASK_RESULT_TTL_MS - 1
    expect((await getTask(first.taskId, own.app)).status).toBe('completed')
    clock += 1
    const gone = await postMcp(own.app, 'tasks/get', {
      id: ++ids,
      params: { taskId: first.taskId },
      capabilities: TASKS,
    })
    await expectError(gone, { status: 200, code: -32602, id: ids })
    const after = await exported()
    expect(after.status).toBe('completed')
    await sweepExpired(own.tasks, clock)
    const left = storedTasks()
    expect(left.rows).toBe(1)
    expect(left.bytes).toBeLessThanOrEqual(bundleBytes + RECORD_OVERHEAD_BYTES)
  })

  it('takes the cap and the retention from MAX_LIVE_TASKS_PER_PRINCIPAL and TASK_RESULT_TTL_SECONDS', async () => {
    await own.close()
    own = await appOnFile({ MAX_LIVE_TASKS_PER_PRINCIPAL: '1', TASK_RESULT_TTL_SECONDS: '30' })
    const done = await exported()
    expect(done.ttlMs).toBe(30_000)
    const refused = await postMcp(own.app, 'tools/call', {
      id: ++ids,
      params: { name: 'export_notes', arguments: {} },
      capabilities: TASKS,
    })
    const error = await expectError(refused, { status: 200, code: -32602, id: ids })
    expect(error.data).toStrictEqual({ cap: 'tasks', scope: 'principal', limit: 1, held: 1 })
    expect(error.message).toContain('each is kept 30 seconds after its task ends')
    clock += 30_000
    expect((await exported()).status).toBe('completed')
    for (const bad of [
      { MAX_LIVE_TASKS_PER_PRINCIPAL: '0' },
      { MAX_LIVE_TASKS_PER_PRINCIPAL: '2.5' },
      { TASK_RESULT_TTL_SECONDS: '0' },
      { TASK_RESULT_TTL_SECONDS: String(8 * 86_400) },
    ])
      expect(() => parseConfig(bad), JSON.stringify(bad)).toThrow(ConfigError)
  })

  it('counts a bundle’s bytes as its record stores them, escapes included, so no record outgrows MAX_EXPORT_BYTES', async () => {
    // 95 KB of markdown per note, but 570 KB as JSON text: ten of them would be a 5.7 MB record.
    const control = '\u0001'.repeat(BIG_BODY_CHARS)
    await seedNotes(1, control, ['one'])
    await seedNotes(9, control)
    const refused = await exported()
    expect(refused.result).toMatchObject({ isError: true })
    expect(refused.result.content[0].text).toContain('export one tag at a time')
    expect(storedTasks().bytes).toBeLessThan(RECORD_OVERHEAD_BYTES)

    const one = await exported({ tag: 'one' })
    expect(one.status).toBe('completed')
    expect(one.result.content[1].resource.text).toContain(control)
    const { bytes } = storedTasks()
    expect(bytes).toBeGreaterThan(6 * BIG_BODY_CHARS)
    expect(bytes).toBeLessThanOrEqual(MAX_EXPORT_BYTES + 2 * RECORD_OVERHEAD_BYTES)
  })
})
