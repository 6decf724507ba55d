/**
 * The hostile-`requestState` matrix at the engine level. A real token comes from round 1 of an
 * elicitation tool; every variant of it (flipped, truncated, extended, re-headed, foreign, expired,
 * replayed by another principal, on another tool, arguments or method, or not a token at all) must
 * be answered with JSON-RPC -32602 "Invalid or expired requestState" on HTTP 200 — and the handler must
 * provably not have run: it counts every entry, and the state is opened before the handler runs.
 * Also key rotation with flows in flight, and two replicas sharing one ring serving alternate rounds.
 */
import { decodeProtectedHeader } from 'jose'
import { describe, expect, it } from 'vitest'
import * as z from 'zod'
import { BASE64URL_ALPHABET as ALPHABET } from '../../src/mcp/base64url.ts'
import { definitions, text, type ReplayContext } from '../../src/mcp/definitions.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { type McpHandler } from '../../src/mcp/http-input.ts'
import { importKeyRing, type RawKey } from '../../src/mcp/key-ring.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer } from '../../src/mcp/server.ts'
import { callMcp, expectError, expectResult, type JsonObject } from '../support/mcp-request.ts'

interface Counter {
  /** Every entry into a handler, before it asks anything. */
  entries: number
  /** Every run that got past its ask. */
  completed: number
}

const counter: Counter = { entries: 0, completed: 0 }
const { tool, prompt } = definitions<Counter>()

async function confirmDelete(id: string, ctx: ReplayContext<Counter>): Promise<string> {
  ctx.deps.entries += 1
  const answer = await ctx.elicit('confirm', {
    message: `Delete note ${id}?`,
    schema: z.object({ ok: z.boolean() }),
  })
  ctx.deps.completed += 1
  return answer.action === 'accept' && answer.content.ok ? `deleted ${id}` : `kept ${id}`
}

const noteId = z.object({ id: z.string() })
const server = compileServer<Counter>({
  info: { name: 'state-adversary', version: '1.0.0' },
  tools: [
    // Two tools asking the same question: a state sealed for one must not serve the other.
    ...['delete_note', 'archive_note'].map((name) =>
      tool({
        name,
        description: 'Deletes a note after confirmation.',
        input: noteId,
        run: async ({ id }, ctx) => text(await confirmDelete(id, ctx)),
      })
    ),
    tool({
      name: 'chain3',
      description: 'Asks three questions, one per round.',
      input: z.object({}),
      async run(_args, ctx) {
        ctx.deps.entries += 1
        const values: string[] = []
        for (const key of ['step1', 'step2', 'step3']) {
          const answer = await ctx.elicit(key, {
            message: `Value for ${key}?`,
            schema: z.object({ value: z.string() }),
          })
          values.push(answer.action === 'accept' ? answer.content.value : answer.action)
        }
        return text(values.join(','))
      },
    }),
  ],
  prompts: [
    prompt({
      name: 'delete_note',
      description: 'The same name as the tool, on another method.',
      arguments: [{ name: 'id', required: true }],
      get: async ({ id }, ctx) => ({
        messages: [
          { role: 'user', content: { type: 'text', text: await confirmDelete(`${id}`, ctx) } },
        ],
      }),
    }),
  ],
})

const key = (kid: string): RawKey => ({ kid, secret: crypto.getRandomValues(new Uint8Array(32)) })
const K1 = key('k1')
const K2 = key('k2')
const OTHER = key('other')
const OLD = key('old')
const NEW = key('new')
const silent = { warn: () => {}, error: () => {} }

/** A server instance ("replica") with its own import of `keys`, as a separate process would have. */
async function replica(keys: RawKey[], now?: () => number): Promise<McpHandler> {
  const sealer = StateSealer.create({ keyRing: await importKeyRing(keys), ...(now ? { now } : {}) })
  return createMcpHandler({ server, deps: counter, sealer, logger: silent })
}

const FORM = { elicitation: {} }
const CONFIRM = { confirm: { action: 'accept', content: { ok: true } } }

interface Target {
  principal?: string
  method?: string
  name?: string
  args?: JsonObject
}

function send(
  handler: McpHandler,
  { principal = 'alice', method = 'tools/call', name = 'delete_note', args = { id: 'n1' } }: Target,
  extra: JsonObject = {}
): Promise<Response> {
  return callMcp(handler, method, {
    principal,
    capabilities: FORM,
    params: { name, arguments: args, ...extra },
  })
}

