/**
 * @module tests/support/ci
 * The one rule for tests that need a service of this machine (PostgreSQL, nginx, Chromium,
 * Prometheus): under `CI=true`, which `.ci/run` sets, a missing service fails the tests that need
 * it; anywhere else they are skipped, with one warning that names what is missing.
 */

export const IN_CI = process.env.CI === 'true'

/**
 * Whether the tests of `suite` run: when the service was `found`, or under CI (where they then fail
 * on its absence); otherwise warns that they are skipped and why (`missing`).
 */
export function serviceTestsRun(suite: string, found: boolean, missing: string): boolean {
  if (!found && !IN_CI) console.warn(`${suite} skipped: ${missing}`)
  return found || IN_CI
}
