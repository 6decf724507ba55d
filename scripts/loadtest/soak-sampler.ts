/**
 * @module scripts/loadtest/soak-sampler
 * The sampling of a soak: every `intervalMs` from the users' start until {@link SoakSampler.stop},
 * one sample of every replica at once (`ReplicaProcess.sample`: RSS and open descriptors read from
 * `/proc`, heap after a full collection and active handles over the IPC channel of
 * `scripts/support/sampled-replica.ts`), kept per replica as `soak.ts` judges them. A sample a
 * replica does not answer in time is counted, not retried. Bounded: it stops by itself after the
 * samples a run of `maxDurationMs` can hold.
 */
import { setTimeout as delay } from 'node:timers/promises'
import type { ReplicaProcess } from './processes.ts'
import type { ReplicaSeries } from './soak.ts'

/** Longest a replica may take to collect and answer one sample. */
const SAMPLE_TIMEOUT_MS = 5_000

export class SoakSampler {
  readonly #replicas: ReplicaProcess[]
  readonly #series: Map<ReplicaProcess, ReplicaSeries>
  readonly #stopped = new AbortController()
  readonly #done: Promise<void>

  /** Starts sampling now; `start` is the users' `performance.now()`. */
  constructor(
    replicas: ReplicaProcess[],
    start: number,
    intervalMs: number,
    maxDurationMs: number
  ) {
    this.#replicas = replicas
    this.#series = new Map(
      replicas.map((replica) => [
        replica,
        { id: replica.id, points: [], failedSamples: 0, resourcesAtEnd: {} },
      ])
    )
    this.#done = this.#loop(start, intervalMs, Math.ceil(maxDurationMs / intervalMs) + 1)
  }

  async #loop(start: number, intervalMs: number, maxSamples: number): Promise<void> {
    const signal = this.#stopped.signal
    for (let n = 0; n < maxSamples && !signal.aborted; n++) {
      await Promise.all(this.#replicas.map((replica) => this.#sampleOne(replica, start)))
      const wait = start + (n + 1) * intervalMs - performance.now()
      if (wait > 0) await delay(wait, undefined, { signal }).catch(() => undefined)
    }
  }

  async #sampleOne(replica: ReplicaProcess, start: number): Promise<void> {
    const series = this.#series.get(replica) as ReplicaSeries
    const atS = (performance.now() - start) / 1000
    try {
      const sample = await replica.sample(SAMPLE_TIMEOUT_MS)
      const { resources, collected: _, ...figures } = sample
      series.points.push({ atS, ...figures })
      series.resourcesAtEnd = resources
    } catch {
      series.failedSamples += 1
    }
  }

  /** Stops sampling (the sample under way ends first) and answers every replica's series. */
  async stop(): Promise<ReplicaSeries[]> {
    this.#stopped.abort()
    await this.#done
    return [...this.#series.values()]
  }
}
