/**
 * Multi round-trip requests at the engine level: small servers built with `compileServer` and
 * `definitions<App>()`, called through `createMcpHandler` directly (`{ body, headers, principal }`), so
 * each test controls exactly what the handler asks, what the client answers and what it declares.
 * Pins gathering of asks, the journal across rounds, validation of untrusted answers, answers the
 * server did not ask for (ignored unless an ask sets `acceptUnsolicited`), question digests,
 * `ctx.once`/`ctx.askAgain`, capability gating per request, which methods may suspend,
 * progress/log notifications and cancellation.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest'
import * as z from 'zod'
import { definitions, structured, text } from '../../src/mcp/definitions.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { META_LOG_LEVEL, META_SERVER_INFO } from '../../src/mcp/protocol.ts'
import { defineForm } from '../../src/mcp/replay.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer, type ServerDefinition } from '../../src/mcp/server.ts'
import {
  callMcp,
  expectError,
  expectResult,
  parseSse,
  readMessages,
  type HandlerCallOptions,
  type JsonObject,
} from '../support/mcp-request.ts'
import { noArgsTools } from '../support/no-args-tool.ts'

interface Probe {
  /** Times `greet` ran past its ask. */
  greeted: number
  /** Times the `ctx.once` step of `once_flow` ran. */
  onceSteps: number
  /** Part of the question `revised` asks: changing it changes the question. */
  revision: number
  /** Whether the completion context offered an ask method. */
  completionCouldAsk?: boolean
  /** What `wait_for_abort` saw once the client went away. */
  afterAbort?: { aborted: boolean }
  /** Holds `report_then_wait` after its first progress notification until the test releases it. */
  gate?: Promise<void>
}

const probe: Probe = { greeted: 0, onceSteps: 0, revision: 1 }
beforeEach(() => {
  Object.assign(probe, { greeted: 0, onceSteps: 0, revision: 1 })
  delete probe.completionCouldAsk
  delete probe.afterAbort
  delete probe.gate
})

const { tool, resourceTemplate, prompt } = definitions<Probe>()
const noArgs = z.object({})
const noArgsTool = noArgsTools<Probe>()
const nameForm = z.object({ name: z.string() })
const okForm = z.object({ ok: z.boolean() })
const SAMPLING = {
  messages: [{ role: 'user' as const, content: { type: 'text', text: 'Say hello.' } }],
  maxTokens: 10,
}

