/**
 * @module mcp/stores/expiry-sweeps
 * Sweeps of expired store rows (any store with a `purgeExpired`, such as an `EngineStore`), the same
 * on every runtime: one sweep runs bounded batches until nothing more has expired or its batch budget
 * is spent, and leaves the rest to the next sweep, so no sweep holds the database for long however
 * much piled up. A long-lived server sweeps on a timer ({@link startExpirySweeps}); a Worker sweeps
 * from its `scheduled` handler on a cron trigger ({@link sweepExpired}). Several replicas sweeping at
 * once is safe (every adapter's purge is idempotent and never touches live rows). Runtime-neutral.
 */
import type { McpLogger } from '../logger.ts'

/** A store whose expired rows can be purged (`EngineStore`, an application's own store). */
export interface PurgeableStore {
  /** Removes at most `limit` rows expired at `now`; answers how many. */
  purgeExpired(now: number, limit: number): Promise<number>
}

/** Rows one `purgeExpired` call removes at most. */
export const PURGE_BATCH_ROWS = 500
/** Batches one sweep runs at most: 10 000 rows, then the next sweep goes on. */
export const PURGE_MAX_BATCHES = 20
/** How often a Node replica sweeps. */
export const PURGE_INTERVAL_MS = 10 * 60_000

/** How much one sweep ({@link sweepExpired}) may remove: rows per batch, and batches. */
export interface SweepOptions {
  /** Defaults to {@link PURGE_BATCH_ROWS}. */
  batchRows?: number
  /** Defaults to {@link PURGE_MAX_BATCHES}. */
  maxBatches?: number
}

/**
 * One sweep of `store` at `now`: answers how many rows it removed. Store failures propagate.
 *
 * @example
 * ```ts
 * // A Worker's cron trigger
 * export default {
 *   async scheduled(event: { scheduledTime: number }) {
 *     await sweepExpired(store, event.scheduledTime)
 *   },
 * }
 * ```
 */
export async function sweepExpired(
  store: PurgeableStore,
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

/** How often {@link startExpirySweeps} sweeps, how much each sweep removes, where failures go. */
export interface ExpirySweepsOptions extends SweepOptions {
  /** Defaults to {@link PURGE_INTERVAL_MS}. */
  intervalMs?: number
  /** A failed sweep is reported here and retried at the next interval. */
  logger: McpLogger
  /** Defaults to `Date.now`. */
  now?: () => number
}

/**
 * Sweeps each of `stores` in turn every `intervalMs` until the returned function is called. The timer
 * does not keep the process alive (where the runtime's timers can be unreferenced), and a sweep still
 * running when the next is due makes that one a no-op.
 *
 * @example
 * ```ts
 * const stopSweeps = startExpirySweeps([store], { logger: consoleLogger })
 * // at shutdown
 * stopSweeps()
 * ```
 */
export function startExpirySweeps(
  stores: readonly PurgeableStore[],
  { intervalMs = PURGE_INTERVAL_MS, logger, now = Date.now, ...sweep }: ExpirySweepsOptions
): () => void {
  if (!Number.isInteger(intervalMs) || intervalMs < 1) {
    throw new RangeError('intervalMs must be a positive integer')
  }
  let running = false
  const timer = setInterval(function sweepTick() {
    if (running) return
    running = true
    sweepAll(stores, now(), sweep)
      .catch((error: unknown) => {
        logger.warn('expired-row sweep failed; the next one retries', { error: String(error) })
      })
      .finally(() => {
        running = false
      })
  }, intervalMs)
  ;(timer as { unref?: () => void }).unref?.()
  return () => clearInterval(timer)
}

/** One sweep of each store, in order. */
async function sweepAll(
  stores: readonly PurgeableStore[],
  now: number,
  sweep: SweepOptions
): Promise<void> {
  for (const store of stores) await sweepExpired(store, now, sweep)
}
