/**
 * @module mcp/replay
 * Deterministic replay for multi round-trip requests. A `Replay` holds what a flow learned in earlier
 * rounds (the journal opened from `requestState`) and what the client answered this round
 * (`inputResponses`), and turns each ask of a re-run handler into either its answer or a suspension.
 * Asks made together (e.g. `Promise.all`) are gathered into one `input_required` round. Answers are
 * untrusted: each is validated against its ask on arrival, and a missing or invalid one is asked again.
 * Every journal entry remembers a digest of the question it answered, so an answer never counts for a
 * question the person did not see. By default an answer counts only when its question was sealed into
 * the requestState of an earlier round (the journal's `q` digest is present and equal): an answer sent
 * on the first round, or for a question no round has asked yet, is ignored and the question asked, as
 * the spec's "ignore information it does not recognise or need" allows. An ask may opt out with
 * `acceptUnsolicited` (answers given in advance then count, unless the question changed).
 * Capability gating happens here, at the ask, before anything is sent.
 *
 * Sealing the journal into `requestState` is `sealed-state.ts`'s job; running handlers is `context.ts`'s.
 */
import type * as z from 'zod'
import {
  parseElicitationContent,
  toElicitationSchema,
  type ElicitationSchema,
} from './elicitation-schema.ts'
import { canonicalJson } from './canonical-json.ts'
import { ErrorCode, McpError } from './errors.ts'
import type { ClientCapability } from './definitions.ts'
import {
  CreateMessageResultSchema,
  isObject,
  ListRootsResultSchema,
  type ClientCapabilities,
  type CreateMessageParams,
  type CreateMessageResult,
  type ElicitAnswer,
  type InputRequest,
  type Root,
} from './wire.ts'

/** What travels (sealed) from round to round. Short names keep the token small. */
export interface Journal {
  /** Answers by ask key: the digest of the question and the validated answer. */
  a?: Record<string, { d: string; r: unknown }>
  /** Results of `ctx.once` steps by key. */
  o?: Record<string, unknown>
  /**
   * Digests of the questions sent to the client and not answered yet, by key: the last round's asks,
   * and those of earlier rounds that later runs did not reach (the person saw them all).
   */
  q?: Record<string, string>
}

/** Unwinds a handler that asked for something not yet answered. Never reaches the wire. */
export class Suspension extends Error {
  override name = 'Suspension'
  constructor() {
    super('The handler is waiting for input from the client (multi round-trip request).')
  }
}

/**
 * The one suspension every ask throws: it carries no data (the pending asks live in the `Replay`), so a
 * single immutable instance serves every request and no stack trace is captured per ask.
 */
const SUSPENSION = Object.freeze(new Suspension())

export function isSuspension(error: unknown): error is Suspension {
  return error instanceof Suspension
}

/**
 * The promise every suspending ask answers: rejected with `SUSPENSION` once, at load, and marked
 * handled, so an ask a handler never awaits (because another ask suspended first) never surfaces as
 * an unhandled rejection, and no ask allocates a promise or goes through the runtime's tracking of
 * unhandled rejections. A promise may be awaited any number of times.
 */
const SUSPENDED: Promise<never> = Promise.reject(SUSPENSION)
SUSPENDED.catch(() => {})

function suspend(): Promise<never> {
  return SUSPENDED
}

const ELICIT_ACTIONS: ReadonlySet<unknown> = new Set(['accept', 'decline', 'cancel'])

/**
 * An elicitation answer's action and content, when `raw` is an `ElicitResult`: an action of the three,
 * content absent or an object, other members ignored. Checked by hand on every answered round.
 */
function elicitAnswer(
  raw: unknown
): { action: ElicitAnswer<unknown>['action']; content?: Record<string, unknown> } | undefined {
  if (!isObject(raw) || !ELICIT_ACTIONS.has(raw.action)) return undefined
  const { content } = raw
  if (content !== undefined && !isObject(content)) return undefined
  return { action: raw.action as ElicitAnswer<unknown>['action'], content }
}

/** A form prepared once: the zod schema and the restricted wire schema it converts to. */
export interface ElicitationForm<S extends z.ZodObject = z.ZodObject> {
  readonly schema: S
  readonly requestedSchema: ElicitationSchema
  /** Canonical JSON of `requestedSchema`, part of every question digest of this form. */
  readonly canonicalSchema: string
}

const formCache = new WeakMap<z.ZodObject, ElicitationForm>()

/**
 * Converts a zod object into an elicitation form, at definition time: a schema the wire cannot express
 * throws a `TypeError` here rather than in the middle of a request. Call it where a form's schema
 * is declared, so that a schema no client could be shown fails at startup.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { defineForm } from 'stateless-mcp'
 *
 * const Confirm = z.object({ confirm: z.boolean().describe('Delete the note?') })
 * defineForm(Confirm) // throws now if the form cannot be expressed; ctx.elicit reuses it
 * ```
 */
