/**
 * @module client/abort
 * Cancellation as every part of the driver applies it: a wait that gives up as soon as the call's
 * signal aborts (even when what it waits for ignores the signal, e.g. a fetch that never settles), a
 * pause, the rule that after an abort the caller's (or the timeout's) reason wins over whatever
 * failure the abort caused, and `bounded`, the timeout of a whole call or task wait.
 */
import { McpDriverError, summarize } from './errors.ts'

/** Settles like `promise`, or rejects with the signal's reason as soon as it aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return untilAborted(new Promise((resolve) => setTimeout(resolve, ms)), signal)
}

/** After an abort the signal's reason; anything else is a transport failure of `what`. */
export function transportFailure(error: unknown, signal: AbortSignal, what: string): unknown {
  if (signal.aborted) return signal.reason
  return new McpDriverError('transport', `${what}: ${summarize(error)}`, { cause: error })
}

/**
 * Runs `work` under a signal that aborts when the caller's `signal` does or after `timeoutMs`. After
 * the caller's abort it rejects with the caller's reason; after the timeout with the `McpDriverError`
 * (`timeout`) that `timedOut` describes (its message and the last result seen); otherwise as `work`.
 */
export async function bounded<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
  timedOut: () => { message: string; lastResult?: unknown }
): Promise<T> {
  const timeout = new AbortController()
  const timer = setTimeout(() => timeout.abort(), timeoutMs)
  try {
    return await work(signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal)
  } catch (error) {
    if (signal?.aborted) throw signal.reason
    if (timeout.signal.aborted) {
      const { message, lastResult } = timedOut()
      throw new McpDriverError('timeout', message, { lastResult, cause: error })
    }
    throw error
  } finally {
    clearTimeout(timer)
  }
}
