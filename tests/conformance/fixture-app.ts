/**
 * @module tests/conformance/fixture-app
 * The conformance fixture: a server built on the engine that exposes exactly the tools, resources,
 * prompts and triggers the official conformance suite (`@modelcontextprotocol/conformance`, requirement
 * sets 2026-07-28 and, with a session store, 2025-11-25; the 2025 leg's tools are in
 * `fixture-2025-tools.ts`, the tasks scenarios' in `fixture-tasks-tools.ts`, served as tasks when the
 * store is given) calls, per the fixture contract in ../shared/reference/conformance.md §6. Its
 * interactive tools keep all their memory in the sealed requestState, so any replica — Node or
 * Workers — can serve any round. Runtime-neutral; `fixture-server.ts` serves it on Node.
 */
import type { Hono } from 'hono'
import * as z from 'zod'
import type { Config } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import {
  type CreateMessageParams,
  definitions,
  type EventBus,
  type McpLogger,
  type ReplayContext,
  sampledText,
  type ServerEvent,
  type TaskScheduler,
  text,
  toolError,
} from 'stateless-mcp'
import {
  compileServer,
  createMcpHandler,
  type SessionStore,
  type StateSealer,
  type TaskStore,
} from 'stateless-mcp/compose'
import { noArgsTools } from '../support/no-args-tool.ts'
import { legacyConformanceTools, pause } from './fixture-2025-tools.ts'
import { tasksConformanceTools } from './fixture-tasks-tools.ts'

interface FixtureHandlerDeps {
  bus: EventBus
}

const { tool, resource, resourceTemplate, prompt } = definitions<FixtureHandlerDeps>()

export const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
export const WAV_TINY = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA='

const noArgsTool = noArgsTools<FixtureHandlerDeps>()
// Forms are module-level constants: their wire schema is derived once per schema object, not per request.
const nameForm = z.object({ name: z.string() })
const okForm = z.object({ ok: z.boolean() })
const colorForm = z.object({ color: z.string() })
const contextForm = z.object({ context: z.string() })

type FixtureContext = ReplayContext<FixtureHandlerDeps>

const askName = (ctx: FixtureContext, key = 'user_name', acceptUnsolicited = false) =>
  ctx.elicit(key, { message: 'What is your name?', schema: nameForm, acceptUnsolicited })

/**
 * Asks the name and greets: the body of both plain elicitation tools. The only ask of the fixture that
 * takes an answer given in advance: the referee's ignore-extra-params scenario sends the name with its
 * first request, and a greeting can do no harm. Every other ask counts only answers to the question
 * it sealed into an earlier round, the engine's default.
 */
async function greetByName(ctx: FixtureContext) {
  const answer = await askName(ctx, 'user_name', true)
  return text(
    answer.action === 'accept'
      ? `Hello, ${answer.content.name}!`
      : `No name given (${answer.action}).`
  )
}

const SAY_HELLO: CreateMessageParams = {
  messages: [{ role: 'user', content: { type: 'text', text: 'Say hello.' } }],
  maxTokens: 50,
}

/** A tool that publishes one list change to open listen streams. */
function trigger(name: string, event: ServerEvent, notification: string) {
  return noArgsTool(name, `Publishes ${notification} to open listen streams.`, async (ctx) => {
    await ctx.deps.bus.publish(event)
    return text(`Published ${notification}.`)
  })
}