export function defineForm<S extends z.ZodObject>(schema: S): ElicitationForm<S> {
  let form = formCache.get(schema)
  if (!form) {
    const requestedSchema = toElicitationSchema(schema)
    form = { schema, requestedSchema, canonicalSchema: canonicalJson(requestedSchema) }
    formCache.set(schema, form)
  }
  return form as ElicitationForm<S>
}

/** Mode-aware client capability table: `elicitation: {}` means form only. */
export function hasCapability(
  capabilities: ClientCapabilities,
  capability: ClientCapability
): boolean {
  const elicitation = capabilities.elicitation
  switch (capability) {
    case 'elicitation.form':
      return (
        elicitation !== undefined &&
        (elicitation.form !== undefined || elicitation.url === undefined)
      )
    case 'elicitation.url':
      return elicitation?.url !== undefined
    case 'sampling':
      return capabilities.sampling !== undefined
    case 'sampling.tools':
      return capabilities.sampling?.tools !== undefined
    case 'roots':
      return capabilities.roots !== undefined
  }
}

const REQUIRED_CAPABILITIES: Record<ClientCapability, ClientCapabilities> = {
  'elicitation.form': { elicitation: {} },
  'elicitation.url': { elicitation: { url: {} } },
  sampling: { sampling: {} },
  'sampling.tools': { sampling: { tools: {} } },
  roots: { roots: {} },
}

/** An answer read and checked: its value, or not one that counts (the question is asked again). */
type Parse<T, Raw = unknown> = (raw: Raw) => { ok: true; value: T } | { ok: false }

interface Ask {
  digest: string
  request: InputRequest
}

/** A 53-bit, non-cryptographic digest of a question (the journal itself is sealed and authenticated). */
function questionDigest(text: string): string {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)
}

export class Replay {
  readonly #journal: Journal
  readonly #responses: Record<string, unknown>
  readonly #capabilities: ClientCapabilities
  readonly #asked = new Map<string, Ask>()
  readonly #pending = new Map<string, Ask>()
  readonly #answers: Record<string, { d: string; r: unknown }>
  readonly #once: Record<string, unknown>
  #missing: McpError | undefined
  #taskStarted = false

  constructor(
    journal: Journal | undefined,
    responses: Record<string, unknown> | null | undefined,
    capabilities: ClientCapabilities
  ) {
    this.#journal = journal ?? {}
    this.#responses = responses ?? {}
    this.#capabilities = capabilities
    this.#answers = { ...this.#journal.a }
    this.#once = { ...this.#journal.o }
  }

  /** True when this run made asks that are not answered yet. */
  get suspended(): boolean {
    return this.#pending.size > 0
  }

  /** True once the handler called `ctx.startTask()` in a request that may have a task. */
  get taskStarted(): boolean {
    return this.#taskStarted
  }

  /**
   * Unwinds the handler at the start of its task: the engine then creates the task (unless an ask of
   * this run is pending, which makes this round `input_required` first) and runs the handler again.
   */
  startTask(): Promise<never> {
    this.#taskStarted = true
    return suspend()
  }

  /** The -32021 error of the first ask the client cannot serve, if any. */
  get missingCapability(): McpError | undefined {
    return this.#missing
  }

