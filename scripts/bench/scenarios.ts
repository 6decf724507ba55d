/**
 * @module scripts/bench/scenarios
 * What is measured: each scenario names the servers it runs on, how one connection's cycle of
 * requests looks, and how each response is checked. `prepare` runs once against a freshly started
 * server before any load — it sends the scenario's first request by hand and checks it (a server
 * that fails here is reported, not loaded), and mints what a replayed request needs (the round-2
 * scenario replays one `requestState` minted this way; with our server it stays valid for the
 * state TTL, 600 s, and only for the same principal, tool and arguments, which the replay keeps).
 */
import type { FlowContext, LoadStep } from './load.ts'
import {
  isEchoResult,
  isProgressStream,
  isRound2Result,
  isSearchResult,
  isToolList,
  requests,
  round1State,
  type HttpRequest,
  type HttpResponse,
} from './wire.ts'

export type ServerKind = 'bare' | 'ours' | 'sdk'

export interface Scenario {
  name: string
  description: string
  /** `flow`: the headline figure is completed flows per second, not requests. */
  unit: 'request' | 'flow'
  servers: ServerKind[]
  /** Extra environment for our server (e.g. the real notes application). */
  oursEnv?: Record<string, string>
  /** Needs the seeded notes database. */
  needsNotes?: boolean
  /**
   * Runs only when this file exists (relative to the repository root); a server that then fails to
   * start makes the scenario skipped (with the reason), while wrong answers still count as errors.
   */
  requiresFile?: string
  prepare(url: string): Promise<LoadStep[]>
}

const PROBE_TIMEOUT_MS = 10_000

/** Sends one request with fetch (loopback, bounded in time) and reads the whole answer. */
export async function send(url: string, request: HttpRequest): Promise<HttpResponse> {
  const response = await fetch(url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
  })
  return {
    status: response.status,
    contentType: (response.headers.get('content-type') ?? '').toLowerCase(),
    body: await response.text(),
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
    async prepare(url) {
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
    },
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
]
