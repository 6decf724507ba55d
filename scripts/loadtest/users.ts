/**
 * @module scripts/loadtest/users
 * The virtual users of a load-test run. Each one loops, until the deadline or the request cap, over
 * three complete flows driven by the project's client driver (`src/client/`), one at a time:
 * - `create_delete`: `create_note`, then `delete_note` with its confirmation round accepted;
 * - `bulk_delete`: 3–5 notes under a tag of the flow's own, then the three rounds of
 *   `delete_notes_by_tag`, selecting some and keeping the others;
 * - `declined_delete`: `create_note`, then `delete_note` declined — the note must survive.
 * Every answer the server gives is checked against what the flow asked for, and every note goes
 * into the ledger (`FlowRecord`) with what the store must hold at the end (`verify.ts` checks it).
 *
 * Routing: in direct mode the driver's `urls()` hands each attempt the next replica in the user's
 * rotation, skipping the replica that served the call's previous round (always) and, for a second,
 * any replica whose attempt just failed, so every later round goes to another replica and a round
 * whose replica died goes on to a live one when there is one. In balanced mode every attempt goes
 * to nginx; with `avoid-previous` the user names the previous round's replica in
 * a header (see `nginx-config.ts`). `onRound` reads who served each attempt from `X-Replica`.
 *
 * Retries: rounds of interactive calls are re-sent by the driver after a transport failure
 * (`transportRetries`): the first rounds only read, and the final rounds' side effects are keyed by
 * the sealed state's single-use nonce, so a re-sent final round acts once. `create_note` has no
 * such key, so it is never re-sent blindly: after a transport failure the user waits for anything
 * in flight to settle, looks for the note by its unique title under the flow's unique tag, and
 * creates it again only when it is not there.
 */
import {
  McpClient,
  McpClientError,
  McpDriverError,
  type ElicitRequestParams,
  type ElicitResult,
  type InputContext,
  type RoundInfo,
} from '../../src/client/index.ts'
import type { CallToolResult, JsonObject } from '../../src/mcp/wire.ts'
import { FLOW_KINDS, type FlowKind, type LatencyLabel, type Metrics } from './metrics.ts'
import { PREVIOUS_REPLICA_HEADER } from './nginx-config.ts'

/** Bound on one tool call, every round, pause and retry included. */
const CALL_TIMEOUT_MS = 30_000
/**
 * Re-sends of one round after transport failures. With the driver's backoff (50 ms doubling to
 * 250 ms) that is about 4.6 s, longer than a killed replica stays away (direct mode with two replicas
 * waits for the one that did not serve the previous round).
 */
const TRANSPORT_RETRIES = 20
/** Attempts at one `create_note` (each after the search found nothing). */
const CREATE_ATTEMPTS = 6
/** Direct mode: after a transport failure, the user leaves that replica alone this long. */
const DOWN_MS = 1_000
/** Pause after a failed `create_note` before searching: lets a write in flight commit. */
const CREATE_SETTLE_MS = 500
/**
 * Requests per user the flows in flight may still send once the request cap stopped new flows (a
 * flow normally sends 2 to 9); beyond that the cap is hard and the call fails.
 */
const CAP_HEADROOM_PER_USER = 200
/** Notes of one `bulk_delete` flow: 3 to 5. */
const BULK_MIN_NOTES = 3

export type Expectation = 'present' | 'absent' | 'unsettled'

export interface LedgerNote {
  title: string
  body: string
  tags: string[]
  /** Known once the create answered, or once a search found the note after a lost answer. */
  id?: string
  /** What the store must hold at the end; `unsettled` when the flow failed before it knew. */
  expect: Expectation
}

export interface FlowRecord {
  kind: FlowKind
  user: number
  seq: number
  /** Unique to the flow: every note of the flow carries it. */
  tag: string
  notes: LedgerNote[]
  completed: boolean
  error?: string
}

export interface Endpoint {
  id: string
  url: string
}

export interface UserSetup {
  runId: string
  /** The replicas, for direct mode. */
  replicas: Endpoint[]
  /** nginx, for balanced mode. */
  balancer?: { url: string; avoidPrevious: boolean }
  /** `performance.now()` after which no flow starts. */
  deadline: number
  /** No flow starts once this many requests were sent; none is sent past it plus a headroom. */
  maxRequests: number
  /** How many users run (for the headroom of the request cap). */
  users: number
  /** The run's watchdog: aborts every call in flight. */
  signal: AbortSignal
  metrics: Metrics
  ledger: FlowRecord[]
}

