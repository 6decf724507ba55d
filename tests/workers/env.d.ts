/**
 * Types of the workerd-only modules the tests under tests/workers import, kept to what they use (the
 * full @cloudflare/workers-types globals would clash with the DOM lib of the Node projects).
 */
declare module 'cloudflare:test' {
  export interface D1Migration {
    name: string
    queries: string[]
  }
  export const env: {
    DB: import('../../src/mcp/d1.ts').D1Like & { exec(sql: string): Promise<unknown> }
    TEST_MIGRATIONS: D1Migration[]
    STATE_KEYS: string
    [name: string]: unknown
  }
  export function applyD1Migrations(
    db: unknown,
    migrations: D1Migration[],
    migrationsTableName?: string
  ): Promise<void>
  /** The part of `DurableObjectState` the tests read. */
  export interface DurableObjectState {
    storage: { get(key: string): Promise<unknown>; getAlarm(): Promise<number | null> }
  }
  export function runInDurableObject<R>(
    stub: unknown,
    callback: (instance: unknown, state: DurableObjectState) => R | Promise<R>
  ): Promise<R>
  export function abortAllDurableObjects(): Promise<void>
}

declare module 'cloudflare:workers' {
  export const exports: {
    default: { fetch(input: Request | string, init?: RequestInit): Promise<Response> }
  }
}
