/**
 * @module bun
 * Bun entry: `npm run start:bun` (`bun src/bun.ts`). The replica of `node/replica.ts` (the same
 * environment, store and key ring as `npm start`) served by Bun's own HTTP server on HOST and PORT, and
 * drained on SIGINT/SIGTERM as on Node (`node/drain.ts`). Bun closes a connection idle for
 * KEEP_ALIVE_SECONDS (at most 255, Bun's bound); an event stream is exempt, as its quiet spells (a
 * 2025 call waiting on its user) may be longer. Bun sends a streamed response's head only with its
 * first body bytes, so an event stream begins with a comment here (`http/event-stream-head.ts`).
 */
import { isEventStream, withStreamHeadFirst } from './http/event-stream-head.ts'
import { drainOnSignals } from './node/drain.ts'
import { openReplica, startOrExit } from './node/replica.ts'

/** The part of Bun's server this entry uses (Bun's own types are not a dependency). */
interface BunServer {
  readonly url: URL
  readonly pendingRequests: number
  /** Stops accepting; resolves once the open requests are done (all cut with `true`). */
  stop(closeActiveConnections?: boolean): Promise<void>
  /** Sets a request's idle bound in seconds; 0: none. */
  timeout(request: Request, seconds: number): void
}

declare const Bun: {
  serve(options: {
    hostname: string
    port: number
    idleTimeout: number
    fetch(request: Request, server: BunServer): Promise<Response>
  }): BunServer
}

/** Bun's bound on `idleTimeout`, in seconds. */
const MAX_IDLE_SECONDS = 255

startOrExit(async () => {
  const replica = await openReplica(process.env, 'Bun')
  const { config, app } = replica
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    idleTimeout: Math.min(MAX_IDLE_SECONDS, config.keepAliveMs / 1000),
    fetch: async (request, server) => {
      // Only the request: Bun's second argument is its server, not an environment for the app.
      const response = await app.fetch(request)
      if (!isEventStream(response)) return response
      server.timeout(request, 0)
      return withStreamHeadFirst(response)
    },
  })
  console.log(`notes-mcp listening on ${new URL('/mcp', server.url).href}`)
  drainOnSignals({
    replica,
    listener: {
      close: () => server.stop(),
      closeAll: () => {
        const cut = server.pendingRequests
        void server.stop(true)
        return cut
      },
    },
  })
})