const tools = [
  noArgsTool('pair', 'Asks for two names at once.', async (ctx) => {
    const [first, last] = await Promise.all([
      ctx.elicit('first', { message: 'First name?', schema: nameForm }),
      ctx.elicit('last', { message: 'Last name?', schema: nameForm }),
    ])
    const name = (answer: typeof first) => (answer.action === 'accept' ? answer.content.name : '')
    return text(`${name(first)} ${name(last)}`)
  }),
  noArgsTool('chain4', 'Asks four questions, one per round.', async (ctx) => {
    const values: string[] = []
    for (const key of ['r1', 'r2', 'r3', 'r4']) {
      const answer = await ctx.elicit(key, {
        message: `Value for ${key}?`,
        schema: z.object({ value: z.string() }),
      })
      values.push(answer.action === 'accept' ? answer.content.value : answer.action)
    }
    return text(values.join(','))
  }),
  noArgsTool('greet', 'Asks for a name.', async (ctx) => {
    const answer = await ctx.elicit('user_name', {
      message: 'What is your name?',
      schema: nameForm,
    })
    ctx.deps.greeted += 1
    if (answer.action === 'decline') return text('declined')
    if (answer.action === 'cancel') return text('cancelled')
    return text(`Hello, ${answer.content.name}!`)
  }),
  noArgsTool('revised', 'Asks to confirm the current revision, then for a note.', async (ctx) => {
    const revision = ctx.deps.revision
    const confirm = await ctx.elicit('confirm', {
      message: `Apply revision ${revision}?`,
      schema: okForm,
    })
    const note = await ctx.elicit('note', {
      message: 'A note for the log?',
      schema: z.object({ note: z.string() }),
    })
    const ok = confirm.action === 'accept' && confirm.content.ok
    return text(`revision ${revision} ok=${ok} note=${note.action}`)
  }),
  noArgsTool('once_flow', 'Mints an id once, then asks about it.', async (ctx) => {
    const id = await ctx.once('id', () => {
      ctx.deps.onceSteps += 1
      return `id-${crypto.randomUUID()}`
    })
    await ctx.elicit('keep', { message: `Keep ${id}?`, schema: okForm })
    return text(id)
  }),
  noArgsTool('until_even', 'Asks for a number until it is even.', async (ctx) => {
    const answer = await ctx.elicit('number', {
      message: 'An even number?',
      schema: z.object({ n: z.int() }),
    })
    if (answer.action !== 'accept') return text(answer.action)
    if (answer.content.n % 2 !== 0) await ctx.askAgain('number')
    return text(`even ${answer.content.n}`)
  }),
  noArgsTool('form_ask', 'Asks through a form.', async (ctx) => {
    const answer = await ctx.elicit('form', { message: 'Name?', schema: nameForm })
    return text(`form ${answer.action}`)
  }),
  noArgsTool('url_ask', 'Asks the user to open a page.', async (ctx) => {
    const answer = await ctx.elicitUrl('page', {
      message: 'Approve in the browser.',
      url: 'https://example.com/approve',
    })
    return text(`url ${answer.action}`)
  }),
  noArgsTool('sample_ask', "Asks the host's model.", async (ctx) => {
    const answer = await ctx.sample('llm', SAMPLING)
    return text(`model ${answer.model}`)
  }),
  noArgsTool('sample_tools_ask', "Asks the host's model with tools.", async (ctx) => {
    const answer = await ctx.sample('llm', {
      ...SAMPLING,
      tools: [{ name: 'lookup', inputSchema: { type: 'object' } }],
    })
    return text(`model ${answer.model}`)
  }),
  noArgsTool('roots_ask', "Asks for the client's roots.", async (ctx) => {
    const roots = await ctx.roots('roots')
    return text(`roots ${roots.map((root) => root.uri).join(',')}`)
  }),
  tool({
    name: 'in_advance',
    description:
      'Asks one question of the given kind, taking an answer given in advance if told so.',
    input: z.object({ kind: z.enum(['form', 'url', 'sampling', 'roots']), early: z.boolean() }),
    async run({ kind, early }, ctx) {
      const acceptUnsolicited = early
      switch (kind) {
        case 'form': {
          const answer = await ctx.elicit('form', {
            message: 'Name?',
            schema: nameForm,
            acceptUnsolicited,
          })
          return text(`form ${answer.action}`)
        }
        case 'url': {
          const answer = await ctx.elicitUrl('page', {
            message: 'Approve in the browser.',
            url: 'https://example.com/approve',
            acceptUnsolicited,
          })
          return text(`url ${answer.action}`)
        }
        case 'sampling':
          return text(`model ${(await ctx.sample('llm', SAMPLING, { acceptUnsolicited })).model}`)
        case 'roots': {
          const roots = await ctx.roots('roots', { acceptUnsolicited })
          return text(`roots ${roots.map((root) => root.uri).join(',')}`)
        }
      }
    },
  }),
  noArgsTool(
    'revised_in_advance',
    'Asks to confirm the current revision, taking an answer given in advance.',
    async (ctx) => {
      const answer = await ctx.elicit('confirm', {
        message: `Apply revision ${ctx.deps.revision}?`,
        schema: okForm,
        acceptUnsolicited: true,
      })
      return text(`revision ${ctx.deps.revision} ${answer.action}`)
    }
  ),
  tool({
    name: 'can_probe',
    description: 'Reports what ctx.can answers.',
    input: noArgs,
    run: (_args, ctx) =>
      structured({
        form: ctx.can('elicitation.form'),
        url: ctx.can('elicitation.url'),
        sampling: ctx.can('sampling'),
        samplingTools: ctx.can('sampling.tools'),
        roots: ctx.can('roots'),
      }),
  }),
  noArgsTool('swallow', 'Catches the suspension of its ask and returns anyway.', async (ctx) => {
    try {
      await ctx.elicit('ignored', { message: 'Anything?', schema: nameForm })
    } catch {
      // A handler must not be able to skip the question by catching the suspension.
    }
    return text('returned anyway')
  }),
  noArgsTool(
    'progress',
    'Reports progress, including a repeated and a decreasing value.',
    (ctx) => {
      ctx.progress(1, 3, 'one')
      ctx.progress(1, 3, 'one again')
      ctx.progress(0.5, 3, 'backwards')
      ctx.progress(2, 3)
      ctx.progress(3, 3)
      return text('done')
    }
  ),
  noArgsTool('logs', 'Logs at four levels.', (ctx) => {
    ctx.log('debug', 'd')
    ctx.log('info', 'i', 'test-logger')
    ctx.log('warning', 'w')
    ctx.log('error', 'e')
    return text('logged')
  }),
  noArgsTool(
    'report_then_wait',
    'Reports progress at once, then works until the test lets it finish.',
    async (ctx) => {
      ctx.progress(0, 1, 'started')
      await ctx.deps.gate
      ctx.progress(1, 1, 'finished')
      return text('worked')
    }
  ),
  noArgsTool(
    'wait_for_abort',
    'Reports progress, then waits until the client goes away.',
    async (ctx) => {
      // Yields before the first notification; notifying before the first await is pinned separately.
      await new Promise((resolve) => setTimeout(resolve, 0))
      ctx.progress(1)
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve()
        else ctx.signal.addEventListener('abort', () => resolve(), { once: true })
      })
      ctx.progress(2)
      ctx.log('emergency', 'after abort')
      ctx.deps.afterAbort = { aborted: ctx.signal.aborted }
      return text('finished after abort')
    }
  ),
]