  /** The asks to send in this round's `input_required`, by key. */
  inputRequests(): Record<string, InputRequest> {
    return Object.fromEntries([...this.#pending].map(([key, ask]) => [key, ask.request]))
  }

  /**
   * The journal to seal: earlier entries merged with this round's answers and pending questions. A
   * question of an earlier round that this run did not reach (it suspended before) stays asked.
   */
  journal(): Journal {
    const journal: Journal = {}
    if (Object.keys(this.#answers).length > 0) journal.a = this.#answers
    if (Object.keys(this.#once).length > 0) journal.o = this.#once
    const asked: Record<string, string> = {}
    for (const [key, digest] of Object.entries(this.#journal.q ?? {})) {
      if (!this.#asked.has(key)) asked[key] = digest
    }
    for (const [key, ask] of this.#pending) asked[key] = ask.digest
    if (Object.keys(asked).length > 0) journal.q = asked
    return journal
  }

  elicit<S extends z.ZodObject>(
    key: string,
    message: string,
    form: ElicitationForm<S>,
    acceptUnsolicited = false
  ): Promise<ElicitAnswer<z.output<S>>> {
    const question = `form\u0000${JSON.stringify(message)}\u0000${form.canonicalSchema}`
    return this.#elicitation<z.output<S>>(
      key,
      question,
      { mode: 'form', message, requestedSchema: form.requestedSchema },
      acceptUnsolicited,
      (content) => {
        const parsed = parseElicitationContent(form.schema, content)
        return parsed.ok ? { ok: true, value: parsed.value as z.output<S> } : { ok: false }
      }
    )
  }

  elicitUrl(
    key: string,
    message: string,
    url: string,
    acceptUnsolicited = false
  ): Promise<ElicitAnswer<undefined>> {
    const question = `url\u0000${JSON.stringify([message, url])}`
    return this.#elicitation(
      key,
      question,
      { mode: 'url', message, url },
      acceptUnsolicited,
      // The person opened the URL; an accept carries nothing of what happened there.
      () => ({ ok: true, value: undefined })
    )
  }

  sample(
    key: string,
    params: CreateMessageParams,
    acceptUnsolicited = false
  ): Promise<CreateMessageResult> {
    const capability =
      params.tools !== undefined || params.toolChoice !== undefined ? 'sampling.tools' : 'sampling'
    const request: InputRequest = {
      method: 'sampling/createMessage',
      params: params as unknown as Record<string, unknown>,
    }
    const question = `sampling\u0000${canonicalJson(params)}`
    return this.#ask<CreateMessageResult>(
      key,
      question,
      request,
      capability,
      acceptUnsolicited,
      (raw) => {
        const result = CreateMessageResultSchema.safeParse(raw)
        return result.success ? { ok: true, value: result.data } : { ok: false }
      }
    )
  }

  roots(key: string, acceptUnsolicited = false): Promise<Root[]> {
    const request: InputRequest = { method: 'roots/list', params: {} }
    return this.#ask<Root[]>(key, 'roots', request, 'roots', acceptUnsolicited, (raw) => {
      const result = ListRootsResultSchema.safeParse(raw)
      return result.success ? { ok: true, value: result.data.roots } : { ok: false }
    })
  }

  async once<T>(key: string, step: () => T | Promise<T>): Promise<T> {
    if (Object.hasOwn(this.#once, key)) return this.#once[key] as T
    const value = await step()
    // Keep exactly what later rounds will replay: the JSON form of the value.
    const replayable: unknown = value === undefined ? null : JSON.parse(JSON.stringify(value))
    this.#once[key] = replayable
    return replayable as T
  }

  askAgain(key: string): Promise<never> {
    const ask = this.#asked.get(key)
    if (!ask) throw new Error(`askAgain('${key}'): nothing was asked under this key in this run.`)
    delete this.#answers[key]
    this.#pending.set(key, ask)
    return suspend()
  }

  /**
   * An `elicitation/create` ask in `params.mode` (its capability `elicitation.<mode>`): a decline or
   * a cancel is the answer as it is; an accept counts once `accepted` reads its content (an absent
   * content read as `{}`), and is asked again when it does not.
   */
  #elicitation<Content>(
    key: string,
    question: string,
    params: { mode: 'form' | 'url'; message: string } & Record<string, unknown>,
    acceptUnsolicited: boolean,
    accepted: Parse<Content, Record<string, unknown>>
  ): Promise<ElicitAnswer<Content>> {
    return this.#ask<ElicitAnswer<Content>>(
      key,
      question,
      { method: 'elicitation/create', params },
      `elicitation.${params.mode}`,
      acceptUnsolicited,
      (raw) => {
        const answer = elicitAnswer(raw)
        if (!answer) return { ok: false }
        if (answer.action !== 'accept') return { ok: true, value: { action: answer.action } }
        const content = accepted(answer.content ?? {})
        return content.ok
          ? { ok: true, value: { action: 'accept', content: content.value } }
          : { ok: false }
      }
    )
  }

  /**
   * `question` is a canonical text of what the person (or host) is asked; its digest pins answers.
   * This round's answer counts when an earlier round sealed the same question under `key`, or, with
   * `acceptUnsolicited`, when no round asked anything under `key` yet.
   */
  #ask<T>(
    key: string,
    question: string,
    request: InputRequest,
    capability: ClientCapability,
    acceptUnsolicited: boolean,
    parse: Parse<T>
  ): Promise<T> {
    const digest = questionDigest(question)
    const earlier = this.#asked.get(key)
    if (earlier && earlier.digest !== digest) {
      throw new Error(
        `Two different questions were asked under the key '${key}' in one run; ask keys must be unique.`
      )
    }
    this.#asked.set(key, { digest, request })

    const recorded = this.#answers[key]
    if (recorded && recorded.d === digest) return Promise.resolve(recorded.r as T)

    const askedBefore = this.#journal.q?.[key]
    if (
      Object.hasOwn(this.#responses, key) &&
      (askedBefore === digest || (acceptUnsolicited && askedBefore === undefined))
    ) {
      const answer = parse(this.#responses[key])
      if (answer.ok) {
        this.#answers[key] = { d: digest, r: answer.value }
        return Promise.resolve(answer.value)
      }
    }

    if (!hasCapability(this.#capabilities, capability)) {
      this.#missing ??= new McpError(
        ErrorCode.MissingRequiredClientCapability,
        `Cannot ask for input '${key}' (${request.method}): the request does not declare the ${capability} client capability.`,
        { requiredCapabilities: REQUIRED_CAPABILITIES[capability] }
      )
    } else {
      this.#pending.set(key, { digest, request })
    }
    return suspend()
  }
}
