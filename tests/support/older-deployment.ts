/**
 * @module tests/support/older-deployment
 * What a deployment from before the engine owned its state left in its database, and what today's
 * stores must find of it: the rows ({@link sqliteRowsAt}: a note, a session with a subscription and
 * an answered input slot, a stream with its events and the checkpoint of a call waiting on it, a
 * task, as the stores of then wrote them after each step of the shared schema) and the checks
 * ({@link expectKept}: all there, and usable; {@link expectBroughtForward}: migrated, checked,
 * closed). For the migration tests of node:sqlite and PostgreSQL (`tests/unit/store-migration.test.ts`)
 * and of D1 (`tests/workers/d1-store.test.ts`). Runtime-neutral.
 */
import { expect } from 'vitest'
import type { EngineStore } from '../../src/mcp/stores/engine-store.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import type { DeploymentStores } from '../../src/storage/common/stores.ts'
import { newTask } from './store-contract.ts'

export const T0 = 1_750_000_000_000
const HOUR = 3_600_000
/** Every row made below lives until then. */
const LATER = T0 + 24 * HOUR

/** What a deployment from before left in its database, through the stores of that time. */
const OLD = {
  sid: 'sid-old',
  principal: 'p',
  stream: 'stream-old',
  /** The checkpoint of a call waiting for the client: what a replica needs to re-drive it. */
  call: '{"request":{"method":"tools/call"},"round":1}',
  task: newTask('p', T0, { expiresAt: LATER }),
} as const

/** The rows a deployment that had applied the shared schema up to `step` held, in SQLite. */
export function sqliteRowsAt(step: number): string {
  const rows = [
    `INSERT INTO notes (id, principal, title, body, tags, created_at, updated_at, version)
      VALUES ('n_oldnote00000000', 'p', 'Kept', 'from before', '["old"]', ${T0}, ${T0}, 1)`,
  ]
  if (step >= 5) {
    rows.push(
      `INSERT INTO sessions (sid, principal, log_level, created_at, expires_at)
        VALUES ('${OLD.sid}', 'p', 'info', ${T0}, ${LATER})`,
      `INSERT INTO session_subscriptions (sid, uri, principal, expires_at)
        VALUES ('${OLD.sid}', 'note://n_oldnote00000000', 'p', ${LATER})`,
      `INSERT INTO input_slots (sid, request_id, payload, expires_at)
        VALUES ('${OLD.sid}', 'r1', '{"answer":1}', ${LATER})`
    )
  }
  if (step >= 6) {
    const task = OLD.task
    rows.push(
      `INSERT INTO tasks (id, owner, principal, tool, args, created_at, status, updated_at,
        expires_at, poll_interval_ms, journal, version)
        VALUES ('${task.id}', 'p', 'p', '${task.tool}', '${task.args}', ${T0}, 'working', ${T0},
          ${LATER}, 1000, '[]', 3)`
    )
  }
  if (step >= 7) {
    rows.push(
      `INSERT INTO session_streams (sid, stream, call, lease_owner, lease_expires_at, ended,
        expires_at, version)
        VALUES ('${OLD.sid}', '${OLD.stream}', '${OLD.call}', 'replica-a', ${T0 + 10_000}, 0,
          ${LATER}, 4)`,
      ...[1, 2, 3].map(
        (seq) => `INSERT INTO stream_events (sid, stream, seq, payload, expires_at)
          VALUES ('${OLD.sid}', '${OLD.stream}', ${seq}, '{"seq":${seq}}', ${LATER})`
      )
    )
  }
  return rows.join(';\n')
}

/** What the stores of today must find of the rows {@link sqliteRowsAt} made at `step`, and use. */
export async function expectKept(
  notes: NotesStore,
  engine: EngineStore,
  step: number
): Promise<void> {
  expect(await notes.get('p', 'n_oldnote00000000')).toMatchObject({ title: 'Kept', tags: ['old'] })
  const now = T0 + HOUR
  if (step >= 5) {
    expect(await engine.getSession(OLD.sid)).toStrictEqual({ expiresAt: LATER, logLevel: 'info' })
    expect(await engine.isSubscribed(OLD.sid, 'note://n_oldnote00000000')).toBe(true)
    expect(await engine.readInput(OLD.sid, 'r1')).toBe('{"answer":1}')
    expect(await engine.renewSession(OLD.sid, LATER + HOUR, now)).toBe(true)
  }
  if (step >= 6) {
    expect(await engine.getTask(OLD.task.id)).toMatchObject({ status: 'working', version: 3 })
    expect(await engine.updateTask(OLD.task.id, 3, { status: 'completed' })).toMatchObject({
      status: 'completed',
      version: 4,
    })
    expect(await engine.countLiveTasks('p', now)).toBe(1)
  }
  if (step >= 7) {
    expect(await engine.getStream(OLD.sid, OLD.stream)).toStrictEqual({
      sid: OLD.sid,
      stream: OLD.stream,
      call: OLD.call,
      leaseOwner: 'replica-a',
      leaseExpiresAt: T0 + 10_000,
      ended: false,
      expiresAt: LATER,
      version: 4,
    })
    expect(await engine.readEvents(OLD.sid, OLD.stream, 1, 10, now)).toStrictEqual([
      { seq: 2, payload: '{"seq":2}' },
      { seq: 3, payload: '{"seq":3}' },
    ])
    // Another replica takes the call over from the checkpoint, and the stream goes on.
    const taken = { leaseOwner: 'replica-b', leaseExpiresAt: now + 10_000 }
    expect(await engine.updateStream(OLD.sid, OLD.stream, 4, taken)).toMatchObject({ version: 5 })
    expect(await engine.appendEvent(OLD.sid, OLD.stream, 4, '{"seq":4}', LATER)).toBe(true)
    expect(await engine.appendEvent(OLD.sid, OLD.stream, 3, '{"again":3}', LATER)).toBe(false)
  }
  // Whatever the step, the engine's tables are all there now, and take new rows.
  expect(await engine.createSession('sid-new', 'p', LATER, now, 1_000)).toHaveLength(0)
  expect(
    await engine.createStream({ sid: 'sid-new', stream: 's', expiresAt: LATER }, 64, now)
  ).toMatchObject({ version: 1 })
  expect(await engine.createTask(newTask('p', now, { expiresAt: LATER }), 10)).toBeDefined()
  expect(await notes.create('p', { title: 'New', body: '', tags: [] }, now)).toMatchObject({
    version: 1,
  })
}

/** Migrates the stores of a database an older deployment left at `step`, checks them, closes them. */
export async function expectBroughtForward(stores: DeploymentStores, step: number): Promise<void> {
  await stores.migrate()
  try {
    await expectKept(stores.notes, stores.engine, step)
  } finally {
    await stores.close()
  }
}
