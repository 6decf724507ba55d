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
 */
import { runLegacyFlows } from './legacy-flow.ts'
import type { Driver, FlowContext, LoadStep } from './load.ts'
import {
  isAccepted,
  isEchoResult,
  isInitializeResult,
  isLegacyEcho,
  isProgressStream,
  isRound2Result,
  isSearchResult,
  isToolList,
  legacyRequests,
  requests,
  round1State,
  HEADER_SESSION_ID,
  type HttpRequest,
  type HttpResponse,
} from './wire.ts'

export type ServerKind = 'bare' | 'ours' | 'sdk'
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
  const init = await probe(url, legacyRequests.initialize(), isInitializeResult)
  if (kind === 'ours' && init.sessionId === undefined) {
    throw new ProbeError('initialize answered without an Mcp-Session-Id')
  }
  await probe(url, legacyRequests.initialized(init.sessionId), isAccepted)
  return init.sessionId
}

/** A tools/call echo in a session opened on `url` by hand, checked once; answers the request. */
async function legacyEchoInSession(url: string, kind: ServerKind): Promise<HttpRequest> {
  const request = legacyRequests.echo(await openSession(url, kind))
  await probe(url, request, isLegacyEcho)
  return request
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'tools_call',
    description: 'tools/call echo (JSON answer)',
    unit: 'request',
    servers: ['bare', 'ours', 'sdk'],
    prepare: single(requests.echo(), isEchoResult),
  },
  {
    name: 'tools_list',
    description: 'tools/list (four tools)',
    unit: 'request',
    servers: ['bare', 'ours', 'sdk'],
    prepare: single(requests.list(), isToolList),
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
      '2025-11-25 client start: initialize, notifications/initialized, tools/call echo with the session id (flows/s)',
    unit: 'flow',
    servers: ['ours', 'sdk'],
    needsNotes: true,
    async prepare(url, kind) {
      await legacyEchoInSession(url, kind)
      const session = (context: FlowContext) =>
        typeof context.session === 'string' ? context.session : undefined
      return [
        {
          request: legacyRequests.initialize(),
          check(response: HttpResponse, context: FlowContext) {
            context.session = response.sessionId
            return (
              isInitializeResult(response) && (kind !== 'ours' || response.sessionId !== undefined)
            )
          },
        },
        {
          request: (context: FlowContext) => legacyRequests.initialized(session(context)),
          check: isAccepted,
        },
        {
          request: (context: FlowContext) => legacyRequests.echo(session(context)),
          check: (response) => isLegacyEcho(response),
          completesFlow: true,
        },
      ]
    },
  },
  {
    name: 'legacy_mrtr_flow',
    description:
      '2025-11-25 interactive flow: tools/call confirm_echo, elicitation/create on its SSE stream, the answer POSTed, the result (SDK: sessionful legacy shim, sticky)',
    unit: 'flow',
    servers: ['ours', 'sdk'],
    sdkEnv: { BENCH_SDK_LEGACY: 'sessions' },
    needsNotes: true,
    async prepare(url, kind) {
      await openSession(url, kind)
      return runLegacyFlows
    },
  },
  {
    name: 'workerd_tools_call',
    description: 'tools/call echo on workerd (Worker builds, workerd serve)',
    unit: 'request',
    servers: ['bare', 'ours', 'sdk'],
    runtime: 'workerd',
    prepare: single(requests.echo(), isEchoResult),
  },
  {
    name: 'workerd_mrtr_flow',
    description: 'complete MRTR flow on workerd (Worker builds, workerd serve; flows/s)',
    unit: 'flow',
    servers: ['ours', 'sdk'],
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
  },
]
