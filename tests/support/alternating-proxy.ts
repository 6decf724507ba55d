/**
 * @module tests/support/alternating-proxy
 * A load balancer for replica tests: an HTTP proxy on 127.0.0.1 that sends each HTTP request to the
 * next upstream in turn (round robin per request, no affinity of any kind) and keeps a log of what
 * went where. Bodies stream through in both directions as they arrive (nothing is buffered), so SSE
 * responses reach the client event by event while the proxy reads along.
 *
 * Each {@link ProxyEntry} names the HTTP method, the JSON-RPC message the request body carried (a
 * request's or notification's method and id, or a response and the id it answers), the replica that
 * answered (its `X-Replica` header), the status, and the ids of the JSON-RPC requests the server sent
 * on that response's SSE stream, so a test can tell which replica held the stream an ask came on and
 * which one received the answer, and when the exchange ended. Upstream failures answer 502; a client
 * that goes away aborts the upstream request. With one upstream it is a recording pass-through.
 */
import { request as httpRequest, createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { within } from './within.ts'

/** The JSON-RPC message a request body carried. */
export type ProxiedMessage =
  | { kind: 'request'; method: string; id: string | number }
  | { kind: 'notification'; method: string }
  | { kind: 'response'; id: string | number }

export interface ProxyEntry {
  /** Position in arrival order, from 0. */
  seq: number
  httpMethod: string
  /** Parsed once the request body has been read; absent for bodies that are not one JSON-RPC message. */
  message?: ProxiedMessage
  /** Index of the upstream the request went to. */
  upstream: number
  /** The `X-Replica` header of the answer; set when the answer's headers arrived. */
  replica?: string
  status?: number
  /** Ids of server→client requests read on the answer's SSE stream so far. */
  carried: Array<string | number>
  /** Set once the answer to the client is over: complete, or cut off by either side. */
  ended: boolean
}

export interface AlternatingProxy {
  url: string
  log: ProxyEntry[]
  /** Resolves with the first entry (logged or updated before or later) for which `test` holds. */
  waitFor(test: (entry: ProxyEntry) => boolean, what: string, ms?: number): Promise<ProxyEntry>
  close(): Promise<void>
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
])

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase()))
  )
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isId(value: unknown): value is string | number {
  return typeof value === 'string' || typeof value === 'number'
}

/** What one JSON-RPC message is, or `undefined` for anything else. */
function describeMessage(value: unknown): ProxiedMessage | undefined {
  if (!isRecord(value)) return undefined
  if (typeof value.method === 'string') {
    return isId(value.id)
      ? { kind: 'request', method: value.method, id: value.id }
      : { kind: 'notification', method: value.method }
  }
  if (('result' in value || 'error' in value) && isId(value.id)) {
    return { kind: 'response', id: value.id }
  }
  return undefined
}

/** Reads SSE text as it streams and reports the id of every JSON-RPC request in its events. */
function sseRequestReader(onRequest: (id: string | number) => void): (text: string) => void {
  let pending = ''
  let data: string[] = []
  return (text) => {
    pending += text
    let newline: number
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).replace(/\r$/, '')
      pending = pending.slice(newline + 1)
      if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''))
      } else if (line === '') {
        if (data.length > 0) {
          try {
            const message = describeMessage(JSON.parse(data.join('\n')))
            if (message?.kind === 'request') onRequest(message.id)
          } catch {
            // an event that is not JSON carries no request
          }
        }
        data = []
      }
    }
  }
}

/** Starts a proxy in front of `upstreams` (base URLs such as `http://127.0.0.1:1234`). */
export async function startAlternatingProxy(upstreams: string[]): Promise<AlternatingProxy> {
  if (upstreams.length === 0) throw new Error('startAlternatingProxy needs at least one upstream')
  const targets = upstreams.map((base) => new URL(base))
  const log: ProxyEntry[] = []
  const watchers = new Set<() => void>()
  const changed = () => {
    for (const watcher of [...watchers]) watcher()
  }

  const server = createServer((req, res) => {
    const seq = log.length
    const upstream = seq % targets.length
    const target = targets[upstream] as URL
    const entry: ProxyEntry = {
      seq,
      httpMethod: req.method ?? 'GET',
      upstream,
      carried: [],
      ended: false,
    }
    log.push(entry)
    changed()

    const body: Buffer[] = []
    const outgoing = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...forwardable(req.headers), host: target.host },
      },
      (answer) => {
        entry.status = answer.statusCode
        const replica = answer.headers['x-replica']
        if (typeof replica === 'string') entry.replica = replica
        changed()
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers))
        res.flushHeaders()
        const read = /text\/event-stream/.test(answer.headers['content-type'] ?? '')
          ? sseRequestReader((id) => {
              entry.carried.push(id)
              changed()
            })
          : undefined
        answer.setEncoding('utf8')
        answer.on('data', (chunk: string) => {
          read?.(chunk)
          res.write(chunk)
        })
        answer.on('end', () => res.end())
        answer.on('error', () => res.destroy())
      }
    )
    outgoing.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway')
      else res.destroy()
    })
    res.on('close', () => {
      // The client went away before the answer ended: so does the upstream request.
      if (!res.writableFinished) outgoing.destroy()
      entry.ended = true
      changed()
    })
    req.on('data', (chunk: Buffer) => {
      body.push(chunk)
      outgoing.write(chunk)
    })
    req.on('end', () => {
      outgoing.end()
      if (body.length === 0) return
      try {
        entry.message = describeMessage(JSON.parse(Buffer.concat(body).toString('utf8')))
      } catch {
        // not JSON: the entry keeps no message
      }
      changed()
    })
  })

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    log,
    waitFor(test, what, ms) {
      let check = () => {}
      const found = new Promise<ProxyEntry>((resolve) => {
        check = () => {
          const entry = log.find(test)
          if (entry) resolve(entry)
        }
      })
      watchers.add(check)
      check()
      return within(found, what, ms).finally(() => watchers.delete(check))
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
