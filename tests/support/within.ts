/**
 * @module tests/support/within
 * The bound on every wait an end-to-end test makes for something a server should send: the promise,
 * or a rejection naming what never came; and conditions awaited on what a test watches change (a
 * socket's bytes, a count), with the same bound. Tests stay bounded without asserting anything
 * about timing.
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

/**
 * Conditions a test waits for on something that changes: each is looked at when it is awaited and
 * again on every `changed()`, and the wait is bounded as `within` bounds it.
 */
export class Conditions {
  readonly #waiting = new Set<() => void>()

  /** Looks at every awaited condition again: call it whenever what they read changes. */
  changed(): void {
    for (const check of this.#waiting) check()
  }

  /** Resolves once `holds()` does, or rejects naming `what` after the bound. */
  until(holds: () => boolean, what: string): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>()
    const check = () => {
      if (holds()) resolve()
    }
    this.#waiting.add(check)
    check()
    return within(promise, what).finally(() => this.#waiting.delete(check))
  }
}
