/**
 * The drain's settings in `parseConfig` (`src/config.ts`): SHUTDOWN_DELAY_SECONDS (default 0, 0–60)
 * and SHUTDOWN_GRACE_SECONDS (default 25, 1–600), and the idle keep-alive KEEP_ALIVE_SECONDS
 * (default Node's 5, 1–3600), in milliseconds; a value out of range stops the server with a message
 * naming the variable.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '../../src/config.ts'

describe('the shutdown settings', () => {
  it('default to no delay and a 25 s grace', () => {
    expect(parseConfig({}).shutdown).toEqual({ delayMs: 0, graceMs: 25_000 })
  })

  it('read both variables in seconds', () => {
    const config = parseConfig({ SHUTDOWN_DELAY_SECONDS: '10', SHUTDOWN_GRACE_SECONDS: '600' })
    expect(config.shutdown).toEqual({ delayMs: 10_000, graceMs: 600_000 })
  })

  it("keep idle connections Node's 5 s by default, or as long as asked", () => {
    expect(parseConfig({}).keepAliveMs).toBe(5_000)
    expect(parseConfig({ KEEP_ALIVE_SECONDS: '75' }).keepAliveMs).toBe(75_000)
  })

  it.each([
    ['KEEP_ALIVE_SECONDS', '0'],
    ['KEEP_ALIVE_SECONDS', '3601'],
    ['SHUTDOWN_DELAY_SECONDS', '61'],
    ['SHUTDOWN_DELAY_SECONDS', '-1'],
    ['SHUTDOWN_GRACE_SECONDS', '0'],
    ['SHUTDOWN_GRACE_SECONDS', '601'],
    ['SHUTDOWN_GRACE_SECONDS', '2.5'],
  ])('refuses %s=%s, naming it', (name, value) => {
    expect(() => parseConfig({ [name]: value })).toThrow(ConfigError)
    expect(() => parseConfig({ [name]: value })).toThrow(
      new RegExp(`^Invalid configuration: ${name}:`)
    )
  })
})
