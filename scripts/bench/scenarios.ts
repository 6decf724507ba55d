/**
 * @module scripts/bench/scenarios
 * What is measured: each scenario names the servers it runs on (and the runtime: Node, or workerd for
 * the Worker builds), how one connection's cycle of requests looks, and how each response is
 * checked. `prepare` runs once against a freshly started server before any load — it sends the
 * scenario's first request by hand and checks it (a server that fails here is reported, not loaded),
 * and mints what a replayed request needs (the round-2 scenario replays one `requestState` minted
 * this way; with our server it stays valid for the state TTL, 600 s, and only for the same principal,
 * tool and arguments, which the replay keeps; the 2025-era call replays one session opened this
 * way). It answers autocannon's steps, or a driver of its own for exchanges autocannon cannot express
 * (`legacy-flow.ts`). The scale scenario is a different kind: streams held open, not a load
 * (`listen-scale.ts`).
 *
 * The peers (`PEERS`, one bench server each: `peer-<kind>.ts`, and `worker-agents.ts` on workerd) run
 * where they can: a peer is sent what its own clients send. For one stateless call that is the
 * 2026-07-28 request where the peer serves it (tmcp, mcp-handler, agents), and otherwise a 2025-11-25
 * POST without a session (fastmcp and @hono/mcp speak only the 2025 revisions); 2025-era sessions are
 * opened in the latest revision the server negotiates (tmcp stops at 2025-06-18). A peer missing from
 * a scenario cannot do it (its server file says why).
 */
import { runLegacyFlows } from './legacy-flow.ts'
import type { Driver, FlowContext, LoadStep } from './load.ts'
import {
  isAccepted,
  isEchoResult,
  isEchoResultJsonOrSse,
  isInitializeResult,
  isLegacyEcho,
  isLegacyToolList,
  isProgressStream,
  isRound2Result,
  isSearchResult,
  isToolList,
  isToolListJsonOrSse,
  legacyRequests,
  legacyRequestsFor,
  requests,
  round1State,
  HEADER_SESSION_ID,
  LEGACY_PROTOCOL_VERSION,
  OLDER_LEGACY_PROTOCOL_VERSION,
  type HttpRequest,
  type HttpResponse,
  type LegacyVersion,
} from './wire.ts'

/** The MCP server libraries a team would pick instead of ours; `agents` runs on workerd only. */
export const PEERS = ['fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp', 'agents'] as const
export type PeerKind = (typeof PEERS)[number]
export type ServerKind = 'bare' | 'ours' | 'sdk' | PeerKind

export function isPeer(kind: string): kind is PeerKind {
  return (PEERS as readonly string[]).includes(kind)
}

/** The Node bench server of a kind, a file in `scripts/bench`. */
export function nodeEntry(kind: ServerKind): string {
  return isPeer(kind) ? `peer-${kind}.ts` : `${kind}.ts`
}
export type Runtime = 'node' | 'workerd'

interface ScenarioBase {
  name: string
  description: string
  servers: ServerKind[]
  /** Where the servers run: Node processes (default), or their Worker builds on workerd. */
  runtime?: Runtime
  /** Extra environment for our server (e.g. the real notes application). */
  oursEnv?: Record<string, string>
  /** Extra environment for the SDK's server (e.g. its sessionful 2025-era wiring). */
  sdkEnv?: Record<string, string>
  /** Extra environment for the peers' servers (e.g. their sessionful 2025-era wiring). */
  peerEnv?: Record<string, string>
  /** Needs the seeded notes database. */
  needsNotes?: boolean
  /**
   * Runs only when this file exists (relative to the repository root); a server that then fails to
   * start makes the scenario skipped (with the reason), while wrong answers still count as errors.
   */
  requiresFile?: string
}

/** Throughput under load: requests per second, or completed flows per second. */
export interface LoadScenario extends ScenarioBase {
  /** `flow`: the headline figure is completed flows per second, not requests. */
  unit: 'request' | 'flow'
  prepare(url: string, kind: ServerKind): Promise<LoadStep[] | Driver>
}

