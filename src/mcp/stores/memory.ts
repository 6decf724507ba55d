/**
 * @module mcp/stores/memory
 * The engine's state in this process's memory ({@link MemoryEngineStore}): sessions, their
 * subscriptions and rendezvous slots, resumable streams with their events and leases, and tasks, with
 * every semantic of the SQL adapters — each cap decided in one synchronous step (JavaScript runs one
 * call at a time, so no two creations both take the last place), compare-and-set versions, expiries
 * judged by the `now` each call is given, the purge of expired rows counted row by row in the order
 * the SQL adapters sweep their tables. For one process (the default of a server that has no
 * database): nothing survives a restart, and no other replica sees it.
 *
 * Bounded as the SQL adapters are: a principal's live sessions, a session's subscriptions and its
 * principal's, a session's live stream records and a principal's live tasks stop at their caps;
 * slots and events are written by the engine alone, within its own bounds; expired rows stay until
 * `purgeExpired` (run it on a timer, as `sweeps.ts`'s `startExpirySweeps` does). Every index kept
 * beside the rows (a principal's sessions, subscriptions and tasks) loses an entry with its row, and
 * an empty one is dropped, so nothing outlives what it indexes. Records are copied in and out: a
 * caller never holds the stored object. Runtime-neutral.
 */
import { LOG_LEVELS, type LogLevel } from '../protocol.ts'
import { positiveWholeNumber } from '../options.ts'
import { MAX_SUBSCRIPTIONS_PER_SESSION, type SessionStore } from '../session-store.ts'
import {
  streamsLeftByEviction,
  type StoredEvent,
  type StreamPatch,
  type StreamRecord,
  type StreamStore,
} from '../stream-store.ts'
import type { TaskPatch, TaskRecord, TaskStatus, TaskStore } from '../task-store.ts'
import { withoutAbsent } from './common/columns.ts'
import { subscribeRefusal } from './common/sessions.ts'
import { checkEventsRead } from './common/streams.ts'
import { StoreConnection, storeClass, type PortMethods } from './common/store-class.ts'
import { checkSweep, purgeWithin } from './common/sweeps.ts'
import type { EngineStore } from './engine-store.ts'

interface SessionRow {
  readonly sid: string
  readonly principal: string
  readonly createdAt: number
  expiresAt: number
  logLevel?: LogLevel
}

interface SubscriptionRow {
  readonly sid: string
  readonly uri: string
  readonly principal: string
  expiresAt: number
}

interface SlotRow {
  payload?: string
  expiresAt: number
}

interface EventRow {
  readonly payload: string
  readonly expiresAt: number
}

/** The tables, each with the indexes its caps read. */
class MemoryTables {
  readonly sessions = new Map<string, SessionRow>()
  /** The sids of each principal's recorded sessions. */
  readonly sessionsOf = new Map<string, Set<string>>()
  /** Subscriptions by sid, then uri. */
  readonly subscriptions = new Map<string, Map<string, SubscriptionRow>>()
  /** The subscriptions of each principal's sessions. */
  readonly subscriptionsOf = new Map<string, Set<SubscriptionRow>>()
  /** Input slots by sid, then request id. */
  readonly slots = new Map<string, Map<string, SlotRow>>()
  /** Stream records by sid, then stream. */
  readonly streams = new Map<string, Map<string, StreamRecord>>()
  /** Events by sid, then stream, then seq. */
  readonly events = new Map<string, Map<string, Map<number, EventRow>>>()
  readonly tasks = new Map<string, TaskRecord>()
  /** The ids of each principal's tasks. */
  readonly tasksOf = new Map<string, Set<string>>()

  removeSubscription(row: SubscriptionRow): void {
    removeFrom(this.subscriptions, row.sid, row.uri)
    removeFrom(this.subscriptionsOf, row.principal, row)
  }

