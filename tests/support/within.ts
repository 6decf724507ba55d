/**
 * @module tests/support/within
 * The bound on every wait an end-to-end test makes for something a server should send: the promise,
 * or a rejection naming what never came. Tests stay bounded without asserting anything about timing.
 */

/** How long a test waits for something a server should send before it fails. */
export const WAIT_MS = 15_000

/** `promise`, or a rejection naming `what` after `ms`. */
export function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
