/**
 * @module config
 * Environment → typed configuration, in one place, for both runtimes (Node passes `process.env`,
 * the Worker its `env` bindings). Parsed once at startup; a bad value stops the server with a message
 * naming the variable, never echoing a secret. Defaults make `npm start` work with no configuration.
 */
import { z } from 'zod'
import { DEFAULT_SESSION_TTL_SECONDS, MAX_SESSION_TTL_SECONDS } from './mcp/legacy/protocol.ts'

const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
)

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
  /** Key ring: `kid:secret,kid:secret` (first seals, all open). Generated under DATA_DIR when absent on Node. */
  STATE_KEYS: z.string().min(1).optional(),
  STATE_TTL_SECONDS: int(1, 86_400).default(600),
  /** Lifetime of a 2025-era session id (`Mcp-Session-Id`), sealed with the same key ring. */
  SESSION_TTL_SECONDS: int(60, MAX_SESSION_TTL_SECONDS).default(DEFAULT_SESSION_TTL_SECONDS),
  /** Extra allowed browser origins (scheme://host[:port]); requests without Origin are always allowed. */
  ALLOWED_ORIGINS: list.default([]),
  /** Allowed Host header names (without port). Default: loopback names only. */
  ALLOWED_HOSTS: list.default(['localhost', '127.0.0.1', '[::1]']),
  MAX_BODY_BYTES: int(1024, 16 * 1024 * 1024).default(1024 * 1024),
  /** Public base URL of this server (for links such as the share approval page). */
  PUBLIC_URL: z.url().optional(),
  /** Name of this replica, sent as `X-Replica` on every response (useful behind a load balancer). */
  REPLICA_ID: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/)
    .optional(),
  /** Bearer-token auth: set AUTH_ISSUER and AUTH_AUDIENCE plus AUTH_JWKS_URL or AUTH_JWT_SECRET. */
  AUTH_ISSUER: z.string().min(1).optional(),
  AUTH_AUDIENCE: z.string().min(1).optional(),
  AUTH_JWKS_URL: z.url().optional(),
  AUTH_JWT_SECRET: z.string().min(32).optional(),
  AUTH_REQUIRED_SCOPE: z.string().min(1).optional(),
  AUTH_AUTHORIZATION_SERVERS: list.optional(),
})

export interface AuthConfig {
  issuer: string
  audience: string
  jwksUrl?: string
  jwtSecret?: string
  requiredScope?: string
  authorizationServers: string[]
}

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl?: string
  stateKeys?: string
  stateTtlSeconds: number
  sessionTtlSeconds: number
  allowedOrigins: string[]
  allowedHosts: string[]
  maxBodyBytes: number
  publicUrl?: string
  replicaId?: string
  auth?: AuthConfig
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
    stateKeys: e.STATE_KEYS,
    stateTtlSeconds: e.STATE_TTL_SECONDS,
    sessionTtlSeconds: e.SESSION_TTL_SECONDS,
    allowedOrigins: e.ALLOWED_ORIGINS,
    allowedHosts: e.ALLOWED_HOSTS.map((host) => host.toLowerCase()),
    maxBodyBytes: e.MAX_BODY_BYTES,
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ''),
    replicaId: e.REPLICA_ID,
  }
  const authVars = [e.AUTH_ISSUER, e.AUTH_AUDIENCE, e.AUTH_JWKS_URL, e.AUTH_JWT_SECRET]
  if (authVars.some((value) => value !== undefined)) {
    if (!e.AUTH_ISSUER || !e.AUTH_AUDIENCE || (!e.AUTH_JWKS_URL && !e.AUTH_JWT_SECRET)) {
      throw new ConfigError(
        'Invalid configuration: auth needs AUTH_ISSUER, AUTH_AUDIENCE and AUTH_JWKS_URL or AUTH_JWT_SECRET'
      )
    }
    config.auth = {
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      jwksUrl: e.AUTH_JWKS_URL,
      jwtSecret: e.AUTH_JWT_SECRET,
      requiredScope: e.AUTH_REQUIRED_SCOPE,
      authorizationServers: e.AUTH_AUTHORIZATION_SERVERS ?? [e.AUTH_ISSUER],
    }
  }
  return config
}
