/**
 * @module storage/purge
 * Sweeps of expired store rows (`NotesStore.purgeExpired`), the same on every runtime: one sweep runs
 * bounded batches until nothing more has expired or its batch budget is spent, and leaves the rest to
 * the next sweep, so no sweep holds the database for long however much piled up. Node replicas sweep
 * on a timer ({@link startExpirySweeps}, started by `node/server.ts`); the Worker sweeps from its
 * `scheduled` handler on the cron trigger of `wrangler.toml`. Several replicas sweeping at once is safe (every
 * adapter's purge is idempotent and never touches live rows). Runtime-neutral: no `node:*` import.
 */
import type { McpLogger } from '../mcp/logger.ts'
import type { NotesStore } from '../notes/store.ts'

/** Rows one `purgeExpired` call removes at most. */
export const PURGE_BATCH_ROWS = 500
/** Batches one sweep runs at most: 10 000 rows, then the next sweep goes on. */
export const PURGE_MAX_BATCHES = 20
/** How often a Node replica sweeps. */
export const PURGE_INTERVAL_MS = 10 * 60_000

export interface SweepOptions {
  /** Defaults to {@link PURGE_BATCH_ROWS}. */
  batchRows?: number
  /** Defaults to {@link PURGE_MAX_BATCHES}. */
  maxBatches?: number
}

/** One sweep at `now`: answers how many rows it removed. Store failures propagate. */
export async function sweepExpired(
  store: Pick<NotesStore, 'purgeExpired'>,
  now: number,
  { batchRows = PURGE_BATCH_ROWS, maxBatches = PURGE_MAX_BATCHES }: SweepOptions = {}
): Promise<number> {
  let removed = 0
  for (let batch = 0; batch < maxBatches; batch++) {
    const count = await store.purgeExpired(now, batchRows)
    removed += count
    if (count < batchRows) break
  }
  return removed
}

export interface ExpirySweepsOptions extends SweepOptions {
  /** Defaults to {@link PURGE_INTERVAL_MS}. */
  intervalMs?: number
  /** A failed sweep is reported here and retried at the next interval. */
  logger: McpLogger
  /** Defaults to `Date.now`. */
  now?: () => number
}

/**
 * Sweeps every `intervalMs` until the returned function is called. The timer does not keep a Node
 * process alive, and a sweep still running when the next is due makes that one a no-op.
 */
export function startExpirySweeps(
  store: Pick<NotesStore, 'purgeExpired'>,
  { intervalMs = PURGE_INTERVAL_MS, logger, now = Date.now, ...sweep }: ExpirySweepsOptions
): () => void {
  if (!Number.isInteger(intervalMs) || intervalMs < 1) {
    throw new RangeError('intervalMs must be a positive integer')
  }
  let running = false
  const timer = setInterval(function sweepTick() {
    if (running) return
    running = true
    sweepExpired(store, now(), sweep)
      .catch((error: unknown) => {
        logger.warn('expired-row sweep failed; the next one retries', { error: String(error) })
      })
      .finally(() => {
        running = false
      })
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
