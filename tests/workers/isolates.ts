/**
 * @module tests/workers/isolates
 * The isolates the workerd tests send requests to (vitest.config.ts builds them): the notes Worker
 * under test (`notesA`, the default export of this isolate's own Worker), `notes-replica`
 * (`notesB`, another isolate of the same Worker), and the conformance fixture's `fixture-a` and
 * `fixture-b`.
 */
import { env } from 'cloudflare:test'
import { exports } from 'cloudflare:workers'

/** One isolate's Worker, as a binding reaches it. */
export interface Fetcher {
  fetch(input: Request | string, init?: RequestInit): Promise<Response>
}

export const notesA: Fetcher = exports.default
export const notesB = env.NOTES_REPLICA as Fetcher
export const fixtureA = env.FIXTURE_A as Fetcher
export const fixtureB = env.FIXTURE_B as Fetcher
