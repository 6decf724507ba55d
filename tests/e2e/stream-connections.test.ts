/**
 * Held-open streams over real sockets: the notes handler and its HTTP layer served by
 * @hono/node-server on 127.0.0.1 in this process (in-memory SQLite, an in-process bus the test
 * publishes to), the per-principal stream cap set small, and clients on raw `net` sockets that
 * open a stream and stop reading after the first bytes of the answer (Node then stops reading the
 * socket, the kernel's buffers fill and the server's writes back up, as with a client that hangs).
 * A slot is given back when the stream's connection is done, not when the server gives up on it: a
 * stream that falls too far behind is dropped and the server closes its connection (its own socket
 * closes while the client still reads nothing), so rounds of unread streams never hold more
 * connections than the cap; a stream the server ends at shutdown keeps its slot until its client
 * has read the end, or until the grace period drops it. And the v1 SDK's GET stream, dropped,
 * reconnects and hears the next update. Each with and without the telemetry wrapper around every
 * stream. Every wait is for an event (a socket closing, a response's end, a stream subscribing),
 * bounded by `within`; nothing is timed, and the slots free are counted on the server's own
 * `StreamLimits` at the moment an event has happened.
 */
import { serve } from '@hono/node-server'
import { once } from 'node:events'
import type { Server, ServerResponse } from 'node:http'
import net from 'node:net'
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest'
import { notesServer } from '../../src/app.ts'
import { LOCAL_PRINCIPAL } from 'stateless-mcp'
import { parseConfig } from '../../src/config.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { RecordingLogger } from '../support/recording-logger.ts'
import { DEFAULT_MAX_BACKLOG_EVENTS, type EventStreamBounds } from '../../src/mcp/event-stream.ts'
import {
  InProcessEventBus,
  type EventInterest,
  type EventListener,
  type ServerEvent,
} from '../../src/mcp/event-bus.ts'
import { createMcpHandler } from '../../src/mcp/handler.ts'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import { HEADER_SESSION_ID } from '../../src/mcp/legacy/protocol.ts'
import { HEADER_PROTOCOL_VERSION } from '../../src/mcp/protocol.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'
import { StreamLimits, type StreamSlot } from '../../src/mcp/stream-limits.ts'
import { noteUri } from '../../src/notes/format.ts'
import { sqliteStores } from '../support/sqlite-stores.ts'
import { otelTelemetry } from 'stateless-mcp/otel'
import { connectLegacyHost } from '../support/legacy-host.ts'
import { startSession } from '../support/legacy-request.ts'
import { mcpInit, parseSse, type JsonObject } from '../support/mcp-request.ts'
import { Conditions, within } from '../support/within.ts'

const CAP = 4
const ROUNDS = 10
/** A bound on the rounds, each of which fills the buffers of four loopback connections. */
const ROUNDS_TIMEOUT_MS = 180_000
const BEHIND = 'stream ended: the client fell too far behind'
const END_UNREAD = 'stream ended: the client did not read the end of its stream'
/** More events at once than a stream may hold back: every stream that hears them falls behind. */
const FLOOD = DEFAULT_MAX_BACKLOG_EVENTS * 2
/** Events per turn while filling a connection's buffers: fewer than a stream may hold back. */
const BATCH = 200
/** A bound on those turns: the buffers of a loopback connection take a few hundred. */
const MAX_TURNS = 20_000
/** A grace period the tests never reach, and one they wait for. */
const NEVER_MS = 600_000
const SHORT_GRACE_MS = 50
/** The last chunk of a chunked body: the response ended as HTTP means it to. */
const LAST_CHUNK = '\r\n0\r\n\r\n'
const TOO_MANY_STREAMS = 429

const sealer = StateSealer.create({ keyRing: await importKeyRing([generateKey()]) })
const { store, engineStore } = await sqliteStores()