const resourceTemplates = [
  resourceTemplate({
    uriTemplate: 'ask://item/{id}',
    name: 'Guarded item',
    description: 'An item read only after the user confirms.',
    async read({ id }, uri, ctx) {
      const answer = await ctx.elicit('confirm_read', {
        message: `Read item ${id}?`,
        schema: okForm,
      })
      const ok = answer.action === 'accept' && answer.content.ok
      return { contents: [{ uri, mimeType: 'text/plain', text: `item ${id} ok=${ok}` }] }
    },
  }),
]

const prompts = [
  prompt({
    name: 'ask_prompt',
    description: 'Asks for a topic first.',
    arguments: [{ name: 'style' }],
    async get(_args, ctx) {
      const answer = await ctx.elicit('topic', {
        message: 'Which topic?',
        schema: z.object({ topic: z.string() }),
      })
      const topic = answer.action === 'accept' ? answer.content.topic : answer.action
      return { messages: [{ role: 'user', content: { type: 'text', text: `Topic: ${topic}` } }] }
    },
    complete: {
      style(_value, { ctx }) {
        probe.completionCouldAsk = 'elicit' in ctx
        return ['plain', 'formal']
      },
    },
  }),
]

const errors: string[] = []
const logger = { warn: () => {}, error: (message: string) => void errors.push(message) }
const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })

function handlerFor(options: Partial<ServerDefinition<Probe>> = {}) {
  const server = compileServer<Probe>({
    info: { name: 'replay-tests', version: '1.0.0' },
    tools,
    resourceTemplates,
    prompts,
    logging: true,
    ...options,
  })
  return createMcpHandler({ server, deps: probe, sealer, logger })
}
const handler = handlerFor()

const FORM = { elicitation: {} }
const accept = (content: JsonObject) => ({ action: 'accept', content })

function call(name: string, options: HandlerCallOptions = {}): Promise<Response> {
  return callMcp(handler, 'tools/call', {
    capabilities: FORM,
    ...options,
    params: { name, ...options.params },
  })
}

