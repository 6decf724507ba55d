/**
 * @module scripts/support/replica-sampling
 * What a soak (`npm run loadtest -- --soak MINUTES`) measures of a replica, and how. Both halves of
 * the conversation, Node IPC messages on the replica's channel (the replica runs through
 * `sampled-replica.ts`, with `--expose-gc`):
 * - the replica's, {@link answerSamples}: on `{ type: 'sample', id }` it runs a full garbage
 *   collection (so the heap figure is what is retained, not garbage waiting for a collection), then
 *   answers `process.memoryUsage()` (heap used and reserved, external memory, array buffers), the
 *   size of V8's young generation (its semi-spaces grow under load up to `--max-semi-space-size`)
 *   and its active resources (`process.getActiveResourcesInfo()`, counted by kind: sockets, servers,
 *   timers, …);
 * - the spawner's, {@link sampleReplica}: asks for that and adds what it reads from outside, where
 *   Linux exposes it: the resident set (`VmRSS` of `/proc/<pid>/status`), its anonymous part
 *   (`/proc/<pid>/smaps_rollup`: the V8 heap, the allocator's arenas, stacks; the rest is mapped
 *   files: the binary, shared libraries) and the open file descriptors (the entries of
 *   `/proc/<pid>/fd`). Elsewhere the RSS is the replica's own figure and the anonymous part and the
 *   descriptors are not known.
 * Nothing here is reachable from a request: only the IPC channel of the process that spawned the
 * replica asks.
 */
import type { ChildProcess } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { getHeapSpaceStatistics } from 'node:v8'

/** What the spawner asks. */
export interface SampleRequest {
  type: 'sample'
  id: number
}

/** What the replica answers. */
export interface SampleReply {
  type: 'sample'
  id: number
  /** A full collection ran before the figures (the replica has `--expose-gc`). */
  collected: boolean
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  youngGeneration: number
  /** `process.getActiveResourcesInfo()`, by kind. */
  resources: Record<string, number>
}

/** One sample of one replica, as the soak records it. */
export interface ReplicaSample {
  /** Resident set, bytes (from `/proc` where there is one). */
  rss: number
  /** V8 heap used after a full collection, bytes. */
  heapUsed: number
  /** V8 heap reserved (every space, the young generation's semi-spaces too), bytes. */
  heapTotal: number
  /** Memory outside the heap that V8 objects hold (buffers among it), bytes. */
  external: number
  /** `ArrayBuffer`s and Node `Buffer`s (part of `external`), bytes. */
  arrayBuffers: number
  /** V8's young generation (new space and its large objects), reserved, bytes (part of `heapTotal`). */
  youngGeneration: number
  /** The anonymous part of the resident set, bytes; `null` without `/proc`. */
  anonymous: number | null
  /** Active handles and requests (every kind together). */
  handles: number
  resources: Record<string, number>
  /** Open file descriptors; `null` without `/proc`. */
  fds: number | null
  collected: boolean
}

/** The replica's end of its IPC channel (`process` in the replica). */
export interface SampleChannel {
  on(event: 'message', listener: (message: unknown) => void): unknown
  send?(message: SampleReply): unknown
}

function isSampleRequest(message: unknown): message is SampleRequest {
  if (typeof message !== 'object' || message === null) return false
  const { type, id } = message as { type?: unknown; id?: unknown }
  return type === 'sample' && Number.isSafeInteger(id)
}

function countByKind(kinds: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const kind of kinds) counts[kind] = (counts[kind] ?? 0) + 1
  return counts
}

const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space'])

function youngGenerationBytes(): number {
  return getHeapSpaceStatistics()
    .filter((space) => YOUNG_SPACES.has(space.space_name))
    .reduce((total, space) => total + space.space_size, 0)
}

/** The replica's half: answers every sample request on `channel` (see the module header). */
export function answerSamples(channel: SampleChannel, collect: (() => void) | undefined): void {
  channel.on('message', (message) => {
    if (!isSampleRequest(message)) return
    collect?.()
    const memory = process.memoryUsage()
    channel.send?.({
      type: 'sample',
      id: message.id,
      collected: collect !== undefined,
      rss: memory.rss,
      heapUsed: memory.heapUsed,
      heapTotal: memory.heapTotal,
      external: memory.external,
      arrayBuffers: memory.arrayBuffers,
      youngGeneration: youngGenerationBytes(),
      resources: countByKind(process.getActiveResourcesInfo()),
    })
  })
}

/** `VmRSS` of `/proc/<pid>/status`, in bytes; `undefined` where there is no such file. */
async function residentBytes(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined)
  const kib = status?.match(/^VmRSS:\s+(\d+)\s+kB$/m)?.[1]
  return kib === undefined ? undefined : Number(kib) * 1024
}

/** `Anonymous` of `/proc/<pid>/smaps_rollup`, in bytes; `null` where there is no such file. */
async function anonymousBytes(pid: number): Promise<number | null> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => undefined)
  const kib = rollup?.match(/^Anonymous:\s+(\d+)\s+kB$/m)?.[1]
  return kib === undefined ? null : Number(kib) * 1024
}

async function openDescriptors(pid: number): Promise<number | null> {
  const entries = await readdir(`/proc/${pid}/fd`).catch(() => undefined)
  return entries === undefined ? null : entries.length
}

let nextId = 1

/**
 * The spawner's half: one sample of `child` (spawned through `sampled-replica.ts` with an IPC
 * channel). Rejects when the replica does not answer within `timeoutMs` or exits first.
 */
export async function sampleReplica(
  child: ChildProcess,
  timeoutMs: number
): Promise<ReplicaSample> {
  const pid = child.pid
  if (pid === undefined || !child.send) throw new Error('the replica has no pid or IPC channel')
  const id = nextId++
  const reply = await new Promise<SampleReply>((resolve, reject) => {
    const onMessage = (message: SampleReply) => {
      if (message?.type !== 'sample' || message.id !== id) return
      done()
      resolve(message)
    }
    const onExit = () => {
      done()
      reject(new Error('the replica exited before it answered a sample'))
    }
    const timer = setTimeout(() => {
      done()
      reject(new Error(`the replica did not answer a sample within ${timeoutMs} ms`))
    }, timeoutMs)
    const done = () => {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
    child.send?.({ type: 'sample', id } satisfies SampleRequest)
  })
  const [rss, anonymous, fds] = await Promise.all([
    residentBytes(pid),
    anonymousBytes(pid),
    openDescriptors(pid),
  ])
  return {
    rss: rss ?? reply.rss,
    heapUsed: reply.heapUsed,
    heapTotal: reply.heapTotal,
    external: reply.external,
    arrayBuffers: reply.arrayBuffers,
    youngGeneration: reply.youngGeneration,
    anonymous,
    handles: Object.values(reply.resources).reduce((total, n) => total + n, 0),
    resources: reply.resources,
    fds,
    collected: reply.collected,
  }
}