  /** Ends session `sid`: its record, subscriptions, stream records and events (not its slots). */
  endSession(sid: string): void {
    const session = this.sessions.get(sid)
    if (session !== undefined) {
      this.sessions.delete(sid)
      removeFrom(this.sessionsOf, session.principal, sid)
    }
    for (const row of [...(this.subscriptions.get(sid)?.values() ?? [])]) {
      this.removeSubscription(row)
    }
    this.streams.delete(sid)
    this.events.delete(sid)
  }

  removeTask(task: TaskRecord): void {
    this.tasks.delete(task.id)
    removeFrom(this.tasksOf, task.principal, task.id)
  }

  /** The live (unexpired at `now`) stream records of session `sid`. */
  liveStreams(sid: string, now: number): StreamRecord[] {
    return [...(this.streams.get(sid)?.values() ?? [])].filter((record) => record.expiresAt > now)
  }
}

/** The memory "connection": the tables, made afresh for each store; nothing to prepare or release. */
class MemoryConnection extends StoreConnection<MemoryTables> {
  constructor() {
    super(new MemoryTables())
  }

  protected async prepare(): Promise<void> {}

  protected async release(tables: MemoryTables): Promise<void> {
    for (const table of Object.values(tables) as Array<Map<unknown, unknown>>) table.clear()
  }
}

const sessionMethods: PortMethods<
  Omit<SessionStore, keyof StreamStore>,
  MemoryTables,
  EngineStore
> = {
  async createSession(sid, principal, expiresAt, now, maxPerPrincipal) {
    const db = this.db
    if (db.sessions.has(sid)) throw new Error(`session ${sid} is already recorded`)
    const ended: string[] = []
    if (Number.isFinite(maxPerPrincipal)) {
      const live = [...(db.sessionsOf.get(principal) ?? [])]
        .map((id) => db.sessions.get(id) as SessionRow)
        .filter((session) => session.expiresAt > now)
        .sort(newestFirst)
      for (const session of live.slice(Math.max(0, maxPerPrincipal - 1))) {
        db.endSession(session.sid)
        ended.push(session.sid)
      }
    }
    db.sessions.set(sid, { sid, principal, createdAt: now, expiresAt })
    addTo(db.sessionsOf, principal, sid)
    return ended
  },

  async getSession(sid) {
    const session = this.db.sessions.get(sid)
    if (session === undefined) return undefined
    return session.logLevel === undefined
      ? { expiresAt: session.expiresAt }
      : { expiresAt: session.expiresAt, logLevel: session.logLevel }
  },

  async setSessionLogLevel(sid, level) {
    if (!LOG_LEVELS.includes(level)) throw new RangeError(`no log level ${String(level)}`)
    const session = this.db.sessions.get(sid)
    if (session !== undefined) session.logLevel = level
  },

  async endSession(sid) {
    this.db.endSession(sid)
  },

  async renewSession(sid, expiresAt, now) {
    const db = this.db
    const session = db.sessions.get(sid)
    if (session === undefined || session.expiresAt <= now) return false
    session.expiresAt = Math.max(session.expiresAt, expiresAt)
    for (const row of db.subscriptions.get(sid)?.values() ?? []) {
      if (row.expiresAt < expiresAt) row.expiresAt = expiresAt
    }
    return true
  },

  async addSubscription(sid, uri, now, maxPerPrincipal) {
    const db = this.db
    const session = db.sessions.get(sid)
    if (session === undefined || session.expiresAt <= now) return 'no_session'
    const held = db.subscriptions.get(sid)
    const existing = held?.get(uri)
    if (existing !== undefined) {
      existing.expiresAt = session.expiresAt
      return 'subscribed'
    }
    const inSession = held?.size ?? 0
    const ofPrincipal = [...(db.subscriptionsOf.get(session.principal) ?? [])].filter(
      (row) => row.expiresAt > now
    ).length
    if (inSession >= MAX_SUBSCRIPTIONS_PER_SESSION || ofPrincipal >= maxPerPrincipal) {
      return subscribeRefusal({ session: inSession, principal: ofPrincipal })
    }
    const row = { sid, uri, principal: session.principal, expiresAt: session.expiresAt }
    setIn(db.subscriptions, sid, uri, row)
    addTo(db.subscriptionsOf, session.principal, row)
    return 'subscribed'
  },

  async removeSubscription(sid, uri) {
    const db = this.db
    const row = db.subscriptions.get(sid)?.get(uri)
    if (row !== undefined) db.removeSubscription(row)
  },

  async isSubscribed(sid, uri) {
    return this.db.subscriptions.get(sid)?.has(uri) ?? false
  },

  async expectInput(sid, requestId, expiresAt) {
    const db = this.db
    const slot = db.slots.get(sid)?.get(requestId)
    if (slot !== undefined) slot.expiresAt = Math.max(slot.expiresAt, expiresAt)
    else setIn(db.slots, sid, requestId, { expiresAt })
  },

  async deliverInput(sid, requestId, payload, now) {
    const slot = this.db.slots.get(sid)?.get(requestId)
    if (slot === undefined || slot.payload !== undefined || slot.expiresAt <= now) return false
    slot.payload = payload
    return true
  },

  async readInput(sid, requestId) {
    return this.db.slots.get(sid)?.get(requestId)?.payload
  },

  async forgetInput(sid, requestId) {
    removeFrom(this.db.slots, sid, requestId)
  },
}

