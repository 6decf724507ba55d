/**
 * The conformance fixture's 2025-leg tools (`tests/conformance/fixture-2025-tools.ts`), driven through
 * the engine's modern path: each one asks exactly what the referee's 2025-11-25 scenario checks (the
 * asks also parse unchanged with the v1 SDK client's own request schemas, so nothing a 2025 client
 * reads is lost), and once answered as the referee answers, returns the text the scenario expects.
 */
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { META_LOG_LEVEL } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { compileServer } from '../../src/mcp/server.ts'
import { legacyConformanceTools } from '../conformance/fixture-2025-tools.ts'
import {
  callMcp,
  expectResult,
  readMessages,
  type HandlerCallOptions,
  type JsonObject,
} from '../support/mcp-request.ts'

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const server = compileServer<null>({
  info: { name: 'fixture-2025-tools', version: '1.0.0' },
  tools: legacyConformanceTools,
  logging: true,
})
const handler = createMcpHandler({ server, deps: null, sealer })

/** What the referee's stateful client declares at `initialize`. */
const REFEREE_CAPABILITIES = { sampling: {}, elicitation: {} }

const call = (name: string, args: JsonObject = {}, options: HandlerCallOptions = {}) =>
  callMcp(handler, 'tools/call', {
    capabilities: REFEREE_CAPABILITIES,
    ...options,
    params: { name, arguments: args, ...options.params },
  })

/** Round 1: the one ask the tool makes, under `key`. */
async function firstAsk(name: string, args: JsonObject, key: string) {
  const round1 = await expectResult(await call(name, args))
  expect(round1.resultType).toBe('input_required')
  expect(Object.keys(round1.inputRequests)).toEqual([key])
  return { ask: round1.inputRequests[key], requestState: round1.requestState as string }
}

/** Round 1, then round 2 answering `key` with `answer`; returns round 2's result. */
async function answered(name: string, args: JsonObject, key: string, answer: unknown) {
  const { requestState } = await firstAsk(name, args, key)
  return expectResult(
    await call(name, args, { params: { requestState, inputResponses: { [key]: answer } } })
  )
}

const textOf = (result: JsonObject) => {
  expect(result.resultType).toBe('complete')
  expect(result.isError).toBeUndefined()
  expect(result.content).toHaveLength(1)
  expect(result.content[0].type).toBe('text')
  return result.content[0].text as string
}

/**
 * Round 1's one ask, under `key`, checked to reach a v1 SDK client unchanged: parsed with that
 * client's own request schema, nothing may be stripped or rejected.
 */
async function askOf(name: string, args: JsonObject, key: string): Promise<JsonObject> {
  const { ask } = await firstAsk(name, args, key)
  const schema =
    ask.method === 'elicitation/create' ? ElicitRequestSchema : CreateMessageRequestSchema
  expect(schema.parse(ask)).toEqual(ask)
  return ask
}

describe('tools-list: the 2025 leg tools', () => {
  it('are listed by name with a description and an object input schema', async () => {
    const result = await expectResult(await callMcp(handler, 'tools/list'))
    expect(result.tools.map((listed: JsonObject) => listed.name)).toEqual([
      'test_reconnection',
      'test_tool_with_logging',
      'test_sampling',
      'test_elicitation',
      'test_elicitation_sep1034_defaults',
      'test_elicitation_sep1330_enums',
    ])
    for (const listed of result.tools) {
      expect(listed.name).toMatch(/^[A-Za-z0-9_./-]{1,64}$/)
      expect(listed.description).toMatch(/\S/)
      expect(listed.inputSchema.type).toBe('object')
    }
    const required = Object.fromEntries(
      result.tools.map((listed: JsonObject) => [listed.name, listed.inputSchema.required ?? []])
    )
    expect(required.test_sampling).toEqual(['prompt'])
    expect(required.test_elicitation).toEqual(['message'])
  })
})

describe('tools-call-with-logging: test_tool_with_logging', () => {
  it('streams the three info messages in order before its result', async () => {
    const response = await call(
      'test_tool_with_logging',
      {},
      { meta: { [META_LOG_LEVEL]: 'debug' } }
    )
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream\b/)
    const messages = await readMessages(response)
    expect(messages.slice(0, 3).map((message) => [message.method, message.params])).toEqual(
      ['Tool execution started', 'Tool processing data', 'Tool execution completed'].map((data) => [
        'notifications/message',
        { level: 'info', logger: 'fixture', data },
      ])
    )
    expect(messages).toHaveLength(4)
    expect(textOf(messages[3]!.result)).toBe('Logged 3 messages.')
  })
})

describe('tools-call-sampling: test_sampling', () => {
  const args = { prompt: 'Test prompt for sampling' }

  it('asks sampling/createMessage with the prompt as the one user message and maxTokens 100', async () => {
    expect(await askOf('test_sampling', args, 'llm_response')).toEqual({
      method: 'sampling/createMessage',
      params: {
        messages: [{ role: 'user', content: { type: 'text', text: 'Test prompt for sampling' } }],
        maxTokens: 100,
      },
    })
  })

  it('returns "LLM response: …" with the sampled text', async () => {
    const result = await answered('test_sampling', args, 'llm_response', {
      role: 'assistant',
      content: { type: 'text', text: 'This is a test response from the client' },
      model: 'test-model',
      stopReason: 'endTurn',
    })
    expect(textOf(result)).toBe('LLM response: This is a test response from the client')
  })

  it('joins the text blocks of an answer whose content is an array', async () => {
    const result = await answered('test_sampling', args, 'llm_response', {
      role: 'assistant',
      content: [
        { type: 'text', text: 'first' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'text', text: 'second' },
      ],
      model: 'test-model',
    })
    expect(textOf(result)).toBe('LLM response: first\nsecond')
  })
})

