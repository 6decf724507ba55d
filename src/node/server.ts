/**
 * @module node/server
 * The Node server that `npm start` runs (`node.ts` is its entry): the replica of `node/replica.ts`
 * (store, key ring, tasks, telemetry) served with @hono/node-server on HOST (127.0.0.1 by default;
 * without auth any HOST that is not loopback is refused unless ALLOW_UNAUTHENTICATED=1), with a
 * JSON-RPC answer to what Node's HTTP parser refuses, and drained on SIGINT/SIGTERM
 * (`node/drain.ts`): `/readyz` turns 503, it serves on for SHUTDOWN_DELAY_SECONDS, stops accepting
 * connections, lets listen and 2025 streams go with `retry`, releases call and task leases, lets
 * the requests in flight finish within SHUTDOWN_GRACE_SECONDS, flushes telemetry, closes the store
 * and exits 0.
 * Importing it starts nothing: each entry calls {@link runNodeServer}, `node.ts` as it is, and the
 * fault-injection replica of the tests and the load test (`scripts/support/held-import-replica.ts`)
 * with its store wrapped, so no switch in here changes how a deployment runs.
 */
import { serve } from '@hono/node-server'
import type { Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { ErrorCode } from 'stateless-mcp'
import { errorResponseText } from 'stateless-mcp/compose'
import { drainOnSignals, nodeListener } from './drain.ts'
import { openReplica, startOrExit, type ReplicaOptions } from './replica.ts'

/**
 * Requests Node's HTTP parser refuses (control characters in a header, oversized headers) never reach
 * the app; answer them with a JSON-RPC error body too, as every other 4xx of the endpoint.
 */
function answerMalformedHttp(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW'
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'
  const message = tooLarge
    ? 'Request Header Fields Too Large: the request headers exceed the server limit.'
    : 'Bad Request: the HTTP request is malformed (e.g. a control character in a header).'
  const body = errorResponseText(null, { code: ErrorCode.InvalidRequest, message })
  socket.end(
    `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  )
}

/**
 * Starts the server from the environment, as `npm start` does; a failure to start is printed and
 * exits the process with 1.
 */
export function runNodeServer(options: ReplicaOptions = {}): void {
  startOrExit(async () => {
    const replica = await openReplica(process.env, 'Node', options)
    const { config, app } = replica
    // HTTP/1.1 (no `createServer` option): a plain `http.Server`.
    const server = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, (info) => {
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address
      console.log(`notes-mcp listening on http://${host}:${info.port}/mcp`)
    }) as Server
    server.keepAliveTimeout = config.keepAliveMs
    server.on('clientError', answerMalformedHttp)
    drainOnSignals({ replica, listener: nodeListener(server, replica.draining.signal) })
  })
}