/** One round of a tool flow that must succeed; `previous` is the last input_required result. */
async function round(
  name: string,
  previous?: JsonObject,
  inputResponses?: unknown,
  options: HandlerCallOptions = {}
): Promise<JsonObject> {
  const params: JsonObject = {}
  if (previous) params.requestState = previous.requestState
  if (inputResponses !== undefined) params.inputResponses = inputResponses
  return expectResult(await call(name, { ...options, params }))
}

function expectAsks(result: JsonObject, keys: string[]): void {
  expect(result.resultType).toBe('input_required')
  expect(typeof result.requestState).toBe('string')
  expect(Object.keys(result.inputRequests).sort()).toEqual([...keys].sort())
}

const form = (message: string, properties: JsonObject, required = Object.keys(properties)) => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } },
})

describe('gathering asks and the journal', () => {
  it('asks both questions of a Promise.all in one input_required round', async () => {
    const first = await round('pair')
    expectAsks(first, ['first', 'last'])
    expect(first.inputRequests).toEqual({
      first: form('First name?', { name: { type: 'string' } }),
      last: form('Last name?', { name: { type: 'string' } }),
    })
    const done = await round('pair', first, {
      first: accept({ name: 'Ada' }),
      last: accept({ name: 'Lovelace' }),
    })
    expect(done).toMatchObject({ resultType: 'complete', content: [{ text: 'Ada Lovelace' }] })
  })

  it('asks only the unanswered question of a pair when one answer arrives', async () => {
    const first = await round('pair')
    const second = await round('pair', first, { first: accept({ name: 'Ada' }) })
    expectAsks(second, ['last'])
    const done = await round('pair', second, { last: accept({ name: 'Lovelace' }) })
    expect(done.content[0].text).toBe('Ada Lovelace')
  })

  it('completes a chain of four rounds, sealing a new requestState every round from current answers only', async () => {
    const states = new Set<string>()
    let previous = await round('chain4')
    for (const [index, key] of ['r1', 'r2', 'r3'].entries()) {
      expectAsks(previous, [key])
      states.add(previous.requestState)
      previous = await round('chain4', previous, { [key]: accept({ value: `v${index + 1}` }) })
    }
    expectAsks(previous, ['r4'])
    states.add(previous.requestState)
    expect(states.size).toBe(4)
    const done = await round('chain4', previous, { r4: accept({ value: 'v4' }) })
    expect(done).toMatchObject({ resultType: 'complete', content: [{ text: 'v1,v2,v3,v4' }] })
  })
})

describe('untrusted answers', () => {
  it.each([
    ['a number', 12345],
    ['null', null],
    ['a bare string', 'accept'],
    ['an unknown action', { action: 'maybe' }],
    ['accept without content', { action: 'accept' }],
    ['content of the wrong type', { action: 'accept', content: { name: 5 } }],
    ['content missing the required field', { action: 'accept', content: { nickname: 'Al' } }],
  ])('asks again, never completing, when the answer is %s', async (_case, answer) => {
    const first = await round('greet')
    const again = await round('greet', first, { user_name: answer })
    expectAsks(again, ['user_name'])
    expect(again.inputRequests.user_name).toEqual(first.inputRequests.user_name)
    const unsolicited = await round('greet', undefined, { user_name: answer })
    expectAsks(unsolicited, ['user_name'])
    expect(probe.greeted).toBe(0)
  })

  it.each([
    ['null', null],
    ['empty', {}],
    ['absent', undefined],
  ])(
    'asks again when the retry carries the state but inputResponses is %s',
    async (_case, answers) => {
      expectAsks(await round('greet', await round('greet'), answers), ['user_name'])
      expect(probe.greeted).toBe(0)
    }
  )

  it('asks again when the answer arrives under a key that was not requested', async () => {
    const first = await round('greet')
    const again = await round('greet', first, { wrong_key: accept({ name: 'Alice' }) })
    expectAsks(again, ['user_name'])
    expect(probe.greeted).toBe(0)
  })

  it('ignores unknown extra keys next to a valid answer', async () => {
    const first = await round('greet')
    const done = await round('greet', first, {
      user_name: accept({ name: 'Alice' }),
      unknown_extra_key: { action: 'accept', content: { x: 1 } },
      another_unexpected: 42,
    })
    expect(done.content[0].text).toBe('Hello, Alice!')
  })

  it.each([
    ['decline', 'declined'],
    ['cancel', 'cancelled'],
  ])('delivers %s to the handler as its own action', async (action, expected) => {
    const done = await round('greet', await round('greet'), { user_name: { action } })
    expect(done.content[0].text).toBe(expected)
  })
})

