/**
 * @module tests/conformance/fixture-2025-tools
 * The conformance fixture's tools that only the referee's `--requirements 2025-11-25` leg calls
 * (../shared/reference/legacy-clients.md §4): logging at a pace, sampling, and three elicitation
 * forms (plain, SEP-1034 defaults, the five SEP-1330 enum shapes). They are ordinary engine handlers:
 * a 2025-era client gets each ask as a server→client request on its POST's SSE stream, a 2026-07-28
 * client as an `input_required` round, and every answer is validated against the form before the
 * tool sees it. Capability gating is the engine's (at the ask), so the tools do not test for it.
 *
 * Owns: the tool names, arguments, asks and result texts the referee's scenarios check
 * (`tools-call-with-logging`, `tools-call-sampling`, `tools-call-elicitation`,
 * `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`). Leaves to `fixture-app.ts`: the
 * server they are added to, and everything both legs share (resources, prompts, completions).
 * Runtime-neutral.
 */
import * as z from 'zod'
import {
  defineForm,
  definitions,
  type ElicitAnswer,
  type ElicitationForm,
  legacyTitledEnum,
  sampledText,
  text,
  titledEnum,
} from 'stateless-mcp'

// The tools read nothing from the application, so they fit any fixture app (the tasks tools too).
export const { tool } = definitions<unknown>()

/** The input of a tool that takes no arguments. */
export const noArgs = z.object({})

/** What `test_tool_with_logging` logs, in order, at `info`; the scenario wants at least three. */
const LOG_MESSAGES = [
  'Tool execution started',
  'Tool processing data',
  'Tool execution completed',
] as const
/** The pause between two log messages ("~50 ms apart" in the scenario). */
const LOG_INTERVAL_MS = 50
/** `maxTokens` of the sampling request, as the scenario spells it. */
const SAMPLING_MAX_TOKENS = 100

// Forms are converted once, at module load: a shape the wire cannot express fails here.
const USER_INFO_FORM = defineForm(
  z.object({
    username: z.string().describe("User's response"),
    email: z.string().describe("User's email address"),
  })
)

const DEFAULTS_FORM = defineForm(
  z.object({
    name: z.string().default('John Doe').describe('User name'),
    age: z.int().default(30).describe('User age'),
    score: z.number().default(95.5).describe('User score'),
    status: z.enum(['active', 'inactive', 'pending']).default('active').describe('User status'),
    verified: z.boolean().default(true).describe('Verification status'),
  })
)

const ENUMS_FORM = defineForm(
  z.object({
    untitledSingle: z.enum(['option1', 'option2', 'option3']).describe('Pick one option'),
    titledSingle: titledEnum({
      value1: 'First Option',
      value2: 'Second Option',
      value3: 'Third Option',
    }).describe('Pick one titled option'),
    legacyEnum: legacyTitledEnum({
      opt1: 'Option One',
      opt2: 'Option Two',
      opt3: 'Option Three',
    }).describe('Pick one option (legacy enumNames)'),
    untitledMulti: z.array(z.enum(['option1', 'option2', 'option3'])).describe('Pick any options'),
    titledMulti: z
      .array(
        titledEnum({ value1: 'First Choice', value2: 'Second Choice', value3: 'Third Choice' })
      )
      .describe('Pick any titled options'),
  })
)

/** Waits `ms`, or less when the client goes away. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })
}

/** `action=<action>, content=<JSON>`: how every elicitation tool reports what the person did. */
function describeAnswer(answer: ElicitAnswer<unknown>): string {
  const content = answer.action === 'accept' ? answer.content : {}
  return `action=${answer.action}, content=${JSON.stringify(content)}`
}

/** A no-argument tool that asks one form and reports the answer as the SEP scenarios expect. */
function formTool(name: string, description: string, message: string, form: ElicitationForm) {
  return tool({
    name,
    description,
    input: noArgs,
    async run(_args, ctx) {
      const answer = await ctx.elicit('form', { message, schema: form.schema })
      return text(`Elicitation completed: ${describeAnswer(answer)}`)
    },
  })
}

/** The tools the fixture adds for the 2025-11-25 leg (none of them is called by the 2026-07-28 leg). */
export const legacyConformanceTools = [
  tool({
    name: 'test_reconnection',
    description:
      'Lets go of the connection carrying its answer (an SSE retry hint) before it answers: the client resumes the stream with Last-Event-ID and gets the answer (SEP-1699 polling).',
    input: noArgs,
    run(_args, ctx) {
      ctx.closeStream()
      return text('Reconnection test completed: the answer came on the resumed stream.')
    },
  }),
  tool({
    name: 'test_tool_with_logging',
    description: `Logs three info messages ${LOG_INTERVAL_MS} ms apart while it runs (sent only at the level the client asked for).`,
    input: noArgs,
    async run(_args, ctx) {
      for (const [index, message] of LOG_MESSAGES.entries()) {
        if (index > 0) await pause(LOG_INTERVAL_MS, ctx.signal)
        ctx.log('info', message, 'fixture')
      }
      return text(`Logged ${LOG_MESSAGES.length} messages.`)
    },
  }),
  tool({
    name: 'test_sampling',
    description: "Sends the prompt to the host's model and returns its answer.",
    input: z.object({ prompt: z.string().describe('The prompt to send to the LLM') }),
    async run({ prompt }, ctx) {
      const answer = await ctx.sample('llm_response', {
        messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
        maxTokens: SAMPLING_MAX_TOKENS,
      })
      return text(`LLM response: ${sampledText(answer.content)}`)
    },
  }),
  tool({
    name: 'test_elicitation',
    description: 'Shows the message with a form for a user name and an email address.',
    input: z.object({ message: z.string().describe('The message to show the user') }),
    async run({ message }, ctx) {
      const answer = await ctx.elicit('user_info', { message, schema: USER_INFO_FORM.schema })
      return text(`User response: ${describeAnswer(answer)}`)
    },
  }),
  formTool(
    'test_elicitation_sep1034_defaults',
    'Asks a form whose string, integer, number, enum and boolean fields have defaults (SEP-1034).',
    'Please review the prefilled values and change any you like.',
    DEFAULTS_FORM
  ),
  formTool(
    'test_elicitation_sep1330_enums',
    'Asks a form with all five enum field shapes of SEP-1330.',
    'Please pick from each kind of list.',
    ENUMS_FORM
  ),
]
