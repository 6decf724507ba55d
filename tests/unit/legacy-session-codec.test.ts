/**
 * @module tests/unit/legacy-session-codec
 * The sessions a replica remembers as opened (`src/mcp/legacy/session.ts` `SessionCodec.open`): a
 * token opened once is not decrypted again for the same caller, and tries to break it: another
 * caller with the same token, a tampered token, more sessions than the count bound, long tokens
 * whose characters pass the character bound.
 */
import { describe, expect, it, vi } from 'vitest'
import { generateKey, importKeyRing } from '../../src/mcp/key-ring.ts'
import {
  OPENED_SESSION_CHARS,
  OPENED_SESSIONS_KEPT,
  SessionCodec,
} from '../../src/mcp/legacy/session.ts'
import { StateSealer } from '../../src/mcp/sealed-state.ts'

const TTL_SECONDS = 3600
const INIT = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'codec-test', version: '1' },
} as const

/** A codec and a count of the decryptions it asked its sealer for. */
async function codec() {
  const ring = await importKeyRing([generateKey()])
  const sealer = StateSealer.create({ keyRing: ring }).withTtl(TTL_SECONDS)
  const open = vi.spyOn(sealer, 'open')
  return { codec: new SessionCodec(sealer), decryptions: () => open.mock.calls.length }
}

/** Capabilities that make a token about `chars` characters long. */
const padded = (chars: number) => ({
  ...INIT,
  capabilities: { experimental: { pad: { text: 'x'.repeat(chars) } } },
})

describe('SessionCodec.open remembers opened sessions', () => {
  it('opens a token once per caller: the same session again without a decryption', async () => {
    const { codec: sessions, decryptions } = await codec()
    const issued = await sessions.issue('alice', INIT)
    const first = await sessions.open(issued.token, 'alice')
    expect(first?.sid).toBe(issued.sid)
    expect(await sessions.open(issued.token, 'alice')).toBe(first)
    expect(decryptions()).toBe(1)
  })

  it('never answers another caller from what it remembers', async () => {
    const { codec: sessions } = await codec()
    const issued = await sessions.issue('alice', INIT)
    expect(await sessions.open(issued.token, 'alice')).toBeDefined()
    expect(await sessions.open(issued.token, 'mallory')).toBeUndefined()
    expect(await sessions.open(issued.token, 'alice\u0000')).toBeUndefined()
  })

  it('does not remember a token that fails to open', async () => {
    const { codec: sessions, decryptions } = await codec()
    const issued = await sessions.issue('alice', INIT)
    const tampered = `${issued.token.slice(0, -2)}${issued.token.endsWith('AA') ? 'BB' : 'AA'}`
    expect(await sessions.open(tampered, 'alice')).toBeUndefined()
    expect(await sessions.open(tampered, 'alice')).toBeUndefined()
    expect(decryptions()).toBe(2)
  })

  it(`keeps at most ${OPENED_SESSIONS_KEPT} sessions, forgetting the one used longest ago`, async () => {
    const { codec: sessions, decryptions } = await codec()
    const tokens: string[] = []
    for (let index = 0; index <= OPENED_SESSIONS_KEPT; index++) {
      const { token } = await sessions.issue('alice', INIT)
      tokens.push(token)
      await sessions.open(token, 'alice')
      // The first stays the one used last until the bound is near.
      if (index === OPENED_SESSIONS_KEPT - 2) await sessions.open(tokens[0] as string, 'alice')
    }
    const opened = decryptions()
    await sessions.open(tokens[0] as string, 'alice')
    expect(decryptions(), 'used recently: still remembered').toBe(opened)
    await sessions.open(tokens[1] as string, 'alice')
    expect(decryptions(), 'used longest ago: forgotten').toBe(opened + 1)
  })

  it('keeps at most its bound of token characters, forgetting the one used longest ago', async () => {
    const { codec: sessions, decryptions } = await codec()
    // Long tokens (large client capabilities): the character bound is reached long before the count.
    const probe = await sessions.issue('alice', padded(6000))
    const count = Math.ceil(OPENED_SESSION_CHARS / probe.token.length) + 1
    expect(count).toBeLessThan(OPENED_SESSIONS_KEPT)
    const tokens: string[] = []
    for (let index = 0; index < count; index++) {
      const { token } = await sessions.issue('alice', padded(6000))
      tokens.push(token)
      await sessions.open(token, 'alice')
    }
    const opened = decryptions()
    await sessions.open(tokens[count - 1] as string, 'alice')
    expect(decryptions(), 'the last one opened is remembered').toBe(opened)
    await sessions.open(tokens[0] as string, 'alice')
    expect(decryptions(), 'past the bound: the oldest went').toBe(opened + 1)
  })
})