describe('answers the server did not ask for', () => {
  const EVERYTHING = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} }
  const early: Array<[string, string, unknown, string]> = [
    ['form', 'form', accept({ name: 'Ada' }), 'form accept'],
    ['url', 'page', { action: 'accept' }, 'url accept'],
    [
      'sampling',
      'llm',
      { role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'm1' },
      'model m1',
    ],
    ['roots', 'roots', { roots: [{ uri: 'file:///work' }] }, 'roots file:///work'],
  ]
  const inAdvance = (kind: string, acceptUnsolicited: boolean, inputResponses: JsonObject) =>
    call('in_advance', {
      capabilities: EVERYTHING,
      params: { arguments: { kind, early: acceptUnsolicited }, inputResponses },
    })

  it('ignores an answer that comes with the first request and asks the question', async () => {
    const first = await round('greet', undefined, { user_name: accept({ name: 'Eve' }) })
    expectAsks(first, ['user_name'])
    expect(probe.greeted).toBe(0)
  })

  it.each(early)(
    'asks a %s question whose answer came with the first request, by default',
    async (kind, key, answer) => {
      expectAsks(await expectResult(await inAdvance(kind, false, { [key]: answer })), [key])
    }
  )

  it.each(early)(
    'counts a %s answer that came with the first request when the ask accepts unsolicited answers',
    async (kind, key, answer, expected) => {
      const done = await expectResult(await inAdvance(kind, true, { [key]: answer }))
      expect(done).toMatchObject({ resultType: 'complete', content: [{ text: expected }] })
    }
  )

  it('ignores an answer to a question no round has asked yet, next to a sealed one', async () => {
    const first = await round('chain4')
    expectAsks(first, ['r1'])
    const second = await round('chain4', first, {
      r1: accept({ value: 'v1' }),
      r2: accept({ value: 'v2' }),
    })
    expectAsks(second, ['r2'])
    const third = await round('chain4', second, { r2: accept({ value: 'v2' }) })
    expectAsks(third, ['r3'])
  })
})

describe('question digests', () => {
  it.each(['revised', 'revised_in_advance'])(
    'asks again when the question changed between the ask and the answer (%s)',
    async (name) => {
      const first = await round(name)
      expect(first.inputRequests.confirm.params.message).toBe('Apply revision 1?')
      probe.revision = 2
      const again = await round(name, first, { confirm: accept({ ok: true }) })
      expectAsks(again, ['confirm'])
      expect(again.inputRequests.confirm.params.message).toBe('Apply revision 2?')
    }
  )

  // Round 3 stops at the changed confirmation before reaching the note question sealed in round 2:
  // that question stays sealed, so round 4 may still answer it.
  it('does not replay a journaled answer for a question that changed in a later round', async () => {
    const first = await round('revised')
    const second = await round('revised', first, { confirm: accept({ ok: true }) })
    expectAsks(second, ['note'])
    probe.revision = 2
    const third = await round('revised', second, { note: accept({ note: 'hi' }) })
    expectAsks(third, ['confirm'])
    expect(third.inputRequests.confirm.params.message).toBe('Apply revision 2?')
    const done = await round('revised', third, {
      confirm: accept({ ok: false }),
      note: accept({ note: 'hi' }),
    })
    expect(done.content[0].text).toBe('revision 2 ok=false note=accept')
  })
})

