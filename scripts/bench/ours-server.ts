/**
 * @module scripts/bench/ours-server
 * Our bench server's tools, compiled once and runtime-neutral, so the Node process (`ours.ts`) and the
 * Worker build (`worker-ours.ts`) serve exactly the same thing: `echo`, `confirm_echo` (a sealed MRTR
 * form elicitation), `progress` (three progress notifications, so the answer is SSE) and `search_notes`
 * over the seeded notes (same arguments and hit shape as the notes server's tool; Node only, where the
 * SQLite store exists). The SDK's counterpart is `sdk-server.ts`.
 */
import { definitions, structured, text } from 'stateless-mcp'
import { compileServer } from 'stateless-mcp/compose'
import type { NotesStore } from '../../src/notes/store.ts'
import { ConfirmForm, EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'
import { searchCursor, searchHit } from './search-hits.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS, TOOL_DESCRIPTIONS } from './wire.ts'

export interface BenchDeps {
  notes: NotesStore | undefined
}

const { tool } = definitions<BenchDeps>()

export const benchServer = compileServer<BenchDeps>({
  info: { name: 'notes-mcp-bench', version: '0.0.0' },
  tools: [
    tool({
      name: 'echo',
      description: TOOL_DESCRIPTIONS.echo,
      input: EchoInput,
      run: ({ text: value }) => text(value),
    }),
    tool({
      name: 'confirm_echo',
      description: TOOL_DESCRIPTIONS.confirm_echo,
      input: EchoInput,
      async run({ text: value }, ctx) {
        const answer = await ctx.elicit('confirm', {
          message: CONFIRM_MESSAGE,
          schema: ConfirmForm,
        })
        return text(answer.action === 'accept' && answer.content.confirm ? value : 'not confirmed')
      },
    }),
    tool({
      name: 'progress',
      description: TOOL_DESCRIPTIONS.progress,
      input: NoInput,
      run(_args, ctx) {
        for (let step = 1; step <= PROGRESS_STEPS; step++) ctx.progress(step, PROGRESS_STEPS)
        return text('done')
      },
    }),
    tool({
      name: 'search_notes',
      description: TOOL_DESCRIPTIONS.search_notes,
      input: SearchInput,
      output: SearchOutput,
      async run({ query, limit }, ctx) {
        const notes = ctx.deps.notes
        if (!notes) throw new Error('BENCH_DB is not set')
        const page = await notes.search(ctx.principal, { text: query, offset: 0, limit })
        return structured({
          notes: page.items.map(searchHit),
          ...(page.nextOffset !== undefined && { nextCursor: searchCursor(page.nextOffset) }),
        })
      },
    }),
  ],
})