/** The bus, telling the test each time a held-open stream (interest: a principal alone) subscribes. */
class WatchedBus extends InProcessEventBus {
  streamsSubscribed = 0
  readonly #changes = new Conditions()

  override subscribe(listener: EventListener, interest?: EventInterest): () => void {
    if (interest?.principal !== undefined && interest.session === undefined) {
      this.streamsSubscribed += 1
      this.#changes.changed()
    }
    return super.subscribe(listener)
  }

  /** Resolves once `count` streams have subscribed in all, bounded. */
  subscribed(count: number, what: string): Promise<void> {
    return this.#changes.until(() => this.streamsSubscribed >= count, what)
  }
}

const listChanged = (): ServerEvent => ({
  kind: 'resources_list_changed',
  principal: LOCAL_PRINCIPAL,
})

const servers: Array<{ close(): Promise<void> }> = []
const clients: RawClient[] = []
/** What the runtime printed: @hono/node-server prints the error of a body it could not finish. */
let printed: MockInstance<typeof console.error>
beforeEach(() => {
  printed = vi.spyOn(console, 'error').mockImplementation(() => {})
})
afterEach(async () => {
  printed.mockRestore()
  for (const client of clients.splice(0)) client.socket.destroy()
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** Anything the runtime printed was a dropped stream's reason: one line, no stack. */
function expectOnlyDropsPrinted() {
  for (const [error] of printed.mock.calls) {
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name).toBe('StreamDroppedError')
    expect((error as Error).stack).not.toContain('\n')
  }
}

/** A server of its own per test: its bus, log, shutdown, stream caps and connections. */
async function startStreamServer(options: { bounds?: EventStreamBounds; telemetry?: boolean }) {
  const bus = new WatchedBus()
  const logger = new RecordingLogger()
  const shutdown = new AbortController()
  const config = parseConfig({ MAX_STREAMS_PER_PRINCIPAL: String(CAP) })
  const limits = new StreamLimits(config.streamLimits)
  const handler = createMcpHandler({
    server: notesServer,
    deps: { notes: store, bus, baseUrl: 'http://127.0.0.1', now: Date.now },
    sealer,
    bus,
    logger,
    shutdown: shutdown.signal,
    streamLimits: limits,
    listen: options.bounds,
    legacy: { sessions: engineStore, stream: options.bounds },
    telemetry: options.telemetry ? otelTelemetry() : undefined,
  })
  const app = createHttpApp({ config, handler })
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }) as Server
  await once(server, 'listening')
  const port = (server.address() as net.AddressInfo).port
  /** The server's side of each connection, and the response it writes there, by client port. */
  const connections = new Map<number, net.Socket>()
  const responses = new Map<number, ServerResponse>()
  server.on('connection', (socket: net.Socket) => connections.set(socket.remotePort!, socket))
  server.on('request', (request, response: ServerResponse) => {
    responses.set(request.socket.remotePort!, response)
  })
  const serverSide = (client: RawClient) => connections.get(client.socket.localPort!)
  const running = {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    bus,
    logger,
    shutdown,
    app,
    publish(count: number, event: () => ServerEvent = listChanged) {
      for (let index = 0; index < count; index++) bus.publish(event())
    },
    /** How many more streams the local principal may open now (each slot taken is given back). */
    freeSlots(): number {
      const taken: StreamSlot[] = []
      try {
        while (taken.length <= CAP)
          taken.push(limits.acquire({ principal: LOCAL_PRINCIPAL }, 'listen'))
      } catch {
        // the cap
      }
      for (const slot of taken) slot.release()
      return taken.length
    },
    /** Resolves once the server's side of `client`'s connection has closed, bounded. */
    async closedTo(client: RawClient, what: string): Promise<void> {
      const socket = serverSide(client)
      expect(socket, 'the server saw the connection').toBeDefined()
      if (!socket!.destroyed) await within(closeOf(socket!), what)
    },
    /** Whether the server's writes to `client` wait for it to read (its buffers are full). */
    backedUp: (client: RawClient) =>
      responses.get(client.socket.localPort!)?.writableNeedDrain === true,
    /** How many of the server's connections to `of` are still open. */
    openTo: (of: RawClient[]) =>
      of.filter((client) => serverSide(client)?.destroyed === false).length,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  servers.push(running)
  return running
}
type StreamServer = Awaited<ReturnType<typeof startStreamServer>>