const streamMethods: PortMethods<StreamStore, MemoryTables, EngineStore> = {
  async createStream(stream, maxPerSession, now) {
    const db = this.db
    positiveWholeNumber('maxPerSession', maxPerSession)
    const live = db.liveStreams(stream.sid, now)
    let evicted: StreamRecord[] = []
    if (live.length >= maxPerSession && live.filter((r) => !r.ended).length < maxPerSession) {
      const left = streamsLeftByEviction(maxPerSession)
      evicted = live
        .filter((record) => record.ended)
        .sort((a, b) => a.expiresAt - b.expiresAt || compare(a.stream, b.stream))
        .slice(0, Math.max(0, live.length - left))
    }
    if (live.length - evicted.length >= maxPerSession) return undefined
    if (db.streams.get(stream.sid)?.has(stream.stream)) {
      throw new Error(`stream ${stream.stream} of session ${stream.sid} is already recorded`)
    }
    for (const record of evicted) {
      removeFrom(db.streams, record.sid, record.stream)
      removeFrom(db.events, record.sid, record.stream)
    }
    const record = withoutAbsent<StreamRecord>({
      sid: stream.sid,
      stream: stream.stream,
      call: stream.call,
      leaseOwner: stream.leaseOwner,
      leaseExpiresAt: stream.leaseExpiresAt,
      ended: false,
      expiresAt: stream.expiresAt,
      version: 1,
    })
    setIn(db.streams, stream.sid, stream.stream, record)
    return { ...record }
  },

  async getStream(sid, stream) {
    const record = this.db.streams.get(sid)?.get(stream)
    return record && { ...record }
  },

  async updateStream(sid, stream, expectedVersion, patch) {
    const db = this.db
    const record = db.streams.get(sid)?.get(stream)
    if (record === undefined || record.version !== expectedVersion) return undefined
    const updated = patched<StreamRecord, StreamPatch>(record, patch)
    setIn(db.streams, sid, stream, updated)
    return { ...updated }
  },

  async appendEvent(sid, stream, seq, payload, expiresAt) {
    const db = this.db
    positiveWholeNumber('seq', seq)
    let events = db.events.get(sid)?.get(stream)
    if (events?.has(seq)) return false
    if (events === undefined) setIn(db.events, sid, stream, (events = new Map()))
    events.set(seq, { payload, expiresAt })
    return true
  },

  async readEvents(sid, stream, afterSeq, limit, now) {
    checkEventsRead(afterSeq, limit)
    const events = this.db.events.get(sid)?.get(stream)
    if (events === undefined) return []
    const read: StoredEvent[] = []
    for (const seq of [...events.keys()].filter((seq) => seq > afterSeq).sort((a, b) => a - b)) {
      const event = events.get(seq) as EventRow
      if (event.expiresAt <= now) continue
      read.push({ seq, payload: event.payload })
      if (read.length === limit) break
    }
    return read
  },
}