describe('ctx.once and ctx.askAgain', () => {
  it('runs a once step a single time across rounds and replays its value', async () => {
    const first = await round('once_flow')
    expect(probe.onceSteps).toBe(1)
    const id = /^Keep (id-[0-9a-f-]+)\?$/.exec(first.inputRequests.keep.params.message)?.[1]
    expect(id).toBeDefined()
    const done = await round('once_flow', first, { keep: accept({ ok: true }) })
    expect(done.content[0].text).toBe(id)
    expect(probe.onceSteps).toBe(1)
  })

  it('asks the same question again after askAgain, then accepts the next answer', async () => {
    const first = await round('until_even')
    const again = await round('until_even', first, { number: accept({ n: 3 }) })
    expectAsks(again, ['number'])
    expect(again.inputRequests.number).toEqual(first.inputRequests.number)
    const done = await round('until_even', again, { number: accept({ n: 4 }) })
    expect(done.content[0].text).toBe('even 4')
  })
})

describe('capability gating', () => {
  it.each<[string, JsonObject, JsonObject]>([
    ['form_ask', {}, { elicitation: {} }],
    ['form_ask', { elicitation: { url: {} } }, { elicitation: {} }],
    ['form_ask', { sampling: {}, roots: {} }, { elicitation: {} }],
    ['url_ask', { elicitation: {} }, { elicitation: { url: {} } }],
    ['url_ask', { elicitation: { form: {} } }, { elicitation: { url: {} } }],
    ['sample_ask', { elicitation: {}, roots: {} }, { sampling: {} }],
    ['sample_tools_ask', { sampling: {} }, { sampling: { tools: {} } }],
    ['roots_ask', { sampling: {}, elicitation: {} }, { roots: {} }],
  ])('refuses %s for capabilities %j with 400 and -32021', async (name, capabilities, required) => {
    const error = await expectError(await call(name, { capabilities }), {
      status: 400,
      code: -32021,
      id: 1,
    })
    expect(error.data).toEqual({ requiredCapabilities: required })
  })

  it.each<[string, JsonObject, JsonObject, unknown, string]>([
    ['form_ask', { elicitation: {} }, { mode: 'form' }, accept({ name: 'A' }), 'form accept'],
    [
      'form_ask',
      { elicitation: { form: {} } },
      { mode: 'form' },
      { action: 'decline' },
      'form decline',
    ],
    [
      'form_ask',
      { elicitation: { form: {}, url: {} } },
      { mode: 'form' },
      { action: 'cancel' },
      'form cancel',
    ],
    [
      'url_ask',
      { elicitation: { url: {} } },
      { mode: 'url', url: 'https://example.com/approve' },
      { action: 'accept' },
      'url accept',
    ],
    [
      'sample_ask',
      { sampling: {} },
      SAMPLING,
      { role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'm1' },
      'model m1',
    ],
    [
      'sample_tools_ask',
      { sampling: { tools: {} } },
      { tools: [{ name: 'lookup', inputSchema: { type: 'object' } }] },
      { role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'm2' },
      'model m2',
    ],
    ['roots_ask', { roots: {} }, {}, { roots: [{ uri: 'file:///work' }] }, 'roots file:///work'],
  ])(
    'asks %s when the request declares %j, and completes with the answer',
    async (name, capabilities, params, answer, expected) => {
      const first = await round(name, undefined, undefined, { capabilities })
      const [key] = Object.keys(first.inputRequests) as [string]
      expect(first.inputRequests[key].params).toMatchObject(params)
      const done = await round(name, first, { [key]: answer }, { capabilities })
      expect(done.content[0].text).toBe(expected)
    }
  )

  it('judges capabilities per request: a retry without them cannot be asked the next question', async () => {
    const first = await round('chain4')
    const retry = await call('chain4', {
      capabilities: {},
      params: { requestState: first.requestState, inputResponses: { r1: accept({ value: 'v1' }) } },
    })
    const error = await expectError(retry, { status: 400, code: -32021, id: 1 })
    expect(error.data).toEqual({ requiredCapabilities: { elicitation: {} } })
  })

  it.each<[JsonObject, JsonObject]>([
    [{}, { form: false, url: false, sampling: false, samplingTools: false, roots: false }],
    [
      { elicitation: {} },
      { form: true, url: false, sampling: false, samplingTools: false, roots: false },
    ],
    [
      { elicitation: { url: {} } },
      { form: false, url: true, sampling: false, samplingTools: false, roots: false },
    ],
    [
      { elicitation: { form: {}, url: {} }, sampling: { tools: {} }, roots: {} },
      { form: true, url: true, sampling: true, samplingTools: true, roots: true },
    ],
    [
      { sampling: {} },
      { form: false, url: false, sampling: true, samplingTools: false, roots: false },
    ],
  ])('answers ctx.can mode-aware for %j', async (capabilities, expected) => {
    const result = await expectResult(await call('can_probe', { capabilities }))
    expect(result.structuredContent).toEqual(expected)
  })
})

