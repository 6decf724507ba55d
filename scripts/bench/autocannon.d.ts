/**
 * @module scripts/bench/autocannon
 * Types for the part of autocannon 9's programmatic API the load driver uses (the package ships no
 * declarations and `@types/autocannon` is not a dependency).
 */
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      setupRequest?: (request: Record<string, unknown>, context: Record<string, unknown>) => unknown
      onResponse?: (
        status: number,
        body: string,
        context: Record<string, unknown>,
        headers: Record<string, unknown>
      ) => void
    }

    interface Client {
      on(event: 'response', listener: (status: number, bytes: number, ms: number) => void): void
    }

    interface Options {
      url: string
      connections?: number
      duration?: number
      maxOverallRequests?: number
      pipelining?: number
      timeout?: number
      requests?: Request[]
      setupClient?: (client: Client) => void
    }

    interface Result {
      errors: number
      timeouts: number
      non2xx: number
      mismatches: number
      duration: number
      requests: { total: number; average: number }
    }

    interface Instance {
      stop(): void
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void
  ): autocannon.Instance

  export = autocannon
}