const tools = [
  noArgsTool('test_simple_text', 'Returns a simple text response.', () =>
    text('This is a simple text response for testing.')
  ),
  noArgsTool('test_image_content', 'Returns an image.', () => ({
    content: [{ type: 'image', data: PNG_1X1, mimeType: 'image/png' }],
  })),
  noArgsTool('test_audio_content', 'Returns audio.', () => ({
    content: [{ type: 'audio', data: WAV_TINY, mimeType: 'audio/wav' }],
  })),
  noArgsTool('test_embedded_resource', 'Returns an embedded resource.', () => ({
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  })),
  noArgsTool('test_multiple_content_types', 'Returns text, an image and a resource.', () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG_1X1, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: '{"test":"data","value":123}',
        },
      },
    ],
  })),
  noArgsTool('test_error_handling', 'Always fails as a tool execution error.', () =>
    toolError('This tool intentionally returns an error for testing')
  ),
  noArgsTool(
    'test_tool_with_progress',
    'Reports progress three times, then answers.',
    async (ctx) => {
      for (const step of [0, 50, 100]) {
        ctx.progress(step, 100, `Completed step ${step} of 100`)
        if (step < 100) await pause(50, ctx.signal)
      }
      return text('Progress complete.')
    }
  ),
  noArgsTool(
    'test_logging_tool',
    'Logs three messages (sent only when the request asks for a log level).',
    async (ctx) => {
      ctx.log('info', 'Tool execution started', 'fixture')
      ctx.log('info', 'Tool processing data', 'fixture')
      ctx.log('info', 'Tool execution completed', 'fixture')
      return text('Logging complete.')
    }
  ),
  noArgsTool('test_missing_capability', 'Needs the sampling capability.', async (ctx) => {
    const answer = await ctx.sample('llm_answer', SAY_HELLO)
    return text(`LLM response: ${sampledText(answer.content)}`)
  }),
  noArgsTool(
    'test_streaming_elicitation',
    'Asks for a name through a form (never as a server-to-client request).',
    greetByName
  ),
  trigger('test_trigger_tool_change', { kind: 'tools_list_changed' }, 'tools/list_changed'),
  trigger('test_trigger_prompt_change', { kind: 'prompts_list_changed' }, 'prompts/list_changed'),
  noArgsTool(
    'test_input_required_result_elicitation',
    'Asks for the user name (multi round-trip).',
    greetByName
  ),
  noArgsTool(
    'test_input_required_result_sampling',
    "Asks the host's model a question (multi round-trip).",
    async (ctx) => {
      const answer = await ctx.sample('capital_question', {
        messages: [
          { role: 'user', content: { type: 'text', text: 'What is the capital of France?' } },
        ],
        maxTokens: 100,
      })
      return text(`LLM response: ${sampledText(answer.content)}`)
    }
  ),
  noArgsTool(
    'test_input_required_result_list_roots',
    "Asks for the client's roots (multi round-trip).",
    async (ctx) => {
      const roots = await ctx.roots('client_roots')
      return text(`Roots: ${roots.map((root) => root.uri).join(', ') || '(none)'}`)
    }
  ),
  noArgsTool(
    'test_input_required_result_request_state',
    'Asks for confirmation and carries sealed state between rounds.',
    async (ctx) => {
      const answer = await ctx.elicit('confirm', {
        message: 'Continue?',
        schema: okForm,
      })
      return text(
        answer.action === 'accept' && answer.content.ok
          ? 'state-ok: confirmed'
          : 'state-ok: not confirmed'
      )
    }
  ),
  noArgsTool(
    'test_input_required_result_multiple_inputs',
    'Asks for an elicitation, a sampling and the roots in one round.',
    async (ctx) => {
      const [name, greeting, roots] = await Promise.all([
        askName(ctx),
        ctx.sample('greeting', {
          messages: [{ role: 'user', content: { type: 'text', text: 'Write a short greeting.' } }],
          maxTokens: 50,
        }),
        ctx.roots('client_roots'),
      ])
      const who = name.action === 'accept' ? name.content.name : name.action
      return text(`name=${who}; greeting=${sampledText(greeting.content)}; roots=${roots.length}`)
    }
  ),
  noArgsTool(
    'test_input_required_result_multi_round',
    'Asks two questions in two successive rounds.',
    async (ctx) => {
      const name = await askName(ctx, 'step1')
      const color = await ctx.elicit('step2', {
        message: 'What is your favourite colour?',
        schema: colorForm,
      })
      const who = name.action === 'accept' ? name.content.name : name.action
      const what = color.action === 'accept' ? color.content.color : color.action
      return text(`${who} likes ${what}.`)
    }
  ),
  noArgsTool(
    'test_input_required_result_tampered_state',
    'Asks for confirmation; a tampered requestState is rejected.',
    async (ctx) => {
      const answer = await ctx.elicit('confirm', {
        message: 'Confirm?',
        schema: okForm,
      })
      return text(`Confirmed: ${answer.action === 'accept' && answer.content.ok}`)
    }
  ),
  noArgsTool(
    'test_input_required_result_capabilities',
    'Asks only for what the request declares it can answer.',
    async (ctx) => {
      if (ctx.can('elicitation.form')) {
        return text(`Asked by form: ${(await askName(ctx)).action}`)
      }
      if (ctx.can('sampling')) {
        const answer = await ctx.sample('llm_answer', SAY_HELLO)
        return text(`Asked the model: ${sampledText(answer.content)}`)
      }
      if (ctx.can('roots')) return text(`Roots: ${(await ctx.roots('client_roots')).length}`)
      return toolError('The client declared no capability this tool can use.')
    }
  ),
  tool({
    name: 'test_x_mcp_header',
    description: 'Mirrors the region argument into the Mcp-Param-Region header.',
    input: z.object({
      region: z.string().meta({ 'x-mcp-header': 'Region' }).optional(),
      level: z.int().optional(),
    }),
    run: ({ region, level }) => text(`region=${region ?? ''} level=${level ?? ''}`),
  }),
  tool({
    name: 'json_schema_2020_12_tool',
    description:
      'Publishes a JSON Schema 2020-12 input schema with $defs, $anchor, allOf/anyOf and if/then/else.',
    input: z.looseObject({}),
    inputJsonSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          $anchor: 'addressDef',
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } },
        },
      },
      properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' },
      },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false,
    },
    run: (args) => text(`Received: ${JSON.stringify(args)}`),
  }),
]