/** Round 1 of a flow: returns its (real) requestState. */
async function firstRound(handler: McpHandler, target: Target = {}): Promise<string> {
  const result = await expectResult(await send(handler, target))
  expect(result.resultType).toBe('input_required')
  expect(typeof result.requestState).toBe('string')
  return result.requestState
}

function retry(handler: McpHandler, requestState: unknown, target: Target = {}) {
  return send(handler, target, { requestState, inputResponses: CONFIRM })
}

/** The one frozen answer to any bad state: -32602 on HTTP 200, no data, handler not entered. */
async function expectRejected(response: Response, entriesBefore: number): Promise<void> {
  const error = await expectError(response, { status: 200, code: -32602, id: 1 })
  expect(error.message).toBe('Invalid or expired requestState')
  expect(error).not.toHaveProperty('data')
  expect(counter.entries).toBe(entriesBefore)
}

const handler = await replica([K1])

/** A state sealed in a first round for `sealed` and retried as `replayed` is rejected unread. */
async function expectRetryRejected(sealed: Target, replayed: Target): Promise<void> {
  const token = await firstRound(handler, sealed)
  const before = counter.entries
  await expectRejected(await retry(handler, token, replayed), before)
}

function segmentsWithHeader(token: string, header: JsonObject): string {
  const encoded = btoa(JSON.stringify(header)).replaceAll('+', '-').replaceAll('/', '_')
  return [encoded.replace(/=+$/, ''), ...token.split('.').slice(1)].join('.')
}

describe('a real requestState', () => {
  it('completes the flow untouched (the control for every rejection below)', async () => {
    const token = await firstRound(handler)
    const { entries, completed } = counter
    const result = await expectResult(await retry(handler, token))
    expect(result.content[0].text).toBe('deleted n1')
    expect(counter).toEqual({ entries: entries + 1, completed: completed + 1 })
  })
})

describe('rejects a tampered requestState before the handler runs', () => {
  it('rejects a token with any single character replaced, at every position', async () => {
    const token = await firstRound(handler)
    const before = counter.entries
    for (let index = 0; index < token.length; index++) {
      const char = token.charAt(index)
      const replacement = char === '.' ? 'A' : ALPHABET[(ALPHABET.indexOf(char) + 1) % 64]
      const flipped = token.slice(0, index) + replacement + token.slice(index + 1)
      await expectRejected(await retry(handler, flipped), before)
    }
  })

  it('rejects truncations of the token', async () => {
    const token = await firstRound(handler)
    const before = counter.entries
    const cuts = [
      1,
      10,
      token.indexOf('.'),
      token.indexOf('.') + 2,
      token.length / 2,
      token.length - 1,
    ]
    for (const cut of cuts) {
      await expectRejected(await retry(handler, token.slice(0, Math.floor(cut))), before)
    }
  })

  it.each([
    ['one base64url character', (token: string) => `${token}A`],
    ['four base64url characters', (token: string) => `${token}AAAA`],
    ['a sixth segment', (token: string) => `${token}.AAAA`],
    ['a trailing dot', (token: string) => `${token}.`],
    ['a leading space', (token: string) => ` ${token}`],
    ['a trailing newline', (token: string) => `${token}\n`],
    ['a second copy', (token: string) => `${token}${token}`],
  ])('rejects the token with %s appended', async (_case, extend) => {
    const token = await firstRound(handler)
    const before = counter.entries
    await expectRejected(await retry(handler, extend(token)), before)
  })

  it.each<[string, JsonObject]>([
    ['names the other kid of the ring', { alg: 'dir', enc: 'A256GCM', kid: 'k2' }],
    ['lists the same members in another order', { kid: 'k1', enc: 'A256GCM', alg: 'dir' }],
    ['asks for another content encryption', { alg: 'dir', enc: 'A128GCM', kid: 'k1' }],
    ['adds a compression member', { alg: 'dir', enc: 'A256GCM', kid: 'k1', zip: 'DEF' }],
    ['names an unknown kid', { alg: 'dir', enc: 'A256GCM', kid: 'nobody' }],
  ])('rejects a token whose re-encoded protected header %s', async (_case, header) => {
    const twoKeys = await replica([K1, K2])
    const token = await firstRound(twoKeys)
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'dir', enc: 'A256GCM', kid: 'k1' })
    const before = counter.entries
    await expectRejected(await retry(twoKeys, segmentsWithHeader(token, header)), before)
  })
})