const taskMethods: PortMethods<TaskStore, MemoryTables, EngineStore> = {
  async createTask(task, maxLive) {
    const db = this.db
    positiveWholeNumber('maxLive', maxLive)
    checkStatus(task.status)
    if (liveTasks(db, task.principal, task.createdAt) >= maxLive) return undefined
    if (db.tasks.has(task.id)) throw new Error(`task ${task.id} is already recorded`)
    const record = withoutAbsent<TaskRecord>({ ...task, cancelRequested: false, version: 1 })
    db.tasks.set(task.id, record)
    addTo(db.tasksOf, task.principal, task.id)
    return { ...record }
  },

  async countLiveTasks(principal, now) {
    return liveTasks(this.db, principal, now)
  },

  async getTask(id) {
    const record = this.db.tasks.get(id)
    return record && { ...record }
  },

  async updateTask(id, expectedVersion, patch) {
    const db = this.db
    const record = db.tasks.get(id)
    if (patch.status !== undefined) checkStatus(patch.status)
    if (record === undefined || record.version !== expectedVersion) return undefined
    const updated = patched<TaskRecord, TaskPatch>(record, patch)
    db.tasks.set(id, updated)
    return { ...updated }
  },

  async findRunnableTasks(now, limit) {
    checkSweep(now, limit)
    const leaseKey = (task: TaskRecord) => task.leaseExpiresAt ?? 0
    return [...this.db.tasks.values()]
      .filter((task) => task.status === 'working' && leaseKey(task) <= now && task.expiresAt > now)
      .sort((a, b) => leaseKey(a) - leaseKey(b) || a.expiresAt - b.expiresAt || compare(a.id, b.id))
      .slice(0, limit)
      .map((task) => task.id)
  },
}

/**
 * Each table's purge, in the order the SQL adapters spend a purge's budget: removes at most
 * `budget` rows expired at `now` and answers how many.
 */
const PURGES: ReadonlyArray<(db: MemoryTables, now: number, budget: number) => number> = [
  (db, now, budget) =>
    removeExpired(db.sessions.values(), now, budget, (session) => {
      db.sessions.delete(session.sid)
      removeFrom(db.sessionsOf, session.principal, session.sid)
    }),
  (db, now, budget) =>
    removeExpired(nested(db.subscriptions), now, budget, (row) => db.removeSubscription(row)),
  (db, now, budget) =>
    removeExpired(
      entriesOf(db.slots, (sid, requestId, slot) => ({ sid, requestId, ...slot })),
      now,
      budget,
      (slot) => removeFrom(db.slots, slot.sid, slot.requestId)
    ),
  (db, now, budget) => removeExpired(db.tasks.values(), now, budget, (task) => db.removeTask(task)),
  (db, now, budget) =>
    removeExpired(nested(db.streams), now, budget, (record) =>
      removeFrom(db.streams, record.sid, record.stream)
    ),
  (db, now, budget) =>
    removeExpired(
      (function* () {
        for (const [sid, streams] of db.events)
          for (const [stream, events] of streams)
            for (const [seq, event] of events) yield { sid, stream, seq, ...event }
      })(),
      now,
      budget,
      ({ sid, stream, seq }) => {
        const events = db.events.get(sid)?.get(stream)
        events?.delete(seq)
        if (events?.size === 0) removeFrom(db.events, sid, stream)
      }
    ),
]

const sweepMethods: PortMethods<Pick<EngineStore, 'purgeExpired'>, MemoryTables, EngineStore> = {
  async purgeExpired(now, limit) {
    const db = this.db
    return purgeWithin(now, limit, PURGES, async (purge, budget) => purge(db, now, budget))
  },
}

