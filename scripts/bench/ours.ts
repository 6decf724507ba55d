/**
 * @module scripts/bench/ours
 * Our server under load: the engine (`compileServer` + `createMcpHandler`) behind the shared HTTP
 * face (`createHttpApp`: Origin/Host guard, 405/413/415, auth → local principal), exactly as the notes
 * server and the conformance fixture are wired, with the sealer options of the Node entry. Tools: `echo`, `confirm_echo` (a sealed MRTR form
 * elicitation), `progress` (three progress notifications, so the answer is SSE) and `search_notes`
 * over the seeded SQLite notes (same arguments and hit shape as the notes server's tool).
 *
 * With `BENCH_APP=notes` it serves the real notes application instead (`src/app.ts` `createApp`) on
 * the same seeded database, for the `notes_search_app` scenario. Environment: `BENCH_DB` (SQLite
 * file, required for search), and the `OTEL_*` variables, which turn telemetry on exactly as
 * `npm start` does (`telemetry/node.ts`, loaded only then), to measure what it costs. Run as its own
 * process by `scripts/bench.ts`.
 */
import type { Hono } from 'hono'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { definitions, structured, text } from '../../src/mcp/definitions.ts'
import { InProcessEventBus } from '../../src/mcp/events.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey } from '../../src/mcp/key-ring.ts'
import { compileServer } from '../../src/mcp/server.ts'
import { createNodeSealer } from '../../src/node-crypto.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { searchCursor, searchHit } from './notes-data.ts'
import { serveBench } from './serve.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS } from './wire.ts'
import { ConfirmForm, EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'

interface BenchApp {
  notes: NotesStore | undefined
}

const { tool } = definitions<BenchApp>()

const benchServer = compileServer<BenchApp>({
  info: { name: 'notes-mcp-bench', version: '0.0.0' },
  tools: [
    tool({
      name: 'echo',
      description: 'Echo the text back.',
      input: EchoInput,
      run: ({ text: value }) => text(value),
    }),
    tool({
      name: 'confirm_echo',
      description: 'Ask the user to confirm, then echo the text back.',
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
      description: 'Report progress three times, then answer.',
      input: NoInput,
      run(_args, ctx) {
        for (let step = 1; step <= PROGRESS_STEPS; step++) ctx.progress(step, PROGRESS_STEPS)
        return text('done')
      },
    }),
    tool({
      name: 'search_notes',
      description: 'Full-text search over the notes, best match first.',
      input: SearchInput,
      output: SearchOutput,
      async run({ query, limit }, ctx) {
        const notes = ctx.app.notes
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

const otel = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_'))
)
const config = parseConfig({ ...otel, HOST: '127.0.0.1', PORT: '0' })
const running =
  config.telemetry &&
  (await import('../../src/telemetry/node.ts')).startNodeTelemetry({
    config: config.telemetry,
    replicaId: 'bench',
    database: 'sqlite',
    host: config.host,
  })
const telemetry = (await running)?.telemetry
// The sealer as the Node entry (`src/node.ts`) configures it, with a fresh key ring per process.
const sealer = await createNodeSealer([generateKey()], 600)
const path = process.env.BENCH_DB
const store = path ? new SqliteNotesStore({ path }) : undefined
await store?.migrate()

let app: Hono
if (process.env.BENCH_APP === 'notes') {
  if (!store) throw new Error('BENCH_APP=notes needs BENCH_DB')
  const { createApp } = await import('../../src/app.ts')
  app = createApp(config, { store, sealer, bus: new InProcessEventBus(), telemetry })
} else {
  const handler = createMcpHandler({
    server: benchServer,
    app: { notes: store },
    sealer,
    telemetry,
  })
  app = createHttpApp({ config, handler })
}

serveBench(process.env.BENCH_APP === 'notes' ? 'ours-notes-app' : 'ours', app.fetch, () =>
  store ? store.close() : Promise.resolve()
)
