/**
 * @module scripts/loadtest/exit-status
 * What decides the load test's exit status: its verdict, once there is one. `ExitDecision` is told
 * the verdict the moment the summary is written, and whatever goes wrong afterwards (stopping the
 * replicas, dropping the scratch database, stopping a private PostgreSQL server, a promise rejected
 * by a connection that broke while everything was shut down) is reported as a warning and leaves
 * the status alone: the status is 0 exactly when the printed verdict is PASSED. Before the verdict,
 * a failure of the run, or a rejection nobody handled, fails the run (status 1, and the last line
 * says so: `finalLine`); a usage error is 2 (0 for `--help`). The caller exits with `status()` explicitly, so neither a timer nor a socket left
 * open by a cleanup step delays the exit, and nothing settling later can change its code.
 */

export const EXIT_PASSED = 0
export const EXIT_FAILED = 1
export const EXIT_USAGE = 2

export class ExitDecision {
  #verdict: boolean | undefined
  #failedBeforeVerdict = false
  #usage: number | undefined
  readonly #warn: (line: string) => void

  constructor(warn: (line: string) => void) {
    this.#warn = warn
  }

  /** Whether the run reached its verdict (the summary was written). */
  get decided(): boolean {
    return this.#verdict !== undefined
  }

  /** The run's verdict, as printed; the first one counts. */
  verdict(passed: boolean): void {
    this.#verdict ??= passed
  }

  /** The command line was refused (`help`: `--help` was asked, which is no error). */
  usage(help: boolean): void {
    this.#usage = help ? EXIT_PASSED : EXIT_USAGE
  }

  /**
   * Something failed (`what` says where): before the verdict it fails the run; after it, it is only
   * reported, since what was verified stays verified.
   */
  failure(what: string, error: unknown): void {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error)
    if (this.decided) {
      this.#warn(`after the verdict, ${what} (the verdict stands): ${text}`)
      return
    }
    this.#failedBeforeVerdict = true
    this.#warn(`load test failed: ${what}: ${text}`)
  }

  /** The process's exit status (module header). */
  status(): number {
    if (this.#usage !== undefined) return this.#usage
    if (this.#failedBeforeVerdict || this.#verdict === undefined) return EXIT_FAILED
    return this.#verdict ? EXIT_PASSED : EXIT_FAILED
  }

  /** The last line of a run: the verdict the status stands for, and the status. */
  finalLine(): string {
    const status = this.status()
    if (this.#verdict === undefined) return `load test FAILED before its verdict (exit ${status})`
    if (this.#verdict && this.#failedBeforeVerdict) {
      return `load test FAILED: it passed its checks, but something failed during the run (exit ${status})`
    }
    return `load test ${this.#verdict ? 'PASSED' : 'FAILED'} (exit ${status})`
  }
}
