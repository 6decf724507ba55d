/**
 * @module mcp/options
 * The one check of the engine's count and duration options (stream bounds and caps, task timings and
 * caps, the 2025 era's store caps), run where each is configured (a handler's or a class's
 * construction), so a bad value stops startup with a `RangeError` naming the option instead of
 * failing a request later. One rule: a whole number from 1 up to the option's highest value (and,
 * where an option allows it, `Infinity` for no cap); one message format for all of them. Every cap
 * on what one caller may hold is named `max<What>Per<Scope>` (or `max<What>` for this replica's own
 * count) and accepts at most {@link MAX_CAP}.
 */

/**
 * Highest value any cap on what one caller may hold accepts (`maxStreamsPerSession`,
 * `maxStreamsPerPrincipal`, `maxSessionsPerPrincipal`, `maxSubscriptionsPerPrincipal`,
 * `maxLiveTasksPerPrincipal`): a typo of many zeros is refused at startup rather than meaning "no
 * cap" (the session and subscription caps take `Infinity` for that), and the count behind a store's
 * cap reads at most this many of the principal's index entries.
 *
 * @example
 * ```ts
 * import { createMcpServer, MAX_CAP } from 'stateless-mcp'
 *
 * const wanted = Number(process.env.MAX_STREAMS_PER_PRINCIPAL ?? 64)
 * const server = createMcpServer(definition, { maxStreamsPerPrincipal: Math.min(wanted, MAX_CAP) })
 * ```
 */
export const MAX_CAP = 100_000

export interface WholeNumberBounds {
  /** Highest value accepted; default `Number.MAX_SAFE_INTEGER`. */
  max?: number
  /** Also accept `Infinity`, meaning no cap. */
  orInfinity?: boolean
}

/**
 * `value` when it is a whole number from 1 to `max` (or `Infinity` where `orInfinity` allows it);
 * otherwise throws a `RangeError` such as "maxSessionsPerPrincipal must be a whole number from 1
 * to 100000, got 0".
 */
export function positiveWholeNumber(
  name: string,
  value: number,
  { max = Number.MAX_SAFE_INTEGER, orInfinity = false }: WholeNumberBounds = {}
): number {
  if (orInfinity && value === Infinity) return value
  if (Number.isSafeInteger(value) && value >= 1 && value <= max) return value
  const range =
    max === Number.MAX_SAFE_INTEGER ? 'a positive whole number' : `a whole number from 1 to ${max}`
  const unbounded = orInfinity ? ', or Infinity for no cap' : ''
  throw new RangeError(`${name} must be ${range}${unbounded}, got ${String(value)}`)
}
