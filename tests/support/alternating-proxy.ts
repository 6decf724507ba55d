/**
 * @module tests/support/alternating-proxy
 * A load balancer for replica tests: an HTTP proxy on 127.0.0.1 that sends each HTTP request to the
 * next upstream in turn (round robin per request, no affinity of any kind) and keeps a log of what
 * went where. Bodies stream through in both directions as they arrive (nothing is buffered), so SSE
 * responses reach the client event by event while the proxy reads along.
 *
 * Each {@link ProxyEntry} names the HTTP method, the JSON-RPC message the request body carried (a
 * request's or notification's method and id, or a response and the id it answers), the replica that
 * answered (its `X-Replica` header), the status, and the ids of the JSON-RPC requests and responses
 * the server sent on that response's SSE stream, so a test can tell which replica held the stream an
 * ask came on, which one received the answer, which stream carried a call's result, and when the
 * exchange ended. Upstream failures answer 502; a client that goes away aborts the upstream request.
 * With one upstream it is a recording pass-through.
 *
 * A test can also steer it: `route` names the upstream of the requests that follow (a replica taken
 * out of the pool, a resuming GET sent to the other replica), and `cutWhen` drops one SSE answer's
 * connection right after forwarding a chosen part of it, as a network or a proxy's own timeout does
 * (the client sees its stream break; the server sees its connection close).
 *
 * `useBalancedReplicas` puts notes replicas on one PostgreSQL database behind such a proxy, for the
 * tests of a file or for each test.
 */
import { request as httpRequest, createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { startPostgresReplicas, type PostgresReplicas } from './server-process.ts'
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
  /** The request's `Last-Event-ID` header: the client resuming a stream from that event. */
  lastEventId?: string
  /** Ids of server→client requests read on the answer's SSE stream so far. */
  carried: Array<string | number>
  /** Ids of the JSON-RPC responses read on it: the request's own, or a resumed call's. */
  responses: Array<string | number>
  /** Set once the answer to the client is over: complete, or cut off by either side. */
  ended: boolean
  /** Set when the proxy dropped the answer's connection on purpose (`cutWhen`). */
  cut?: boolean
}

/** Picks the upstream (by index) of a request as it arrives, or none to take the next in turn. */
export type ProxyRoute = (entry: ProxyEntry) => number | undefined

export interface AlternatingProxy {
  url: string
  log: ProxyEntry[]
  /** Resolves with the first entry (logged or updated before or later) for which `test` holds. */
  waitFor(test: (entry: ProxyEntry) => boolean, what: string, ms?: number): Promise<ProxyEntry>
  /**
   * Sends the requests that follow where `choose` says (`undefined`: in turn again). It sees each
   * entry before the request's body is read: its method and `lastEventId`, never its `message`.
   */
  route(choose: ProxyRoute | undefined): void
  /**
   * Drops the connection of the next SSE answer for which `test` holds, checked after each chunk
   * read from upstream: that chunk is forwarded, then the connection to the client and the one to
   * the upstream are both destroyed. Resolves with the entry once cut; once only.
   */
  cutWhen(test: (entry: ProxyEntry) => boolean, what: string, ms?: number): Promise<ProxyEntry>
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

/** Reads SSE text as it streams and reports every JSON-RPC message of its events. */
function sseMessageReader(onMessage: (message: ProxiedMessage) => void): (text: string) => void {
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
            if (message) onMessage(message)
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
  let route: ProxyRoute | undefined
  let cut: { test: (entry: ProxyEntry) => boolean; done: (entry: ProxyEntry) => void } | undefined

  const server = createServer((req, res) => {
    const seq = log.length
    const lastEventId = req.headers['last-event-id']
    const entry: ProxyEntry = {
      seq,
      httpMethod: req.method ?? 'GET',
      upstream: seq % targets.length,
      ...(typeof lastEventId === 'string' && { lastEventId }),
      carried: [],
      responses: [],
      ended: false,
    }
    entry.upstream = route?.(entry) ?? entry.upstream
    const target = targets[entry.upstream]
    log.push(entry)
    changed()
    if (!target) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`no upstream ${entry.upstream}`)
      return
    }

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
          ? sseMessageReader((message) => {
              if (message.kind === 'request') entry.carried.push(message.id)
              else if (message.kind === 'response') entry.responses.push(message.id)
              else return
              changed()
            })
          : undefined
        answer.setEncoding('utf8')
        let cutting = false
        answer.on('data', (chunk: string) => {
          if (cutting) return
          read?.(chunk)
          const rule = read && cut?.test(entry) ? cut : undefined
          if (!rule) return res.write(chunk)
          cut = undefined
          cutting = true
          // Destroyed once the chunk is out, so the client has read up to it when its stream breaks.
          res.write(chunk, () => {
            entry.cut = true
            res.destroy()
            outgoing.destroy()
            rule.done(entry)
          })
        })
        answer.on('end', () => {
          if (!cutting) res.end()
        })
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
    route(choose) {
      route = choose
    },
    cutWhen(test, what, ms) {
      if (cut) throw new Error('the proxy already waits to cut an answer')
      const { promise, resolve } = Promise.withResolvers<ProxyEntry>()
      cut = { test, done: resolve }
      return within(promise, what, ms).finally(() => {
        if (cut?.done === resolve) cut = undefined
      })
    },
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

/** Notes replicas on one PostgreSQL database (`startPostgresReplicas`) behind an alternating proxy. */
export interface BalancedReplicas {
  deployment: PostgresReplicas
  proxy: AlternatingProxy
}

/**
 * Starts the replicas `replicaIds` on a scratch database of `serverUrl`, and a proxy alternating
 * them, before the file's tests (`per: 'file'`) or before each test (`per: 'test'`, for tests that
 * kill a replica), and stops both after; nothing without a server (the tests skip). Answers the
 * running deployment, or throws if it did not start.
 */
export function useBalancedReplicas(
  serverUrl: string | undefined,
  replicaIds: readonly string[],
  { per }: { per: 'file' | 'test' }
): () => BalancedReplicas {
  let deployment: PostgresReplicas | undefined
  let proxy: AlternatingProxy | undefined
  const [before, after] = per === 'file' ? [beforeAll, afterAll] : [beforeEach, afterEach]
  before(async () => {
    if (!serverUrl) return
    deployment = await startPostgresReplicas(serverUrl, replicaIds)
    proxy = await startAlternatingProxy(deployment.servers.map((server) => server.baseUrl))
  })
  after(async () => {
    await proxy?.close()
    await deployment?.stop()
    proxy = deployment = undefined
  })
  return () => {
    if (!deployment || !proxy) throw new Error('the replicas and their proxy did not start')
    return { deployment, proxy }
  }
}