/**
 * The engine's store in this process's memory (module header). Call `migrate()` before use, as with
 * every store; `close()` drops everything.
 *
 * @example
 * ```ts
 * import { MemoryEngineStore } from 'stateless-mcp'
 *
 * const store = new MemoryEngineStore()
 * await store.migrate()
 * ```
 */
export const MemoryEngineStore = storeClass<EngineStore, [], MemoryTables>(MemoryConnection, {
  ...sessionMethods,
  ...streamMethods,
  ...taskMethods,
  ...sweepMethods,
})

/** `record` with `patch` applied (`undefined` leaves a field, `null` removes it), one version on. */
function patched<Row extends { version: number }, Patch extends object>(
  record: Row,
  patch: Patch
): Row {
  const next: Record<string, unknown> = { ...record }
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) delete next[field]
    else if (value !== undefined) next[field] = value
  }
  next.version = record.version + 1
  return next as Row
}

/** The statuses a task record may hold (the SQL adapters' CHECK constraint). */
const TASK_STATUSES: ReadonlySet<string> = new Set<TaskStatus>([
  'working',
  'input_required',
  'completed',
  'cancelled',
  'failed',
])

/** Throws `RangeError` for a status no task may hold, as the SQL adapters' constraint refuses it. */
function checkStatus(status: TaskStatus): void {
  if (!TASK_STATUSES.has(status)) throw new RangeError(`no task status ${String(status)}`)
}

function liveTasks(db: MemoryTables, principal: string, now: number): number {
  let live = 0
  for (const id of db.tasksOf.get(principal) ?? []) {
    if ((db.tasks.get(id) as TaskRecord).expiresAt > now) live += 1
  }
  return live
}

/** Newest created first, ties by sid, descending: the order in which the cap keeps sessions. */
function newestFirst(a: SessionRow, b: SessionRow): number {
  return b.createdAt - a.createdAt || compare(b.sid, a.sid)
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Removes, through `remove`, up to `budget` of `rows` expired at `now`; answers how many. */
function removeExpired<Row extends { expiresAt: number }>(
  rows: Iterable<Row>,
  now: number,
  budget: number,
  remove: (row: Row) => void
): number {
  const doomed: Row[] = []
  for (const row of rows) {
    if (doomed.length === budget) break
    if (row.expiresAt <= now) doomed.push(row)
  }
  for (const row of doomed) remove(row)
  return doomed.length
}

/** The values of a two-level map. */
function* nested<Row>(map: Map<string, Map<string, Row>>): Iterable<Row> {
  for (const inner of map.values()) yield* inner.values()
}

/** Each entry of a two-level map, as `shape` makes it. */
function* entriesOf<Value, Row>(
  map: Map<string, Map<string, Value>>,
  shape: (outer: string, inner: string, value: Value) => Row
): Iterable<Row> {
  for (const [outer, inner] of map) for (const [key, value] of inner) yield shape(outer, key, value)
}

/** Adds `value` to the set of `key` in `index`. */
function addTo<Key, Value>(index: Map<Key, Set<Value>>, key: Key, value: Value): void {
  let values = index.get(key)
  if (values === undefined) index.set(key, (values = new Set()))
  values.add(value)
}

/** Sets `map[outer][inner]`. */
function setIn<Value>(
  map: Map<string, Map<string, Value>>,
  outer: string,
  inner: string,
  value: Value
): void {
  let values = map.get(outer)
  if (values === undefined) map.set(outer, (values = new Map<string, Value>()))
  values.set(inner, value)
}

/** Removes `inner` from the set or map of `outer`, and that collection when it is left empty. */
function removeFrom<Outer, Inner>(
  map: Map<Outer, Set<Inner> | Map<Inner, unknown>>,
  outer: Outer,
  inner: Inner
): void {
  const values = map.get(outer)
  if (values === undefined) return
  values.delete(inner)
  if (values.size === 0) map.delete(outer)
}