describe('where input_required may appear', () => {
  /** Sends `method` with `params`, which must ask `key` alone, then answers `answer`: both results. */
  async function answeredRound(
    method: string,
    params: JsonObject,
    key: string,
    answer: JsonObject
  ) {
    const send = (round: JsonObject) =>
      callMcp(handler, method, { capabilities: FORM, params: { ...params, ...round } })
    const first = await expectResult(await send({}))
    expectAsks(first, [key])
    const inputResponses = { [key]: answer }
    const done = await expectResult(
      await send({ requestState: first.requestState, inputResponses })
    )
    return { first, done }
  }

  it('suspends and resumes a resource template read', async () => {
    const { first, done } = await answeredRound(
      'resources/read',
      { uri: 'ask://item/7' },
      'confirm_read',
      accept({ ok: true })
    )
    expect(first).not.toHaveProperty('ttlMs')
    expect(done).toMatchObject({ resultType: 'complete', contents: [{ text: 'item 7 ok=true' }] })
  })

  it('suspends and resumes a prompt', async () => {
    const { done } = await answeredRound(
      'prompts/get',
      { name: 'ask_prompt' },
      'topic',
      accept({ topic: 'tea' })
    )
    expect(done.messages[0].content.text).toBe('Topic: tea')
  })

  it.each<[string, JsonObject]>([
    ['tools/list', {}],
    ['prompts/list', {}],
    ['resources/templates/list', {}],
    ['server/discover', {}],
    [
      'completion/complete',
      { ref: { type: 'ref/prompt', name: 'ask_prompt' }, argument: { name: 'style', value: '' } },
    ],
  ])('answers %s with a complete result', async (method, params) => {
    const result = await expectResult(
      await callMcp(handler, method, { capabilities: FORM, params })
    )
    expect(result.resultType).toBe('complete')
  })

  it('gives completion handlers a context without ask methods', async () => {
    await callMcp(handler, 'completion/complete', {
      params: {
        ref: { type: 'ref/prompt', name: 'ask_prompt' },
        argument: { name: 'style', value: 'p' },
      },
    })
    expect(probe.completionCouldAsk).toBe(false)
  })

  it('still answers input_required when the handler catches the suspension and returns', async () => {
    const result = await round('swallow')
    expectAsks(result, ['ignored'])
    expect(result).not.toHaveProperty('content')
  })

  it.each([
    ['a nested object', z.object({ address: z.object({ street: z.string() }) })],
    ['an array of free strings', z.object({ tags: z.array(z.string()) })],
    ['a regex constraint', z.object({ code: z.string().regex(/^[A-Z]+$/) })],
  ])('throws a TypeError at definition time for a form with %s', (_case, schema) => {
    expect(() => defineForm(schema)).toThrow(TypeError)
  })
})