/** The server answered, but not what the flow asked for. `kind` names it in the summary. */
class WrongOutcome extends Error {
  override name = 'WrongOutcome'
  readonly kind: string
  constructor(kind: string, message: string) {
    super(message)
    this.kind = kind
  }
}

type Answerer = (params: ElicitRequestParams, ctx: InputContext) => Promise<ElicitResult>
type CallLabel = 'create_note' | 'search_notes' | 'flow'

interface BulkOutcome {
  outcome: string
  deleted: Array<{ id: string }>
  kept: Array<{ id: string }>
  alreadyGone: Array<{ id: string }>
}

function textOf(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

function expectText(result: CallToolResult, expected: string): void {
  const text = textOf(result)
  if (result.isError || text !== expected) {
    throw new WrongOutcome(
      result.isError ? 'tool_error' : 'wrong_outcome',
      `expected "${expected}", got ${result.isError ? 'an error: ' : ''}"${text.slice(0, 200)}"`
    )
  }
}

function sortedIds(notes: Array<{ id?: string }>): string {
  return notes
    .map((note) => note.id ?? '?')
    .sort()
    .join(',')
}

function plural(count: number): string {
  return count === 1 ? '1 note' : `${count} notes`
}

function isTransportFailure(error: unknown): boolean {
  return error instanceof McpDriverError && error.reason === 'transport'
}

/** The kind an error is counted under in the summary's `errors`. */
function errorKind(error: unknown): string {
  if (error instanceof WrongOutcome) return error.kind
  if (error instanceof McpClientError) return `rpc_${error.code}_http_${error.httpStatus}`
  if (error instanceof McpDriverError) return `driver_${error.reason}`
  if (error instanceof Error) return error.name === 'AbortError' ? 'aborted' : error.name
  return 'unknown'
}

function describe(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return message.slice(0, 300)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

class VirtualUser {
  readonly #index: number
  readonly #setup: UserSetup
  /** Interactive calls and searches: rounds are re-sent after transport failures. */
  readonly #retrying: McpClient
  /** `create_note`: never re-sent by the driver (see the module header). */
  readonly #once: McpClient
  #cursor: number
  /** The replica that served the current call's previous round. */
  #previous: string | undefined
  #label: CallLabel = 'flow'
  /** Replica of each round of the current call (index 0 is round 1). */
  #served: string[] = []
  #attemptStart = 0
  #attemptUrl = ''
  /** Direct mode: replicas (by URL) whose last attempt failed, until when to leave them alone. */
  readonly #down = new Map<string, number>()
  #answer: Answerer | undefined

  constructor(index: number, setup: UserSetup) {
    this.#index = index
    this.#setup = setup
    this.#cursor = index % setup.replicas.length
    const common = {
      url: setup.balancer?.url ?? (setup.replicas[0] as Endpoint).url,
      urls: () => this.#endpoint(),
      headers: () => this.#headers(),
      onRound: (info: RoundInfo) => this.#onRound(info),
      timeoutMs: CALL_TIMEOUT_MS,
      clientInfo: { name: 'notes-loadtest', version: '0.1.0' },
    }
    this.#retrying = new McpClient({
      ...common,
      transportRetries: TRANSPORT_RETRIES,
      handlers: { elicit: (params, ctx) => this.#elicit(params, ctx) },
    })
    this.#once = new McpClient(common)
  }

  async run(): Promise<void> {
    const { deadline, maxRequests, metrics, signal } = this.#setup
    // Bounded by time and by the request cap: every flow sends at least two requests.
    for (let seq = 1; ; seq++) {
      if (performance.now() >= deadline || metrics.requests >= maxRequests || signal.aborted) return
      await this.#flow(FLOW_KINDS[(this.#index + seq) % FLOW_KINDS.length] as FlowKind, seq)
    }
  }

  /* Routing and observation ------------------------------------------------------------------- */

  #endpoint(): string {
    const { metrics, maxRequests, users } = this.#setup
    if (metrics.requests >= maxRequests + users * CAP_HEADROOM_PER_USER) {
      throw new WrongOutcome('request_cap', `more than ${maxRequests} requests`)
    }
    metrics.requests += 1
    const now = performance.now()
    this.#attemptStart = now
    const { balancer, replicas } = this.#setup
    if (balancer) return (this.#attemptUrl = balancer.url)
    // The next replica in rotation that did not serve the previous round and did not just fail; if
    // every other replica is down, the previous round's replica is still never chosen.
    const rotation = replicas.map(
      (_, i) => replicas[(this.#cursor + i) % replicas.length] as Endpoint
    )
    const others = rotation.filter((replica) => replica.id !== this.#previous)
    const up = others.filter((replica) => (this.#down.get(replica.url) ?? 0) <= now)
    const chosen = (up[0] ?? others[0] ?? rotation[0]) as Endpoint
    this.#cursor = (replicas.indexOf(chosen) + 1) % replicas.length
    return (this.#attemptUrl = chosen.url)
  }

  #headers(): Record<string, string> {
    const { balancer } = this.#setup
    return balancer?.avoidPrevious && this.#previous
      ? { [PREVIOUS_REPLICA_HEADER]: this.#previous }
      : {}
  }

  #onRound(info: RoundInfo): void {
    const now = performance.now()
    const { metrics } = this.#setup
    const replica = info.headers.get('x-replica') ?? undefined
    if (info.attempt === 2) metrics.retried(info.round, now)
    if (info.status >= 500) {
      if (replica) metrics.replica5xx += 1
      else metrics.gateway5xx += 1
    }
    if (!replica) {
      metrics.failedAttempts += 1
      this.#down.set(this.#attemptUrl, now + DOWN_MS)
      return
    }
    this.#down.delete(this.#attemptUrl)
    metrics.served(replica)
    this.#served[info.round - 1] = replica
    this.#previous = replica
    const label: LatencyLabel = this.#label === 'flow' ? `round_${info.round}` : this.#label
    metrics.latency(label, now - this.#attemptStart)
  }

  async #call(
    client: McpClient,
    label: CallLabel,
    name: string,
    args: JsonObject
  ): Promise<CallToolResult & JsonObject> {
    this.#label = label
    this.#previous = undefined
    this.#served = []
    try {
      return await client.callTool(name, args, { signal: this.#setup.signal })
    } finally {
      if (label === 'flow') {
        const { metrics } = this.#setup
        for (let round = 1; round < this.#served.length; round++) {
          const before = this.#served[round - 1]
          const now = this.#served[round]
          if (before === undefined || now === undefined) continue
          metrics.laterRounds += 1
          if (before !== now) metrics.crossReplicaRounds += 1
        }
      }
    }
  }

  async #elicit(params: ElicitRequestParams, ctx: InputContext): Promise<ElicitResult> {
    if (!this.#answer) throw new WrongOutcome('unexpected_question', `asked ${ctx.key}`)
    return await this.#answer(params, ctx)
  }

  /* Flows ------------------------------------------------------------------------------------- */

  async #flow(kind: FlowKind, seq: number): Promise<void> {
    const { ledger, metrics } = this.#setup
    const record: FlowRecord = {
      kind,
      user: this.#index,
      seq,
      tag: `u${this.#index}-f${seq}`,
      notes: [],
      completed: false,
    }
    ledger.push(record)
    metrics.flows[kind].started += 1
    try {
      if (kind === 'create_delete') await this.#createDelete(record)
      else if (kind === 'bulk_delete') await this.#bulkDelete(record)
      else await this.#declinedDelete(record)
      record.completed = true
      metrics.flows[kind].completed += 1
    } catch (error) {
      record.error = describe(error)
      metrics.error(this.#setup.signal.aborted ? 'aborted' : errorKind(error))
    } finally {
      this.#answer = undefined
    }
  }

  async #createDelete(record: FlowRecord): Promise<void> {
    const note = await this.#create(record, 1)
    this.#answer = async (params, ctx) => {
      if (ctx.key !== 'confirm' || !params.message.includes(`"${note.title}"`)) {
        throw new WrongOutcome('wrong_question', `asked ${ctx.key}: ${params.message}`)
      }
      return { action: 'accept', content: { confirm: true } }
    }
    note.expect = 'unsettled'
    const result = await this.#call(this.#retrying, 'flow', 'delete_note', { id: note.id ?? '' })
    if (result.isError && textOf(result).startsWith('No note with id')) {
      // The confirmed delete found the note gone: something deleted it before (twice, or lost).
      this.#setup.metrics.repeatedDeletes += 1
      throw new WrongOutcome('delete_repeated', textOf(result))
    }
    expectText(result, `Deleted the note "${note.title}".`)
    note.expect = 'absent'
  }

  async #bulkDelete(record: FlowRecord): Promise<void> {
    const count = BULK_MIN_NOTES + (record.seq % 3)
    const notes: LedgerNote[] = []
    for (let i = 1; i <= count; i++) notes.push(await this.#create(record, i))
    // Select at least one and keep at least one.
    const shuffled = [...notes].sort(() => Math.random() - 0.5)
    const selected = shuffled.slice(0, 1 + Math.floor(Math.random() * (count - 1)))
    const kept = notes.filter((note) => !selected.includes(note))
    this.#answer = async (params, ctx) => {
      if (ctx.key === 'select') {
        const schema = params.requestedSchema as
          { properties?: { notes?: { items?: { anyOf?: Array<{ const: string }> } } } } | undefined
        const offered = (schema?.properties?.notes?.items?.anyOf ?? []).map((option) => ({
          id: option.const,
        }))
        if (sortedIds(offered) !== sortedIds(notes)) {
          throw new WrongOutcome('wrong_question', `offered ${sortedIds(offered)}`)
        }
        return { action: 'accept', content: { notes: selected.map((note) => note.id ?? '') } }
      }
      if (
        ctx.key === 'confirm' &&
        params.message.startsWith(`Delete ${plural(selected.length)} of`)
      ) {
        return { action: 'accept', content: { confirm: true } }
      }
      throw new WrongOutcome('wrong_question', `asked ${ctx.key}: ${params.message}`)
    }
    for (const note of selected) note.expect = 'unsettled'
    const result = await this.#call(this.#retrying, 'flow', 'delete_notes_by_tag', {
      tag: record.tag,
    })
    const outcome = result.structuredContent as BulkOutcome | undefined
    if (result.isError || !outcome) throw new WrongOutcome('tool_error', textOf(result))
    if (outcome.alreadyGone.length > 0) {
      this.#setup.metrics.repeatedDeletes += outcome.alreadyGone.length
      throw new WrongOutcome('delete_repeated', `already gone: ${sortedIds(outcome.alreadyGone)}`)
    }
    if (
      outcome.outcome !== 'deleted' ||
      sortedIds(outcome.deleted) !== sortedIds(selected) ||
      sortedIds(outcome.kept) !== sortedIds(kept)
    ) {
      throw new WrongOutcome('wrong_outcome', JSON.stringify(outcome).slice(0, 300))
    }
    for (const note of selected) note.expect = 'absent'
  }

  async #declinedDelete(record: FlowRecord): Promise<void> {
    const note = await this.#create(record, 1)
    this.#answer = async (_params, ctx) => {
      if (ctx.key !== 'confirm') throw new WrongOutcome('wrong_question', `asked ${ctx.key}`)
      return { action: 'decline' }
    }
    note.expect = 'unsettled'
    const result = await this.#call(this.#retrying, 'flow', 'delete_note', { id: note.id ?? '' })
    expectText(result, 'Kept the note.')
    note.expect = 'present'
  }

  /** `create_note`, at most once in the store: see the module header. */
  async #create(record: FlowRecord, index: number): Promise<LedgerNote> {
    const note: LedgerNote = {
      title: `Load ${this.#setup.runId} ${record.tag} n${index}`,
      body: `Note ${index} of ${record.kind} flow ${record.seq} by virtual user ${record.user}.`,
      tags: [record.tag],
      expect: 'unsettled',
    }
    record.notes.push(note)
    const { metrics } = this.#setup
    const args = { title: note.title, body: note.body, tags: note.tags }
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.#call(this.#once, 'create_note', 'create_note', args)
        const id = (result.structuredContent as { note?: { id?: string } } | undefined)?.note?.id
        if (result.isError || typeof id !== 'string') {
          throw new WrongOutcome('tool_error', textOf(result).slice(0, 200))
        }
        note.id = id
        note.expect = 'present'
        return note
      } catch (error) {
        if (!isTransportFailure(error) || attempt >= CREATE_ATTEMPTS) throw error
        metrics.createTransportFailures += 1
        await sleep(CREATE_SETTLE_MS)
        const found = await this.#findStored(note)
        if (found) {
          metrics.createsRecovered += 1
          note.id = found
          note.expect = 'present'
          return note
        }
      }
    }
  }

  /** The id of the stored note with this note's title under the flow's tag, if any. */
  async #findStored(note: LedgerNote): Promise<string | undefined> {
    const result = await this.#call(this.#retrying, 'search_notes', 'search_notes', {
      query: '',
      tags: note.tags,
      limit: 50,
    })
    const hits = (result.structuredContent as { notes?: Array<{ id: string; title: string }> })
      ?.notes
    if (result.isError || !hits) throw new WrongOutcome('tool_error', textOf(result).slice(0, 200))
    return hits.find((hit) => hit.title === note.title)?.id
  }
}

/** Runs the virtual users to the end of the run. */
export async function runVirtualUsers(setup: UserSetup): Promise<void> {
  const users = Array.from({ length: setup.users }, (_, index) => new VirtualUser(index + 1, setup))
  await Promise.all(users.map((user) => user.run()))
}
