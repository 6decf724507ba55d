/**
 * @module scripts/support/import-hold
 * "An import is still running" without a clock, for the tests and the load test: a notes replica
 * started through `held-import-replica.ts` holds an `import_notes` task mid-way, on the word of the
 * process that spawned it, until that process releases it or kills the replica. Both halves of the
 * conversation, Node IPC messages on the replica's channel:
 * - the replica's, {@link holdImports}: its `NotesStore`, wrapped so that once told to hold
 *   (`{ type: 'hold-imports', after: n }`, acknowledged with `hold-armed`) the `importNotes` calls
 *   after the next n wait, writing nothing, until `release-imports`. The first one held is reported
 *   (`import-held`, with the notes the n calls before it created). The run keeps its lease meanwhile
 *   (the runner renews it on its own timer), so no other replica takes the task over while it is held;
 * - the spawner's, {@link ImportHold}: arms a child's hold, waits until an import reaches it, and
 *   releases it. The child must have been spawned with an IPC channel ({@link IPC_STDIO}).
 * Nothing here is reachable from a request: the wrapper exists only in a process started by that
 * entry, and only its IPC channel arms it.
 */
import type { ChildProcess, StdioOptions } from 'node:child_process'
import type { NotesStore } from '../../src/notes/store.ts'

/** The spawned replica's stdio: output piped, as every replica's, and the IPC channel of the hold. */
export const IPC_STDIO: StdioOptions = ['ignore', 'pipe', 'pipe', 'ipc']

/** What the spawner tells the replica. */
export type HoldCommand = { type: 'hold-imports'; after: number } | { type: 'release-imports' }

/** What the replica tells the spawner. */
export type HoldReport = { type: 'hold-armed' } | { type: 'import-held'; created: number }

/** The replica's end of its IPC channel (`process` in the replica). */
export interface HoldChannel {
  on(event: 'message', listener: (message: unknown) => void): unknown
  send?(message: HoldReport): unknown
}

function isHoldCommand(message: unknown): message is HoldCommand {
  if (typeof message !== 'object' || message === null) return false
  const { type, after } = message as { type?: unknown; after?: unknown }
  return (
    type === 'release-imports' ||
    (type === 'hold-imports' && Number.isSafeInteger(after) && (after as number) >= 0)
  )
}

/**
 * `store` with its `importNotes` held on the word of `channel` (see the module header); every other
 * method is the store's own.
 */
export function holdImports(store: NotesStore, channel: HoldChannel): NotesStore {
  /**
   * Set while armed: calls still let through before the hold, those of them not yet returned, and
   * the notes they created.
   */
  let armed:
    | { passing: number; running: Set<Promise<number>>; created: number; reported: boolean }
    | undefined
  let released = Promise.withResolvers<void>()
  channel.on('message', (message) => {
    if (!isHoldCommand(message)) return
    if (message.type === 'hold-imports') {
      armed = { passing: message.after, running: new Set(), created: 0, reported: false }
      channel.send?.({ type: 'hold-armed' })
    } else {
      armed = undefined
      released.resolve()
      released = Promise.withResolvers<void>()
    }
  })

  const importNotes: NotesStore['importNotes'] = async (...args) => {
    const hold = armed
    if (hold && hold.passing === 0) {
      const release = released.promise
      if (!hold.reported) {
        hold.reported = true
        // Another import's call let through may still be writing: the report counts its notes.
        await Promise.allSettled(hold.running)
        channel.send?.({ type: 'import-held', created: hold.created })
      }
      await release
    } else if (hold) {
      hold.passing--
      const call = store.importNotes(...args)
      hold.running.add(call)
      try {
        const created = await call
        hold.created += created
        return created
      } finally {
        hold.running.delete(call)
      }
    }
    return store.importNotes(...args)
  }

  return new Proxy(store, {
    get(target, key): unknown {
      if (key === 'importNotes') return importNotes
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** The spawner's end: the hold of one replica process, spawned with {@link IPC_STDIO}. */
export class ImportHold {
  readonly #child: ChildProcess
  readonly #reports: HoldReport[] = []
  readonly #waiters = new Set<() => void>()

  constructor(child: ChildProcess) {
    if (!child.send) throw new TypeError('the replica was spawned without an IPC channel')
    this.#child = child
    const wake = () => this.#waiters.forEach((waiter) => waiter())
    child.on('message', (message: HoldReport) => {
      this.#reports.push(message)
      wake()
    })
    child.once('exit', wake)
  }

  /**
   * Tells the replica to hold the `importNotes` calls after the next `after` ones; resolves once it
   * is armed, so a call made afterwards counts.
   */
  async arm(after: number): Promise<void> {
    const armed = this.#reports.filter((report) => report.type === 'hold-armed').length
    this.#send({ type: 'hold-imports', after })
    await this.#until(
      () => this.#reports.filter((report) => report.type === 'hold-armed').length > armed,
      'acknowledged the hold'
    )
  }

  /** Resolves once an import reached the hold, with the notes the calls let through created. */
  async held(): Promise<{ created: number }> {
    let held: HoldReport | undefined
    await this.#until(
      () => (held = this.#reports.find((report) => report.type === 'import-held')) !== undefined,
      'held an import'
    )
    return { created: (held as Extract<HoldReport, { type: 'import-held' }>).created }
  }

  /** Lets the held calls go on and disarms the hold (nothing if the replica is gone). */
  release(): void {
    if (this.#child.connected) this.#send({ type: 'release-imports' })
  }

  #send(command: HoldCommand): void {
    this.#child.send?.(command)
  }

  /** Resolves once `done()` holds; rejects, naming `what`, if the replica exits first. */
  #until(done: () => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (done()) {
          this.#waiters.delete(check)
          resolve()
        } else if (this.#child.exitCode !== null || this.#child.signalCode !== null) {
          this.#waiters.delete(check)
          reject(new Error(`the replica exited before it ${what}`))
        }
      }
      this.#waiters.add(check)
      check()
    })
  }
}