/**
 * One HTTP/1.1 request on a socket of its own, the answer kept as text. Unless `reading`, the client
 * stops reading after the first bytes of the answer, as a client that hangs does, until `read()`.
 */
class RawClient {
  readonly socket: net.Socket
  #text = ''
  #reading: boolean
  readonly #changes = new Conditions()

  constructor(port: number, request: string, reading: boolean) {
    this.#reading = reading
    this.socket = net.connect(port, '127.0.0.1')
    this.socket.on('error', () => {}) // a connection reset is one of the ends the tests wait for
    this.socket.on('data', (chunk: Buffer) => {
      this.#text += chunk.toString('latin1')
      if (!this.#reading) this.socket.pause()
      this.#changes.changed()
    })
    this.socket.on('close', () => this.#changes.changed())
    this.socket.write(request)
    clients.push(this)
  }

  get text(): string {
    return this.#text
  }

  /** The body of the answer so far, without its chunked framing (sizes count bytes: latin1). */
  body(): string {
    let rest = this.#text.slice(this.#text.indexOf('\r\n\r\n') + 4)
    let body = ''
    for (let line = rest.indexOf('\r\n'); line > 0; line = rest.indexOf('\r\n')) {
      const size = Number.parseInt(rest.slice(0, line), 16)
      if (!(size > 0) || rest.length < line + 2 + size) break
      body += rest.slice(line + 2, line + 2 + size)
      rest = rest.slice(line + 4 + size)
    }
    return body
  }

  /** The SSE messages of the answer so far. */
  messages(): JsonObject[] {
    return parseSse(this.body())
  }

  /** Reads again, as a hung client that comes back does. */
  read(): void {
    this.#reading = true
    this.socket.resume()
  }

  /** Resolves once `done` holds of what was received, bounded (and fails if the socket closed first). */
  async until(done: (text: string) => boolean, what: string): Promise<string> {
    await this.#changes.until(() => done(this.#text) || this.socket.destroyed, what)
    expect(done(this.#text), `${what}; received: ${this.#text.slice(0, 300)}`).toBe(true)
    return this.#text
  }

  async status(): Promise<number> {
    const text = await this.until(
      (received) => /^HTTP\/1\.1 \d{3} /.test(received),
      'a status line'
    )
    return Number(text.slice(9, 12))
  }

  /** Reads to the end of the connection, bounded. */
  async readToClose(what: string): Promise<string> {
    this.read()
    if (!this.socket.destroyed) await within(closeOf(this.socket), what)
    return this.#text
  }
}

/** A socket's `close`, whether or not an `error` came first (a dropped stream's socket has one). */
const closeOf = (socket: net.Socket) =>
  new Promise<void>((resolve) => socket.once('close', () => resolve()))

/** A request as its bytes on the wire. */
function rawRequest(method: string, init: RequestInit): string {
  const lines = [`${method} /mcp HTTP/1.1`]
  for (const [name, value] of new Headers(init.headers)) lines.push(`${name}: ${value}`)
  return `${lines.join('\r\n')}\r\n\r\n${(init.body as string | undefined) ?? ''}`
}

let nextId = 0
const listenRequest = () =>
  rawRequest(
    'POST',
    mcpInit('subscriptions/listen', {
      id: `listen-${++nextId}`,
      params: { notifications: { resourcesListChanged: true } },
    })
  )

/** A listen stream, accepted; its client reads nothing after the status line unless `reading`. */
async function openListen(server: StreamServer, reading = false) {
  const client = new RawClient(server.port, listenRequest(), reading)
  expect(await client.status()).toBe(200)
  return client
}

/** A 2025 session's GET stream, accepted; its client reads nothing after the status line. */
async function openGet(server: StreamServer) {
  const { session } = await startSession(server.app)
  const headers = {
    host: '127.0.0.1',
    accept: 'text/event-stream',
    [HEADER_SESSION_ID]: session.id,
    [HEADER_PROTOCOL_VERSION]: session.protocolVersion,
  }
  const client = new RawClient(server.port, rawRequest('GET', { headers }), false)
  expect(await client.status()).toBe(200)
  return client
}

/** The status a listen request is answered with (a refusal: the cap holds). */
async function listenStatus(server: StreamServer): Promise<number> {
  const client = new RawClient(server.port, listenRequest(), true)
  const status = await client.status()
  client.socket.destroy()
  return status
}

/**
 * Publishes a batch of events per turn of the event loop (the server writes in between, as fast as
 * each client takes) until `done`, bounded in turns.
 */
async function publishUntil(server: StreamServer, done: () => boolean, what: string) {
  for (let turn = 0; !done(); turn++) {
    expect(turn, `publishing until ${what}`).toBeLessThan(MAX_TURNS)
    server.publish(BATCH)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Fills every buffer between the server and `unread`, up to the stream's own queue. */
async function fillBuffers(server: StreamServer, unread: RawClient) {
  await publishUntil(server, () => server.backedUp(unread), 'the server’s writes back up')
  // The stream's own queue fills too: a batch is more than a queue holds, less than a backlog.
  server.publish(BATCH)
  expect(server.logger.warnings).toEqual([])
}

const endedAsHttpMeans = (text: string) => text.endsWith(LAST_CHUNK)

const STREAM_KINDS = ['listen', 'get'] as const
const OPEN = { listen: (server: StreamServer) => openListen(server), get: openGet }
/** How each kind of stream ends gracefully: the listen result, or the GET stream's SSE `retry`. */
const expectEnd = {
  listen: (client: RawClient) =>
    expect(client.messages().at(-1)).toMatchObject({ result: { resultType: 'complete' } }),
  get: (client: RawClient) => expect(client.body().endsWith('\n\nretry: 1000\n\n')).toBe(true),
}

for (const telemetry of [false, true]) {
  describe(`held-open streams over real sockets${telemetry ? ', counted by telemetry' : ''}`, () => {
    it(
      `closes the connection of every stream that fell behind: ${ROUNDS} rounds of ${CAP} unread streams never hold more than ${CAP} connections`,
      async () => {
        const server = await startStreamServer({ telemetry })
        const opened: RawClient[] = []
        for (let round = 0; round < ROUNDS; round++) {
          const unread = [
            await openListen(server),
            await openListen(server),
            await openGet(server),
            await openGet(server),
          ]
          opened.push(...unread)
          expect(server.openTo(opened)).toBe(CAP)
          expect(await listenStatus(server)).toBe(TOO_MANY_STREAMS)

          const before = server.logger.count(BEHIND)
          await publishUntil(
            server,
            () => server.logger.count(BEHIND) - before === CAP,
            'every unread stream falls behind'
          )
          for (const client of unread) {
            await server.closedTo(
              client,
              `round ${round}: the server closing a stream fallen behind`
            )
          }
          expect(server.openTo(opened)).toBe(0)
          expect(server.freeSlots()).toBe(CAP)
          // The kernel buffers of these clients are full: free them (the first client is read below).
          for (const client of unread) if (client !== opened[0]) client.socket.destroy()
        }
        expect(server.logger.warnings.map((warning) => warning.fields?.stream)).toEqual(
          Array.from({ length: ROUNDS }, () => ['listen', 'listen', 'get', 'get']).flat()
        )
        // The client, back, finds its stream broken off rather than ended (no listen result, no
        // last chunk), which a client treats as a reason to reconnect and re-read.
        const dropped = opened[0]!
        expect(endedAsHttpMeans(await dropped.readToClose('the end of a dropped connection'))).toBe(
          false
        )
        expect(dropped.messages().some((message) => 'result' in message)).toBe(false)
        expect(printed).toHaveBeenCalled()
        expectOnlyDropsPrinted()
      },
      ROUNDS_TIMEOUT_MS
    )

    // One unread stream per test: every stream of a principal hears its events, and one whose
    // writes back up first would fall behind while another's buffers were still filling.
    for (const kind of STREAM_KINDS) {
      it(`keeps the slot of a ${kind} stream ended at shutdown until its client has read the end`, async () => {
        const server = await startStreamServer({ telemetry, bounds: { endGraceMs: NEVER_MS } })
        const unread = await OPEN[kind](server)
        const reading = [await openListen(server, true), await openListen(server, true)]
        await fillBuffers(server, unread)

        server.shutdown.abort()
        // The clients that read get the end of their streams, and their slots are free again.
        for (const client of reading) {
          await client.until(endedAsHttpMeans, 'a reading client getting the end of its stream')
          expectEnd.listen(client)
        }
        expect(server.freeSlots()).toBe(CAP - 1)
        expect(server.openTo([unread])).toBe(1)

        // Back to reading, the other gets its end, and then its slot is free too.
        unread.read()
        await unread.until(endedAsHttpMeans, `the end of the ${kind} stream`)
        expectEnd[kind](unread)
        expect(server.freeSlots()).toBe(CAP)
        expect(server.logger.warnings).toEqual([])
      })

      it(`drops a ${kind} stream ended at shutdown whose client does not read the end within the grace period, and only then frees its slot`, async () => {
        const server = await startStreamServer({
          telemetry,
          bounds: { endGraceMs: SHORT_GRACE_MS },
        })
        const unread = await OPEN[kind](server)
        await fillBuffers(server, unread)

        server.shutdown.abort()
        expect(server.freeSlots()).toBe(CAP - 1)
        await server.closedTo(unread, 'the server dropping a stream whose end went unread')
        expect(server.logger.warnings).toEqual([
          {
            message: END_UNREAD,
            fields: {
              ...(kind === 'get' ? { session: expect.any(String) } : {}),
              stream: kind,
              reason: 'end_unread',
              queuedBytes: expect.any(Number),
              endGraceMs: SHORT_GRACE_MS,
            },
          },
        ])
        expect(server.logger.warnings[0]!.fields!.queuedBytes).toBeGreaterThan(0)
        expect(server.freeSlots()).toBe(CAP)
        const text = await unread.readToClose('the end of a dropped connection')
        expect(endedAsHttpMeans(text)).toBe(false)
        expectOnlyDropsPrinted()
      })
    }
  })
}

describe('a v1 SDK host (1.32.x) whose GET stream the server dropped', () => {
  it('reconnects its GET stream and hears the next update on it', async () => {
    const server = await startStreamServer({})
    const note = await store.create(LOCAL_PRINCIPAL, { title: 'Watched', body: '', tags: [] }, 1)
    const uri = noteUri(note.id)
    const host = await connectLegacyHost(server.url)
    try {
      await server.bus.subscribed(1, 'the host’s GET stream to open')
      await host.client.subscribeResource({ uri })

      server.publish(FLOOD)
      expect(server.logger.warnings).toEqual([
        { message: BEHIND, fields: expect.objectContaining({ stream: 'get' }) },
      ])
      await server.bus.subscribed(2, 'the host to open its GET stream again')
      server.bus.publish({ kind: 'resource_updated', uri, principal: LOCAL_PRINCIPAL })
      expect(
        (await host.hear('notifications/resources/updated', (params) => params.uri === uri)).params
      ).toEqual({ uri })
    } finally {
      await host.close()
    }
  })
})
