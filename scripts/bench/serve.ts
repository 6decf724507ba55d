/**
 * @module scripts/bench/serve
 * What the three benchmark servers share: listen with @hono/node-server on 127.0.0.1 and a port the
 * kernel picks, print one ready line naming it (the driver waits for it), and exit promptly on
 * SIGTERM/SIGINT. Loopback only, by construction.
 */
import { serve } from '@hono/node-server'
import { SERVER_READY } from './wire.ts'

type Fetch = (request: Request) => Response | Promise<Response>

export function serveBench(kind: string, fetch: Fetch, onClose?: () => Promise<void>): void {
  const server = serve({ fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
    console.log(`${SERVER_READY} http://127.0.0.1:${info.port}/mcp (${kind}, pid ${process.pid})`)
  })
  const stop = () => {
    server.close(() => void (onClose?.() ?? Promise.resolve()).finally(() => process.exit(0)))
    setTimeout(() => process.exit(0), 1000).unref()
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