/** Many `subscriptions/listen` streams held open on one process: memory per stream, delivery time. */
export interface ScaleScenario extends ScenarioBase {
  unit: 'streams'
  streams: number
  changes: number
  /** The most streams a server can hold, where it has a cap: it runs at that size when asked more. */
  maxStreams?: Partial<Record<ServerKind, number>>
}

export type Scenario = LoadScenario | ScaleScenario

const PROBE_TIMEOUT_MS = 10_000

/** Sends one request with fetch (loopback, bounded in time) and reads the whole answer. */
export async function send(url: string, request: HttpRequest): Promise<HttpResponse> {
  const response = await fetch(url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
  })
  const sessionId = response.headers.get(HEADER_SESSION_ID)
  return {
    status: response.status,
    contentType: (response.headers.get('content-type') ?? '').toLowerCase(),
    body: await response.text(),
    ...(sessionId !== null && { sessionId }),
  }
}

export class ProbeError extends Error {
  override name = 'ProbeError'
}

async function probe(url: string, request: HttpRequest, check: (r: HttpResponse) => boolean) {
  const response = await send(url, request)
  if (!check(response)) {
    throw new ProbeError(
      `unexpected answer: HTTP ${response.status} ${response.contentType}: ${response.body.slice(0, 400)}`
    )
  }
  return response
}

/** A scenario of one fixed request per cycle whose answer is always the same. */
function single(request: HttpRequest, check: (r: HttpResponse) => boolean) {
  return async (url: string): Promise<LoadStep[]> => {
    await probe(url, request, check)
    return [{ request, check, deterministic: true }]
  }
}

interface Call {
  request: HttpRequest
  check: (response: HttpResponse) => boolean
}

/** Peers that speak only the 2025 revisions: one stateless call is a 2025 POST without a session. */
const LEGACY_ONLY: readonly ServerKind[] = ['fastmcp', 'hono-mcp']
/** Peers that answer a 2026-07-28 call on a one-message SSE stream rather than JSON. */
const SSE_ANSWERS: readonly ServerKind[] = ['tmcp']

/** One stateless `tools/call` echo as `kind`'s own clients send it, and its check. */
function echoCall(kind: ServerKind): Call {
  if (LEGACY_ONLY.includes(kind)) {
    return { request: legacyRequests.echo(undefined, 1), check: (r) => isLegacyEcho(r, 1) }
  }
  return {
    request: requests.echo(),
    check: SSE_ANSWERS.includes(kind) ? isEchoResultJsonOrSse : isEchoResult,
  }
}

/** One stateless `tools/list` as `kind`'s own clients send it, and its check. */
function listCall(kind: ServerKind): Call {
  if (LEGACY_ONLY.includes(kind)) {
    return { request: legacyRequests.list(undefined, 1), check: (r) => isLegacyToolList(r, 1) }
  }
  return {
    request: requests.list(),
    check: SSE_ANSWERS.includes(kind) ? isToolListJsonOrSse : isToolList,
  }
}

/** A `single` scenario whose request depends on the server (`echoCall`, `listCall`). */
function singleCall(call: (kind: ServerKind) => Call) {
  return (url: string, kind: ServerKind): Promise<LoadStep[]> => {
    const { request, check } = call(kind)
    return single(request, check)(url)
  }
}

/** The latest 2025 revision `kind` negotiates, which its 2025-era clients then speak. */
function legacyVersionOf(kind: ServerKind): LegacyVersion {
  return kind === 'tmcp' ? OLDER_LEGACY_PROTOCOL_VERSION : LEGACY_PROTOCOL_VERSION
}

const hasState = (response: HttpResponse) => round1State(response) !== undefined