const resources = [
  resource({
    uri: 'test://static-text',
    name: 'Static text',
    description: 'A static text resource.',
    mimeType: 'text/plain',
    read: () => ({
      contents: [
        {
          uri: 'test://static-text',
          mimeType: 'text/plain',
          text: 'This is the content of the static text resource.',
        },
      ],
    }),
  }),
  resource({
    uri: 'test://static-binary',
    name: 'Static binary',
    description: 'A static PNG image.',
    mimeType: 'image/png',
    read: () => ({
      contents: [{ uri: 'test://static-binary', mimeType: 'image/png', blob: PNG_1X1 }],
    }),
  }),
  resource({
    uri: 'test://watched-resource',
    name: 'Watched resource',
    description: 'A resource clients may watch.',
    mimeType: 'text/plain',
    read: () => ({
      contents: [
        {
          uri: 'test://watched-resource',
          mimeType: 'text/plain',
          text: 'Watched resource content',
        },
      ],
    }),
  }),
]

const templates = [
  resourceTemplate({
    uriTemplate: 'test://template/{id}/data',
    name: 'Template data',
    description: 'JSON data for any id.',
    mimeType: 'application/json',
    read: ({ id }, uri) => ({
      contents: [
        {
          uri,
          mimeType: 'application/json',
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    }),
  }),
]

const prompts = [
  prompt({
    name: 'test_simple_prompt',
    description: 'A prompt without arguments.',
    get: () => ({
      messages: [
        { role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } },
      ],
    }),
  }),
  prompt({
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two required arguments.',
    arguments: [
      { name: 'arg1', description: 'First argument', required: true },
      { name: 'arg2', description: 'Second argument', required: true },
    ],
    get: ({ arg1, arg2 }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
    complete: {
      arg1: (value) =>
        ['test', 'testValue1', 'example'].filter((option) => option.startsWith(value)),
      arg2: (value) => ['testValue2', 'other'].filter((option) => option.startsWith(value)),
    },
  }),
  prompt({
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds a resource.',
    arguments: [
      { name: 'resourceUri', description: 'URI of the resource to embed', required: true },
    ],
    get: ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri as string,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        {
          role: 'user',
          content: { type: 'text', text: 'Please process the embedded resource above.' },
        },
      ],
    }),
  }),
  prompt({
    name: 'test_prompt_with_image',
    description: 'A prompt with an image.',
    get: () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: PNG_1X1, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  }),
  prompt({
    name: 'test_input_required_result_prompt',
    description: 'A prompt that asks the user for context first (multi round-trip).',
    async get(_args, ctx) {
      const answer = await ctx.elicit('user_context', {
        message: 'What context should the prompt use?',
        schema: contextForm,
      })
      const context = answer.action === 'accept' ? answer.content.context : '(none)'
      return {
        messages: [
          { role: 'user', content: { type: 'text', text: `Use this context: ${context}` } },
        ],
      }
    },
  }),
]

export const fixtureServer = compileServer<FixtureHandlerDeps>({
  info: { name: 'notes-mcp-conformance-fixture', version: '0.1.0' },
  instructions: 'Conformance fixture for the notes-mcp engine.',
  tools: [...tools, ...legacyConformanceTools, ...tasksConformanceTools],
  resources,
  resourceTemplates: templates,
  prompts,
  listChanged: { tools: true, prompts: true },
  subscribe: true,
  logging: true,
})

export interface FixtureDeps {
  sealer: StateSealer
  bus: EventBus
  /**
   * Where 2025-era sessions keep what changes after `initialize` and tasks their records (one store,
   * as in the notes app); without it the fixture speaks 2026-07-28 only and serves no tasks.
   */
  sessions?: SessionStore & TaskStore
  shutdown?: AbortSignal
  /**
   * The longest wait of a 2025 flow between two checks of the store for an answer whose bus signal it
   * missed (default the engine's); tests that prove an answer arrives by the bus alone set Infinity.
   */
  answerPollMs?: number
  /**
   * Hands tasks to runners of their own (on Workers, a Durable Object per task); without it the
   * process that accepts a task runs it.
   */
  taskScheduler?: TaskScheduler
  /** Names this replica in task leases and logs. */
  replicaId?: string
  /** Where the engine logs (default: the console). */
  logger?: McpLogger
}

export function createFixtureApp(
  config: Config,
  {
    sealer,
    bus,
    sessions,
    shutdown,
    answerPollMs,
    taskScheduler,
    replicaId = 'fixture',
    logger,
  }: FixtureDeps
): Hono {
  const handler = createMcpHandler({
    server: fixtureServer,
    deps: { bus },
    sealer,
    bus,
    logger,
    shutdown,
    legacy: sessions && {
      sessions,
      sessionTtlSeconds: config.sessionTtlSeconds,
      ...config.sessionLimits,
      input: { answerPollMs },
    },
    // Whoever runs a task (this process, or the scheduler's runners) runs every task it accepts, so
    // there is nothing to take over here.
    tasks: sessions && {
      store: sessions,
      replicaId,
      scheduler: taskScheduler,
      takeoverIntervalMs: 0,
    },
  })
  return createHttpApp({ config, handler })
}