describe('rejects a genuine requestState out of its context', () => {
  it('rejects a state sealed by a ring this server does not hold (unknown kid)', async () => {
    const token = await firstRound(await replica([OTHER]))
    const before = counter.entries
    await expectRejected(await retry(handler, token), before)
  })

  it('rejects an expired state and accepts it until it expires', async () => {
    let clock = Date.UTC(2026, 7, 1)
    const timed = await replica([K1], () => clock)
    const start = clock
    const lasting = await firstRound(timed)
    const expiring = await firstRound(timed)
    clock = start + 599_000
    expect((await expectResult(await retry(timed, lasting))).content[0].text).toBe('deleted n1')
    clock = start + 600_000
    const before = counter.entries
    await expectRejected(await retry(timed, expiring), before)
  })

  it('rejects a state sealed for another principal', async () => {
    await expectRetryRejected({ principal: 'alice' }, { principal: 'mallory' })
  })

  it('rejects a state sealed for another tool', async () => {
    await expectRetryRejected({ name: 'delete_note' }, { name: 'archive_note' })
  })

  it.each<[string, JsonObject]>([
    ['another value', { id: 'n2' }],
    ['an extra argument', { id: 'n1', force: true }],
    ['no arguments', {}],
  ])('rejects a state sealed for other arguments (%s)', async (_case, args) => {
    await expectRetryRejected({ args: { id: 'n1' } }, { args })
  })

  it('rejects a prompt state replayed on tools/call with the same name and arguments', async () => {
    await expectRetryRejected({ method: 'prompts/get' }, { method: 'tools/call' })
  })

  it('rejects a tool state replayed on prompts/get with the same name and arguments', async () => {
    await expectRetryRejected({ method: 'tools/call' }, { method: 'prompts/get' })
  })
})

describe('rejects a requestState that is not a token', () => {
  it.each<[string, unknown]>([
    ['explicit null', null],
    ['a number', 42],
    ['a boolean', true],
    ['an object', { token: 'eyJ' }],
    ['an array', ['eyJ']],
    ['the empty string', ''],
    ['a 1 MiB string', 'A'.repeat(1024 * 1024)],
  ])('rejects %s', async (_case, requestState) => {
    const before = counter.entries
    await expectRejected(await retry(handler, requestState), before)
  })
})

describe('key rotation and replicas', () => {
  const answer = (key: string, value: string) => ({
    [key]: { action: 'accept', content: { value } },
  })
  async function next(
    target: McpHandler,
    previous: string | undefined,
    inputResponses?: JsonObject
  ) {
    const extra = previous === undefined ? {} : { requestState: previous, inputResponses }
    return expectResult(await send(target, { name: 'chain3', args: {} }, extra))
  }

  it('continues a flow sealed by [old] on a restart with [new, old], sealing onwards with new', async () => {
    const first = await next(await replica([OLD]), undefined)
    expect(decodeProtectedHeader(first.requestState).kid).toBe('old')
    const rotated = await replica([NEW, OLD])
    const second = await next(rotated, first.requestState, answer('step1', 'a'))
    expect(second.resultType).toBe('input_required')
    expect(decodeProtectedHeader(second.requestState).kid).toBe('new')
    const third = await next(rotated, second.requestState, answer('step2', 'b'))
    expect(decodeProtectedHeader(third.requestState).kid).toBe('new')
    const done = await next(rotated, third.requestState, answer('step3', 'c'))
    expect(done).toMatchObject({ resultType: 'complete', content: [{ text: 'a,b,c' }] })
  })

  it('rejects an old-kid state once the old key is retired from the ring', async () => {
    const first = await next(await replica([OLD]), undefined)
    const retired = await replica([NEW])
    const before = counter.entries
    const response = await send(
      retired,
      { name: 'chain3', args: {} },
      { requestState: first.requestState, inputResponses: answer('step1', 'a') }
    )
    await expectRejected(response, before)
  })

  it('serves alternating rounds of a three-round chain from two replicas sharing one ring', async () => {
    const [east, west] = [await replica([K1, K2]), await replica([K1, K2])]
    const first = await next(east, undefined)
    const second = await next(west, first.requestState, answer('step1', 'x'))
    const third = await next(east, second.requestState, answer('step2', 'y'))
    const done = await next(west, third.requestState, answer('step3', 'z'))
    expect(done.content[0].text).toBe('x,y,z')
  })
})
