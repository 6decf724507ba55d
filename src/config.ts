/**
 * @module config
 * Environment → typed configuration, in one place, for both runtimes (Node passes `process.env`,
 * the Worker its `env` bindings). Parsed once at startup; a bad value stops the server with a message
 * naming the variable, never echoing a secret. Defaults make `npm start` work with no configuration.
 */
import * as z from 'zod'
import {
  DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL,
  DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
  DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
  DEFAULT_MAX_STREAMS_PER_SESSION,
  DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
  DEFAULT_SESSION_TTL_SECONDS,
  DEFAULT_TASK_RESULT_TTL_MS,
  MAX_CAP,
  MAX_SESSION_TTL_SECONDS,
  MAX_TASK_TTL_MS,
  type ServerTaskOptions,
  type SessionLimitOptions,
  type StreamLimitOptions,
} from 'stateless-mcp'
import { DEFAULT_MAX_STREAM_MS } from 'stateless-mcp/compose'
import { TelemetryEnvError, parseTelemetryEnv, type TelemetryConfig } from './telemetry/env.ts'

const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
)

/** Space-separated scope tokens (RFC 6749 §3.3: printable ASCII without space, `"` or `\\`). */
const SCOPE_LIST = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max)

const EnvSchema = z.object({
  PORT: int(0, 65535).default(8787),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  /** PostgreSQL connection URL; without it notes live in SQLite under DATA_DIR. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  /**
   * The event bus of a Node fleet past one database: `redis://host:port` (one server) or
   * `redis+cluster://host:port,host:port` (a Redis Cluster; `rediss` for TLS). Without it the
   * replicas of one PostgreSQL database share its LISTEN/NOTIFY bus (`stateless-mcp/redis`).
   */
  EVENT_BUS_URL: z
    .string()
    .regex(
      /^rediss?(\+cluster)?:\/\/[^\s]+$/,
      'must be a redis:// URL (one server) or redis+cluster://host:port,host:port (a cluster)'
    )
    .optional(),
  /** Key ring: `kid:secret,kid:secret` (first seals, all open). Generated under DATA_DIR when absent on Node. */
  STATE_KEYS: z.string().min(1).optional(),
  STATE_TTL_SECONDS: int(1, 86_400).default(600),
  /** Lifetime of a 2025-era session id (`Mcp-Session-Id`), sealed with the same key ring. */
  SESSION_TTL_SECONDS: int(60, MAX_SESSION_TTL_SECONDS).default(DEFAULT_SESSION_TTL_SECONDS),
  /**
   * What one principal may keep in the store for its 2025-era sessions (`mcp/session-store.ts`):
   * live sessions (an `initialize` beyond them ends the oldest) and resource subscriptions across
   * them (one more `resources/subscribe` is refused).
   */
  MAX_SESSIONS_PER_PRINCIPAL: int(1, MAX_CAP).default(DEFAULT_MAX_SESSIONS_PER_PRINCIPAL),
  MAX_SUBSCRIPTIONS_PER_PRINCIPAL: int(1, MAX_CAP).default(DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL),
  /** Extra allowed browser origins (scheme://host[:port]); requests without Origin are always allowed. */
  ALLOWED_ORIGINS: list.default([]),
  /** Allowed Host header names (without port). Default: loopback names only. */
  ALLOWED_HOSTS: list.default(['localhost', '127.0.0.1', '[::1]']),
  MAX_BODY_BYTES: int(1024, 16 * 1024 * 1024).default(1024 * 1024),
  /**
   * Streams held open at once on this replica (listen, 2025 GET, interactive POSTs waiting for an
   * answer), per 2025 session and per principal (`mcp/stream-limits.ts`); over them a stream's
   * opening is refused with 429, a call that would wait with 200 (both -32602).
   */
  MAX_STREAMS_PER_SESSION: int(1, MAX_CAP).default(DEFAULT_MAX_STREAMS_PER_SESSION),
  /**
   * Longest a response stays open (a listen or 2025 GET stream, a 2025 call's stream), for platforms
   * that cut long responses: the server then ends it with an SSE `retry`, and the client reconnects
   * (2025 clients resume where they were, `Last-Event-ID`). Default an hour.
   */
  STREAM_MAX_SECONDS: int(1, 86_400).default(DEFAULT_MAX_STREAM_MS / 1000),
  MAX_STREAMS_PER_PRINCIPAL: int(1, MAX_CAP).default(DEFAULT_MAX_STREAMS_PER_PRINCIPAL),
  /**
   * Tasks one principal may hold at once, across its clients: running, waiting for input, or ended
   * and kept (`mcp/tasks/engine.ts`); a tool call that would start one more answers -32602.
   */
  MAX_LIVE_TASKS_PER_PRINCIPAL: int(1, MAX_CAP).default(DEFAULT_MAX_LIVE_TASKS_PER_PRINCIPAL),
  /** How long an ended task's outcome (result or error) is kept, never past the task's own TTL. */
  TASK_RESULT_TTL_SECONDS: int(1, MAX_TASK_TTL_MS / 1000).default(
    DEFAULT_TASK_RESULT_TTL_MS / 1000
  ),
  /** Public base URL of this server (for links such as the share approval page). */
  PUBLIC_URL: z.url().optional(),
  /** Name of this replica, sent as `X-Replica` on every response (useful behind a load balancer). */
  REPLICA_ID: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/)
    .optional(),
  /**
   * Bearer-token auth (an OAuth 2.1 resource server): AUTH_ISSUER plus AUTH_JWKS_URL (asymmetric
   * signatures) or AUTH_JWT_SECRET (HS256). See README "Authorization".
   */
  AUTH_ISSUER: z.string().min(1).optional(),
  /** The audience tokens must name; default (and what MCP clients ask for) PUBLIC_URL + `/mcp`. */
  AUTH_AUDIENCE: z.string().min(1).optional(),
  AUTH_JWKS_URL: z.url().optional(),
  AUTH_JWT_SECRET: z.string().min(32).optional(),
  /** Base scope(s) every operation needs besides its own (space-separated). */
  AUTH_REQUIRED_SCOPE: z
    .string()
    .regex(SCOPE_LIST, 'must be space-separated scope tokens')
    .refine((value) => !value.split(' ').includes('offline_access'), {
      message: 'offline_access is not a scope of this server (it asks the AS for refresh tokens)',
    })
    .optional(),
  AUTH_AUTHORIZATION_SERVERS: list.optional(),
  /** The approval pages' OIDC login: a confidential client at AUTH_ISSUER (both or neither). */
  AUTH_WEB_CLIENT_ID: z.string().min(1).optional(),
  AUTH_WEB_CLIENT_SECRET: z.string().min(1).optional(),
  /**
   * Node only: serves the Prometheus text exposition at `/metrics` on this port (on HOST), never on
   * the MCP port. 0 lets the kernel choose (the port is printed). See README "Observability".
   */
  METRICS_PORT: int(0, 65535).optional(),
  /**
   * Node only, on SIGTERM/SIGINT (`node/drain.ts`): how long the replica keeps serving while it
   * answers `/readyz` 503, for a balancer that routes by readiness to take it out first.
   */
  SHUTDOWN_DELAY_SECONDS: int(0, 60).default(0),
  /** Node only: how long the requests still in flight at shutdown may take before they are cut. */
  SHUTDOWN_GRACE_SECONDS: int(1, 600).default(25),
  /**
   * Node only: how long an idle keep-alive connection stays open (Node's default 5 s). It must be
   * longer than the balancer in front keeps its idle upstream connections (nginx's `keepalive_timeout`;
   * 60 s on an AWS load balancer), or the balancer may send a request on a socket being closed.
   */
  KEEP_ALIVE_SECONDS: int(1, 3600).default(5),
  /** `1` lets `npm start` serve a non-loopback HOST without auth (one shared principal). */
  ALLOW_UNAUTHENTICATED: z.enum(['0', '1']).default('0'),
})

