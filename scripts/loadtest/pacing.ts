/**
 * @module scripts/loadtest/pacing
 * A steady load (`--rate`, and every `--soak`): each user starts its flows at most one per
 * `intervalMs`, its first one `offsetMs` after the users' start, so that users spread their starts
 * evenly over an interval and the fleet sees the same flows per second from the first minute to the
 * last, on any machine that keeps up. A user that fell behind (a flow longer than its interval)
 * starts the next one at once and is paced from there: it never bursts to catch up.
 */
/** Between two flows of one task user, with a rate (one task flow imports 300-odd notes). */
export const TASK_FLOW_INTERVAL_MS = 30_000

export class Pacer {
  readonly #intervalMs: number
  #next: number

  /** `start`: the users' `performance.now()`. */
  constructor(start: number, intervalMs: number, offsetMs: number) {
    this.#intervalMs = intervalMs
    this.#next = start + offsetMs
  }

  /** When the next flow may start, if it starts no earlier than `now`; books that start. */
  book(now: number): number {
    const at = Math.max(this.#next, now)
    this.#next = at + this.#intervalMs
    return at
  }
}

/** The pacers of `count` users sharing `flowsPerS`, their starts spread evenly over an interval. */
export function pacersFor(count: number, flowsPerS: number, start: number): Pacer[] {
  const intervalMs = (1000 * count) / flowsPerS
  return Array.from(
    { length: count },
    (_, n) => new Pacer(start, intervalMs, (n * intervalMs) / count)
  )
}

/** The pacers of `count` task users, one flow each per {@link TASK_FLOW_INTERVAL_MS}. */
export function taskPacersFor(count: number, start: number): Pacer[] {
  return pacersFor(count, (1000 * count) / TASK_FLOW_INTERVAL_MS, start)
}
