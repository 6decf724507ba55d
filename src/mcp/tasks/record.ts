/**
 * @module mcp/tasks/record
 * What the engine writes into the JSON fields of a task record (`task-store.ts`), read back by every
 * replica, and the key rules of a task's input requests:
 * - `args`: the call a run rebuilds its context from: the tool's arguments, the caller's principal
 *   (`owner` is the principal *binding*, with the OAuth client) and the client capabilities the
 *   creating request declared (what the task may ask for);
 * - `journal`: the replay journal (`replay.ts`: answers, `ctx.once` results, asked questions) plus
 *   every input-request key the task ever issued, by the ask key it stands for;
 * - `inputRequests`: the outstanding requests by their wire key, exactly as `tasks/get` shows them;
 * - `inputResponses`: answers `tasks/update` accepted and no run consumed yet, by ask key.
 *
 * Wire keys are unique over the task's lifetime, as the extension requires: an ask's first issue
 * uses its own key, a later one (its answer was invalid, `askAgain`, the question changed) the key
 * with `#2`, `#3`… appended, skipping any key issued before. Also the facts about a record both
 * the runner and the wire methods decide on: whether a live lease holds it, whether it needs a
 * runner, and the patch that ends it, which also brings its expiry forward to the end of the
 * retention of an ended task. Runtime-neutral.
 */
import type { Journal } from '../replay.ts'
import type { TaskPatch, TaskRecord } from '../task-store.ts'
import type { ClientCapabilities, InputRequest } from '../wire.ts'

export interface TaskCall {
  arguments: Record<string, unknown>
  principal: string
  capabilities: ClientCapabilities
}

/** The replay journal of a task, and the wire keys issued so far (wire key → ask key). */
export interface TaskJournal {
  replay: Journal
  issued: Record<string, string>
}

export function writeCall(call: TaskCall): string {
  return JSON.stringify({ a: call.arguments, p: call.principal, c: call.capabilities })
}

export function readCall(text: string): TaskCall {
  const { a, p, c } = JSON.parse(text) as {
    a: Record<string, unknown>
    p: string
    c: ClientCapabilities
  }
  return { arguments: a, principal: p, capabilities: c }
}

export function writeJournal({ replay, issued }: TaskJournal): string {
  return JSON.stringify({ r: replay, i: issued })
}

export function readJournal(text: string): TaskJournal {
  const { r, i } = JSON.parse(text) as { r: Journal; i: Record<string, string> }
  return { replay: r, issued: i }
}

/**
 * The wire keys of a run's pending asks (ask key → request), each new to the task; records them in
 * `issued` (which it changes) and answers the requests by wire key.
 */
export function issueKeys(
  pending: Record<string, InputRequest>,
  issued: Record<string, string>
): Record<string, InputRequest> {
  const requests: Record<string, InputRequest> = {}
  for (const [askKey, request] of Object.entries(pending)) {
    let wireKey = askKey
    for (let n = 2; Object.hasOwn(issued, wireKey); n++) wireKey = `${askKey}#${n}`
    issued[wireKey] = askKey
    requests[wireKey] = request
  }
  return requests
}

/** Whether a runner holds the task's lease at `now` (its owner is alive, or was until recently). */
export function leaseHeld(record: TaskRecord, now: number): boolean {
  return record.leaseOwner !== undefined && (record.leaseExpiresAt ?? 0) > now
}

/** Whether the task needs a runner at `now`: working, unexpired, and no live lease holds it. */
export function needsRunner(record: TaskRecord, now: number): boolean {
  return record.status === 'working' && record.expiresAt > now && !leaseHeld(record, now)
}

/** When a task ends: now, and how long its record is kept from then on. */
export interface TaskEnd {
  now: number
  resultTtlMs: number
}

/**
 * The patch that ends `record` at `end.now`: clears what only a running task has (input, answers,
 * lease), and keeps the record `end.resultTtlMs` more, never past its expiry.
 */
export function endedPatch(
  record: Pick<TaskRecord, 'expiresAt'>,
  status: 'completed' | 'failed' | 'cancelled',
  fields: TaskPatch,
  { now, resultTtlMs }: TaskEnd
): TaskPatch {
  return {
    status,
    ...fields,
    updatedAt: now,
    expiresAt: Math.min(record.expiresAt, now + resultTtlMs),
    inputRequests: null,
    inputResponses: null,
    leaseOwner: null,
    leaseExpiresAt: null,
  }
}

/** The patch of a task ending `cancelled`, whoever ends it. */
export function cancelledPatch(record: Pick<TaskRecord, 'expiresAt'>, end: TaskEnd): TaskPatch {
  return endedPatch(
    record,
    'cancelled',
    { statusMessage: "Cancelled at the client's request.", cancelRequested: true },
    end
  )
}