/** The complete MRTR flow: round 1, its `requestState` carried into round 2 (the same on any runtime). */
async function mrtrFlow(url: string): Promise<LoadStep[]> {
  const state = round1State(await probe(url, requests.confirmRound1(), hasState)) as string
  await probe(url, requests.confirmRound2(state), isRound2Result)
  return [
    {
      request: requests.confirmRound1(),
      check(response: HttpResponse, context: FlowContext) {
        const minted = round1State(response)
        context.state = minted
        return minted !== undefined
      },
    },
    {
      request: (context: FlowContext) =>
        typeof context.state === 'string' ? requests.confirmRound2(context.state) : undefined,
      check: isRound2Result,
      deterministic: true,
      completesFlow: true,
    },
  ]
}

/**
 * Opens a 2025-era session by hand (`initialize`, `notifications/initialized`) and answers its id.
 * Ours must issue one (the sealed `Mcp-Session-Id`); the SDK's stateless fallback issues none.
 */
async function openSession(url: string, kind: ServerKind): Promise<string | undefined> {
  const version = legacyVersionOf(kind)
  const legacy = legacyRequestsFor(version)
  const init = await probe(url, legacy.initialize(), (r) => isInitializeResult(r, version))
  if (kind === 'ours' && init.sessionId === undefined) {
    throw new ProbeError('initialize answered without an Mcp-Session-Id')
  }
  await probe(url, legacy.initialized(init.sessionId), isAccepted)
  return init.sessionId
}