describe('progress and log notifications', () => {
  it('streams strictly increasing progress before the result when the request has a progressToken', async () => {
    for (const progressToken of ['tok-1', 7]) {
      const response = await call('progress', { meta: { progressToken } })
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      expect(response.headers.get('x-accel-buffering')).toBe('no')
      const messages = await readMessages(response)
      const final = messages.pop()
      expect(messages.map((message) => message.params)).toEqual([
        { progressToken, progress: 1, total: 3, message: 'one' },
        { progressToken, progress: 2, total: 3 },
        { progressToken, progress: 3, total: 3 },
      ])
      expect(messages.every((message) => message.method === 'notifications/progress')).toBe(true)
      expect(final).toMatchObject({ jsonrpc: '2.0', id: 1, result: { resultType: 'complete' } })
      expect(final?.result._meta[META_SERVER_INFO]).toEqual({
        name: 'replay-tests',
        version: '1.0.0',
      })
    }
  })

  it('answers as plain JSON without notifications when the request has no progressToken', async () => {
    expect((await expectResult(await call('progress'))).content[0].text).toBe('done')
  })

  it.each<[string, string[]]>([
    ['warning', ['warning', 'error']],
    ['debug', ['debug', 'info', 'warning', 'error']],
    ['emergency', []],
  ])('sends log messages at or above the requested level %s', async (level, expected) => {
    const response = await call('logs', { meta: { [META_LOG_LEVEL]: level } })
    const messages = await readMessages(response)
    const final = messages.pop()
    expect(messages.map((message) => message.params.level)).toEqual(expected)
    expect(messages.every((message) => message.method === 'notifications/message')).toBe(true)
    expect(final?.result.content[0].text).toBe('logged')
  })

  it('sends no log message when the request has no logLevel', async () => {
    expect((await expectResult(await call('logs'))).content[0].text).toBe('logged')
  })

  it('sends no log message from a server that does not declare the logging capability', async () => {
    const silent = handlerFor({ logging: false })
    const response = await callMcp(silent, 'tools/call', {
      params: { name: 'logs' },
      meta: { [META_LOG_LEVEL]: 'debug' },
    })
    expect((await expectResult(response)).content[0].text).toBe('logged')
  })

  it('opens the SSE stream at the first notification, before the handler finishes', async () => {
    const gate = Promise.withResolvers<void>()
    probe.gate = gate.promise
    // The handler stays at its gate until the response is here: an engine that held the answer until
    // the handler returned would never answer, and the test would fail at its timeout.
    const response = await call('report_then_wait', { meta: { progressToken: 'work' } })
    gate.resolve()
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const messages = await readMessages(response)
    expect(messages.map((message) => message.params?.message ?? message.result.resultType)).toEqual(
      ['started', 'finished', 'complete']
    )
  })

  it('answers as plain JSON when nothing precedes the result', async () => {
    const response = await call('greet')
    expect(response.headers.get('content-type')).toBe('application/json')
    const [message] = await readMessages(response)
    expect(message?.result.resultType).toBe('input_required')
  })
})

describe('cancellation', () => {
  async function openStream(signal?: AbortSignal) {
    errors.length = 0
    const response = await call('wait_for_abort', {
      meta: { progressToken: 'p', [META_LOG_LEVEL]: 'debug' },
      signal,
    })
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const reader = response.body!.getReader()
    const { value } = await reader.read()
    expect(parseSse(new TextDecoder().decode(value))).toEqual([
      {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 'p', progress: 1 },
      },
    ])
    return reader
  }

  it('aborts ctx.signal and sends nothing more when the client cancels the stream', async () => {
    const reader = await openStream()
    await reader.cancel()
    await vi.waitFor(() => expect(probe.afterAbort).toEqual({ aborted: true }))
    expect(errors).toEqual([])
  })

  it('aborts ctx.signal and sends nothing more when the request signal aborts', async () => {
    const controller = new AbortController()
    const reader = await openStream(controller.signal)
    controller.abort()
    // The stream ends once the handler has returned, with nothing after the abort: not its second
    // progress notification, its log message or its result.
    expect(await reader.read()).toEqual({ done: true, value: undefined })
    expect(probe.afterAbort).toEqual({ aborted: true })
    expect(errors).toEqual([])
  })
})
