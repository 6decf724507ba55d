/**
 * @module scripts/loadtest/store
 * The one store every replica of a run shares, fresh per run: a scratch PostgreSQL database (on the
 * server of `DATABASE_URL` (which must answer), else of `TEST_DATABASE_URL` or 127.0.0.1:5432 when
 * one answers, see `scripts/support/postgres.ts`), or an SQLite file in a temporary DATA_DIR. Without
 * `--store`, PostgreSQL is used when a server answers, SQLite otherwise. With `privateServer` (the
 * database faults, `faults/database.ts`) the scratch database is on a PostgreSQL server of the run's
 * own (`scripts/support/private-postgres.ts`), which the store hands over as `server` for the fault
 * to stop, kill and start, and disposes of afterwards. Hands out the replicas' environment, opens the
 * same store in this process for the final check, and removes it afterwards.
 *
 * Also the census of task records (`taskRecords`): every row of the `tasks` table with its status
 * and lease, read with plain SQL (the store's interface finds tasks by id only, and the check must
 * see tasks whose id no client learned). Read-only; the columns are the adapters' migrations'.
 *
 * The SQLite file gets its schema here, before any replica starts, as a deployment migrates before
 * it rolls out: replicas that start at the same moment on a new file can fail with "database is
 * locked" while each switches it to WAL and migrates it.
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import postgres from 'postgres'
import type { TaskStatus } from '../../src/mcp/task-store.ts'
import type { NotesStore } from '../../src/notes/store.ts'
import { PostgresNotesStore } from '../../src/storage/postgres.ts'
import { SqliteNotesStore } from '../../src/storage/sqlite.ts'
import { tempDataDir } from '../support/local-resources.ts'
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts'
import {
  createScratchDatabase,
  findPostgresServer,
  LOCAL_POSTGRES_CANDIDATES,
} from '../support/postgres.ts'

/** The stores a run can share (`--store NAME`). */
export type StoreKind = 'postgres' | 'sqlite'

export interface SharedStore {
  kind: StoreKind
  /** For the report: the database (without credentials) or the SQLite file. */
  where: string
  /** What each replica's environment needs to open it (DATABASE_URL, or DATA_DIR). */
  env: Record<string, string>
  /** Opens the store in this process (for the final check); the caller closes it. */
  open(): Promise<NotesStore>
  /** Every task record in the store now. */
  taskRecords(): Promise<TaskRow[]>
  /** The run's own PostgreSQL server, with `privateServer`: the database faults take it down. */
  server?: PrivatePostgres
  /** Drops the scratch database or deletes the data directory (and stops the private server). */
  dispose(): Promise<void>
}

/** One task record as the census sees it. */
export interface TaskRow {
  id: string
  status: TaskStatus
  /** The runner holding the lease (`<REPLICA_ID>-<random>`) and until when (ms since the epoch). */
  leaseOwner: string | null
  leaseExpiresAt: number | null
}

const TASK_CENSUS = 'SELECT id, status, lease_owner, lease_expires_at FROM tasks ORDER BY id'

function taskRow(row: Record<string, unknown>): TaskRow {
  const expires = row.lease_expires_at
  return {
    id: String(row.id),
    status: String(row.status) as TaskStatus,
    leaseOwner: typeof row.lease_owner === 'string' ? row.lease_owner : null,
    leaseExpiresAt: expires === null ? null : Number(expires),
  }
}

/**
 * The PostgreSQL server to use: `DATABASE_URL` when set (it must answer: the run stops otherwise),
 * else `TEST_DATABASE_URL` or a local server, when it answers.
 */
async function postgresServer(): Promise<string | undefined> {
  const { DATABASE_URL, TEST_DATABASE_URL } = process.env
  if (DATABASE_URL) return DATABASE_URL
  return findPostgresServer(TEST_DATABASE_URL ? [TEST_DATABASE_URL] : LOCAL_POSTGRES_CANDIDATES)
}

function withoutPassword(url: string): string {
  const parsed = new URL(url)
  parsed.password = ''
  return parsed.href
}

/** A scratch database on the server behind `serverUrl`; `server`: the run's own, disposed of too. */
async function postgresStore(serverUrl: string, server?: PrivatePostgres): Promise<SharedStore> {
  const scratch = await createScratchDatabase(serverUrl)
  let census: postgres.Sql | undefined
  return {
    kind: 'postgres',
    where: withoutPassword(scratch.url) + (server ? ' (a private server)' : ''),
    env: { DATABASE_URL: scratch.url },
    server,
    async open() {
      const store = new PostgresNotesStore({ url: scratch.url, max: 2 })
      await store.migrate()
      return store
    },
    async taskRecords() {
      census ??= postgres(scratch.url, { max: 1, onnotice: () => {} })
      return (await census.unsafe(TASK_CENSUS)).map(taskRow)
    },
    async dispose() {
      try {
        await census?.end({ timeout: 5 })
        await scratch.drop()
      } finally {
        await server?.dispose()
      }
    },
  }
}

/**
 * The run's store (module header). `privateServer`: on a private PostgreSQL server (the caller
 * refuses `--store sqlite` with it).
 */
export async function prepareStore(
  choice: StoreKind | undefined,
  privateServer = false
): Promise<SharedStore> {
  if (privateServer) {
    const server = await startPrivatePostgres()
    try {
      return await postgresStore(server.url, server)
    } catch (error) {
      await server.dispose()
      throw error
    }
  }
  if (choice !== 'sqlite') {
    const server = await postgresServer()
    if (server) return postgresStore(server)
    if (choice === 'postgres') {
      throw new Error(
        'no PostgreSQL server answers: set DATABASE_URL or TEST_DATABASE_URL, or use --store sqlite'
      )
    }
  }
  const dir = await tempDataDir('notes-loadtest-data-')
  const path = join(dir, 'notes.db')
  const schema = new SqliteNotesStore({ path })
  await schema.migrate().finally(() => schema.close())
  let census: DatabaseSync | undefined
  return {
    kind: 'sqlite',
    where: path,
    env: { DATA_DIR: dir },
    async open() {
      const store = new SqliteNotesStore({ path })
      await store.migrate()
      return store
    },
    async taskRecords() {
      census ??= new DatabaseSync(path, { readOnly: true, timeout: 5_000 })
      return census.prepare(TASK_CENSUS).all().map(taskRow)
    },
    async dispose() {
      census?.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