describe('tools-call-elicitation: test_elicitation', () => {
  const args = { message: 'Please provide your information' }

  it('asks a form with the message and required username and email fields', async () => {
    expect(await askOf('test_elicitation', args, 'user_info')).toEqual({
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Please provide your information',
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      },
    })
  })

  it('returns "User response: …" with the action and the content', async () => {
    const accepted = await answered('test_elicitation', args, 'user_info', {
      action: 'accept',
      content: { username: 'testuser', email: 'test@example.com' },
    })
    expect(textOf(accepted)).toBe(
      'User response: action=accept, content={"username":"testuser","email":"test@example.com"}'
    )
    const declined = await answered('test_elicitation', args, 'user_info', { action: 'decline' })
    expect(textOf(declined)).toBe('User response: action=decline, content={}')
  })
})

describe('elicitation-sep1034-defaults: test_elicitation_sep1034_defaults', () => {
  const name = 'test_elicitation_sep1034_defaults'

  it('asks a form whose five primitive fields carry their defaults', async () => {
    const ask = await askOf(name, {}, 'form')
    expect(ask.params.requestedSchema).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'User name', default: 'John Doe' },
        age: { type: 'integer', description: 'User age', default: 30 },
        score: { type: 'number', description: 'User score', default: 95.5 },
        status: {
          type: 'string',
          description: 'User status',
          enum: ['active', 'inactive', 'pending'],
          default: 'active',
        },
        verified: { type: 'boolean', description: 'Verification status', default: true },
      },
    })
  })

  it('reports the values the person chose, and the defaults for fields left out', async () => {
    const chosen = { name: 'Jane Smith', age: 25, score: 88, status: 'inactive', verified: false }
    const result = await answered(name, {}, 'form', { action: 'accept', content: chosen })
    expect(textOf(result)).toBe(
      `Elicitation completed: action=accept, content=${JSON.stringify(chosen)}`
    )
    const defaults = await answered(name, {}, 'form', { action: 'accept', content: {} })
    expect(textOf(defaults)).toBe(
      'Elicitation completed: action=accept, content={"name":"John Doe","age":30,"score":95.5,"status":"active","verified":true}'
    )
  })
})

describe('elicitation-sep1330-enums: test_elicitation_sep1330_enums', () => {
  const name = 'test_elicitation_sep1330_enums'
  const refereeAnswer = {
    untitledSingle: 'option1',
    titledSingle: 'value1',
    legacyEnum: 'opt1',
    untitledMulti: ['option1', 'option2'],
    titledMulti: ['value1', 'value2'],
  }

  it('asks a form with all five enum shapes', async () => {
    const ask = await askOf(name, {}, 'form')
    expect(ask.params.requestedSchema).toEqual({
      type: 'object',
      properties: {
        untitledSingle: {
          type: 'string',
          description: 'Pick one option',
          enum: ['option1', 'option2', 'option3'],
        },
        titledSingle: {
          type: 'string',
          description: 'Pick one titled option',
          oneOf: [
            { const: 'value1', title: 'First Option' },
            { const: 'value2', title: 'Second Option' },
            { const: 'value3', title: 'Third Option' },
          ],
        },
        legacyEnum: {
          type: 'string',
          description: 'Pick one option (legacy enumNames)',
          enum: ['opt1', 'opt2', 'opt3'],
          enumNames: ['Option One', 'Option Two', 'Option Three'],
        },
        untitledMulti: {
          type: 'array',
          description: 'Pick any options',
          items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
        },
        titledMulti: {
          type: 'array',
          description: 'Pick any titled options',
          items: {
            anyOf: [
              { const: 'value1', title: 'First Choice' },
              { const: 'value2', title: 'Second Choice' },
              { const: 'value3', title: 'Third Choice' },
            ],
          },
        },
      },
      required: ['untitledSingle', 'titledSingle', 'legacyEnum', 'untitledMulti', 'titledMulti'],
    })
  })

  it('reports the chosen options, multi selects as arrays', async () => {
    const result = await answered(name, {}, 'form', { action: 'accept', content: refereeAnswer })
    expect(textOf(result)).toBe(
      `Elicitation completed: action=accept, content=${JSON.stringify(refereeAnswer)}`
    )
  })

  it('asks again when a multi select is answered with a single value', async () => {
    const { requestState } = await firstAsk(name, {}, 'form')
    const retry = await expectResult(
      await call(
        name,
        {},
        {
          params: {
            requestState,
            inputResponses: {
              form: { action: 'accept', content: { ...refereeAnswer, untitledMulti: 'option1' } },
            },
          },
        }
      )
    )
    expect(retry.resultType).toBe('input_required')
    expect(Object.keys(retry.inputRequests)).toEqual(['form'])
  })
})