export interface AuthConfig {
  issuer: string
  /** Set only to override the default audience, the canonical URL of the MCP endpoint. */
  audience?: string
  jwksUrl?: string
  jwtSecret?: string
  /** Base scopes every operation needs besides its own; empty when AUTH_REQUIRED_SCOPE is unset. */
  requiredScopes: string[]
  authorizationServers: string[]
  /** The approval pages' login client; without it those pages cannot tell who decides and refuse. */
  webClient?: { id: string; secret: string }
}

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl?: string
  /** EVENT_BUS_URL: the Redis bus the replicas share instead of PostgreSQL's LISTEN/NOTIFY. */
  eventBusUrl?: string
  stateKeys?: string
  stateTtlSeconds: number
  sessionTtlSeconds: number
  /** Caps on the live 2025-era sessions of one principal and on their subscriptions together. */
  sessionLimits: Required<SessionLimitOptions>
  allowedOrigins: string[]
  allowedHosts: string[]
  maxBodyBytes: number
  /** Caps on the streams one session and one principal hold open on this replica. */
  streamLimits: Required<StreamLimitOptions>
  /** The cap on one principal's live tasks, and how long an ended task is kept. */
  tasks: Required<Pick<ServerTaskOptions, 'maxLiveTasksPerPrincipal' | 'resultTtlMs'>>
  /** `STREAM_MAX_SECONDS` in milliseconds. */
  streamMaxMs: number
  publicUrl?: string
  replicaId?: string
  metricsPort?: number
  /**
   * The drain on SIGTERM/SIGINT (Node, `node/drain.ts`): `delayMs` serving while not ready, then at
   * most `graceMs` for the requests in flight.
   */
  shutdown: { delayMs: number; graceMs: number }
  /** `KEEP_ALIVE_SECONDS` in milliseconds (Node only). */
  keepAliveMs: number
  /** OpenTelemetry export, from the standard `OTEL_*` variables (`telemetry/env.ts`); absent: off. */
  telemetry?: TelemetryConfig
  auth?: AuthConfig
  /** ALLOW_UNAUTHENTICATED=1: serving a non-loopback HOST without auth is intended. */
  allowUnauthenticated: boolean
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''))
  )
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`)
  }
  const e = parsed.data
  const config: Config = {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    eventBusUrl: e.EVENT_BUS_URL,
    stateKeys: e.STATE_KEYS,
    stateTtlSeconds: e.STATE_TTL_SECONDS,
    sessionTtlSeconds: e.SESSION_TTL_SECONDS,
    sessionLimits: {
      maxSessionsPerPrincipal: e.MAX_SESSIONS_PER_PRINCIPAL,
      maxSubscriptionsPerPrincipal: e.MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
    },
    allowedOrigins: e.ALLOWED_ORIGINS,
    allowedHosts: e.ALLOWED_HOSTS.map((host) => host.toLowerCase()),
    maxBodyBytes: e.MAX_BODY_BYTES,
    streamLimits: {
      maxStreamsPerSession: e.MAX_STREAMS_PER_SESSION,
      maxStreamsPerPrincipal: e.MAX_STREAMS_PER_PRINCIPAL,
    },
    streamMaxMs: e.STREAM_MAX_SECONDS * 1000,
    tasks: {
      maxLiveTasksPerPrincipal: e.MAX_LIVE_TASKS_PER_PRINCIPAL,
      resultTtlMs: e.TASK_RESULT_TTL_SECONDS * 1000,
    },
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ''),
    replicaId: e.REPLICA_ID,
    metricsPort: e.METRICS_PORT,
    shutdown: {
      delayMs: e.SHUTDOWN_DELAY_SECONDS * 1000,
      graceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    },
    keepAliveMs: e.KEEP_ALIVE_SECONDS * 1000,
    allowUnauthenticated: e.ALLOW_UNAUTHENTICATED === '1',
  }
  try {
    config.telemetry = parseTelemetryEnv(env)
  } catch (error) {
    if (!(error instanceof TelemetryEnvError)) throw error
    throw new ConfigError(`Invalid configuration: ${error.message}`)
  }
  const authVars = [
    e.AUTH_ISSUER,
    e.AUTH_AUDIENCE,
    e.AUTH_JWKS_URL,
    e.AUTH_JWT_SECRET,
    e.AUTH_REQUIRED_SCOPE,
    e.AUTH_WEB_CLIENT_ID,
    e.AUTH_WEB_CLIENT_SECRET,
  ]
  if (authVars.some((value) => value !== undefined)) {
    if (!e.AUTH_ISSUER || (e.AUTH_JWKS_URL === undefined) === (e.AUTH_JWT_SECRET === undefined)) {
      throw new ConfigError(
        'Invalid configuration: auth needs AUTH_ISSUER and exactly one of AUTH_JWKS_URL (asymmetric signatures) or AUTH_JWT_SECRET (HS256)'
      )
    }
    if ((e.AUTH_WEB_CLIENT_ID === undefined) !== (e.AUTH_WEB_CLIENT_SECRET === undefined)) {
      throw new ConfigError(
        'Invalid configuration: the approval-page login needs both AUTH_WEB_CLIENT_ID and AUTH_WEB_CLIENT_SECRET'
      )
    }
    config.auth = {
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      jwksUrl: e.AUTH_JWKS_URL,
      jwtSecret: e.AUTH_JWT_SECRET,
      requiredScopes: e.AUTH_REQUIRED_SCOPE?.split(' ') ?? [],
      authorizationServers: e.AUTH_AUTHORIZATION_SERVERS ?? [e.AUTH_ISSUER],
      webClient:
        e.AUTH_WEB_CLIENT_ID === undefined
          ? undefined
          : { id: e.AUTH_WEB_CLIENT_ID, secret: e.AUTH_WEB_CLIENT_SECRET as string },
    }
  }
  return config
}

/** Whether `host` (a HOST value) only accepts connections from this machine. */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, '$1')
  return name === 'localhost' || name === '::1' || /^127(\.\d{1,3}){3}$/.test(name)
}

/**
 * The safe default of `npm start`: without auth the server is one shared principal, so it refuses a
 * non-loopback HOST unless ALLOW_UNAUTHENTICATED=1 says that is intended. Throws `ConfigError`.
 */
export function assertSafeExposure(config: Config): void {
  if (config.auth || config.allowUnauthenticated || isLoopbackHost(config.host)) return
  throw new ConfigError(
    `Refusing to serve HOST=${config.host} without authentication: anyone who can reach it would ` +
      'read and change every note. Configure an authorization server (AUTH_ISSUER with AUTH_JWKS_URL; ' +
      'see README "Authorization"), bind HOST to 127.0.0.1, or set ALLOW_UNAUTHENTICATED=1 if the ' +
      'network in front of it already authenticates every caller.'
  )
}
