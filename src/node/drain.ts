/**
 * @module node/drain
 * A replica's graceful shutdown (`drainOnSignals`), on SIGTERM or SIGINT, on every runtime with Node's
 * process API (Node, Deno, Bun), each through its listener (`DrainListener`: `nodeListener` here,
 * Bun's and `deno serve`'s in their entries), in this order:
 * 1. `draining` aborts: `/readyz` answers 503 and the engine takes no work over from other replicas;
 *    on Node every response not yet begun, and every one from now on, carries `Connection: close`,
 *    so no client sends another request on its socket;
 * 2. for `delayMs` (SHUTDOWN_DELAY_SECONDS, default 0) the replica keeps listening and serving, for a
 *    balancer that routes by readiness (Kubernetes endpoints, a cloud target group) to take it out;
 * 3. the listener closes: new connections are refused (a balancer re-sends a refused connect to
 *    another replica). On Node idle keep-alive connections are NOT closed: one a balancer is just
 *    sending a request on would lose it (nginx answers 502 for a POST it may not re-send). They close
 *    from the client's side (nginx's upstream `keepalive_timeout` is below KEEP_ALIVE_SECONDS) or at
 *    the server's `keepAliveTimeout`, and a request that still arrives on one is served, closing it.
 *    (`http.Server.close()` would close them first: the listener is closed as a `net.Server`.);
 * 4. `shutdown` aborts: listen and 2025 streams are let go with `retry` (their clients reconnect to
 *    another replica), call and task leases are released;
 * 5. the requests in flight finish, and the connections close, bounded by `graceMs`
 *    (SHUTDOWN_GRACE_SECONDS, default 25); at the bound what is left is closed (`closeAll`). The task
 *    runs' stop (`tasksStopped`) is awaited within the same bound, then `close` (the store, telemetry)
 *    for at most {@link CLOSE_BOUND_MS}, and the process exits 0.
 * One line is printed when the drain starts and one when it ends (the requests cut at the bound, if
 * any). A second SIGTERM or SIGINT during the drain exits at once with 1: nothing more is released
 * or closed, and leases still held run out for other replicas to take over, as after a crash.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { Server as NetServer } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { logError } from 'stateless-mcp/compose'
import type { Replica } from './replica.ts'

/** After the grace, how long closing the store and flushing telemetry may take before the exit. */
export const CLOSE_BOUND_MS = 5_000

/** A runtime's HTTP listener, as the drain closes it. */
export interface DrainListener {
  /** Told once, when the drain starts (Node marks the responses not yet begun). */
  draining?(): void
  /** Stops taking connections; resolves once the requests it holds are done. */
  close(): Promise<void>
  /** At the grace bound: ends what is still open; answers how many requests that cut. */
  closeAll(): number
}

export interface DrainOptions {
  replica: Replica
  listener: DrainListener
}

/** What a response answering during the drain tells its client: no further request on this socket. */
function closingConnection(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('connection', 'close')
}

/** Node's `http.Server` as a drain's listener, as the module header says. */
export function nodeListener(server: Server, draining: AbortSignal): DrainListener {
  /** The responses begun and not yet done: what the grace bound may cut. */
  const open = new Set<ServerResponse>()
  // First among the listeners, so the header is set before the app could answer.
  server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    open.add(response)
    response.once('close', () => open.delete(response))
    if (draining.aborted) closingConnection(response)
  })
  return {
    draining: () => open.forEach(closingConnection),
    close: () =>
      new Promise<void>((resolve) => {
        NetServer.prototype.close.call(server, () => resolve())
      }),
    closeAll: () => {
      const cut = open.size
      server.closeAllConnections()
      return cut
    },
  }
}

/** Drains the replica as the module header says on the first SIGTERM or SIGINT. */
export function drainOnSignals(options: DrainOptions): void {
  let started = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (started) {
      console.log(`notes-mcp: ${signal} during the drain: exiting at once`)
      process.exit(1)
    }
    started = true
    void drain(options, signal)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
}

async function drain({ replica, listener }: DrainOptions, signal: NodeJS.Signals): Promise<void> {
  const { delayMs, graceMs } = replica.config.shutdown
  replica.draining.abort()
  listener.draining?.()
  const waiting = delayMs > 0 ? `serving ${delayMs / 1000} s more, then ` : ''
  console.log(
    `notes-mcp draining on ${signal}: /readyz answers 503; ${waiting}refusing new connections, ` +
      `with ${graceMs / 1000} s for the requests in flight`
  )
  if (delayMs > 0) await delay(delayMs)

  const connectionsDone = listener.close()
  replica.shutdown.abort()
  const bound = delay(graceMs, 'bound' as const)
  const outcome = await Promise.race([connectionsDone.then(() => 'drained' as const), bound])
  const cut = outcome === 'bound' ? listener.closeAll() : 0
  await Promise.race([replica.tasksStopped(), bound])
  // A telemetry collector that does not answer must not hold the exit past the orchestrator's bound.
  const closed = replica
    .close()
    .catch((error: unknown) => logError('closing at shutdown failed', error))
  await Promise.race([closed, delay(CLOSE_BOUND_MS)])
  console.log(
    cut > 0
      ? `notes-mcp drained: ${cut} request(s) still open after ${graceMs / 1000} s were cut`
      : 'notes-mcp drained: every request finished'
  )
  process.exit(0)
}