/** A tools/call echo in a session opened on `url` by hand, checked once; answers the request. */
async function legacyEchoInSession(url: string, kind: ServerKind): Promise<HttpRequest> {
  const session = await openSession(url, kind)
  const request = legacyRequestsFor(legacyVersionOf(kind)).echo(session)
  await probe(url, request, isLegacyEcho)
  return request
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'tools_call',
    description:
      'tools/call echo, one stateless call (peers of the 2025 revisions: a 2025-11-25 POST without session)',
    unit: 'request',
    servers: ['bare', 'ours', 'sdk', 'fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp'],
    prepare: singleCall(echoCall),
  },
  {
    name: 'tools_list',
    description:
      'tools/list (four tools), one stateless call (peers of the 2025 revisions: a 2025-11-25 POST without session)',
    unit: 'request',
    servers: ['bare', 'ours', 'sdk', 'fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp'],
    prepare: singleCall(listCall),
  },
  {
    name: 'mrtr_round1',
    description: 'MRTR round 1: confirm_echo answers input_required with a sealed requestState',
    unit: 'request',
    servers: ['ours', 'sdk'],
    async prepare(url) {
      const request = requests.confirmRound1()
      await probe(url, request, hasState)
      return [{ request, check: hasState }]
    },
  },
  {
    name: 'mrtr_round2',
    description: 'MRTR round 2: one requestState minted up front, replayed with the answer',
    unit: 'request',
    servers: ['ours', 'sdk'],
    async prepare(url) {
      const state = round1State(await probe(url, requests.confirmRound1(), hasState)) as string
      const request = requests.confirmRound2(state)
      await probe(url, request, isRound2Result)
      return [{ request, check: isRound2Result, deterministic: true }]
    },
  },
  {
    name: 'mrtr_flow',
    description: 'complete MRTR flow: round 1, read requestState, round 2 (flows/s)',
    unit: 'flow',
    servers: ['ours', 'sdk'],
    prepare: mrtrFlow,
  },
  {
    name: 'sse_progress',
    description: 'tools/call with 3 progress notifications, answered as SSE',
    unit: 'request',
    servers: ['ours', 'sdk'],
    prepare: single(requests.progress(), isProgressStream),
  },
  {
    name: 'notes_search',
    description: 'search_notes over 10,000 notes in SQLite (first page of 10 hits)',
    unit: 'request',
    servers: ['ours', 'sdk'],
    needsNotes: true,
    prepare: single(requests.search(), isSearchResult),
  },
  {
    name: 'notes_search_app',
    description: 'the real notes server (src/app.ts): search_notes over the same 10,000 notes',
    unit: 'request',
    servers: ['ours'],
    oursEnv: { BENCH_APP: 'notes' },
    needsNotes: true,
    requiresFile: 'src/notes/server.ts',
    prepare: single(requests.search(), isSearchResult),
  },
  {
    name: 'legacy_tools_call',
    description:
      '2025-11-25 tools/call echo in an open session (ours: sealed Mcp-Session-Id; SDK: its stateless legacy fallback)',
    unit: 'request',
    servers: ['ours', 'sdk'],
    needsNotes: true,
    prepare: async (url, kind) => [
      {
        request: await legacyEchoInSession(url, kind),
        check: (response) => isLegacyEcho(response),
        deterministic: true,
      },
    ],
  },
  {
    name: 'legacy_session',
    description:
      '2025-11-25 client start (tmcp: 2025-06-18, its latest): initialize, notifications/initialized, tools/call echo with the session id if one was issued (flows/s)',
    unit: 'flow',
    servers: ['ours', 'sdk', 'fastmcp', 'tmcp', 'mcp-handler', 'hono-mcp'],
    needsNotes: true,
    async prepare(url, kind) {
      await legacyEchoInSession(url, kind)
      const version = legacyVersionOf(kind)
      const legacy = legacyRequestsFor(version)
      const session = (context: FlowContext) =>
        typeof context.session === 'string' ? context.session : undefined
      return [
        {
          request: legacy.initialize(),
          check(response: HttpResponse, context: FlowContext) {
            context.session = response.sessionId
            return (
              isInitializeResult(response, version) &&
              (kind !== 'ours' || response.sessionId !== undefined)
            )
          },
        },
        {
          request: (context: FlowContext) => legacy.initialized(session(context)),
          check: isAccepted,
        },
        {
          request: (context: FlowContext) => legacy.echo(session(context)),
          check: (response) => isLegacyEcho(response),
          completesFlow: true,
        },
      ]
    },
  },
  {
    name: 'legacy_mrtr_flow',
    description:
      '2025-11-25 interactive flow: tools/call confirm_echo, elicitation/create on its SSE stream, the answer POSTed, the result (SDK, tmcp, @hono/mcp: sessions in one process, sticky)',
    unit: 'flow',
    servers: ['ours', 'sdk', 'tmcp', 'hono-mcp'],
    sdkEnv: { BENCH_SDK_LEGACY: 'sessions' },
    peerEnv: { BENCH_PEER_LEGACY: 'sessions' },
    needsNotes: true,
    async prepare(url, kind) {
      await openSession(url, kind)
      return (options) => runLegacyFlows(options, legacyVersionOf(kind))
    },
  },
  {
    name: 'workerd_tools_call',
    description: 'tools/call echo on workerd (Worker builds, workerd serve)',
    unit: 'request',
    servers: ['bare', 'ours', 'sdk', 'agents'],
    runtime: 'workerd',
    prepare: singleCall(echoCall),
  },
  {
    name: 'workerd_mrtr_flow',
    description: 'complete MRTR flow on workerd (Worker builds, workerd serve; flows/s)',
    unit: 'flow',
    servers: ['ours', 'sdk', 'agents'],
    runtime: 'workerd',
    prepare: mrtrFlow,
  },
  {
    name: 'listen_scale',
    description:
      'concurrent subscriptions/listen streams on one process (ours: the notes server): memory per stream, change → notification on every stream',
    unit: 'streams',
    servers: ['ours', 'sdk'],
    needsNotes: true,
    oursEnv: { BENCH_APP: 'notes' },
    requiresFile: 'src/notes/server.ts',
    streams: 1000,
    changes: 20,
    // The SDK refuses more than 1,024 streams per handler: past that it is compared at 1,000.
    maxStreams: { sdk: 1000 },
  },
]
