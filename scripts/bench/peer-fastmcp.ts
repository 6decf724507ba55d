/**
 * @module scripts/bench/peer-fastmcp
 * `fastmcp` as a benchmark peer, set up as its README's "Stateless mode" shows for serverless and
 * load-balanced deployments: `server.start({ transportType: 'httpStream', httpStream: { stateless:
 * true } })`, which answers every POST with a fresh session on a transport of its own (mcp-proxy's
 * HTTP server under it). Same tools as `ours-server.ts`: `echo`, `confirm_echo` (`context.elicit`),
 * `progress` (`context.reportProgress`, three times) and `search_notes` (listed with the same
 * schemas; not served, the peers are not measured on search).
 *
 * Choices: fastmcp speaks only the 2025 revisions (its README says so; a 2026-07-28 request is
 * refused by mcp-proxy's modern leg because fastmcp's v1 `Server` cannot serve it), so it is sent
 * what a 2025 client sends for one stateless call: a `2025-11-25` POST without a session. It is not
 * in the 2025 interactive flow: stateless, the answer to `elicitation/create` has no session to
 * reach; and even in its stateful mode `context.elicit` sends the request unrelated to the call, so
 * it goes out on the session's standalone GET stream, never on the call's own SSE stream where 2025
 * clients (and our driver) read it; the call's stream stays open with only its priming event (tried
 * by hand; each stateful `initialize` also waits 1 s for client capabilities). fastmcp runs its own `node:http` server and does not say which port it got, so it listens
 * on a kernel-chosen port and the port is read from Node's `net.server.listen` diagnostics channel
 * for the ready line. Loopback only.
 */
import { tracingChannel } from 'node:diagnostics_channel'
import type { AddressInfo, Server } from 'node:net'
import { FastMCP } from 'fastmcp'
import { EchoInput, NoInput, SearchInput, SearchOutput } from './schemas.ts'
import { CONFIRM_MESSAGE, PROGRESS_STEPS, SERVER_READY, TOOL_DESCRIPTIONS } from './wire.ts'

const server = new FastMCP({ name: 'notes-mcp-bench-fastmcp', version: '0.0.0' })

server.addTool({
  name: 'echo',
  description: TOOL_DESCRIPTIONS.echo,
  parameters: EchoInput,
  execute: async ({ text }) => text,
})
server.addTool({
  name: 'confirm_echo',
  description: TOOL_DESCRIPTIONS.confirm_echo,
  parameters: EchoInput,
  async execute({ text }, { elicit }) {
    const answer = await elicit({
      message: CONFIRM_MESSAGE,
      requestedSchema: {
        type: 'object',
        properties: { confirm: { type: 'boolean' } },
        required: ['confirm'],
      },
    })
    return answer.action === 'accept' && answer.content?.confirm === true ? text : 'not confirmed'
  },
})
server.addTool({
  name: 'progress',
  description: TOOL_DESCRIPTIONS.progress,
  parameters: NoInput,
  async execute(_args, { reportProgress }) {
    for (let step = 1; step <= PROGRESS_STEPS; step++) {
      await reportProgress({ progress: step, total: PROGRESS_STEPS })
    }
    return 'done'
  },
})
server.addTool({
  name: 'search_notes',
  description: TOOL_DESCRIPTIONS.search_notes,
  parameters: SearchInput,
  outputSchema: SearchOutput,
  execute: () => Promise.reject(new Error('search_notes is not served by this peer')),
})

const listening = new Promise<number>((resolve) => {
  tracingChannel<unknown, { server: Server }>('net.server.listen').subscribe({
    start() {},
    end() {},
    asyncStart() {},
    error() {},
    asyncEnd({ server: listener }) {
      resolve((listener.address() as AddressInfo).port)
    },
  })
})

await server.start({
  transportType: 'httpStream',
  httpStream: { host: '127.0.0.1', port: 0, stateless: true },
})
const port = await listening
console.log(`${SERVER_READY} http://127.0.0.1:${port}/mcp (fastmcp, pid ${process.pid})`)

const stop = () => {
  void server.stop().finally(() => process.exit(0))
  setTimeout(() => process.exit(0), 1000).unref()
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
